"""`apply(state, event) -> state`: the one function that changes a world.

Pure: it reads nothing but its arguments (time arrives inside events as `at` / `to`), mutates
neither, and returns a new `State`. Total: every event type has a case; events that only
record what happened (`CallSucceeded`, `FaultInjected`, ...) advance `seq` and nothing else.

Nothing here can emit: the cases are plain functions of (state, event) that call no code
outside this module, so a reducer that writes while reducing cannot be expressed (the only
code that runs while a world changes is a custom handler, and it writes to its call's
transaction, never to the world: see `_book.py`).

Events must arrive in log order: an event whose `seq` is not the state's next one is refused,
which is what catches a lost or reordered event long before a hash mismatch would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import immutables
import msgspec

from .._errors import ReplayError
from .._faults import REFUSED_KINDS, SURFACE_KINDS, Admitted, fold, without
from ._events import (
    AuthChecked,
    CallFailed,
    CallStarted,
    CallSucceeded,
    ClockAdvanced,
    EffectFired,
    EffectScheduled,
    Event,
    FaultInjected,
    FaultsChanged,
    IdempotencyKeyRecorded,
    IdempotentRetryAnswered,
    ModelCalled,
    ModelUsed,
    RecordCreated,
    RecordDeleted,
    RecordUpdated,
    TokenExpired,
    TokenIssued,
    TokenRefreshed,
    TokenRevoked,
    WebhookAttempted,
    WorldCreated,
    WorldForked,
)
from ._indexes import TableIndex
from ._state import (
    KeyEntry,
    Pending,
    Settings,
    State,
    TokenEntry,
    add_digest,
    entry_digest,
    record_digest,
    sub_digest,
)

#: Each case returns its input with the fields the event changes replaced, by keyword: as
#: fast as building a `State` positionally (measured in bench_kernel), and a new field of
#: `State` needs no edit here.
_replace = msgspec.structs.replace


def apply(state: State, event: Event) -> State:
    """Return the state after `event`. Raises `ReplayError` if the event does not fit the
    state (wrong `seq`, a record that does not exist...)."""
    case = _CASES.get(type(event))
    if case is None:
        raise TypeError(f"Expected a faultbench event. Instead, received: {type(event).__name__}")
    if event.seq != state.seq:
        raise ReplayError(
            f"Expected event seq {state.seq}. Instead, received: {type(event).__name__} "
            f"with seq {event.seq}; events must be applied in log order without gaps."
        )
    return case(state, event)


# --- cases -------------------------------------------------------------------------------------


def _world_created(s: State, e: WorldCreated) -> State:
    settings = Settings(run=e.run, faults_on=e.faults)
    return _replace(s, clock=e.at, seq=1, settings=settings)


def _with_settings(s: State, settings: Settings) -> State:
    return _replace(s, seq=s.seq + 1, settings=settings)


def _world_forked(s: State, e: WorldForked) -> State:
    # A fork keeps the rules in force; it may change the run index and the fault switch.
    settings = msgspec.structs.replace(s.settings, run=e.run, faults_on=e.faults, forked=True)
    return _with_settings(s, settings)


def _faults_changed(s: State, e: FaultsChanged) -> State:
    return _with_settings(s, msgspec.structs.replace(s.settings, rules=e.rules))


def _bump(s: State, e: Event) -> State:
    return _next(s, s.admitted)


def _next(s: State, admitted: immutables.Map[str, Admitted]) -> State:
    """`s` one event later, with `admitted` as its rate windows."""
    return _replace(s, seq=s.seq + 1, admitted=admitted)


def _rows_changed(
    s: State,
    table: str,
    rows: immutables.Map[str, dict[str, Any]],
    rid: str,
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
) -> immutables.Map[str, TableIndex]:
    """The state's indexes after record `rid` of `table` went from `old` to `new`."""
    ix = s.index.get(table)
    if ix is None:
        return s.index
    return s.index.set(table, ix.changed(rows, rid, old, new))


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
    rows = rows.set(rid, e.fields)
    return _replace(
        s,
        tables=s.tables.set(e.table, rows),
        seq=s.seq + 1,
        next_ids=next_ids,
        rsum=add_digest(s.rsum, record_digest(e.table, rid, e.fields)),
        index=_rows_changed(s, e.table, rows, rid, None, e.fields),
    )


def _record_updated(s: State, e: RecordUpdated) -> State:
    rows = s.tables.get(e.table)
    old = rows.get(e.id) if rows is not None else None
    if rows is None or old is None:
        raise _missing(e, e.table, e.id)
    new = dict(old)
    new.update(e.changes)
    rsum = sub_digest(s.rsum, record_digest(e.table, e.id, old))
    rsum = add_digest(rsum, record_digest(e.table, e.id, new))
    rows = rows.set(e.id, new)
    return _replace(
        s,
        tables=s.tables.set(e.table, rows),
        seq=s.seq + 1,
        rsum=rsum,
        index=_rows_changed(s, e.table, rows, e.id, old, new),
    )


def _record_deleted(s: State, e: RecordDeleted) -> State:
    rows = s.tables.get(e.table)
    old = rows.get(e.id) if rows is not None else None
    if rows is None or old is None:
        raise _missing(e, e.table, e.id)
    rsum = sub_digest(s.rsum, record_digest(e.table, e.id, old))
    rows = rows.delete(e.id)
    return _replace(
        s,
        tables=s.tables.set(e.table, rows),
        seq=s.seq + 1,
        rsum=rsum,
        index=_rows_changed(s, e.table, rows, e.id, old, None),
    )


def _clock_advanced(s: State, e: ClockAdvanced) -> State:
    return _replace(s, clock=e.to, seq=s.seq + 1)


def _effect_scheduled(s: State, e: EffectScheduled) -> State:
    n = s.effect_n + 1
    p = Pending(e.effect_id, e.due, n, e.table, e.id, e.changes)
    key = (e.due, n)
    # Kept sorted by (due, scheduling order): firing takes from the front. Few are pending
    # at once, so a tuple copied on insert is cheaper than any tree.
    i = len(s.effects)
    while i > 0 and (s.effects[i - 1].due, s.effects[i - 1].n) > key:
        i -= 1
    effects = (*s.effects[:i], p, *s.effects[i:])
    return _replace(s, seq=s.seq + 1, effects=effects, effect_n=n)


def _effect_fired(s: State, e: EffectFired) -> State:
    for i, p in enumerate(s.effects):
        if p.effect_id == e.effect_id:
            if e.at < p.due:
                raise ReplayError(
                    f"event {e.seq} (EffectFired) fires {e.effect_id} at {e.at.isoformat()}, "
                    f"before it is due ({p.due.isoformat()})."
                )
            return _replace(s, seq=s.seq + 1, effects=s.effects[:i] + s.effects[i + 1 :])
    raise ReplayError(
        f"event {e.seq} (EffectFired) fires {e.effect_id!r}, which is not pending at that "
        "point of the log."
    )


def _call_started(s: State, e: CallStarted) -> State:
    if e.k is None:  # rejected: no k, and in no rate window
        k, admitted = s.k, s.admitted
    else:
        k = s.k.set(e.tool, e.k)
        # `_window.pushed`, written out: it runs for every admitted call of every tool
        head = s.admitted.get(e.tool)
        if head is None:
            node: Admitted = (e.at, e.call_id, None, 0, None, 0)
        elif (jump := head[4]) is not None and head[5] == jump[5]:
            node = (e.at, e.call_id, head, head[3] + 1, jump[4], 2 * head[5] + 1)
        else:
            node = (e.at, e.call_id, head, head[3] + 1, head, 1)
        admitted = s.admitted.set(e.tool, node)
    return _replace(s, seq=s.seq + 1, k=k, calls=s.calls + 1, admitted=admitted)


def _fault_injected(s: State, e: FaultInjected) -> State:
    admitted = s.admitted
    if e.kind in REFUSED_KINDS and e.tool in admitted:
        # Refused (429): the call leaves its tool's rate window. It is logged right after
        # its CallStarted, so it is the newest entry (O(1)); anything else is walked to.
        rest = without(admitted.get(e.tool), e.call_id)
        admitted = admitted.delete(e.tool) if rest is None else admitted.set(e.tool, rest)
    if e.kind in SURFACE_KINDS:  # the tool list changes (`_faults/_surface.py`)
        surface = fold(s.surface, e.detail.get("surface"))
        return _replace(s, seq=s.seq + 1, admitted=admitted, surface=surface)
    return _next(s, admitted)


# --- idempotency keys and tokens ---------------------------------------------------------------


def _key_recorded(s: State, e: IdempotencyKeyRecorded) -> State:
    name = f"{e.tool}\x00{e.key}"
    entry = KeyEntry(e.digest, e.value, e.at, e.call_id)
    xsum = s.xsum
    old = s.keys.get(name)
    if old is not None:  # the window had passed: the key starts again
        xsum = sub_digest(xsum, entry_digest("key", name, old))
    xsum = add_digest(xsum, entry_digest("key", name, entry))
    return _replace(s, seq=s.seq + 1, keys=s.keys.set(name, entry), xsum=xsum)


def _token_set(s: State, token: str, entry: TokenEntry) -> State:
    xsum = s.xsum
    old = s.tokens.get(token)
    if old is not None:
        xsum = sub_digest(xsum, entry_digest("token", token, old))
    xsum = add_digest(xsum, entry_digest("token", token, entry))
    return _replace(s, seq=s.seq + 1, tokens=s.tokens.set(token, entry), xsum=xsum)


def _known_token(s: State, e: Any) -> TokenEntry:
    entry = s.tokens.get(e.token)
    if entry is None:
        raise ReplayError(
            f"event {e.seq} ({type(e).__name__}) names a token that was never issued at that "
            "point of the log."
        )
    return entry


def _token_issued(s: State, e: TokenIssued) -> State:
    if e.token in s.tokens:
        raise ReplayError(f"event {e.seq} (TokenIssued) issues the same token twice.")
    return _token_set(s, e.token, TokenEntry(e.principal, e.expires_at))


def _token_refreshed(s: State, e: TokenRefreshed) -> State:
    entry = _known_token(s, e)
    return _token_set(s, e.token, msgspec.structs.replace(entry, expires_at=e.expires_at))


def _token_expired(s: State, e: TokenExpired) -> State:
    entry = _known_token(s, e)
    return _token_set(s, e.token, msgspec.structs.replace(entry, expires_at=e.at))


def _token_revoked(s: State, e: TokenRevoked) -> State:
    entry = _known_token(s, e)
    return _token_set(s, e.token, msgspec.structs.replace(entry, revoked=True))


def _model_called(s: State, e: ModelCalled) -> State:
    return _replace(s, seq=s.seq + 1, model_calls=e.k)


# Each case takes its own event type; the table pairs them, and `apply` looks up by type, so a
# case only ever receives its own kind of event (which the type system cannot express here).
_CASES: dict[type[Event], Callable[[State, Any], State]] = {
    WorldCreated: _world_created,
    WorldForked: _world_forked,
    FaultsChanged: _faults_changed,
    RecordCreated: _record_created,
    RecordUpdated: _record_updated,
    RecordDeleted: _record_deleted,
    ClockAdvanced: _clock_advanced,
    EffectScheduled: _effect_scheduled,
    EffectFired: _effect_fired,
    CallStarted: _call_started,
    FaultInjected: _fault_injected,
    CallSucceeded: _bump,
    CallFailed: _bump,
    IdempotencyKeyRecorded: _key_recorded,
    IdempotentRetryAnswered: _bump,
    TokenIssued: _token_issued,
    TokenRefreshed: _token_refreshed,
    TokenExpired: _token_expired,
    TokenRevoked: _token_revoked,
    AuthChecked: _bump,
    ModelCalled: _model_called,
    ModelUsed: _bump,
    WebhookAttempted: _bump,
}
