"""Scheduling effects from operations and handlers (the clock side is `_store/_later.py`).

- An operation's `set:` fields are written by every create or update it makes, whatever
  the arguments (they are not arguments of the tool).
- Its `then:` schedules a change of the record it wrote: the delay is drawn in `after`'s
  range and the `or:` branch with its probability, from (seed, run, operation, call id,
  record id) alone, so the same calls give the same effects in every run of one index, and
  another run index draws again, as fault decisions do. What was drawn is in the
  `EffectScheduled` event: a replay reads it, it never draws.
- `world.schedule(after=..., record=..., id=..., set={...})`, for tests and custom
  handlers, schedules a change directly: a record, fields and a delay, no code, so it
  replays from the log like everything else.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from .._errors import RecordError
from .._store import check_value, due_at, schedule_change, table_of

if TYPE_CHECKING:
    from .._spec import OperationSpec, WorldSpec
    from .._store import State, Store

_UNIT = 2.0**-53


def draw_then(
    seed: int, run: int, op: OperationSpec, call_id: str | None, rid: str
) -> tuple[float, bool]:
    """(delay in seconds, whether the `or:` branch is taken) for `op`'s `then:` on `rid`."""
    then = op.then
    assert then is not None
    key = f"faultbench-then-v1\x1f{seed}\x1f{run}\x1f{op.qualname}\x1f{call_id}\x1f{rid}"
    x = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=16).digest(), "big")
    u_delay, u_branch = (x >> 75) * _UNIT, ((x & (2**64 - 1)) >> 11) * _UNIT
    lo, hi = then.after
    delay = round(lo + (hi - lo) * u_delay, 3)  # whole milliseconds read better in a log
    taken = then.branch is not None and u_branch < then.branch.p
    return delay, taken


def schedule_then(store: Store, seed: int, op: OperationSpec, rid: str) -> str:
    """Schedule `op`'s `then:` for record `rid`, written by the call running now."""
    then = op.then
    assert then is not None
    assert op.record is not None
    state = store.state
    delay, taken = draw_then(seed, state.settings.run, op, store.call_id, rid)
    changes = then.branch.set if taken and then.branch is not None else then.set
    due = due_at(state.clock, delay)
    return schedule_change(
        store, due, op.record, rid, dict(changes), branch="or" if taken else "then"
    )


def schedule(
    store: Store,
    spec: WorldSpec,
    tables: dict[str, Any],
    after: float | str | timedelta,
    record: str,
    id: str | int,
    set: Mapping[str, Any],
) -> str:
    """`world.schedule(...)`: check everything now, so the effect cannot fail when it fires."""
    seconds = _seconds(after)
    table = table_of(tables, store, spec, record)  # type: ignore[arg-type]  # any store
    rspec = table.spec
    rid = str(id) if isinstance(id, int) and not isinstance(id, bool) else id
    if not isinstance(rid, str):
        raise RecordError(f"Expected a record id (a string). Instead, received: {id!r}")
    if rid not in store.state.tables[rspec.name]:
        from .._errors import RecordNotFound

        raise RecordNotFound(f"{rspec.name} {rid!r} not found", table=rspec.name, id=rid)
    if not isinstance(set, Mapping) or not set:
        raise TypeError(
            f"Expected set= a mapping of field -> value, e.g. set={{'status': 'succeeded'}}. "
            f"Instead, received: {set!r}"
        )
    changes: dict[str, Any] = {}
    for key, value in set.items():
        f = rspec.field(key) if isinstance(key, str) else None
        if f is None or key == "id":
            names = [x.name for x in rspec.fields if x.name != "id"]
            raise RecordError(
                f"{rspec.name} has no field {key!r} to schedule a change of; expected one of "
                f"{', '.join(names)}"
            )
        changes[key] = check_value(rspec.name, f, value)
    return schedule_change(store, due_at(store.state.clock, seconds), rspec.name, rid, changes)


def pending_effects(state: State) -> list[dict[str, Any]]:
    """`world.scheduled`: the effects of `state` waiting to fire, in firing order."""
    return [
        {"effect_id": p.effect_id, "due": p.due, "record": p.table, "id": p.id,
         "set": dict(p.changes)}
        for p in state.effects
    ]  # fmt: skip


def _seconds(after: float | str | timedelta) -> float:
    if isinstance(after, timedelta):
        seconds = after.total_seconds()
        if seconds < 0:
            raise ValueError(f"Expected after= a delay >= 0. Instead, received: {after!r}")
        return seconds
    from .._read import parse_duration

    try:
        return parse_duration(after)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"after=: {exc}") from None
