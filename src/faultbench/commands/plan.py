"""`faultbench plan --rate R --margin M`: how many runs a gate needs.

With `--rate` and `--margin`: the runs for which the Wilson 95% interval of an observed pass
rate R stays within M of R on both sides (so a rate R is told apart from a threshold M away). With
`--diff D --discordant P`: the paired runs a comparison of two agents needs to detect a
difference D in pass rate (exact McNemar, 95% confidence, 80% power), when a share P of the
pairs differ (one agent passes, the other fails).
"""

from __future__ import annotations

import argparse
import sys

HELP = "how many runs a gate or a paired comparison needs (Wilson; McNemar)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "How many runs a gate needs: --rate R --margin M gives the runs whose Wilson 95%"
        " interval at an observed rate R stays within M of R; --diff D --discordant P"
        " the paired runs that detect a difference D between two agents (McNemar, 95%"
        " confidence, 80% power) when a share P of pairs are discordant."
    )
    parser.add_argument("--rate", type=float, help="the pass rate you expect, e.g. 0.95")
    parser.add_argument("--margin", type=float, help="half-width of the interval, e.g. 0.05")
    parser.add_argument("--diff", type=float, help="the difference in pass rate to detect")
    parser.add_argument(
        "--discordant", type=float, help="the share of pairs where one agent passes and one fails"
    )


def run(args: argparse.Namespace) -> int:
    from faultbench.testing import paired_runs, runs_for_margin

    done = False
    try:
        if args.rate is not None or args.margin is not None:
            if args.rate is None or args.margin is None:
                raise ValueError("--rate and --margin go together")
            n = runs_for_margin(args.rate, args.margin)
            print(
                f"{n} runs: at a pass rate of {args.rate:.1%}, the Wilson 95% interval stays "
                f"within {args.margin:.1%} of it on both sides"
            )
            done = True
        if args.diff is not None or args.discordant is not None:
            if args.diff is None or args.discordant is None:
                raise ValueError("--diff and --discordant go together")
            n = paired_runs(args.diff, args.discordant)
            print(
                f"{n} paired runs: detect a difference of {args.diff:.1%} when "
                f"{args.discordant:.0%} of pairs are discordant (McNemar, 95%, power 80%)"
            )
            done = True
    except ValueError as exc:
        print(f"faultbench plan: {exc}", file=sys.stderr)
        return 2
    if not done:
        print(
            "faultbench plan: give --rate and --margin, or --diff and --discordant", file=sys.stderr
        )
        return 2
    return 0
