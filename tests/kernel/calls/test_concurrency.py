"""Concurrent `World.acall`: calls in flight together start at the same virtual time, complete
in order of virtual completion time, commit their writes in that order, and give one event log
however trio or asyncio interleave the tasks."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import trio

from faultbench.kernel import (
    CallFailed,
    CallStarted,
    CallSucceeded,
    RecordCreated,
    World,
    encode_events,
    replay,
)
from faultbench.kernel.lowlevel import load_spec

SPEC = load_spec(Path(__file__).resolve().parents[2] / "worlds" / "faults.yaml")
T0 = datetime(2025, 6, 1, tzinfo=UTC)

RULES = {
    "default": {"latency_ms": [10, 3000]},
    "orders.create_order": {"errors": {"timeout": {"p": 0.3, "timeout_s": 1}}},
}
#: 8 calls; their latencies differ (each is drawn from its own (operation, k))
CALLS = [
    *[("create_order", {"status": "placed", "total": float(i)}) for i in range(5)],
    ("get_order", {"id": "1"}),
    ("list_orders", {"status": "placed"}),
    ("issue_refund", {"order_id": "2", "amount": 3.0}),
]


def fresh() -> World:
    world = World.from_spec(SPEC, run=1)
    world.set_faults(RULES)
    return world


def shuffled(seed: int) -> list[tuple[str, dict]]:
    calls = list(CALLS)
    random.Random(seed).shuffle(calls)
    return calls


def under_trio(world: World, calls) -> list:
    results: list = [None] * len(calls)

    async def one(i: int, tool: str, args: dict) -> None:
        results[i] = await world.acall(tool, args)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            for i, (tool, args) in enumerate(calls):
                nursery.start_soon(one, i, tool, args)

    trio.run(main)
    return results


def under_asyncio(world: World, calls) -> list:
    async def main() -> list:
        return await asyncio.gather(*(world.acall(tool, args) for tool, args in calls))

    return asyncio.run(main())


@pytest.mark.parametrize("runner", [under_trio, under_asyncio], ids=["trio", "asyncio"])
def test_eight_concurrent_calls_give_one_log_100_times(runner):
    logs = set()
    for attempt in range(100):
        world = fresh()
        results = runner(world, shuffled(attempt))
        assert all(r is not None for r in results)
        logs.add(encode_events(world.events))
    assert len(logs) == 1


def test_trio_and_asyncio_give_the_same_log():
    a, b = fresh(), fresh()
    under_trio(a, shuffled(1))
    under_asyncio(b, shuffled(2))
    assert encode_events(a.events) == encode_events(b.events)


def test_calls_start_together_and_complete_in_virtual_time_order():
    world = fresh()
    results = under_trio(world, CALLS)
    assert len({r.started_at for r in results}) == 1
    assert results[0].started_at == T0
    durations = {r.call_id: r.finished_at - T0 for r in results}
    assert len(set(durations.values())) == 8  # different latencies, as the test intends
    assert any(r.error_kind == "timeout" for r in results)  # one finishes long after its write

    events = list(world.events)
    starts = [i for i, e in enumerate(events) if isinstance(e, CallStarted)]
    ends = [e for e in events if isinstance(e, CallSucceeded | CallFailed)]
    first_end = events.index(ends[0])
    assert max(starts) < first_end  # every call started before any finished
    assert [e.at for e in ends] == sorted(e.at for e in ends)
    for e in ends:
        assert e.at == T0 + durations[e.call_id]
    # the clock after the batch is the last completion; nothing waited for real
    assert world.clock.now() == T0 + max(durations.values())

    # writes commit when each call's latency has elapsed, in that order
    created = [e for e in events if isinstance(e, RecordCreated) and e.call_id]
    assert [e.at for e in created] == sorted(e.at for e in created)
    for e in created:
        result = next(r for r in results if r.call_id == e.call_id)
        latency = timedelta(seconds=result.latency_s - (1 if result.error_kind else 0))
        assert e.at == T0 + latency


def test_call_ids_and_k_follow_the_canonical_order():
    world = fresh()
    results = under_asyncio(world, shuffled(5))
    by_id = sorted(results, key=lambda r: int(r.call_id[1:]))
    assert [r.tool for r in by_id] == [
        "create_order",
        "create_order",
        "create_order",
        "create_order",
        "create_order",
        "get_order",
        "issue_refund",
        "list_orders",
    ]
    creates = [r for r in by_id if r.tool == "create_order"]
    assert [r.k for r in creates] == [1, 2, 3, 4, 5]
    assert [r.args["total"] for r in creates] == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_a_batch_matches_the_same_calls_made_one_by_one_in_its_decisions():
    together = fresh()
    under_trio(together, CALLS)
    alone = fresh()
    for tool, args in sorted(CALLS, key=lambda c: (c[0], str(sorted(c[1].items())))):
        alone.call(tool, args)

    def decisions(world: World) -> list:
        return sorted((c.tool, c.k, c.fault, c.latency_s) for c in world.trace.calls)

    assert decisions(together) == decisions(alone)


def test_sequential_awaits_are_batches_of_one():
    world = fresh()

    async def main() -> list:
        return [await world.acall("get_order", {"id": "1"}) for _ in range(3)]

    first, second, third = asyncio.run(main())
    assert second.started_at == first.finished_at
    assert third.started_at == second.finished_at


def test_rejected_calls_in_a_batch_answer_at_once():
    world = fresh()
    results = under_trio(world, [("get_order", {"id": 5}), ("nope", {}), *CALLS[:2]])
    assert [r.error_kind for r in results[:2]] == ["invalid_arguments", "unknown_tool"]
    assert all(r.latency_s == 0 for r in results[:2])
    assert replay(SPEC, world.events).state_hash() == world.state_hash()


def test_tasks_that_arrive_one_checkpoint_late_still_join_under_trio():
    world = fresh()
    results: list = []

    async def late(delay: int) -> None:
        for _ in range(delay):
            await trio.lowlevel.checkpoint()
        results.append(await world.acall("get_order", {"id": str(1 + delay % 3)}))

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            for delay in (0, 0, 1, 1):
                nursery.start_soon(late, delay)

    trio.run(main)
    assert len({r.started_at for r in results}) == 1


def test_a_cancelled_caller_does_not_strand_the_others():
    world = fresh()

    async def main() -> list:
        tasks = [asyncio.create_task(world.acall(t, a)) for t, a in CALLS[:3]]
        await asyncio.sleep(0)  # all three registered; the first is gathering the batch
        tasks[0].cancel()
        return await asyncio.gather(*tasks, return_exceptions=True)

    first, *rest = asyncio.run(main())
    assert isinstance(first, asyncio.CancelledError)
    assert all(r.ok or r.error_kind for r in rest)
    assert world.trace.count() == 2  # the cancelled call was never sent


async def test_acall_under_pytest_trio(nursery):
    world = fresh()
    done = trio.Event()
    got: list = []

    async def one(tool: str, args: dict) -> None:
        got.append(await world.acall(tool, args))
        if len(got) == 2:
            done.set()

    nursery.start_soon(one, "get_order", {"id": "1"})
    nursery.start_soon(one, "get_order", {"id": "2"})
    await done.wait()
    assert got[0].started_at == got[1].started_at


test_acall_under_pytest_trio = pytest.mark.trio(test_acall_under_pytest_trio)


#: a batch with everything that can go wrong at once: a handler that refuses, an invalid call,
#: an unknown tool, and two writes to each of two records
MIXED = [
    ("issue_refund", {"order_id": "9", "amount": 1.0}),  # the handler raises: order 9 missing
    ("get_order", {"id": 5}),  # invalid
    ("refund_everything", {}),  # unknown
    ("delete_order", {"id": "3"}),
    ("delete_order", {"id": "3"}),
    ("update_order", {"id": "1", "total": 1.0}),
    ("update_order", {"id": "1", "total": 2.0}),
    ("issue_refund", {"order_id": "1", "amount": 2.0}),
    ("get_order", {"id": "1"}),
]


@pytest.mark.parametrize("runner", [under_trio, under_asyncio], ids=["trio", "asyncio"])
def test_a_batch_with_failures_and_conflicting_writes_gives_one_log(runner):
    logs = set()
    for attempt in range(20):
        world = World.from_spec(SPEC, run=4)
        world.set_faults({"default": {"latency_ms": [10, 3000]}})
        order = list(range(len(MIXED)))
        random.Random(attempt).shuffle(order)
        got = runner(world, [MIXED[i] for i in order])
        result = dict(zip(order, got))  # position in MIXED -> its result
        logs.add(encode_events(world.events))
    assert len(logs) == 1

    assert result[0].error_kind == "handler_error"
    assert result[1].error_kind == "invalid_arguments"
    assert result[2].error_kind == "unknown_tool"
    # Each operation runs against the state as of its own completion, not its start: of two
    # deletes of one record the later one finds nothing, and of two updates the later wins.
    deletes = sorted((result[3], result[4]), key=lambda r: r.finished_at)
    assert deletes[0].finished_at < deletes[1].finished_at
    assert (deletes[0].ok, deletes[1].error_kind) == (True, "not_found")
    updates = sorted((result[5], result[6]), key=lambda r: r.finished_at)
    assert updates[0].finished_at < updates[1].finished_at
    assert world.orders.get("1").total == updates[1].args["total"]
    # a read sees whatever committed before it in virtual time
    read = result[8]
    committed = [u for u in updates if u.finished_at <= read.finished_at]
    expected_total = committed[-1].args["total"] if committed else 10.0
    assert read.value["total"] == expected_total
    assert replay(SPEC, world.events).state_hash() == world.state_hash()
