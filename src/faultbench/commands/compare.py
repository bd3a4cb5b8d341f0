"""`faultbench compare A_EVENTS_DIR B_EVENTS_DIR`: two agents' runs, paired by run index.

Each folder is what `pytest --faultbench-events DIR` wrote for one agent (its session file
gives each run's outcome). Run k of A and run k of B met the same faults (same world, seed
and run index), so the runs pair up: both pass / only A / only B / both fail, the difference
in pass rate with its 95% interval for paired proportions, and the exact McNemar p-value.
`--margin D` is the gate "B is not worse than A by more than D": exit status 0 when the
interval shows it, 1 when it does not (worse, or too few runs to tell: a line says how many).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "compare two agents' runs paired by run index (pytest --faultbench-events DIRs)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.split("\n\n", 1)[1].replace("\n", " ") if __doc__ else None
    parser.add_argument("a_dir", metavar="A_EVENTS_DIR", help="the baseline's event logs")
    parser.add_argument("b_dir", metavar="B_EVENTS_DIR", help="the candidate's event logs")
    parser.add_argument(
        "--margin", type=float, default=None, help="gate: B not worse than A by more than this"
    )


def _outcomes(directory: Path) -> dict[str, dict[int, bool]]:
    from faultbench.testing import read_session

    out: dict[str, dict[int, bool]] = {}
    for group in read_session(directory).groups:
        runs = {
            i: r.outcome == "passed"
            for i, r in group.runs.items()
            if r.outcome in ("passed", "failed")
        }
        out[group.name] = runs
    return out


def run(args: argparse.Namespace) -> int:
    from faultbench.testing import Paired

    try:
        a, b = _outcomes(Path(args.a_dir)), _outcomes(Path(args.b_dir))
    except (OSError, ValueError) as exc:
        print(f"faultbench compare: {exc}", file=sys.stderr)
        return 2
    # One test per folder pairs whatever its name; otherwise tests pair by name.
    pairs = (
        [(next(iter(a)), next(iter(b)))] if len(a) == len(b) == 1 else [(n, n) for n in a if n in b]
    )
    if not pairs:
        print("faultbench compare: no test of A_EVENTS_DIR is in B_EVENTS_DIR", file=sys.stderr)
        return 2
    status = 0
    for name_a, name_b in pairs:
        paired = Paired.of(a[name_a], b[name_b])
        print(name_a if name_a == name_b else f"{name_a} (A) vs {name_b} (B)")
        for line in paired.lines("A", "B", args.margin):
            print("  " + line)
        if args.margin is not None and paired.not_worse(args.margin) is not True:
            status = 1
    return status
