"""The HTML run report at scale: file size, time to write it, and load time in headless
Chromium.

Sessions (built in-process from real worlds: tests/testing/shop/world.yaml, 50-200 ms of
virtual latency, 0.5% refund timeouts, 1% 503s on get_order (~10% of the
1,000 runs fail); a naive agent that retries
blindly; a run fails when it refunded an order twice):

- 20 runs x ~5 calls (the shop suite's size);
- 1,000 runs x 50 calls (the issue's "large session");
- 1 run x 10,000 calls, opened in the page (its timeline drawn).

"write" is `write_report` (event logs -> HTML: traces, state changes by replay, diffs
against the closest passing run). "load" is Chromium's `performance.now()` when the page's
script finished (navigation start to the overview and the first failing run drawn: HTML
parse, JSON parse, DOM), read back from the DOM with `--dump-dom`; "process" is the wall time
of the whole headless Chromium process (browser start-up included). Best of `--rounds`.

    uv run python benchmarks/bench_report.py [--rounds 3] [--only 20,1000,10k]
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.testing.chromium import CHROMIUM, body_attribute, dump_dom  # noqa: E402

from faultbench.kernel import World, encode_events  # noqa: E402
from faultbench.kernel.lowlevel import load_spec  # noqa: E402
from faultbench.testing._artifacts._html import write_report  # noqa: E402
from faultbench.testing._gate._report import Group, Run  # noqa: E402

SPEC = load_spec(ROOT / "tests" / "testing" / "shop" / "world.yaml")
RULES = {
    "default": {"latency_ms": [50, 200]},
    "orders.get_order": {"errors": {"http_503": 0.01}},
    "payments.issue_refund": {"errors": {"timeout": 0.005}},
}


def session(runs: int, calls: int, name: str) -> Group:
    group = Group(f"bench.py::{name}", runs, 0.9)
    for i in range(runs):
        world = World.from_spec(SPEC, run=i)
        # Rarer faults than the suite's, so that ~10% of the runs fail, as in a gate of 90%.
        world.set_faults(RULES)
        made = 0
        order = 0
        while made < calls:
            oid = str(order % 3 + 1)
            order += 1
            got = world.call("get_order", {"id": oid})
            made += 1
            for _ in range(3):
                if made >= calls:
                    break
                made += 1
                if world.call("issue_refund", {"order_id": oid, "amount": 1.0}).ok:
                    break
        twice = any(len(world.refunds.where(order_id=str(o))) > order // 3 + 1 for o in (1, 2, 3))
        run = Run(
            f"bench.py::{name}[run{i}]",
            i,
            outcome="failed" if twice or not got.ok else "passed",
            message="AssertionError: refunded twice" if twice else None,
            summary=world.trace.summary()[:2000],
            events=encode_events(world.events).decode(),
            state_hash=world.state_hash(),
        )
        group.runs[i] = run
    return group


def measure(label: str, group: Group, rounds: int, out: Path, fragment: str = "") -> None:
    t = time.perf_counter()
    path = write_report(out / label, [group], title=f"bench {label}")
    write_s = time.perf_counter() - t
    size = path.stat().st_size
    loads, procs = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        dom = dump_dom(path, fragment)
        procs.append(time.perf_counter() - t)
        loads.append(int(body_attribute(dom, "data-loaded-ms") or -1))
    calls = sum(len(r.events.splitlines()) for r in group.runs.values() if r.events)
    print(
        f"{label:>12}: {len(group.runs)} runs, {calls:,} events; {size / 1e6:.2f} MB; "
        f"write {write_s:.2f} s; load {min(loads)} ms; process {min(procs):.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="20,1000,10k")
    args = parser.parse_args()
    if CHROMIUM is None:
        sys.exit("headless Chromium is not installed (apt-get install chromium)")
    version = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True).stdout
    print(f"{platform.platform()}; Python {platform.python_version()}; {version.strip()}")
    only = set(args.only.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        if "20" in only:
            measure("20x5", session(20, 5, "test_small"), args.rounds, out)
        if "1000" in only:
            measure("1000x50", session(1000, 50, "test_large"), args.rounds, out)
        if "10k" in only:
            measure("1x10k", session(1, 10_000, "test_long"), args.rounds, out, "#run=0-0")


if __name__ == "__main__":
    main()
