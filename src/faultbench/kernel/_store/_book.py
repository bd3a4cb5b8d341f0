"""Who owns a world's state: a `Book`, and nobody else.

A world is two references, its current `State` and the log segment it appends to. Only a
`Book` assigns them, in exactly three ways:

    emit(event)      one event, applied and appended (table writes and clock moves made
                     directly by a test, outside any call)
    commit(draft)    the events a `Draft` decided on top of the current state (a call, a
                     batch of calls, a fork's first events): all of them, or none
    rewind(state, log)  back (or forward) to a snapshot: state and log together

Everything else decides: the call pipeline computes a call's events in a `Draft` (a base
state, the events so far and the state they lead to; `apply` is pure, so deciding is free of
side effects) and hands the draft over. A custom handler writes to its call's transaction, a
`Draft` too; while it runs, the book refuses direct writes and calls (`hold`), because a
handler that reached the world itself (through a global) would write around its call.

Tables and the clock work on any *store*: an object with `state`, `emit(event)` and
`call_id`, which a `Book`, a `Draft` and a handler's transaction all are.

Watching: a book may have one `watcher` (`lowlevel.watch_log`, the serve shell's --events
journal): after each change (an `emit`, a `commit`, a `rewind`, or a whole `change()` block)
it is called, under the lock, with the new log. If it raises, the change is undone (state
and log go back to what they were: O(1), a new segment on the old view, so no view anyone
took changes) and the exception reaches whoever made the change. So a change the watcher
could not record never happened.

Keeping a window (`keep`, `lowlevel.keep_events`, the serve shell's --keep-events): once the
log holds more than twice `keep` events, the book cuts it to its last `keep` (`EventLog.cut`,
O(keep), so O(1) per event), and shows the watcher the cut log as one more change (a journal
learns the window begins there; if it raises, the cut is undone). The state's facts are
untouched: a cut drops events from memory, not from the world. It also drops, from each
tool's rate window (`State.admitted`, not hashed), the calls older than the longest
rate-limit window the world has run under (`rate_reach_s`, set by the call pipeline), which
no window can count again; a rate limit set later with a longer window counts from there. A stale read undoes the events of the last
`reach_s` seconds of virtual time (the largest `lag_s` of the stale_read rules the world has
run under, set by the call pipeline): a cut never drops those, so every answer is the one a
world keeping its whole log would give.

Threads: a book has one lock (`Book.lock`, reentrant). Every change holds it (`emit`,
`commit`, `rewind`), and so does a whole call, from reading the state it decides on to
committing its draft (`Pipeline.call`), so calls from several threads are serialised: each
is atomic and sees every call admitted before it. Which thread gets the lock first is up to
the operating system; given that order, every call's result is deterministic.
"""

from __future__ import annotations

import functools
import threading
from bisect import bisect_right
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar, cast

from .._faults import since
from ._events import Event
from ._incall import running_call
from ._log import EventLog, Segment
from ._reducer import apply
from ._state import State


def _at(event: Event) -> datetime:
    return event.at


class Store(Protocol):
    """What tables and the clock read and write through: a `Book`, a `Draft` or a handler's
    transaction. `lock` is held around a write's read-decide-emit (the book's lock; a draft,
    which one call owns, has none: None)."""

    @property
    def state(self) -> State: ...

    @property
    def call_id(self) -> str | None: ...

    @property
    def lock(self) -> AbstractContextManager[Any] | None: ...

    def emit(self, event: Event) -> None: ...


F = TypeVar("F", bound=Callable[..., Any])


def atomic(method: F) -> F:
    """A table or clock write that reads its store's state, decides an event from it and
    emits it, done under the store's lock (if it has one), so another thread cannot write in
    between."""

    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        lock = self._store.lock
        if lock is None:
            return method(self, *args, **kwargs)
        with lock:
            return method(self, *args, **kwargs)

    return cast("F", run)


class Draft:
    """Events decided on top of `base`, not yet in any log. `state` is where they lead."""

    __slots__ = ("base", "call_id", "pending", "state")

    #: a draft belongs to the one call deciding it: nothing to lock
    lock: AbstractContextManager[Any] | None = None

    def __init__(self, base: State, call_id: str | None = None):
        self.base = base
        self.state = base
        self.pending: list[Event] = []
        self.call_id = call_id

    def emit(self, event: Event) -> None:
        self.state = apply(self.state, event)
        self.pending.append(event)

    def take(self, other: Draft) -> None:
        """Add the events of `other`, a draft begun on this one's current state."""
        if other.base is not self.state:
            raise RuntimeError(
                f"a draft begun at event {other.base.seq} cannot be added at event "
                f"{self.state.seq}: something else wrote in between"
            )
        self.state = other.state
        self.pending.extend(other.pending)

    def mark(self) -> tuple[State, int]:
        """Where the draft is now, for `rollback`."""
        return self.state, len(self.pending)

    def rollback(self, mark: tuple[State, int]) -> None:
        """Drop every event decided since `mark` (a call that broke leaves nothing)."""
        self.state, n = mark
        del self.pending[n:]


class Book:
    """The state and the log of one world; the only object that assigns either."""

    __slots__ = (
        "_depth",
        "_seg",
        "_state",
        "busy",
        "call_id",
        "keep",
        "lock",
        "rate_reach_s",
        "reach_s",
        "watcher",
    )

    def __init__(self, state: State, log: EventLog | None = None, items: list[Event] | None = None):
        self._state = state
        self._seg = Segment(None, 0, items) if log is None else log.branch(items)
        #: the handler running now, if any (set only by `hold`)
        self.busy: str | None = None
        self.call_id: str | None = None  # writes through the book itself belong to no call
        #: held by every change and by every call from decision to commit (see above)
        self.lock = threading.RLock()
        #: called with the new log after each change; raising undoes it (see above)
        self.watcher: Callable[[EventLog], None] | None = None
        self._depth = 0  # open `change()` blocks: the watcher waits for the outermost
        #: keep only this many latest events in memory (None: all; see above)
        self.keep: int | None = None
        #: and every event of the last `reach_s` virtual seconds (stale reads undo them)
        self.reach_s = 0.0
        #: and, of each tool's admitted calls, those of the last `rate_reach_s` virtual
        #: seconds (the longest rate-limit window the world has run under)
        self.rate_reach_s = 0.0

    @property
    def state(self) -> State:
        return self._state

    @property
    def log(self) -> EventLog:
        """The log as it is now: a view that never changes, whatever the book does next."""
        with self.lock:
            return EventLog(self._seg, self._state.seq)

    # --- the three ways state changes ----------------------------------------------------------

    def emit(self, event: Event) -> None:
        if self.busy is not None:
            self.refuse_own_handler(f"to write to the world ({type(event).__name__})")
        with self.lock:
            if self.busy is not None:
                raise self.busy_error(f"to write to the world ({type(event).__name__})")
            state, seg = self._state, self._seg
            self._state = apply(state, event)
            seg.items.append(event)
            if self.watcher is not None and not self._depth:
                self._settle(state, EventLog(seg, state.seq))
            if self.keep is not None and not self._depth:
                self._trim()

    def commit(self, draft: Draft) -> None:
        """Take over `draft`, decided on this book's current state: its events join the log."""
        with self.lock:
            self.commit_locked(draft)

    def commit_locked(self, draft: Draft) -> None:
        """`commit`, by a caller that holds `lock` already (a call, from decision to commit:
        taking the lock again would cost as much as the rest of a plain `get`)."""
        if draft.base is not self._state:
            raise RuntimeError(
                f"a draft begun at event {draft.base.seq} cannot be committed: the world "
                f"is at event {self._state.seq} (calls are atomic; something wrote in "
                "between)"
            )
        if draft.pending:
            state, seg = self._state, self._seg
            self._state = draft.state
            seg.items.extend(draft.pending)
            if self.watcher is not None and not self._depth:
                self._settle(state, EventLog(seg, state.seq))
            if self.keep is not None and not self._depth:
                self._trim()

    def rewind(self, state: State, log: EventLog) -> None:
        """State and log become `state` and `log` (a snapshot's). Anyone holding a view of
        the events after it keeps them: the book starts a new segment on `log`."""
        if self.busy is not None:
            self.refuse_own_handler("world.restore()")
        with self.lock:
            if self.busy is not None:
                raise self.busy_error("world.restore()")
            before = (self._state, EventLog(self._seg, self._state.seq))
            self._state = state
            self._seg = log.branch()
            if self.watcher is not None and not self._depth:
                self._settle(*before)
            if self.keep is not None and not self._depth:
                self._trim()

    @contextmanager
    def change(self) -> Iterator[None]:
        """Several changes as one, for the watcher: it sees the log once, at the end of the
        outermost block, and undoing goes back to where the block began."""
        with self.lock:
            if self.watcher is None or self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                if self.keep is not None and not self._depth:
                    self._trim()
                return
            before = (self._state, EventLog(self._seg, self._state.seq))
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._state is not before[0]:
                    self._settle(*before)
            if self.keep is not None:
                self._trim()

    def _settle(self, state: State, log: EventLog) -> None:
        """Show the watcher the log as it is now; if it raises, go back to `state` and
        `log` (what the book held before the change) and let the exception through."""
        watcher = self.watcher
        assert watcher is not None
        try:
            watcher(EventLog(self._seg, self._state.seq))
        except BaseException:
            self._state = state
            self._seg = log.branch()
            raise

    def _trim(self) -> None:
        """Cut the log to its last `keep` events once it holds more than twice that many."""
        keep = self.keep
        assert keep is not None
        n = self._state.seq
        log = EventLog(self._seg, n)
        first = log.first
        if n - first <= 2 * keep:
            return
        cut = n - keep
        if self.reach_s:  # events are in time order: the first one a stale read may undo
            horizon = self._state.clock - timedelta(seconds=self.reach_s)
            cut = min(cut, bisect_right(log, horizon, first, n, key=_at))
            if cut <= first:
                return
        seg, before = self._seg, self._state
        self._seg = log.cut(cut).branch()
        self._trim_windows()
        if self.watcher is not None:
            self._settle(before, EventLog(seg, n))

    def _trim_windows(self) -> None:
        """Drop the admitted calls no rate window can count any more, so that a long
        session's state does not grow with its calls either (`_faults/_window.since`)."""
        state = self._state
        horizon = state.clock - timedelta(seconds=self.rate_reach_s)
        admitted = state.admitted
        for tool, head in state.admitted.items():
            kept = since(head, horizon)
            if kept is not head:
                admitted = admitted.delete(tool) if kept is None else admitted.set(tool, kept)
        if admitted is not state.admitted:
            self._state = state.derived(admitted=admitted)

    # --- handlers ------------------------------------------------------------------------------

    @contextmanager
    def hold(self, who: str) -> Iterator[None]:
        """While `who` (a custom handler) runs, refuse direct writes, calls and restores."""
        outer, self.busy = self.busy, who
        try:
            yield
        finally:
            self.busy = outer

    def refuse_own_handler(self, what: str) -> None:
        """Raise if the running code is a handler of this book's own call, in this thread or
        in one it waits for (an `async def` tool's worker): waiting for the lock its call
        holds would never end. Only while `busy`: a handler's call sets it before the handler
        runs and clears it after, so callers check `busy` first and spare this look-up."""
        running = running_call()
        if running is not None and running.owner is self:
            raise self.busy_error(what)

    def busy_error(self, what: str) -> RuntimeError:
        return RuntimeError(
            f"handler {self.busy} tried {what} while its call is running. A handler reads "
            "and writes through the `world` argument it receives (its call's transaction), "
            "and cannot call tools."
        )
