"""How `World.acall` forms batches: every call that arrives in the event-loop pass of the
batch's first call or in the pass right after it. Membership depends on pass numbers only, so
trio (which shuffles the tasks of a pass) and asyncio give the same log, byte for byte; the
first caller waits exactly two passes, so a task spinning on `sleep(0)` cannot stall it; and
the kernel gets there through public APIs only.

Every test that runs an event loop is bounded in real time (`trio.fail_after`,
`asyncio.timeout`), so a scheduling regression fails instead of hanging."""

from __future__ import annotations

import asyncio
import itertools
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import trio

import faultbench
from faultbench.kernel import World, encode_events
from faultbench.kernel._calls import Pipeline
from faultbench.kernel.lowlevel import load_spec

SPEC = load_spec(Path(__file__).resolve().parents[2] / "worlds" / "faults.yaml")
SRC = Path(faultbench.__file__).resolve().parent
LIMIT_S = 10  # real seconds; every run here takes milliseconds

#: 8 calls; with the latency rule below every one takes a different virtual time
CALLS = [
    *[("create_order", {"status": "placed", "total": float(i)}) for i in range(4)],
    ("get_order", {"id": "1"}),
    ("list_orders", {"status": "placed"}),
    ("issue_refund", {"order_id": "2", "amount": 3.0}),
    ("update_order", {"id": "1", "total": 7.0}),
]


def fresh() -> World:
    world = World.from_spec(SPEC, run=1)
    world.set_faults({"default": {"latency_ms": [10, 3000]}})
    return world


# --- drivers: the same program under trio and under asyncio -----------------------------------
# `plan` is a list of (delay, tool, args): the task awaits `sleep(0)` `delay` times, then
# calls. Tasks are started in the order of `plan`, all at once; `spin` adds a task that loops
# on `sleep(0)` until the calls are done.


def under_trio(world: World, plan, spin: bool = False) -> list:
    results: list = [None] * len(plan)

    async def one(i: int, delay: int, tool: str, args: dict) -> None:
        for _ in range(delay):
            await trio.sleep(0)
        results[i] = await world.acall(tool, args)

    async def spinner() -> None:
        while True:
            await trio.sleep(0)

    async def main() -> None:
        with trio.fail_after(LIMIT_S):
            async with trio.open_nursery() as outer:
                if spin:
                    outer.start_soon(spinner)
                async with trio.open_nursery() as nursery:
                    for i, (delay, tool, args) in enumerate(plan):
                        nursery.start_soon(one, i, delay, tool, args)
                outer.cancel_scope.cancel()

    trio.run(main)
    return results


def under_asyncio(world: World, plan, spin: bool = False) -> list:
    async def one(delay: int, tool: str, args: dict):
        for _ in range(delay):
            await asyncio.sleep(0)
        return await world.acall(tool, args)

    async def spinner() -> None:
        while True:
            await asyncio.sleep(0)

    async def main() -> list:
        async with asyncio.timeout(LIMIT_S):
            spinning = asyncio.create_task(spinner()) if spin else None
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(one(*step)) for step in plan]
            if spinning is not None:
                spinning.cancel()
            return [t.result() for t in tasks]

    return asyncio.run(main())


RUNNERS = pytest.mark.parametrize("runner", [under_trio, under_asyncio], ids=["trio", "asyncio"])


def log_of(runner, plan, spin: bool = False) -> tuple[bytes, list]:
    world = fresh()
    results = runner(world, plan, spin)
    return encode_events(world.events), results


# --- no liveness hole -------------------------------------------------------------------------


@RUNNERS
def test_a_call_returns_while_another_task_spins(runner):
    results = runner(fresh(), [(0, "list_orders", {})], spin=True)
    assert results[0].ok


def test_twenty_sequential_calls_finish_next_to_a_spinner_under_trio():
    world = fresh()

    async def agent() -> list:
        return [await world.acall("get_order", {"id": str(1 + i % 3)}) for i in range(20)]

    async def main() -> list:
        with trio.fail_after(LIMIT_S):
            async with trio.open_nursery() as nursery:

                async def spinner() -> None:
                    while True:
                        await trio.sleep(0)

                nursery.start_soon(spinner)
                got = await agent()
                nursery.cancel_scope.cancel()
        return got

    assert_sequential(trio.run(main))


def test_twenty_sequential_calls_finish_next_to_a_spinner_under_asyncio():
    world = fresh()

    async def spinner() -> None:
        while True:
            await asyncio.sleep(0)

    async def main() -> list:
        async with asyncio.timeout(LIMIT_S):
            spinning = asyncio.create_task(spinner())
            got = [await world.acall("get_order", {"id": str(1 + i % 3)}) for i in range(20)]
            spinning.cancel()
        return got

    assert_sequential(asyncio.run(main()))


def assert_sequential(results: list) -> None:
    assert [r.call_id for r in results] == [f"c{i}" for i in range(1, 21)]
    for before, after in itertools.pairwise(results):
        assert after.started_at == before.finished_at  # batches of one, one after the other


# --- which calls share a batch ----------------------------------------------------------------


def test_a_lone_call_gives_the_same_log_under_trio_and_asyncio():
    plan = [(0, "get_order", {"id": "1"})]
    a, (result,) = log_of(under_trio, plan)
    b, _ = log_of(under_asyncio, plan)
    assert a == b
    assert result.call_id == "c1"
    assert result.started_at == fresh().clock.now()


def test_eight_calls_started_together_form_one_batch_under_trio_and_asyncio():
    plan = [(0, tool, args) for tool, args in CALLS]
    a, results = log_of(under_trio, plan)
    b, _ = log_of(under_asyncio, plan)
    assert a == b
    assert {r.started_at for r in results} == {fresh().clock.now()}
    assert len({r.finished_at for r in results}) == 8


#: arrival pass -> the batch it lands in: passes 0 and 1 open and join the first batch, pass 2
#: is after its window closed and opens the second, pass 3 joins that one
STAGGERED = [(delay, *CALLS[i]) for i, delay in enumerate([0, 1, 2, 3, 0, 1, 2, 3])]


@pytest.mark.parametrize("spin", [False, True], ids=["alone", "spinner"])
def test_calls_after_one_two_or_three_sleeps_batch_by_pass(spin):
    a, results = log_of(under_trio, STAGGERED, spin)
    b, _ = log_of(under_asyncio, STAGGERED, spin)
    assert a == b
    t0 = fresh().clock.now()
    first = [r for (delay, *_), r in zip(STAGGERED, results) if delay < 2]
    second = [r for (delay, *_), r in zip(STAGGERED, results) if delay >= 2]
    assert {r.started_at for r in first} == {t0}
    # the second batch starts once the first has been resolved: at its last completion
    assert {r.started_at for r in second} == {max(r.finished_at for r in first)}
    assert sorted(r.call_id for r in first) == ["c1", "c2", "c3", "c4"]


def test_a_spinner_does_not_change_the_log():
    assert log_of(under_trio, STAGGERED, spin=True)[0] == log_of(under_trio, STAGGERED)[0]


@RUNNERS
def test_staggered_calls_give_one_log_100_times_whatever_order_tasks_start_in(runner):
    logs = set()
    for attempt in range(100):
        plan = list(STAGGERED)
        random.Random(attempt).shuffle(plan)
        logs.add(log_of(runner, plan)[0])
    assert logs == {log_of(under_trio, STAGGERED)[0]}


def test_a_late_task_starts_a_third_batch():
    plan = [(delay, "get_order", {"id": str(1 + delay % 3)}) for delay in range(5)]
    _, results = log_of(under_trio, plan)
    starts = [r.started_at for r in results]
    assert starts[0] == starts[1] < starts[2] == starts[3] < starts[4]
    assert log_of(under_asyncio, plan)[0] == log_of(under_trio, plan)[0]


def test_two_worlds_gather_their_own_batches():
    worlds = [fresh(), fresh()]
    got: list = []

    async def one(world: World, i: int) -> None:
        got.append((world, await world.acall("get_order", {"id": str(1 + i % 3)})))

    async def main() -> None:
        with trio.fail_after(LIMIT_S):
            async with trio.open_nursery() as nursery:
                for i in range(6):
                    nursery.start_soon(one, worlds[i % 2], i)

    trio.run(main)
    assert [len(w.trace.calls) for w in worlds] == [3, 3]
    for world in worlds:
        assert len({r.started_at for w, r in got if w is world}) == 1


# --- the shortcut: a call that is alone under trio runs at once -------------------------------


class _Steps:
    """trio instrument: counts how often the scheduler resumes one task."""

    def __init__(self, task) -> None:
        self.task = task
        self.steps = 0

    def before_task_step(self, task) -> None:
        if task is self.task:
            self.steps += 1


def test_sequential_calls_under_trio_do_not_wait_on_the_loop():
    world = fresh()

    async def main() -> tuple[int, list]:
        with trio.fail_after(LIMIT_S):
            await world.acall("get_order", {"id": "1"})  # the run's first call: two passes
            steps = _Steps(trio.lowlevel.current_task())
            trio.lowlevel.add_instrument(steps)
            got = [await world.acall("get_order", {"id": str(1 + i % 3)}) for i in range(20)]
            trio.lowlevel.remove_instrument(steps)
        return steps.steps, got

    steps, results = trio.run(main)
    assert steps == 0  # never suspended: each call was alone, so it ran at once
    assert [r.call_id for r in results] == [f"c{i}" for i in range(2, 22)]


def sequential_agent_and_a_waiter(runner_lib: str) -> bytes:
    """Task A makes three calls, then wakes B, which makes two; C makes one call after
    sleeping twice. A's calls are alone under trio once C has called (not before)."""
    world = fresh()
    lib = trio if runner_lib == "trio" else asyncio

    async def a(woken) -> None:
        for i in range(3):
            await world.acall("create_order", {"status": "placed", "total": float(i)})
        woken.set()

    async def b(woken) -> None:
        await woken.wait()
        await world.acall("get_order", {"id": "1"})
        await world.acall("list_orders", {})

    async def c() -> None:
        for _ in range(2):
            await lib.sleep(0)
        await world.acall("get_order", {"id": "2"})

    async def trio_main() -> None:
        woken = trio.Event()
        with trio.fail_after(LIMIT_S):
            async with trio.open_nursery() as nursery:
                for task, args in ((a, (woken,)), (b, (woken,)), (c, ())):
                    nursery.start_soon(task, *args)

    async def asyncio_main() -> None:
        woken = asyncio.Event()
        async with asyncio.timeout(LIMIT_S), asyncio.TaskGroup() as group:
            for task, args in ((a, (woken,)), (b, (woken,)), (c, ())):
                group.create_task(task(*args))

    if runner_lib == "trio":
        trio.run(trio_main)
    else:
        asyncio.run(asyncio_main())
    return encode_events(world.events)


def test_the_shortcut_gives_the_log_asyncio_gives_without_it():
    trio_logs = {sequential_agent_and_a_waiter("trio") for _ in range(30)}
    assert trio_logs == {sequential_agent_and_a_waiter("asyncio")}


def a_call_and_a_wake_up(runner_lib: str) -> bytes:
    """A calls; in the same pass X wakes Y, which calls at once: Y arrives in the next pass,
    so it shares A's batch, whichever of A and X trio runs first."""
    world = fresh()

    async def a() -> None:
        await world.acall("get_order", {"id": "1"})

    async def x(woken) -> None:
        woken.set()

    async def y(woken) -> None:
        await woken.wait()
        await world.acall("get_order", {"id": "2"})

    async def trio_main() -> None:
        with trio.fail_after(LIMIT_S):
            await world.acall("list_orders", {})  # trio counts passes from here on
            woken = trio.Event()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(y, woken)
                nursery.start_soon(a)
                nursery.start_soon(x, woken)

    async def asyncio_main() -> None:
        async with asyncio.timeout(LIMIT_S):
            await world.acall("list_orders", {})
            woken = asyncio.Event()
            async with asyncio.TaskGroup() as group:
                group.create_task(y(woken))
                group.create_task(a())
                group.create_task(x(woken))

    if runner_lib == "trio":
        trio.run(trio_main)
    else:
        asyncio.run(asyncio_main())
    calls = world.trace.calls
    assert calls[1].started_at == calls[2].started_at  # one batch
    return encode_events(world.events)


def test_a_task_woken_in_the_same_pass_keeps_the_call_from_running_alone():
    trio_logs = {a_call_and_a_wake_up("trio") for _ in range(30)}
    assert trio_logs == {a_call_and_a_wake_up("asyncio")}


def test_a_call_waits_when_another_task_is_runnable():
    # The other task is runnable (started in the same pass): the first call cannot know it
    # will not call too, so it gathers a batch, and both start together.
    world = fresh()
    results: list = []

    async def one(i: int) -> None:
        results.append(await world.acall("get_order", {"id": str(i)}))

    async def main() -> None:
        with trio.fail_after(LIMIT_S):
            await world.acall("get_order", {"id": "3"})  # the ticker is counting from here
            async with trio.open_nursery() as nursery:
                nursery.start_soon(one, 1)
                nursery.start_soon(one, 2)

    for _ in range(10):
        results.clear()
        trio.run(main)
        assert len({r.started_at for r in results}) == 1


# --- cancellation and bugs --------------------------------------------------------------------


def test_a_cancelled_first_caller_does_not_strand_the_others_under_trio():
    world = fresh()
    outcome: list = []
    got: list = []

    async def first() -> None:
        with trio.CancelScope() as scope:
            scope.cancel()  # delivered at the first checkpoint: while gathering its batch
            await world.acall("get_order", {"id": "1"})
        outcome.append(scope.cancelled_caught)

    async def other(i: int) -> None:
        got.append(await world.acall("get_order", {"id": str(i)}))

    async def main() -> None:
        with trio.fail_after(LIMIT_S):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(first)
                nursery.start_soon(other, 2)
                nursery.start_soon(other, 3)

    for _ in range(20):  # whichever of the three trio runs first
        world = fresh()
        outcome.clear()
        got.clear()
        trio.run(main)
        assert outcome == [True]
        assert sorted(r.args["id"] for r in got) == ["2", "3"]
        assert world.trace.count() == 2  # the cancelled call was never sent


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


@RUNNERS
def test_a_bug_while_running_a_batch_reaches_every_caller(runner, monkeypatch):
    class Bug(Exception):
        pass

    def broken(self, calls):
        raise Bug("call_together")

    monkeypatch.setattr(Pipeline, "call_together", broken)  # the batch runs in the pipeline
    with pytest.raises(BaseException) as info:
        runner(fresh(), [(0, tool, args) for tool, args in CALLS[:3]])
    found = leaves(info.value)
    assert len(found) == 3
    assert all(isinstance(e, Bug) for e in found)


def test_a_coroutine_driven_by_hand_runs_at_once():
    world = fresh()
    coro = world.acall("get_order", {"id": "1"})
    with pytest.raises(StopIteration) as stop:
        coro.send(None)
    assert stop.value.value.ok
    assert world.trace.count() == 1


def test_acall_under_trio_imports_nothing_test_only():
    # `trio.testing` imports pytest; a production server must load neither.
    code = textwrap.dedent(
        f"""
        import sys, trio
        from faultbench.kernel import World
        from faultbench.kernel.lowlevel import load_spec

        world = World.from_spec(load_spec({str(SPEC.path)!r}), faults=False)

        async def main():
            await world.acall("get_order", {{"id": "1"}})
            async with trio.open_nursery() as nursery:
                for i in range(3):
                    nursery.start_soon(world.acall, "get_order", {{"id": str(i + 1)}})
            await world.acall("get_order", {{"id": "2"}})

        trio.run(main)
        assert world.trace.count() == 5
        print("pytest" in sys.modules, "trio.testing" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["False", "False"]


# --- public APIs only -------------------------------------------------------------------------

#: what the package must never name: trio's and asyncio's internals, frame walking
FORBIDDEN = [
    "trio._core",
    "sys._getframe",
    "_getframe",
    "GLOBAL_RUN_CONTEXT",
    "._ready",
    "._scheduled",
    "._run_once",
    "_get_running_loop",
]
#: a private attribute read off an event loop (`loop._x`, `get_running_loop()._x`)
PRIVATE_LOOP_ATTRIBUTE = re.compile(r"(\bloop|get_event_loop\(\)|get_running_loop\(\))\._\w")
#: the kernel finds trio and asyncio in sys.modules; it never imports them
KERNEL_IMPORT = re.compile(r"^\s*(import|from)\s+(trio|asyncio|sniffio|anyio)\b", re.M)


def sources() -> list[Path]:
    found = sorted(SRC.rglob("*.py"))
    assert len(found) > 20
    assert SRC / "kernel" / "_calls" / "_schedule.py" in found
    return found


def test_the_package_uses_no_private_api_of_trio_or_asyncio():
    problems = []
    for path in sources():
        text = path.read_text()
        problems += [f"{path.relative_to(SRC)}: {name}" for name in FORBIDDEN if name in text]
        problems += [
            f"{path.relative_to(SRC)}: {m.group(0)}" for m in PRIVATE_LOOP_ATTRIBUTE.finditer(text)
        ]
    assert problems == []


#: a private module of another package (`yaml._yaml`, `mcp.shared._x`, `_pytest.x`)
PRIVATE_MODULE_IMPORT = re.compile(
    r"^\s*(?:from|import)\s+(?!faultbench\b)((?:\w+\.)*_[A-Za-z]\w*)(?:\s|\.|$)", re.M
)


def test_the_package_imports_no_private_module_of_a_dependency():
    problems = [
        f"{path.relative_to(SRC)}: {m.group(1)}"
        for path in sources()
        for m in PRIVATE_MODULE_IMPORT.finditer(path.read_text())
    ]
    assert problems == []


def test_the_kernel_imports_no_event_loop_library():
    problems = [
        f"{path.relative_to(SRC)}: {m.group(0).strip()}"
        for path in sources()
        if "kernel" in path.relative_to(SRC).parts
        for m in KERNEL_IMPORT.finditer(path.read_text())
    ]
    assert problems == []
