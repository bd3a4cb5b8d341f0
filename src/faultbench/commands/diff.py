"""`faultbench diff A.jsonl B.jsonl`: how two runs differ, in words (their calls aligned,
then their end states), or with `--events` where their event logs part, as +/- lines.

Exit status, like `diff`: 0 the runs are the same (by calls and end state; with `--events`:
the logs are equal by content), 1 they differ, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys

from faultbench.commands.replay import BadInput, read_events

HELP = "compare two runs' event logs: the divergence in words, then the end states"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Compare two runs' event logs (JSON Lines): align them by their calls (tool and"
        " arguments), say each divergence in words, then show how the end states differ;"
        " timing is left out. With --events: where the logs first differ, then the events"
        " only in A (-) and only in B (+), by content (seq, virtual times and call ids are"
        " ignored). Exit 0 when the same, 1 when they differ, 2 on bad input."
    )
    parser.add_argument("a", metavar="A.jsonl", help="the first event log (e.g. a passing run)")
    parser.add_argument("b", metavar="B.jsonl", help="the second event log (e.g. a failing run)")
    parser.add_argument(
        "-U",
        "--context",
        type=int,
        default=2,
        metavar="N",
        help="equal events shown around each change (default 2)",
    )
    parser.add_argument(
        "--max-lines",
        type=int,
        default=200,
        metavar="N",
        help="stop after N lines of diff (default 200; 0: no limit)",
    )
    parser.add_argument("--json", action="store_true", help="print the diff as a JSON object")
    parser.add_argument(
        "--events",
        action="store_true",
        help="the event-log diff (clock steps included) instead of the calls in words",
    )


def run(args: argparse.Namespace) -> int:
    from faultbench.kernel import diff_events

    def warn(message: str) -> None:
        print(f"faultbench diff: warning: {message}", file=sys.stderr)

    try:
        a = read_events(args.a, warn=warn, partial=True)
        b = read_events(args.b, warn=warn, partial=True)
    except BadInput as exc:
        print(f"faultbench diff: {exc}", file=sys.stderr)
        return 2
    if args.context < 0 or args.max_lines < 0:
        print(
            "faultbench diff: Expected --context and --max-lines to be 0 or more."
            f" Instead, received: {args.context} and {args.max_lines}",
            file=sys.stderr,
        )
        return 2
    if not args.events:
        from pathlib import Path

        from faultbench.kernel.lowlevel import explain_runs

        names = Path(args.a).stem, Path(args.b).stem
        if names[0] == names[1]:
            names = "A", "B"
        x = explain_runs(a, b, a_name=names[0], b_name=names[1])
        if args.json:
            body = {**x.to_dict(), "a": args.a, "b": args.b, "equal": not x}
            print(json.dumps(body, indent=2, ensure_ascii=False, default=str))
        else:
            print(f"--- {args.a} ({names[0]})\n+++ {args.b} ({names[1]})")
            print(x)
        return 1 if x else 0
    limit = args.max_lines or sys.maxsize
    d = diff_events(a, b, context=args.context, max_lines=limit)
    if args.json:
        print(json.dumps({"a": args.a, "b": args.b, **d.to_dict()}, indent=2, ensure_ascii=False))
    else:
        print(f"--- {args.a}\n+++ {args.b}")
        print(d)
    return 1 if d else 0
