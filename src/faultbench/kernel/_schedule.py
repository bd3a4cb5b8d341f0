"""Calls in flight together, in virtual time.

`run_batch(world, calls)` runs calls that were made at the same moment: all start at the
world's current virtual time; each one's operation runs when its latency has elapsed and its
answer arrives at start + latency (+ timeout_s for a timeout). The stages of all calls are
merged in order of virtual time, ties broken by arrival order, so writes commit in the order
of virtual completion, whatever order the event loop happened to run the tasks in. Nothing
waits in real time: the clock jumps from one stage to the next. A lone `World.call` is a
batch of one.

`join(world, tool, args)` is `World.acall`: it forms batches out of concurrent tasks.

Forming a batch
---------------
The first `acall` of a batch registers itself and yields to the event loop until no other
task can still join. Under trio: until every other task is blocked; after one checkpoint it
checks that itself ("alone" below), else it waits in `wait_all_tasks_blocked` (taken from
`trio._core`: `trio.testing` imports pytest). Under asyncio: until a
pass through the ready queue brings no new arrival (asyncio runs ready callbacks first-in,
first-out, so one quiet pass means every task that was ready has had its turn). Then the
batch runs, synchronously.

A call is "alone" when no other task is runnable now: under asyncio, the loop's ready queue
is empty; under trio, its run queue is empty and so is the rest of the batch of tasks the
scheduler is stepping through (a local of its loop, read through its frame). A lone call that
is alone, with no batch being gathered, runs at once: waiting would bring no one, only give
the loop one more I/O poll and timer check, and a task woken by either is a later call, not
a concurrent one. This spares a sequential agent (the common case, and every in-process MCP
client) two trips through the event loop per call, which cost more than the call itself.
With another loop (uvloop), or a trio whose internals differ, calls always wait as above.

Arrival order itself is not deterministic (trio shuffles the tasks it runs in one tick, on
purpose), so a batch is first put into canonical order: by tool name, then by the canonical
JSON of the arguments, then by arrival. Call ids and each operation's `k` follow that order,
so the same set of concurrent calls gives the same log, byte for byte. Calls that compare
equal in the first two keys are identical requests, so which of them arrived first cannot
change the log.

trio and asyncio are imported inside the functions that need them, never at module level.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._results import CallResult
    from ._world import World


# ---------------------------------------------------------------------------------------------
# Forming batches out of concurrent tasks
# ---------------------------------------------------------------------------------------------


class _Pending:
    __slots__ = ("args", "error", "result", "tool")

    def __init__(self, tool: str, args: Any):
        self.tool = tool
        self.args = args
        self.result: CallResult | None = None
        self.error: BaseException | None = None


class _Batch:
    __slots__ = ("calls", "done")

    def __init__(self, done: Any):
        self.calls: list[_Pending] = []
        self.done = done  # trio.Event or asyncio.Event


def _library() -> str:
    """ "trio" or "asyncio": which event loop runs the current task ("none": neither)."""
    run = sys.modules.get("trio._core._run")
    if run is not None:
        try:
            run.GLOBAL_RUN_CONTEXT.task  # noqa: B018  (set only inside a trio task)
        except AttributeError:
            pass
        else:
            return "trio"
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return "none"
    return "asyncio"


def _trio_wait_all_tasks_blocked() -> Any:
    try:  # the function `trio.testing` re-exports, without importing pytest with it
        from trio._core import wait_all_tasks_blocked
    except ImportError:  # pragma: no cover - a trio that moved it
        from trio.testing import wait_all_tasks_blocked
    return wait_all_tasks_blocked


#: `trio.lowlevel.RunVar` holding the frame of the current run's scheduler loop, for
#: `_trio_alone` (a RunVar: the cache dies with its run).
_trio_loop: list[Any] = []


def _trio_alone() -> bool | None:
    """Whether no other trio task can run before the current one blocks: the run queue is
    empty, and so is what remains of the batch of tasks the scheduler is stepping through
    (a local of its loop, `trio._core._run.unrolled_run`). None when it cannot tell."""
    try:
        run = sys.modules["trio._core._run"]
        if run.GLOBAL_RUN_CONTEXT.runner.runq:
            return False
        if not _trio_loop:
            from trio.lowlevel import RunVar

            _trio_loop.append(RunVar("faultbench_scheduler_frame", default=None))
        var = _trio_loop[0]
        frame = var.get()
        if frame is None:
            code = run.unrolled_run.__code__
            frame = sys._getframe(1)
            while frame is not None and frame.f_code is not code:
                frame = frame.f_back
            if frame is None:  # pragma: no cover - a trio that runs tasks differently
                return None
            var.set(frame)
        batch = frame.f_locals.get("batch")
        if type(batch) is not list:  # pragma: no cover - a trio that names it differently
            return None
        return not batch
    except Exception:  # pragma: no cover - trio internals changed: take the slow, sure way
        return None


def _asyncio_alone() -> bool | None:
    """`_trio_alone` for asyncio: the loop's ready queue is empty (None: not a loop whose
    queue this module knows, e.g. uvloop)."""
    import asyncio

    ready = getattr(asyncio.get_running_loop(), "_ready", None)
    if ready is None or type(ready).__name__ != "deque":
        return None
    return not ready


async def _settle(lib: str, batch: _Batch) -> None:
    """Yield until no other task can still join `batch`."""
    if lib == "trio":
        import trio

        # One checkpoint lets the tasks runnable now take their turn (and join). If that
        # leaves every other task blocked, the batch is complete; otherwise park until it is
        # (parked, not polling: two worlds gathering at once must not keep each other busy).
        await trio.lowlevel.checkpoint()
        if not _trio_alone():
            await _trio_wait_all_tasks_blocked()()
        return
    import asyncio

    seen = -1
    while len(batch.calls) != seen:
        seen = len(batch.calls)
        await asyncio.sleep(0)


def _event(lib: str) -> Any:
    if lib == "trio":
        import trio

        return trio.Event()
    import asyncio

    return asyncio.Event()


def _resolve(world: World, batch: _Batch) -> None:
    calls = batch.calls
    try:
        if len(calls) == 1:  # a batch of one is a call: the pipeline's shortest way
            results = [world.call(calls[0].tool, calls[0].args)]
        else:
            results = world.call_together([(p.tool, p.args) for p in calls])
    except BaseException as exc:  # a bug, not an agent error: every caller must hear of it
        for p in calls:
            p.error = exc
    else:
        for p, result in zip(calls, results):
            p.result = result
    batch.done.set()


async def join(world: World, tool: str, args: Any = None) -> CallResult:
    """`World.acall`: run the call together with every call in flight with it."""
    lib = _library()
    if lib == "none":  # driven by hand (coro.send): no loop to share with anyone
        return world.call(tool, args)
    batch: _Batch | None = world.__dict__.get("_batch")
    if batch is None and (_trio_alone() if lib == "trio" else _asyncio_alone()):
        return world.call(tool, args)
    mine = _Pending(tool, args)
    if batch is not None:
        batch.calls.append(mine)
        await batch.done.wait()
    else:
        batch = _Batch(_event(lib))
        batch.calls.append(mine)
        world._batch = batch
        try:
            await _settle(lib, batch)
        except BaseException:
            # Cancelled while gathering: the others are waiting on this batch, so it still
            # runs for them, without this call (it was never sent).
            batch.calls.remove(mine)
            world._batch = None
            _resolve(world, batch)
            raise
        world._batch = None
        _resolve(world, batch)
    if mine.error is not None:
        raise mine.error
    assert mine.result is not None
    return mine.result
