"""Calls in flight together, in virtual time: `join(world, tool, args)` is `World.acall`; it
forms batches out of concurrent tasks and hands each batch to the world (`World.call_together`:
all calls of a batch start at the world's current virtual time and complete in order of
virtual completion; a batch of one is `World.call`).

Which calls form one batch
--------------------------
A batch is every `acall` on one world that arrives in the event-loop pass in which the first
of them arrived, or in the pass right after it. A call that arrives later starts the next
batch, which starts (in virtual time) when the earlier one has been resolved.

A pass is one turn of the scheduler (`_loops.py`): trio runs every task that was runnable when
the turn began, asyncio every callback in its ready queue. The batch's window closes at the
boundary after its second pass, before any task of the third pass runs; the first caller
waits for that (exactly two passes, whatever other tasks do: a task that spins on
`sleep(0)` cannot hold it up), then runs the batch, synchronously, and wakes the others.

Why the log is deterministic
----------------------------
Membership depends only on the pass each call arrives in, never on the order of tasks inside
a pass, which trio shuffles on purpose. Inside a batch the calls are put into canonical order
(tool name, canonical JSON of the arguments, then arrival: `canonical_order`), and call ids
and each operation's `k` follow that order; calls equal in the first two keys are identical
requests, so which of them arrived first cannot change the log. trio and asyncio agree on
passes for tasks that are started together (a nursery's `start_soon`, `create_task`,
`gather`, a `TaskGroup`) and await only checkpoints (`trio.lowlevel.checkpoint`,
`trio.sleep(0)`, `asyncio.sleep(0)`) or each other's calls before calling, so such programs
give the same log, byte for byte, under both. They can differ for a task woken by real I/O or
by a timer: trio runs it in the pass right after the wake-up, asyncio one pass later (its
I/O and timer callbacks run first and only then schedule the task).

What it costs, and the one shortcut
-----------------------------------
The first caller waits two passes, and the others wake one pass after it has run the batch.
A sequential agent (and every in-process MCP client) would pay those two passes on every call,
more than the call itself costs. So under trio a call that is *alone* runs at once: its task
is the last of its pass and no task has been made runnable since the pass began (the `_loops`
instrument counts both through trio's public hooks). Then no other task runs in the rest of
this pass, and the next pass could only hold a task woken at the boundary by I/O or by a
deadline (`trio.sleep`, `move_on_after`, a `MockClock` jump); trio's idle wake-ups
(`wait_all_tasks_blocked`, autojump) cannot fire while the caller is runnable. So the
shortcut gives the rule's batch, a batch of one, except when a task woken by I/O or a deadline
right after the call would have joined it: that task starts the next batch instead, which is
what a request that came in later would do. Whether the call is alone does not depend on
trio's shuffling either: if the task runs first in its pass, it is not alone; if it runs last,
it is alone only if the tasks before it neither called nor woke anyone, and then waiting would
have added no one. asyncio has no public view of its ready queue, so there a lone call waits
its two passes.

A coroutine driven by hand (`coro.send(None)`, no running loop) runs its call at once.
Nothing waits in real time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from . import _loops
from ._results import CallResult


class World(Protocol):
    """What batching needs of a world's calls (`_pipeline.Pipeline`, whose `acall` is `join`):
    its two ways of running calls."""

    def call(self, tool: str, args: Any = None, token: str | None = None) -> CallResult: ...
    def call_together(self, calls: Sequence[tuple[Any, ...]]) -> list[CallResult]: ...


# ---------------------------------------------------------------------------------------------
# Forming batches out of concurrent tasks
# ---------------------------------------------------------------------------------------------


class _Pending:
    __slots__ = ("args", "error", "result", "token", "tool")

    def __init__(self, tool: str, args: Any, token: str | None = None):
        self.tool = tool
        self.args = args
        self.token = token
        self.result: CallResult | None = None
        self.error: BaseException | None = None


class _Batch:
    __slots__ = ("calls", "done", "owner", "resolved", "window", "world")

    def __init__(self, world: World, loop: _loops.Loop):
        self.world = world  # keeps id(world) from being reused while the batch is open
        self.owner = loop.owner
        self.window = loop.window()
        self.calls: list[_Pending] = []
        self.done: Any = None  # an Event, made when a second call joins
        self.resolved = False


#: id(world) -> the batch being gathered on that world (an entry lives at most two passes;
#: kept here, not on World, which has no business knowing about event loops)
_open: dict[int, _Batch] = {}


def _resolve(world: World, batch: _Batch) -> None:
    calls = batch.calls
    batch.resolved = True
    if not calls:
        return
    try:
        if len(calls) == 1:  # a batch of one is a call: the pipeline's shortest way
            results = [world.call(calls[0].tool, calls[0].args, calls[0].token)]
        else:
            results = world.call_together([(p.tool, p.args, p.token) for p in calls])
    except BaseException as exc:  # a bug, not an agent error: every caller must hear of it
        for p in calls:
            p.error = exc
    else:
        for p, result in zip(calls, results):
            p.result = result
    finally:
        if batch.done is not None:
            batch.done.set()


async def _gather(world: World, batch: _Batch, mine: _Pending) -> None:
    """The first caller: wait for the window to close, then run the batch."""
    try:
        await batch.window.closed()
    except BaseException:
        # Cancelled while gathering: the others are waiting on this batch, so it still
        # runs for them, without this call (it was never sent).
        batch.calls.remove(mine)
        batch.window.cancel()
        raise
    finally:
        if _open.get(id(world)) is batch:
            del _open[id(world)]
        _resolve(world, batch)


async def _wait(batch: _Batch, mine: _Pending) -> None:
    """A later caller: wait until the first one has run the batch."""
    try:
        await batch.done.wait()
    except BaseException:
        if not batch.resolved and batch.window.is_open():
            batch.calls.remove(mine)  # cancelled before the batch closed: never sent
        raise


async def join(world: World, tool: str, args: Any = None, token: str | None = None) -> CallResult:
    """`World.acall` (`Pipeline.acall`): run the call together with every call in flight with it."""
    loop = _loops.current()
    if loop is None:  # driven by hand (coro.send): no loop to share with anyone
        return world.call(tool, args, token)
    mine = _Pending(tool, args, token)
    batch = _open.get(id(world))
    if (
        batch is not None
        and batch.world is world
        and batch.owner is loop.owner
        and batch.window.is_open()
    ):
        batch.calls.append(mine)
        if batch.done is None:
            batch.done = loop.event()
        await _wait(batch, mine)
    elif loop.alone():  # no one can join: the batch would be this call alone
        return world.call(tool, args, token)
    else:
        batch = _open[id(world)] = _Batch(world, loop)
        batch.calls.append(mine)
        await _gather(world, batch, mine)
    if mine.error is not None:
        raise mine.error
    assert mine.result is not None
    return mine.result
