"""Kernel benchmark: how fast the event-sourced core is, against the targets of issue 3.

Measured (median of several repeats, wall clock, one process):

- apply/s        folding `apply` over 100k pre-built events, half RecordCreated and half
                 RecordUpdated (the reducer and incremental hash alone); target >= 100k/s
- table writes/s the same mix through `Table.insert` / `Table.update` (type checks + events)
- call/s         `World.call("get_order", {"id": ...})` on a world without faults; >= 50k/s
- snapshot, fork on worlds of 1k and 100k records: O(1), target < 50 us each
- World.from_spec of the shop example's world: the next run of a suite (same spec and seed
                 as the world before) and the first world of a spec
- replay         `replay(spec, events)` of a 100k-event log (in memory); target < 1.5 s,
                 and the same from JSON Lines bytes (decode + replay); then a 100k-event log
                 written by tool calls (creates, updates, gets, invalid calls)

Run: `uv run python benchmarks/bench_kernel.py` (add `--quick` for a smoke run).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import msgspec

from faultbench.kernel import (
    RecordCreated,
    RecordUpdated,
    State,
    World,
    WorldCreated,
    apply,
    encode_events,
    replay,
)
from faultbench.kernel.lowlevel import load_spec

ROOT = Path(__file__).resolve().parents[1]
WORLD_FILE = ROOT / "tests" / "worlds" / "kernel_shop.yaml"
QUICK = "--quick" in sys.argv


def best_of(fn, repeat: int = 5) -> float:
    """Median seconds of `fn()` over `repeat` runs."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def per_op(fn, n: int, repeat: int = 5) -> float:
    """Median seconds per call of `fn` over `repeat` batches of `n` calls."""

    def batch():
        for _ in range(n):
            fn()

    return best_of(batch, repeat) / n


def world_with(spec, records: int) -> World:
    world = World.from_spec(spec, faults=False)
    orders = world.orders
    for i in range(records - len(orders)):
        orders.insert(customer="1", status="placed", total=float(i % 97))
    return world


def main() -> None:
    spec = load_spec(WORLD_FILE)
    n_events = 20_000 if QUICK else 100_000
    rows: list[tuple[str, float, str, str]] = []

    # --- apply/s: mixed create/update ------------------------------------------------------
    t0 = spec.clock_start
    events = [WorldCreated(seq=0, at=t0, world=spec.name, seed=spec.seed)]
    half = n_events // 2
    for i in range(half):
        rid = str(i + 1)
        fields = {"id": rid, "customer": "1", "status": "placed", "total": float(i % 97),
                  "qty": 1, "created_at": None, "note": None}  # fmt: skip
        events.append(RecordCreated(seq=len(events), at=t0, table="order", id=rid, fields=fields))
        events.append(
            RecordUpdated(
                seq=len(events), at=t0, table="order", id=rid,
                changes={"status": "shipped"}, old={"status": "placed"},
            )
        )  # fmt: skip
    empty = State.empty(tuple(spec.records), t0)

    def fold():
        s = empty
        for ev in events:
            s = apply(s, ev)

    dt = best_of(fold, 3)
    rows.append(("apply (mixed create/update)", len(events) / dt, ">= 100,000 events/s", "ev/s"))

    def writes():
        w = World.from_spec(spec, faults=False)
        orders = w.orders
        for i in range(half):
            r = orders.insert(customer="1", status="placed", total=float(i % 97))
            orders.update(r.id, status="shipped")

    dt = best_of(writes, 3)
    rows.append(("Table.insert + update", 2 * half / dt, "(no target)", "ev/s"))

    # --- World.call/s for a get, no faults -------------------------------------------------
    w = World.from_spec(spec, faults=False)
    args = {"id": "2"}
    call = w.call
    n_calls = 10_000 if QUICK else 50_000

    def calls():
        for _ in range(n_calls):
            call("get_order", args)

    # each batch starts from a fresh snapshot so the log does not grow without bound
    snap = w.snapshot()

    def calls_fresh():
        w.restore(snap)
        calls()

    dt = best_of(calls_fresh, 5)
    rows.append(("World.call get_order", n_calls / dt, ">= 50,000 calls/s", "calls/s"))

    # --- snapshot / fork: 1k and 100k records ----------------------------------------------
    big_n = 20_000 if QUICK else 100_000
    for size in (1_000, big_n):
        t = time.perf_counter()
        world = world_with(spec, size)
        built = time.perf_counter() - t
        assert len(world.orders) == size
        snap_s = per_op(world.snapshot, 20_000)
        fork_s = per_op(world.fork, 5_000)
        label = f"{size // 1000}k records"
        rows.append((f"snapshot, {label}", snap_s * 1e6, "< 50 us, O(1)", "us"))
        rows.append((f"fork, {label}", fork_s * 1e6, "< 50 us, O(1)", "us"))
        if size == big_n:
            big, big_built = world, built

    # --- replay of 100k events -------------------------------------------------------------
    log = list(big.events)
    dt = best_of(lambda: replay(spec, log), 3)
    rows.append((f"replay {len(log):,} events (objects)", dt, "< 1.5 s", "s"))
    data = encode_events(log)
    dt = best_of(lambda: replay(spec, data), 3)
    rows.append((f"replay {len(log):,} events (JSON Lines)", dt, "(no target)", "s"))
    assert replay(spec, data).state_hash() == big.state_hash()

    # The same size of log written by tool calls: CallStarted / record events / CallSucceeded
    # (and failures), as a served world records them.
    agent = World.from_spec(spec, faults=False)
    i = 0
    while len(agent.events) < n_events:
        i += 1
        created = agent.call("create_order", {"customer": "1", "status": "placed", "total": 1})
        agent.call("update_order", {"id": created.value["id"], "status": "shipped"})
        agent.call("get_order", {"id": str(i % 50 + 1)})
        agent.call("get_order", {"id": 7})  # invalid: logged, no record event
    calls_log = list(agent.events)
    dt = best_of(lambda: replay(spec, calls_log), 3)
    rows.append((f"replay {len(calls_log):,} events of calls", dt, "< 1.5 s", "s"))
    assert replay(spec, calls_log).state_hash() == agent.state_hash()

    # --- a world per run, as a suite makes them (issue 24) ---------------------------------
    # The shop example's world (45 seed rows, custom handlers). "next": the same spec and seed
    # as the world before, another run index (a suite's runs), which starts from that world's
    # genesis; "first": a spec no world has used yet (a copy of it), which seeds its rows,
    # compiles its operations and builds its indexes.
    shop = load_spec(ROOT / "examples" / "shop" / "worlds" / "shop.yaml")
    World.from_spec(shop)
    runs = iter(range(10**9))
    dt = per_op(lambda: World.from_spec(shop, run=next(runs)), 200)
    rows.append(("World.from_spec, next run (shop)", dt * 1e6, "(no target)", "us"))
    dt = per_op(lambda: World.from_spec(msgspec.structs.replace(shop), run=1), 20)
    rows.append(("World.from_spec, first of a spec (shop)", dt * 1e6, "(no target)", "us"))

    # --- report ----------------------------------------------------------------------------
    print(f"faultbench kernel benchmark  (Python {sys.version.split()[0]}, {sys.platform})")
    print(f"{big_n:,}-record world built in {big_built:.2f} s through Table.insert\n")
    print(f"{'measure':<40} {'value':>16}  target")
    print("-" * 80)
    for name, value, target, unit in rows:
        if unit in ("ev/s", "calls/s"):
            shown = f"{value:,.0f} {unit}"
        elif unit == "us":
            shown = f"{value:.2f} us"
        else:
            shown = f"{value:.3f} s"
        print(f"{name:<40} {shown:>16}  {target}")


if __name__ == "__main__":
    main()
