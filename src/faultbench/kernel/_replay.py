"""`replay(spec_or_path, events) -> World`: rebuild a world from its event log.

The log is the truth: replay folds `apply` over it and nothing else (no seed generation, no
handlers, no fault plan). The one repair it makes is to types JSON cannot carry: a decoded
log holds datetime record values as strings, so they are turned back into datetimes by the
record's field kinds before applying, which is what makes `state_hash()` agree with the live
world's.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import msgspec

from ._book import Book
from ._codetools import tools_problem
from ._errors import ReplayError
from ._events import (
    Event,
    RecordCreated,
    RecordDeleted,
    RecordUpdated,
    WorldCreated,
    decode_events,
)
from ._reducer import apply
from ._spec import WorldSpec
from ._state import State
from ._world import World


def _to_datetime(value: Any) -> Any:
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value)
        except ValueError:
            return value  # not ours to judge: apply keeps it, the hash will tell
        return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
    return value


class _Coercer:
    """Turns decoded record values back into Python values, by table and field kind."""

    def __init__(self, spec: WorldSpec):
        self._dt: dict[str, frozenset[str]] = {
            name: frozenset(f.name for f in r.fields if f.kind == "datetime")
            for name, r in spec.records.items()
        }
        # JSON Lines sort keys (deterministic bytes); records go back to file field order.
        self._order: dict[str, tuple[str, ...]] = {
            name: tuple(f.name for f in r.fields) for name, r in spec.records.items()
        }

    def _fix(self, table: str, values: dict[str, Any]) -> dict[str, Any] | None:
        names = self._dt.get(table)
        if not names:
            return None
        changed = None
        for name in names:
            v = values.get(name)
            if isinstance(v, str):
                if changed is None:
                    changed = dict(values)
                changed[name] = _to_datetime(v)
        return changed

    def _in_order(self, table: str, fields: dict[str, Any]) -> dict[str, Any]:
        order = self._order.get(table)
        if order is not None and tuple(fields) != order and set(fields) == set(order):
            return {name: fields[name] for name in order}
        return fields

    def __call__(self, ev: Event) -> Event:
        t = type(ev)
        if t is RecordCreated:
            fields = self._fix(ev.table, ev.fields) or ev.fields  # type: ignore[attr-defined]
            fields = self._in_order(ev.table, fields)  # type: ignore[attr-defined]
            return ev if fields is ev.fields else msgspec.structs.replace(ev, fields=fields)  # type: ignore[attr-defined]
        if t is RecordUpdated:
            changes = self._fix(ev.table, ev.changes)  # type: ignore[attr-defined]
            old = self._fix(ev.table, ev.old)  # type: ignore[attr-defined]
            if changes is None and old is None:
                return ev
            return msgspec.structs.replace(
                ev,
                changes=ev.changes if changes is None else changes,  # type: ignore[attr-defined]
                old=ev.old if old is None else old,  # type: ignore[attr-defined]
            )
        if t is RecordDeleted:
            # The whole record: a stale read brings it back, in the order the agent saw.
            old = self._fix(ev.table, ev.old) or ev.old  # type: ignore[attr-defined]
            old = self._in_order(ev.table, old)  # type: ignore[attr-defined]
            return ev if old is ev.old else msgspec.structs.replace(ev, old=old)  # type: ignore[attr-defined]
        return ev


def _read_events(events: Any) -> list[Event]:
    if isinstance(events, str | os.PathLike):
        with open(events, "rb") as fh:
            return decode_events(fh.read())
    if isinstance(events, bytes | bytearray | memoryview):
        return decode_events(bytes(events))
    return list(events)


def replay(
    spec_or_path: WorldSpec | str | os.PathLike[str],
    events: Iterable[Event] | bytes | str | os.PathLike[str],
    *,
    strict: bool = True,
) -> World:
    """Rebuild the world an event log describes.

    `spec_or_path`: the world (a parsed `WorldSpec` or the world file's path). `events`: the
    events (e.g. `world.events`), JSON Lines bytes, or the path of a `.jsonl` file.
    The log must start with `WorldCreated` and have no gaps. If the world file changed since
    the log was recorded (its digest differs), that is an error unless `strict=False`.
    """
    if isinstance(spec_or_path, WorldSpec):
        spec = spec_or_path
    else:
        from ._loader import load_spec

        spec = load_spec(spec_or_path)
    log = _read_events(events)
    if not log:
        raise ReplayError(
            "Expected an event log starting with WorldCreated. Instead, received: no events."
        )
    first = log[0]
    if not isinstance(first, WorldCreated):
        raise ReplayError(
            f"Expected event 0 to be WorldCreated. Instead, received: {type(first).__name__} "
            f"(seq {first.seq}). Is this the beginning of the log?"
        )
    if strict:
        if first.world != spec.name:
            raise ReplayError(
                f"The log was recorded in world {first.world!r}, but the world file given is "
                f"{spec.name!r}. Pass the right world file, or strict=False to try anyway."
            )
        if first.digest and spec.digest and first.digest != spec.digest:
            where = spec.path or "the world file"
            raise ReplayError(
                f"The log was recorded with a world file of digest {first.digest[:12]}..., "
                f"but {where} now has digest {spec.digest[:12]}...: it changed since. Replay "
                "with the original file, or pass strict=False to replay anyway."
            )
        problem = tools_problem(first.tools, spec)
        if problem is not None:
            raise ReplayError(
                f"The log was recorded with other tools defined in code than the world given "
                f"has ({problem}). Replay with the same tools (the same MockToolRegistry), "
                "or pass strict=False to replay anyway."
            )

    coerce = _Coercer(spec)
    items: list[Event] = []
    # The fold allocates one state per event and no reference cycles; pausing the cyclic
    # GC meanwhile saves its repeated full scans of a growing heap (~25% on 100k events).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        state = _fold(State.empty(tuple(spec.records), spec.clock_start), log, coerce, items)
    finally:
        if was_enabled:
            gc.enable()
    return World.from_book(spec, first.seed, Book(state, None, items))


def _fold(state: State, log: list[Event], coerce: _Coercer, items: list[Event]) -> State:
    for i, ev in enumerate(log):
        if ev.seq != i:
            raise ReplayError(
                f"Gap in the event log: expected seq {i}, found {type(ev).__name__} with seq "
                f"{ev.seq}. Events {i}..{ev.seq - 1} are missing; was the file truncated?"
            )
        ev = coerce(ev)
        try:
            state = apply(state, ev)
        except ReplayError as exc:
            raise ReplayError(f"event {i} does not apply: {exc}") from None
        items.append(ev)
    return state
