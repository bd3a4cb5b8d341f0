"""`apply(state, event) -> state`: the one function that changes a world.

Pure: it reads nothing but its arguments (time arrives inside events as `at` / `to`), mutates
neither, and returns a new `State`. Total: every event type has a case; events that only
record what happened (`CallSucceeded`, `FaultInjected`, ...) advance `seq` and nothing else.

Events must arrive in log order: an event whose `seq` is not the state's next one is refused,
which is what catches a lost or reordered event long before a hash mismatch would.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ._errors import ReentrantApplyError, ReplayError
from ._events import (
    CallFailed,
    CallStarted,
    CallSucceeded,
    ClockAdvanced,
    Event,
    FaultInjected,
    RecordCreated,
    RecordDeleted,
    RecordUpdated,
    WorldCreated,
    WorldForked,
)
from ._state import State, add_digest, record_digest, sub_digest


class _Guard(threading.local):
    busy = False  # per thread: an `apply` of a case not defined here is running


_guard = _Guard()


def apply(state: State, event: Event) -> State:
    """Return the state after `event`. Raises `ReplayError` if the event does not fit the
    state (wrong `seq`, a record that does not exist...), `ReentrantApplyError` if called from
    inside another `apply`."""
    if _guard.busy:
        raise ReentrantApplyError(
            f"apply() was called while applying event {event.seq} ({type(event).__name__}): "
            "reducers may not emit events. Emit follow-up events after apply returns."
        )
    case = _CASES.get(type(event))
    if case is None:
        raise TypeError(f"Expected a faultbench event. Instead, received: {type(event).__name__}")
    if event.seq != state.seq:
        raise ReplayError(
            f"Expected event seq {state.seq}. Instead, received: {type(event).__name__} "
            f"with seq {event.seq}; events must be applied in log order without gaps."
        )
    if case in _OWN:
        # The cases below call nothing that could reach `apply`; setting and clearing the
        # thread-local flag would double the cost of the cheap ones (most events).
        return case(state, event)
    _guard.busy = True
    try:
        return case(state, event)
    finally:
        _guard.busy = False


# --- cases -------------------------------------------------------------------------------------


def _world_created(s: State, e: WorldCreated) -> State:
    return State(
        tables=s.tables, clock=e.at, seq=1, next_ids=s.next_ids, k=s.k, calls=s.calls, rsum=s.rsum
    )


def _bump(s: State, e: Event) -> State:
    return State(s.tables, s.clock, s.seq + 1, s.next_ids, s.k, s.calls, s.rsum)


def _missing(e: Event, table: str, rid: str) -> ReplayError:
    return ReplayError(
        f"event {e.seq} ({type(e).__name__}) refers to {table} {rid!r}, which does not exist "
        "at that point of the log."
    )


def _record_created(s: State, e: RecordCreated) -> State:
    rows = s.tables.get(e.table)
    if rows is None:
        raise ReplayError(f"event {e.seq} (RecordCreated) names an unknown table {e.table!r}.")
    if e.id in rows:
        raise ReplayError(f"event {e.seq} (RecordCreated) creates {e.table} {e.id!r} twice.")
    next_ids = s.next_ids
    rid = e.id
    # Automatic ids continue after the largest numeric id ever created, explicit or not.
    if rid.isascii() and rid.isdigit() and rid[0] != "0":
        n = int(rid) + 1
        if n > next_ids.get(e.table, 1):
            next_ids = next_ids.set(e.table, n)
    return State(
        s.tables.set(e.table, rows.set(rid, e.fields)),
        s.clock,
        s.seq + 1,
        next_ids,
        s.k,
        s.calls,
        add_digest(s.rsum, record_digest(e.table, rid, e.fields)),
    )


def _record_updated(s: State, e: RecordUpdated) -> State:
    rows = s.tables.get(e.table)
    old = rows.get(e.id) if rows is not None else None
    if old is None:
        raise _missing(e, e.table, e.id)
    new = dict(old)
    new.update(e.changes)
    rsum = sub_digest(s.rsum, record_digest(e.table, e.id, old))
    rsum = add_digest(rsum, record_digest(e.table, e.id, new))
    return State(
        s.tables.set(e.table, rows.set(e.id, new)),
        s.clock,
        s.seq + 1,
        s.next_ids,
        s.k,
        s.calls,
        rsum,
    )


def _record_deleted(s: State, e: RecordDeleted) -> State:
    rows = s.tables.get(e.table)
    old = rows.get(e.id) if rows is not None else None
    if old is None:
        raise _missing(e, e.table, e.id)
    rsum = sub_digest(s.rsum, record_digest(e.table, e.id, old))
    return State(
        s.tables.set(e.table, rows.delete(e.id)), s.clock, s.seq + 1, s.next_ids, s.k, s.calls, rsum
    )


def _clock_advanced(s: State, e: ClockAdvanced) -> State:
    return State(s.tables, e.to, s.seq + 1, s.next_ids, s.k, s.calls, s.rsum)


def _call_started(s: State, e: CallStarted) -> State:
    k = s.k if e.k is None else s.k.set(e.tool, e.k)
    return State(s.tables, s.clock, s.seq + 1, s.next_ids, k, s.calls + 1, s.rsum)


_CASES: dict[type, Callable[[State, Event], State]] = {
    WorldCreated: _world_created,
    WorldForked: _bump,
    RecordCreated: _record_created,
    RecordUpdated: _record_updated,
    RecordDeleted: _record_deleted,
    ClockAdvanced: _clock_advanced,
    CallStarted: _call_started,
    FaultInjected: _bump,
    CallSucceeded: _bump,
    CallFailed: _bump,
}

#: The cases above: pure functions of (state, event) that never call back into `apply`.
_OWN = frozenset(_CASES.values())
