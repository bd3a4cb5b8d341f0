"""What the `serve --events` journal costs per call, and what `--fsync` adds.

What is measured: sequential `World.call("update_order", ...)` on examples/shop/worlds/shop.yaml
(faults off) in this process, in three ways, rounds alternating, best round of each:

- no journal (the baseline);
- a journal (`faultbench.serve.Journals`, what `serve --events` attaches): each call's events
  are written and flushed to the file before the call returns;
- a journal with `fsync=True` (`serve --events --fsync`): each call also waits for the disk.

The calls are the same in every row (same world, same arguments), so the ratios are the price
of the journal and of fsync on this machine's file system (where `--dir` puts the files;
default: a temporary directory). MCP transport costs (stdio ~1 ms, HTTP ~2-3 ms a call, see
bench_serve.py) come on top of every row alike.

    uv run python benchmarks/bench_journal.py [--calls 2000] [--rounds 3] [--dir DIR]
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

import faultbench
from faultbench.serve import Journals

ROOT = Path(__file__).resolve().parents[1]
WORLD = ROOT / "examples" / "shop" / "worlds" / "shop.yaml"


def one_round(calls: int, where: Path | None, fsync: bool) -> float:
    """Seconds per call."""
    world = faultbench.load_world(WORLD, faults=False)
    journals = Journals(where / "events.jsonl", world, fsync=fsync) if where else None
    start = time.perf_counter()
    for i in range(calls):
        world.call("update_order", {"id": "1", "total": float(i)})
    took = time.perf_counter() - start
    if journals is not None:
        journals.close()
    return took / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="where the journals go")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        where = Path(tmp)
        rows = {"no journal": [], "journal": [], "journal + fsync": []}
        for _ in range(args.rounds):
            rows["no journal"].append(one_round(args.calls, None, False))
            rows["journal"].append(one_round(args.calls, where, False))
            rows["journal + fsync"].append(one_round(args.calls // 4, where, True))
    print(f"{platform.python_version()}, {args.calls} calls a round, best of {args.rounds}")
    base = min(rows["no journal"])
    for name, times in rows.items():
        best = min(times)
        print(f"  {name:16} {best * 1e6:9.1f} us/call   {best / base:6.2f}x")
    fsync, journal = min(rows["journal + fsync"]), min(rows["journal"])
    print(f"  fsync against the journal without it: {fsync / journal:.1f}x")


if __name__ == "__main__":
    main()
