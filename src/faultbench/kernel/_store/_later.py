"""Effects that happen later: record changes scheduled on the virtual clock.

An operation's `then:` (a refund `pending` now, `succeeded` a few minutes later) and a
handler's `world.schedule(...)` log an `EffectScheduled`: which record, which fields, and
when, everything already decided (a `then:`'s duration and branch are drawn when it is
scheduled, see `_calls/_later.py`). The effect waits in the state (`State.effects`, sorted by
due time, then by scheduling order) until the clock reaches it.

Time moves only through `move_clock`: every `ClockAdvanced` a world writes (a test's
`clock.advance`, a call's latency or timeout, a handler's charged time) comes from here, and
so does the check at the start of each call (`fire_due` at the current time). On its way from
`at` to `to`, the clock stops at each due effect: `ClockAdvanced` to its due time,
`EffectFired`, then the record's `RecordUpdated` (no call id: no call made it). So an effect
fires exactly at its time, in the same order in a live world, a replay and a fork, and a
restore or reset takes its pending effects with the state it goes back to.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from ._events import ClockAdvanced, EffectFired, EffectScheduled, Event, RecordUpdated

if TYPE_CHECKING:
    from ._state import State


class Writes(Protocol):
    """What the clock moves and effects fire through: a `Book`, a `Draft`, a transaction."""

    @property
    def state(self) -> State: ...

    def emit(self, event: Event) -> None: ...


class Store(Writes, Protocol):
    """What effects are scheduled through: a store that knows its call."""

    @property
    def call_id(self) -> str | None: ...


def schedule_change(
    store: Store,
    due: datetime,
    table: str,
    rid: str,
    changes: dict[str, Any],
    *,
    branch: str = "",
) -> str:
    """Log that record `rid` of `table` gets `changes` (values already checked against the
    record's fields) at `due`; returns the effect's id."""
    state = store.state
    effect_id = f"e{state.effect_n + 1}"
    store.emit(
        EffectScheduled(
            seq=state.seq,
            at=state.clock,
            effect_id=effect_id,
            due=due,
            table=table,
            id=rid,
            changes=dict(changes),
            call_id=store.call_id,
            branch=branch,
        )
    )
    return effect_id


def fire_due(store: Writes, upto: datetime, call_id: str | None = None) -> None:
    """Fire, in order, every pending effect due at or before `upto`, moving the clock to
    each one's due time first (never past `upto`, never backwards)."""
    while True:
        state = store.state
        if not state.effects or state.effects[0].due > upto:
            return
        p = state.effects[0]
        if p.due > state.clock:
            store.emit(ClockAdvanced(seq=state.seq, at=state.clock, to=p.due, call_id=call_id))
            state = store.state
        old = state.tables[p.table].get(p.id)
        store.emit(
            EffectFired(
                seq=state.seq,
                at=state.clock,
                effect_id=p.effect_id,
                table=p.table,
                id=p.id,
                outcome="applied" if old is not None else "gone",
            )
        )
        if old is None:
            continue
        changes = {
            k: v for k, v in p.changes.items() if old.get(k) != v or type(old.get(k)) is not type(v)
        }
        if changes:
            state = store.state
            store.emit(
                RecordUpdated(
                    seq=state.seq,
                    at=state.clock,
                    table=p.table,
                    id=p.id,
                    changes=changes,
                    old={k: old.get(k) for k in changes},
                    call_id=None,
                )
            )


def move_clock(store: Writes, to: datetime, call_id: str | None) -> None:
    """Move `store`'s clock forward to `to`, firing the effects due on the way."""
    fire_due(store, to, call_id)
    state = store.state
    if to > state.clock:
        store.emit(ClockAdvanced(seq=state.seq, at=state.clock, to=to, call_id=call_id))


def due_at(now: datetime, seconds: float) -> datetime:
    """`now + seconds`, refused past the year 9999 with a message saying so."""
    try:
        return now + timedelta(seconds=seconds)
    except OverflowError:
        raise ValueError(
            f"an effect due {seconds:g}s after {now.isoformat()} would fall after the year "
            "9999; expected a shorter delay"
        ) from None
