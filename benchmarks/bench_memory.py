"""Memory of a long session: bytes per event held by a world's log, and by its trace.

What is measured, in this process, on examples/shop/worlds/shop.yaml (faults off): N sequential
`World.call`s alternating `get_order` and `update_order` (the script prints the events they
logged), then `world.trace` built once over them. Two ways, each a fresh world:

- RSS: the process's resident set (`/proc/self/statm`) before the calls, after them, and after
  the trace is built; per event = growth / events. This is what `serve` holds (the log is
  kept by design; the trace is built from the log and cached once asked for, e.g. by
  `GET /faultbench/trace`).
- tracemalloc (`--traced N`, default a tenth of the calls, slower): Python allocations still
  live after the calls, and after the trace, per event; the split between the log's event
  objects and the trace's per-call records.
- bounded (`--keep K`, default 10,000; `--keep 0` skips it): the same calls, traced, on a
  world that keeps a window of its latest events (`lowlevel.keep_events(world, K)`, what
  `serve --keep-events K` does), its trace asked for every 1,000 calls as `GET
  /faultbench/trace` might: the events it holds, and the live allocations after the first
  half of the calls and after all of them. A bounded session's second half adds nothing but
  the window's swing (K to 2K events).

(The shop world has no `update_order`: those calls are answered `unknown_tool`, so half the
calls are failures with the same message. Kept as it is, so figures stay comparable.)

Run it before and after a change to compare, with the same `--calls`.

    uv run python benchmarks/bench_memory.py [--calls 1000000] [--traced 100000] [--keep 10000]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import time
import tracemalloc
from pathlib import Path

import faultbench

ROOT = Path(__file__).resolve().parents[1]
WORLD = ROOT / "examples" / "shop" / "worlds" / "shop.yaml"
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * PAGE


def run_calls(world, calls: int) -> None:
    for i in range(calls):
        if i % 2:
            world.call("update_order", {"id": "1", "total": float(i)})
        else:
            world.call("get_order", {"id": "2"})


def by_rss(calls: int) -> dict[str, float]:
    world = faultbench.load_world(WORLD, faults=False)
    gc.collect()
    start, base_events = rss(), len(world.events)
    t0 = time.perf_counter()
    run_calls(world, calls)
    took = time.perf_counter() - t0
    gc.collect()
    after_calls = rss()
    events = len(world.events) - base_events
    assert world.trace.count() == calls
    gc.collect()
    after_trace = rss()
    return {
        "events": events,
        "seconds": took,
        "log": (after_calls - start) / events,
        "trace": (after_trace - after_calls) / events,
    }


def by_tracemalloc(calls: int) -> dict[str, float]:
    world = faultbench.load_world(WORLD, faults=False)
    base_events = len(world.events)
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    run_calls(world, calls)
    gc.collect()
    after_calls = tracemalloc.get_traced_memory()[0]
    events = len(world.events) - base_events
    assert world.trace.count() == calls
    gc.collect()
    after_trace = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return {
        "events": events,
        "log": (after_calls - start) / events,
        "trace": (after_trace - after_calls) / events,
    }


def bounded(calls: int, keep: int) -> dict[str, float]:
    from faultbench.kernel.lowlevel import keep_events

    world = faultbench.load_world(WORLD, faults=False)
    keep_events(world, keep)
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    half = calls // 2
    marks = []
    for part in (half, calls - half):
        for i in range(0, part, 1000):
            run_calls(world, min(1000, part - i))
            world.trace.count()
        gc.collect()
        marks.append(tracemalloc.get_traced_memory()[0] - start)
    tracemalloc.stop()
    events = world.events
    return {
        "events": len(events),
        "held": len(events) - events.first,
        "half": marks[0],
        "all": marks[1],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--traced", type=int, default=None)
    parser.add_argument("--keep", type=int, default=10_000)
    args = parser.parse_args()
    traced = args.traced if args.traced is not None else max(args.calls // 10, 1)
    print(f"{platform.python_version()}, faultbench {faultbench.__version__}")
    r = by_rss(args.calls)
    print(
        f"RSS, {args.calls:_} calls ({r['events']:_} events, {r['seconds']:.1f} s): "
        f"log {r['log']:.0f} B/event, trace {r['trace']:.0f} B/event, "
        f"together {(r['log'] + r['trace']) * r['events'] / args.calls:.0f} B/call"
    )
    t = by_tracemalloc(traced)
    print(
        f"tracemalloc, {traced:_} calls ({t['events']:_} events): "
        f"log {t['log']:.0f} B/event, trace {t['trace']:.0f} B/event"
    )
    if args.keep:
        b = bounded(traced, args.keep)
        print(
            f"bounded (keep_events {args.keep:_}), tracemalloc, {traced:_} calls "
            f"({b['events']:_} events, {b['held']:_} held): live "
            f"{b['half'] / 2**20:.1f} MiB after half the calls, {b['all'] / 2**20:.1f} MiB after all"
        )


if __name__ == "__main__":
    main()
