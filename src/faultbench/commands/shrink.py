"""`faultbench shrink NODEID`: the smallest subset of a failing run's faults that still fails
it.

The run's faults are read from its event log (`--events FILE`, e.g. from `pytest
--faultbench-events DIR`), or from one more run of the test. Each probe re-runs the test in
a fresh `pytest` process with `--faultbench-faults` pinning a subset of those faults as
`script:` entries and no other rule in force; ddmin picks the subsets.
"""

from __future__ import annotations

import argparse
import shlex
import sys

HELP = "find the smallest subset of a failing run's faults that still fails it (ddmin)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from faultbench.testing import DEFAULT_BUDGET

    parser.description = (
        "Re-run one failing pytest run (a node id such as 'tests/test_refund.py::test_refund[run4]')"
        " under subsets of the faults it received, each pinned as a script: entry with every"
        " other fault off, and print the smallest subset that still fails it, with the command"
        " that reproduces it. With a live model every probe is one more model run: bound them"
        " with --budget. Exit 0 when a subset was found, 1 when the run does not fail as"
        " pinned, 2 on bad input."
    )
    parser.add_argument("nodeid", metavar="NODEID", help="the failing run's pytest node id")
    parser.add_argument(
        "--events",
        metavar="FILE",
        default=None,
        help="the run's event log (JSON Lines); default: run the test once to get it",
    )
    parser.add_argument(
        "--budget",
        type=int,
        default=DEFAULT_BUDGET,
        metavar="N",
        help=f"at most N probes, i.e. test runs (default {DEFAULT_BUDGET})",
    )
    parser.add_argument(
        "--pytest-args",
        default="",
        metavar="ARGS",
        help="more arguments for every pytest run, as one string (e.g. '--runs 50')",
    )


def run(args: argparse.Namespace) -> int:
    from faultbench.kernel import decode_events
    from faultbench.kernel.lowlevel import faults_received
    from faultbench.testing import Probe, ProbeError, probe_pytest, shrink, spec_of

    if args.budget < 1:
        print(
            f"faultbench shrink: Expected --budget N with N >= 1. Instead, received: {args.budget}",
            file=sys.stderr,
        )
        return 2
    extra = shlex.split(args.pytest_args)
    probe = Probe(args.nodeid, extra)
    probe.shown = " ".join(["pytest", shlex.quote(args.nodeid), *map(shlex.quote, extra)])
    try:
        if args.events is not None:
            with open(args.events, "rb") as f:
                events = decode_events(f.read())
        else:
            first = probe.run(None)
            if first["outcome"] != "failed":
                print(f"faultbench shrink: {args.nodeid} did not fail ({first['outcome']})")
                return 1
            events = decode_events(first["events"])
    except (OSError, ValueError, ProbeError) as exc:
        print(f"faultbench shrink: {exc}", file=sys.stderr)
        return 2
    spec = spec_of(events)
    if spec is None:
        print("faultbench shrink: the run's world file cannot be read", file=sys.stderr)
        return 2
    pins = faults_received(events)
    print(f"{args.nodeid}: {len(pins)} faults received; shrinking (at most {args.budget} probes)")
    result = shrink(pins, spec, probe_pytest(probe), budget=args.budget)
    print(f"{args.nodeid}: {result.headline()}")
    print(f"    {result.probes} probe{'s' if result.probes != 1 else ''}")
    if result.block is not None:
        print(f"    Reproduce: {probe.reproduce(result.block)}")
    return 0 if result.verdict in ("minimal", "budget", "no_faults") else 1
