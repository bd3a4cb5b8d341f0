"""`faultbench diff A.jsonl B.jsonl`: where two runs' event logs part, as +/- lines.

Exit status, like `diff`: 0 the logs are equal by content, 1 they differ, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys

from faultbench.commands.replay import BadInput, read_events

HELP = "compare two event logs: first divergence and the differing events as +/- lines"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Align two event logs (JSON Lines) and print where they first differ, then the events"
        " only in A (-) and only in B (+). Events compare by content: seq, virtual times and"
        " call ids are positions, not facts, and are ignored. Exit 0 when equal, 1 when they"
        " differ, 2 on bad input."
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
    limit = args.max_lines or sys.maxsize
    d = diff_events(a, b, context=args.context, max_lines=limit)
    if args.json:
        print(json.dumps({"a": args.a, "b": args.b, **d.to_dict()}, indent=2, ensure_ascii=False))
    else:
        print(f"--- {args.a}\n+++ {args.b}")
        print(d)
    return 1 if d else 0
