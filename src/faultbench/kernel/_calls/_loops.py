"""Event loops through their public APIs: which one runs the current task, and where one of its
passes ends.

A *pass* (a tick) is one turn of the scheduler: trio runs every task that was runnable when
the turn began (in a shuffled order), asyncio runs every callback that was in its ready
queue. `_schedule.py` forms batches out of the calls that arrive in two consecutive passes;
this module gives it a `Window` per batch: open in the pass it was made in and in the next
one, closed from the boundary after that, before any task of the third pass runs.

- trio: an instrument (`trio.abc.Instrument`'s protocol, added with
  `trio.lowlevel.add_instrument`, one per run, kept in a `trio.lowlevel.RunVar`) whose
  `before_io_wait` hook counts passes: trio calls it once per turn of its loop, before it
  looks for I/O and takes the next pass's tasks. Its `task_scheduled` and `before_task_step`
  hooks count the tasks of the current pass and how many have started, which tells when the
  current task is `alone` (the one shortcut `_schedule.py` takes; see there). The hooks cost
  about a microsecond per task step, from the first `acall` of a run on.
- asyncio: `loop.call_at(loop.time(), close)`. asyncio's own loops (selector, proactor) move
  a due timer's callback to the end of the ready queue when the next pass starts, so it runs
  last in that pass, after every task step scheduled before it. Another loop implementing the
  asyncio API (uvloop) may run it elsewhere in the pass: its windows still close after a
  bounded number of passes, but batches there may differ from trio's.

Neither trio nor asyncio is imported here: a task can only be running under a library that
someone already imported, so `sys.modules` tells (as sniffio does), in well under a
microsecond, and `import faultbench` stays light.
"""

from __future__ import annotations

import sys
from typing import Any

#: `trio.lowlevel.RunVar` holding the `_Trio` of the current trio run (made on first use)
_trio_var: list[Any] = []


class Window:
    """The passes in which calls may still join one batch."""

    __slots__ = ()

    def is_open(self) -> bool:
        raise NotImplementedError

    async def closed(self) -> None:
        """Return once the window has closed."""
        raise NotImplementedError

    def cancel(self) -> None:
        """Nobody waits for this window any more."""


class _Trio:
    """One trio run. Also its instrument (trio only calls the hooks an instrument defines):
    `before_io_wait` counts turns of the scheduler loop; `task_scheduled` and
    `before_task_step` count the tasks of the current turn and how many have run, for
    `alone`."""

    __slots__ = ("_event", "checkpoint", "formed", "scheduled", "size", "steps", "ticks", "turn")

    def __init__(self, trio: Any) -> None:
        self.ticks = 0  # turns of the loop since this instrument was added
        self.scheduled = 0  # tasks made runnable since then
        self.formed = 0  # `scheduled` when the current turn's tasks were taken
        self.size = 0  # tasks in the current turn
        self.steps = 0  # of which this many have started their step
        self.turn = 0  # the turn `size` and `steps` are about
        self.checkpoint = trio.lowlevel.checkpoint
        self._event = trio.Event

    def before_io_wait(self, timeout: float) -> None:
        self.ticks += 1

    def task_scheduled(self, task: Any) -> None:
        self.scheduled += 1

    def before_task_step(self, task: Any) -> None:
        if self.turn != self.ticks:
            # First step of a turn: the turn runs every task made runnable since the
            # previous turn's tasks were taken (trio takes them all at once, then steps them).
            self.turn = self.ticks
            self.size = self.scheduled - self.formed
            self.formed = self.scheduled
            self.steps = 0
        self.steps += 1

    def alone(self) -> bool:
        """No other task can run before the next turn, and none will run in it unless woken
        by I/O or a deadline: the current task is the last of its turn and it has made no
        task runnable. (False for the first two turns after the instrument was added: the
        counts start mid-turn.)"""
        return self.steps == self.size and self.scheduled == self.formed and self.ticks >= 2

    @property
    def owner(self) -> Any:
        return self

    def window(self) -> Window:
        return _TrioWindow(self)

    def event(self) -> Any:
        return self._event()


class _TrioWindow(Window):
    __slots__ = ("_closes_at", "_run")

    def __init__(self, run: _Trio) -> None:
        self._run = run
        self._closes_at = run.ticks + 2

    def is_open(self) -> bool:
        return self._run.ticks < self._closes_at

    async def closed(self) -> None:
        run = self._run
        while run.ticks < self._closes_at:
            await run.checkpoint()
            if run.ticks + 1 == self._closes_at and run.alone():
                # In the window's last pass, and every other task of it has run: no one
                # else can join, and (see `alone`) no one will run before this task goes on.
                self._closes_at = run.ticks


class _Asyncio:
    """The running asyncio loop (any loop implementing the asyncio API)."""

    __slots__ = ("_event", "owner")

    def __init__(self, loop: Any, event: Any) -> None:
        self.owner = loop
        self._event = event

    def alone(self) -> bool:
        """Never known: asyncio has no public view of its ready queue."""
        return False

    def window(self) -> Window:
        return _AsyncioWindow(self.owner)

    def event(self) -> Any:
        return self._event()


class _AsyncioWindow(Window):
    __slots__ = ("_future", "_handle", "_open")

    def __init__(self, loop: Any) -> None:
        self._open = True
        self._future = loop.create_future()
        self._handle = loop.call_at(loop.time(), self._close)

    def _close(self) -> None:
        self._open = False
        if not self._future.done():
            self._future.set_result(None)

    def is_open(self) -> bool:
        return self._open

    async def closed(self) -> None:
        if self._open:
            await self._future

    def cancel(self) -> None:
        self._handle.cancel()
        self._open = False


#: what `current` returns: `owner` (the trio run or the asyncio loop: a batch is only joined
#: from the loop that opened it), `window()` (one that opens now) and `event()` (a
#: `trio.Event` or `asyncio.Event`)
Loop = _Trio | _Asyncio


def _trio(trio: Any) -> _Trio:
    if not _trio_var:
        _trio_var.append(trio.lowlevel.RunVar("faultbench_run", default=None))
    run: _Trio | None = _trio_var[0].get()
    if run is None:
        run = _Trio(trio)
        trio.lowlevel.add_instrument(run)
        _trio_var[0].set(run)
    return run


def current() -> Loop | None:
    """The loop running the current task; None when there is none (a coroutine driven by
    hand with `send`)."""
    trio = sys.modules.get("trio")
    if trio is not None and trio.lowlevel.in_trio_task():
        return _trio(trio)
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        return _Asyncio(loop, asyncio.Event)
    return None
