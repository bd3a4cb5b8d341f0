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
task can still join: under trio, until every other task is blocked
(`trio.testing.wait_all_tasks_blocked`); under asyncio, until a pass through the ready queue
brings no new arrival (asyncio runs ready callbacks first-in, first-out, so one quiet pass
means every task that was ready has had its turn). Then the batch runs, synchronously.

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
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from ._call import Flight, admit, advance_to, args_json, execute, finish

if TYPE_CHECKING:
    from ._calls import CallResult
    from ._world import World

_canon = msgspec.json.Encoder(order="deterministic").encode


# ---------------------------------------------------------------------------------------------
# Running a batch
# ---------------------------------------------------------------------------------------------


def run_batch(world: World, calls: Sequence[tuple[str, Any]]) -> list[CallResult]:
    """Run `calls` (tool, args) as concurrent calls, in the order given; results in that
    order. The caller canonicalizes the order (see `canonical_order`)."""
    results: list[Any] = [None] * len(calls)
    flights: list[tuple[int, Flight]] = []
    for i, (tool, args) in enumerate(calls):
        admitted = admit(world, tool, args)
        if isinstance(admitted, Flight):
            flights.append((i, admitted))
        else:
            results[i] = admitted  # rejected: answered at once

    # Each flight has two stages: execute at exec_at, finish at end_at (equal unless it is a
    # timeout). Sorting by (time, position, stage) completes a call atomically at a tie.
    stages = []
    for i, f in flights:
        stages.append((f.exec_at, i, 0, f))
        stages.append((f.end_at, i, 1, f))
    stages.sort(key=lambda s: (s[0], s[1], s[2]))
    for at, i, stage, f in stages:
        advance_to(world, at, f.call_id)
        if stage == 0:
            execute(world, f)
        else:
            results[i] = finish(world, f)
    return results


def canonical_key(tool: Any, args: Any) -> tuple[str, bytes]:
    """Sort key of a call in a batch: tool name, then arguments as canonical JSON."""
    try:
        encoded = _canon(args_json(args if args is not None else {}))
    except (TypeError, msgspec.EncodeError, ValueError):
        encoded = repr(args).encode()
    return (str(tool), encoded)


def canonical_order(calls: Sequence[tuple[Any, Any]]) -> list[int]:
    """Positions of `calls` (in arrival order) sorted canonically; ties keep arrival order."""
    keys = [canonical_key(tool, args) for tool, args in calls]
    return sorted(range(len(calls)), key=lambda i: (keys[i], i))


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
    """ "trio" or "asyncio": which event loop runs the current task."""
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_task()
        except RuntimeError:
            pass
        else:
            return "trio"
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return "none"
    return "asyncio"


async def _settle(lib: str, batch: _Batch) -> None:
    """Yield until no other task can still join `batch`."""
    if lib == "trio":
        import trio
        import trio.testing

        await trio.lowlevel.checkpoint()
        await trio.testing.wait_all_tasks_blocked()
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
    order = canonical_order([(p.tool, p.args) for p in calls])
    try:
        results = run_batch(world, [(calls[i].tool, calls[i].args) for i in order])
    except BaseException as exc:  # a bug, not an agent error: every caller must hear of it
        for p in calls:
            p.error = exc
    else:
        for i, result in zip(order, results):
            calls[i].result = result
    batch.done.set()


async def join(world: World, tool: str, args: Any = None) -> CallResult:
    """`World.acall`: run the call together with every call in flight with it."""
    lib = _library()
    if lib == "none":  # driven by hand (coro.send): no loop to share with anyone
        return run_batch(world, [(tool, args)])[0]
    mine = _Pending(tool, args)
    batch: _Batch | None = world.__dict__.get("_batch")
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
