"""How `World.acall` forms batches cheaply: a sequential caller never waits on the event loop,
concurrent callers still share a batch, and nothing test-only (pytest) is imported."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import trio
import trio.testing

from faultbench.kernel import World, load_spec

SPEC = load_spec(Path(__file__).resolve().parents[1] / "worlds" / "faults.yaml")


def fresh() -> World:
    return World.from_spec(SPEC, run=1, faults=False)


class _Steps(trio.abc.Instrument):
    """Counts how often the scheduler resumes one task."""

    def __init__(self, task) -> None:
        self.task = task
        self.steps = 0

    def before_task_step(self, task) -> None:
        if task is self.task:
            self.steps += 1


def test_sequential_trio_calls_never_wait_on_the_loop():
    world = fresh()

    async def main() -> tuple[int, list]:
        await trio.testing.wait_all_tasks_blocked()  # trio's own start-up tasks are done
        steps = _Steps(trio.lowlevel.current_task())
        trio.lowlevel.add_instrument(steps)
        results = [await world.acall("get_order", {"id": str(1 + i % 3)}) for i in range(10)]
        trio.lowlevel.remove_instrument(steps)
        return steps.steps, results

    steps, results = trio.run(main)
    assert steps == 0  # no checkpoint: the task was never suspended
    assert [r.call_id for r in results] == [f"c{i}" for i in range(1, 11)]
    assert all(r.ok for r in results)


def test_sequential_asyncio_calls_never_wait_on_the_loop():
    world = fresh()
    passes = 0

    class CountingLoop(asyncio.SelectorEventLoop):
        def _run_once(self) -> None:
            nonlocal passes
            passes += 1
            super()._run_once()

    async def main() -> list:
        before = passes
        results = [await world.acall("get_order", {"id": "1"}) for _ in range(10)]
        return [passes - before, results]

    loop = CountingLoop()
    try:
        used, results = loop.run_until_complete(main())
    finally:
        loop.close()
    assert used == 0
    assert all(r.ok for r in results)


def test_a_call_waits_for_a_task_that_is_runnable_now():
    # The other task is ready to run (started in the same tick) when the first call is made:
    # it might call too, so the first call gathers a batch, and both start together.
    world = fresh()
    results: list = []

    async def one(i: int) -> None:
        results.append(await world.acall("get_order", {"id": str(i)}))

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, 1)
            nursery.start_soon(one, 2)

    trio.run(main)
    assert len({r.started_at for r in results}) == 1
    assert sorted(r.call_id for r in results) == ["c1", "c2"]


def test_two_worlds_gathering_at_once_both_finish():
    worlds = [fresh(), fresh()]
    got: list = []

    async def one(world: World, i: int) -> None:
        got.append(await world.acall("get_order", {"id": str(1 + i % 3)}))

    async def main() -> None:
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                for i in range(6):
                    nursery.start_soon(one, worlds[i % 2], i)

    trio.run(main)
    assert len(got) == 6
    assert [len(w.trace.calls) for w in worlds] == [3, 3]


def test_trio_acall_does_not_import_pytest():
    # `trio.testing` imports pytest; a production server must not load it.
    code = textwrap.dedent(
        f"""
        import sys, trio
        from faultbench.kernel import World
        from faultbench.kernel import load_spec

        world = World.from_spec(load_spec({str(SPEC.path)!r}), faults=False)

        async def late():
            for _ in range(3):
                await trio.lowlevel.checkpoint()
            await world.acall("get_order", {{"id": "2"}})

        async def main():
            await world.acall("get_order", {{"id": "1"}})  # alone
            async with trio.open_nursery() as nursery:  # together: the batch path
                for i in range(3):
                    nursery.start_soon(world.acall, "get_order", {{"id": str(i + 1)}})
                nursery.start_soon(late)  # keeps the batch waiting for everyone to block

        trio.run(main)
        calls = world.trace.calls
        assert len(calls) == 5 and len({{c.started_at for c in calls}}) == 1, calls
        print("pytest" in sys.modules, "trio.testing" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["False", "False"]
