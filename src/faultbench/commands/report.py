"""`faultbench report EVENTS_DIR -o DIR`: the HTML run report of a saved session.

EVENTS_DIR is what `pytest --faultbench-events EVENTS_DIR` wrote: one JSON Lines event log per
run and `faultbench-session.json` (outcomes, assertion messages, reproduce commands). Without
the session file the runs are grouped by file name and their outcomes shown as unknown.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "write the HTML run report of a folder of event logs (pytest --faultbench-events DIR)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Write one self-contained HTML file (no server, no network) showing each test's pass"
        " rate and gate, and per run a timeline of its calls in virtual time, its faults,"
        " its end state against its start and, for a failing run, its event log against the"
        " closest passing run. EVENTS_DIR is what `pytest --faultbench-events DIR` wrote."
    )
    parser.add_argument("events_dir", metavar="EVENTS_DIR", help="the folder of event logs")
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        default=".",
        help="the folder to write faultbench-report.html into (default: here)",
    )
    parser.add_argument("--title", default=None, help="the report's title")


def run(args: argparse.Namespace) -> int:
    from faultbench.testing import read_session, write_report

    directory = Path(args.events_dir)
    try:
        session = read_session(directory)
    except (OSError, ValueError) as exc:
        print(f"faultbench report: {exc}", file=sys.stderr)
        return 2
    title = args.title or f"faultbench: {directory.resolve().name}"
    path = write_report(
        args.output,
        session.groups,
        reproduce=session.reproduce,
        shrinks=session.shrinks,
        title=title,
    )
    runs = sum(len(g.runs) for g in session.groups)
    print(f"{path} ({len(session.groups)} tests, {runs} runs, {path.stat().st_size:,} bytes)")
    return 0
