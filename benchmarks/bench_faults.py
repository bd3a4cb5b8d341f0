"""What faults cost in wall time, and what they charge in virtual time.

The suite-shaped check of issue 4: 20 runs x 5 calls through `World.call`, every call with
`latency_ms: [50, 200]` and `errors: {timeout: 0.1}` (timeouts wait the default 30 virtual
seconds). Each run gets its own world, as a test run does; two ways are measured:

- `from_spec`: a fresh world from the parsed spec (seeding included) per run;
- `fork`: one seeded world, forked per run with `run=r` (O(1), what the pytest plugin can do).

The world file is parsed once, outside the timing (the pytest plugin parses it once per
session). The baseline is the same runs with the fault plan disabled (`faults=False`).
Target: under 0.2 s of wall time for all 20 runs, while the virtual clock shows the latencies
(and the timeouts) were charged. Nothing sleeps, so wall time is pure Python overhead.

Run: uv run python benchmarks/bench_faults.py
"""

from __future__ import annotations

import statistics
import textwrap
import time

from faultbench.kernel import World
from faultbench.kernel.lowlevel import load_spec

WORLD = textwrap.dedent(
    """
    name: bench
    seed: 1
    services:
      orders:
        records:
          order: { id: str, status: "enum[placed, delivered, returned]", total: float }
        seed: { count: 50 }
        operations:
          get_order: { kind: get, record: order }
          list_orders: { kind: list, record: order, filter: [status] }
      payments:
        records:
          refund: { id: str, order_id: "ref[order]", amount: float }
        operations:
          issue_refund: { kind: create, record: refund }
    faults:
      default:
        latency_ms: [50, 200]
        errors: { timeout: 0.1 }
    """
)
RUNS = 20
REPEAT = 7  # best-of, to keep other processes on the machine out of the figure


def one_run(world: World) -> None:
    world.call("get_order", {"id": "3"})
    world.call("list_orders", {"status": "placed"})
    world.call("issue_refund", {"order_id": "3", "amount": 5.0})
    world.call("get_order", {"id": "4"})
    world.call("issue_refund", {"order_id": "4", "amount": 7.5})


def suite(spec, how: str, faults: bool) -> tuple[float, float, int]:
    """Wall seconds for all runs, total virtual seconds charged, timeouts seen."""
    t = time.perf_counter()
    virtual = 0.0
    timeouts = 0
    base = World.from_spec(spec, faults=faults) if how == "fork" else None
    for r in range(RUNS):
        if base is not None:
            world = base.fork(run=r)
        else:
            world = World.from_spec(spec, run=r, faults=faults)
        start = world.clock.now()
        one_run(world)
        virtual += (world.clock.now() - start).total_seconds()
        timeouts += world.trace.count(ok=False)
    return time.perf_counter() - t, virtual, timeouts


def main() -> None:
    spec = load_spec("bench.yaml", text=WORLD)
    print(f"{RUNS} runs x 5 calls, latency_ms [50, 200], timeout p=0.1 (best of {REPEAT})")
    print(f"{'world per run':<14} {'faults':<7} {'wall ms':>9} {'virtual s':>10} {'timeouts':>9}")
    rows = {}
    for how in ("from_spec", "fork"):
        for faults in (True, False):
            results = [suite(spec, how, faults) for _ in range(REPEAT)]
            wall = min(r[0] for r in results)
            _, virtual, timeouts = results[0]
            rows[how, faults] = wall
            print(
                f"{how:<14} {'on' if faults else 'off':<7} {wall * 1000:>9.2f} "
                f"{virtual:>10.2f} {timeouts:>9}"
            )
    print()
    for how in ("from_spec", "fork"):
        ratio = rows[how, True] / rows[how, False]
        verdict = "OK" if rows[how, True] < 0.2 else "OVER TARGET"
        print(
            f"{how}: faults on / off = {ratio:.2f}x; "
            f"{rows[how, True] * 1000:.1f} ms for {RUNS} runs (target < 200 ms: {verdict})"
        )
    # The virtual clock is the proof that nothing was skipped: take away the timeouts' waits
    # and what is left is the latency charged, close to calls x mean of [50, 200] ms.
    _, virtual, timeouts = suite(spec, "fork", True)
    charged = virtual - 30.0 * timeouts
    expected = RUNS * 5 * statistics.fmean([0.05, 0.2])
    print(
        f"virtual clock: {virtual:.2f} s = {timeouts} timeouts x 30 s + {charged:.2f} s of "
        f"latency over {RUNS * 5} calls (expected about {expected:.2f} s)"
    )


if __name__ == "__main__":
    main()
