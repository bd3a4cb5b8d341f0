"""A World called from several threads: calls are serialised (`Book.lock`), each atomic, the
log consistent, and each call's result a function of the calls admitted before it.

8 threads x 250 calls on the shop world's tools (faults on: latency, timeouts that commit,
503s, custom handlers that write), directly and through `asyncio.to_thread`.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import faultbench
from faultbench import CallStarted, encode_events

SHOP = Path(__file__).resolve().parents[3] / "examples" / "shop" / "worlds" / "shop.yaml"
THREADS, CALLS = 8, 250


def _calls(worker: int) -> list[tuple[str, dict]]:
    rng = random.Random(worker)
    out = []
    for _ in range(CALLS):
        order = str(rng.randint(1, 30))
        out.append(
            rng.choice(
                [
                    ("get_order", {"id": order}),
                    ("list_orders", {"status": "delivered"}),
                    ("issue_refund", {"order_id": order, "amount": 1.0}),
                    ("create_return", {"order_id": order, "reason": "damaged"}),
                    ("get_customer", {"id": str(rng.randint(1, 12))}),
                    ("no_such_tool", {}),
                ]
            )
        )
    return out


def _check(world, results: list) -> None:
    # no call raised, and every answer is a complete call of the log
    assert len(results) == THREADS * CALLS
    trace = world.trace
    assert len(trace) == THREADS * CALLS
    ids = [r.call_id for r in results]
    assert len(set(ids)) == len(ids)
    # k numbers each tool's valid calls 1, 2, 3... in admission order, with no gap
    ks: dict[str, list[int]] = {}
    for ev in world.events:
        if isinstance(ev, CallStarted) and ev.k is not None:
            ks.setdefault(ev.tool, []).append(ev.k)
    assert all(k == list(range(1, len(k) + 1)) for k in ks.values())
    assert [e.seq for e in world.events] == list(range(len(world.events)))
    # the log replays to the live state
    assert faultbench.replay(SHOP, world.events).state_hash() == world.state_hash()


def _sequential_log(world) -> bytes:
    """The calls of `world`'s log, in the order they were admitted, made again one after
    the other on a fresh world: the same log, byte for byte."""
    fresh = faultbench.load_world(SHOP)
    for ev in world.events:
        if isinstance(ev, CallStarted):
            fresh.call(ev.tool, ev.args)
    return encode_events(fresh.events)


def test_eight_threads_calling_one_world():
    world = faultbench.load_world(SHOP)
    with ThreadPoolExecutor(THREADS) as pool:
        batches = list(pool.map(lambda w: [world.call(t, a) for t, a in _calls(w)], range(THREADS)))
    results = [r for batch in batches for r in batch]
    _check(world, results)
    assert Counter(r.ok for r in results)[True] > 0
    assert world.trace.faults()  # faults were injected under contention too
    assert _sequential_log(world) == encode_events(world.events)


def test_threads_writing_tables_and_the_clock_while_others_call():
    world = faultbench.load_world(SHOP)
    stop = threading.Event()

    def writer() -> int:
        n = 0
        while not stop.is_set() and n < 500:
            world.clock.advance(1)
            world.customers.update(str(n % 12 + 1), city=f"city {n}")
            n += 1
        return n

    with ThreadPoolExecutor(THREADS + 1) as pool:
        wrote = pool.submit(writer)
        batches = list(pool.map(lambda w: [world.call(t, a) for t, a in _calls(w)], range(THREADS)))
        stop.set()
        assert wrote.result() > 0
    _check(world, [r for batch in batches for r in batch])


def test_calls_through_asyncio_to_thread():
    world = faultbench.load_world(SHOP)

    async def main() -> list:
        def work(w: int) -> list:
            return [world.call(t, a) for t, a in _calls(w)]

        batches = await asyncio.gather(*(asyncio.to_thread(work, w) for w in range(THREADS)))
        return [r for batch in batches for r in batch]

    _check(world, asyncio.run(main()))
