"""`replay(spec_or_path, events) -> World`: rebuild a world from its event log.

The log is the truth: replay folds `apply` over it and nothing else (no seed generation, no
handlers, no fault plan). The one repair it makes is to types JSON cannot carry: a decoded
log holds datetime record values as strings, so they are turned back into datetimes by the
record's field kinds before applying, which is what makes `state_hash()` agree with the live
world's.
"""

from __future__ import annotations

import gc
import hashlib
import os
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

import msgspec

from .._errors import ReplayError
from .._spec import FieldSpec, WorldSpec, _coerce, from_json, has_datetime, tools_problem
from .._store import (
    Book,
    ClockAdvanced,
    Draft,
    EffectScheduled,
    Event,
    FaultInjected,
    LogRewound,
    RecordCreated,
    RecordDeleted,
    RecordUpdated,
    State,
    TokenIssued,
    WebhookAttempted,
    WorldCreated,
    apply,
    decode_events,
    encode_events,
)
from .._text import short_repr, to_utc
from ._webhooks import TARGET as WEBHOOKS
from ._world import World

# ---------------------------------------------------------------------------------------------
# Reading a log: events decoded from JSON lines, times and values coerced
# ---------------------------------------------------------------------------------------------


def _to_datetime(value: Any) -> Any:
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value)
        except ValueError:
            return value  # not ours to judge: apply keeps it, the hash will tell
        try:
            return to_utc(dt)
        except ValueError:
            return value  # outside the calendar in UTC: the field check names it
    return value


class _Coercer:
    """Turns decoded record values back into Python values, by table and field kind."""

    def __init__(self, spec: WorldSpec):
        self._dt: dict[str, frozenset[str]] = {
            name: frozenset(f.name for f in r.fields if f.kind == "datetime")
            for name, r in spec.records.items()
        }
        #: nested fields holding datetimes somewhere inside, by table
        self._deep: dict[str, dict[str, FieldSpec]] = {
            name: {f.name: f for f in r.fields if f.nested and has_datetime(f)}
            for name, r in spec.records.items()
        }
        for name, deep in self._deep.items():
            if deep:
                self._dt = {**self._dt, name: self._dt[name] | frozenset(deep)}
        # JSON Lines sort keys (deterministic bytes); records go back to file field order.
        self._order: dict[str, tuple[str, ...]] = {
            name: tuple(f.name for f in r.fields) for name, r in spec.records.items()
        }
        # Each method takes its own event type; the table pairs them, as the reducer's does.
        self._by_type: dict[type[Event], Callable[[Any], Event]] = {
            RecordCreated: self._created,
            RecordUpdated: self._updated,
            RecordDeleted: self._deleted,
            EffectScheduled: self._effect,
        }

    def _fix(self, table: str, values: dict[str, Any]) -> dict[str, Any] | None:
        names = self._dt.get(table)
        if not names:
            return None
        changed = None
        deep = self._deep[table]
        for name in names:
            v = values.get(name)
            if name in deep and v is not None:
                if changed is None:
                    changed = dict(values)
                changed[name] = from_json(deep[name], v)
            elif isinstance(v, str):
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
        # One look-up by type; most events (calls, clock) have no record values to turn back.
        fix = self._by_type.get(type(ev))
        return ev if fix is None else fix(ev)

    def _created(self, ev: RecordCreated) -> Event:
        fields = self._fix(ev.table, ev.fields) or ev.fields
        fields = self._in_order(ev.table, fields)
        return ev if fields is ev.fields else msgspec.structs.replace(ev, fields=fields)

    def _updated(self, ev: RecordUpdated) -> Event:
        changes = self._fix(ev.table, ev.changes)
        old = self._fix(ev.table, ev.old)
        if changes is None and old is None:
            return ev
        return msgspec.structs.replace(
            ev,
            changes=ev.changes if changes is None else changes,
            old=ev.old if old is None else old,
        )

    def _deleted(self, ev: RecordDeleted) -> Event:
        # The whole record: a stale read brings it back, in the order the agent saw.
        old = self._fix(ev.table, ev.old) or ev.old
        old = self._in_order(ev.table, old)
        return ev if old is ev.old else msgspec.structs.replace(ev, old=old)

    def _effect(self, ev: EffectScheduled) -> Event:
        # what it sets reaches a record when it fires
        changes = self._fix(ev.table, ev.changes)
        return ev if changes is None else msgspec.structs.replace(ev, changes=changes)


#: a path given to `replay` is read whole (the CLI bounds what it reads: `--max-size`)
_NO_LIMIT = 2**62


def _read_events(events: Any) -> list[Event]:
    if isinstance(events, str | os.PathLike):
        from .._read import read_bounded

        return decode_events(read_bounded(events, _NO_LIMIT))  # regular files only
    if isinstance(events, bytes | bytearray | memoryview):
        return decode_events(bytes(events))
    return list(events)


# ---------------------------------------------------------------------------------------------
# Replay: the world file a log names, its digest checked, the log folded event by event
# ---------------------------------------------------------------------------------------------


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
    the log was recorded (its digest differs), that is an error unless `strict=False`; the
    digest is checked on the file's bytes before the file is loaded, so a log never makes a
    world file other than the one it was recorded with import its handlers.

    A log is data, and replay checks what it folds: seq numbers without gaps, event times
    that follow the clock, record fields of the types the world file declares, and the old
    values of updates and deletions equal to the state's. `ReplayError.seq` is the first
    event that does not fit.
    """
    first_held = getattr(events, "first", 0)
    if first_held:
        raise ReplayError(
            f"This log holds only the events from seq {first_held} on: its world keeps only "
            "its latest events in memory (lowlevel.keep_events, serve --keep-events). Replay "
            "the journal that holds every event (serve --events FILE)."
        )
    log = _read_events(events)
    if not log:
        raise ReplayError(
            "Expected an event log starting with WorldCreated. Instead, received: no events."
        )
    first = log[0]
    if not isinstance(first, WorldCreated):
        raise _at(
            0,
            f"Expected event 0 to be WorldCreated. Instead, received: {type(first).__name__} "
            f"(seq {first.seq}). Is this the beginning of the log?",
        )
    if isinstance(spec_or_path, WorldSpec):
        spec = spec_or_path
    else:
        spec = _load_checked(os.fspath(spec_or_path), first, strict)
    if strict:
        if first.world != spec.name:
            raise _at(
                0,
                f"The log was recorded in world {first.world!r}, but the world file given is "
                f"{spec.name!r}. Pass the right world file, or strict=False to try anyway.",
            )
        if first.digest and spec.digest and first.digest != spec.digest:
            raise _digest_error(first, spec.path or "the world file", spec.digest)
        problem = tools_problem(first.tools, spec)
        if problem is not None:
            raise ReplayError(
                f"The log was recorded with other tools defined in code than the world given "
                f"has ({problem}). Replay with the same tools (the same MockToolRegistry), "
                "or pass strict=False to replay anyway."
            )

    coerce = _Coercer(spec)
    check = _Checker(spec)
    items: list[Event] = []
    # The fold allocates one state per event and no reference cycles; pausing the cyclic
    # GC meanwhile saves its repeated full scans of a growing heap (~25% on 100k events).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        state = _fold(State.empty(tuple(spec.records), spec.clock_start), log, coerce, check, items)
    finally:
        if was_enabled:
            gc.enable()
    if strict:  # after the fold, whose checks name a malformed row more precisely
        _check_seed_rows(spec, first, log)
    return World.from_book(spec, first.seed, Book(state, None, items))


def absorb_events(world: World, events: Iterable[Event]) -> int:
    """Fold `events`, which continue `world`'s log, into `world`: events another process
    appended to the same log (the serve shell's `--state` file, shared by several servers of
    one world). They are checked as `replay` checks a log (seqs without gaps from the
    world's next one, times on the clock, record values of their types, old values the
    state's) and join the world whole or not at all (`ReplayError` naming the first that
    does not fit; the world is then as it was). The world's log watcher is not shown them:
    they are already where it keeps them. Returns how many events joined."""
    spec = world.spec
    coerce = _Coercer(spec)
    check = _Checker(spec)
    book = world._book  # noqa: SLF001  (the kernel reaching its own Book)
    with book.lock:
        draft = Draft(book.state)
        for ev in events:
            seq = draft.state.seq
            if ev.seq != seq:
                raise _at(
                    ev.seq,
                    f"Expected the event after this world's last one to have seq {seq}. "
                    f"Instead, received {type(ev).__name__} with seq {ev.seq}: it does not "
                    "continue this world's log.",
                )
            ev = coerce(ev)
            try:
                check(draft.state, ev)
                draft.emit(ev)
            except ReplayError as exc:
                raise _at(seq, f"event {seq} does not apply: {exc}") from None
            except (TypeError, ValueError) as exc:
                raise _at(seq, f"event {seq} ({type(ev).__name__}) does not apply: {exc}") from None
        watcher, book.watcher = book.watcher, None
        try:
            book.commit_locked(draft)
        finally:
            book.watcher = watcher
    return len(draft.pending)


def _check_seed_rows(spec: WorldSpec, first: WorldCreated, log: list[Event]) -> None:
    """The log's seed rows are the rows its seed gives: a `WorldCreated.seed` edited after
    the fact (or edited seed rows) would otherwise replay silently into another world."""
    from ._world import genesis_events

    expected = genesis_events(spec, first.seed, first.run, first.faults)
    for i in range(1, len(expected)):
        if i >= len(log) or encode_events([log[i]]) != encode_events([expected[i]]):
            raise _at(
                i,
                f"event {i} is not the seed row that seed {first.seed} gives this world file: "
                "the log's seed (WorldCreated.seed) or its seed rows were changed after it was "
                "written. Replay the log as it was written, or pass strict=False to replay "
                "anyway.",
            )


def spec_for_log(path: str | os.PathLike[str], first: WorldCreated) -> WorldSpec:
    """The world file at `path` (one the user named), loaded only if its digest is the one
    the log's `WorldCreated` records (loading imports its handlers); a `ReplayError` saying
    so otherwise, and also when the log records no digest to compare."""
    if not first.digest:
        raise _at(
            0,
            "The log records no digest of its world file (WorldCreated.digest), so nothing "
            "says the world file is the one it was recorded with; nothing of the file was "
            "loaded.",
        )
    return _load_checked(os.fspath(path), first, True)


def _load_checked(path: str, first: WorldCreated, strict: bool) -> WorldSpec:
    """The world file at `path`, its digest compared with the log's before it is loaded
    (loading imports its handler modules)."""
    from .._read import load_spec, read_world_file

    raw = read_world_file(path)
    digest = hashlib.sha256(raw).hexdigest()
    if strict and first.digest and first.digest != digest:
        raise _digest_error(first, path, digest)
    return load_spec(path, raw=raw)


def _digest_error(first: WorldCreated, where: str, digest: str) -> ReplayError:
    return _at(
        0,
        f"The log was recorded with a world file of digest {first.digest[:12]}..., but "
        f"{where} has digest {digest[:12]}...: it is another file, or it changed since. "
        "Replay with the original file (nothing of this one was loaded), or pass "
        "strict=False to replay anyway.",
    )


def _at(seq: int, message: str) -> ReplayError:
    err = ReplayError(message)
    err.seq = seq
    return err


def _fold(
    state: State, log: list[Event], coerce: _Coercer, check: _Checker, items: list[Event]
) -> State:
    for i, ev in enumerate(log):
        if ev.seq != i:
            raise _at(
                i,
                f"Gap in the event log: expected seq {i}, found {type(ev).__name__} with seq "
                f"{ev.seq}. Events {i}..{ev.seq - 1} are missing; was the file truncated?",
            )
        ev = coerce(ev)
        try:
            check(state, ev)
            state = apply(state, ev)
        except ReplayError as exc:
            raise _at(i, f"event {i} does not apply: {exc}") from None
        except (TypeError, ValueError) as exc:  # a value no world could hold
            raise _at(i, f"event {i} ({type(ev).__name__}) does not apply: {exc}") from None
        items.append(ev)
    return state


# ---------------------------------------------------------------------------------------------
# Times: every event on the clock, in the calendar
# ---------------------------------------------------------------------------------------------


def _on_clock(state: State, ev: Event) -> bool:
    """Check `ev`'s time: at the clock (event 0, which sets it: in the calendar). False for
    event 0, which needs no other check."""
    if ev.seq == 0:
        _in_calendar(ev, ev.at)
        return False
    if ev.at != state.clock:
        raise _off_clock(state, ev)
    return True


def _off_clock(state: State, ev: Event) -> ReplayError:
    return ReplayError(
        f"{type(ev).__name__} is stamped {ev.at.isoformat()}, but the clock was at "
        f"{state.clock.isoformat()}; expected every event at the time of the clock "
        "(it moves only by ClockAdvanced)"
    )


def _in_calendar(ev: Event, at: datetime) -> None:
    try:
        to_utc(at)
    except ValueError as exc:
        raise ReplayError(f"{type(ev).__name__} {exc}") from None


# ---------------------------------------------------------------------------------------------
# What a log must show: the checks of each event type against the world it declares
# ---------------------------------------------------------------------------------------------


class _Checker:
    """What `apply` takes on trust from a live world and a log must show: times that follow
    the clock, record values of their fields' types, and old values that are the state's."""

    def __init__(self, spec: WorldSpec):
        self._fields = {name: {f.name: f for f in r.fields} for name, r in spec.records.items()}
        self._principals = frozenset(spec.auth.principals) if spec.auth is not None else None
        self._by_type: dict[type[Event], Callable[[State, Any], None]] = {
            EffectScheduled: self._effect,
            TokenIssued: self._token,
            WebhookAttempted: self._attempt,
            WorldCreated: self._first,
            LogRewound: self._first,
            ClockAdvanced: self._clock,
            RecordCreated: self._created,
            RecordUpdated: self._updated,
            RecordDeleted: self._deleted,
            FaultInjected: self._fault,
        }

    def __call__(self, state: State, ev: Event) -> None:
        # One look-up by type, as the reducer does (`type(ev)` once: a dozen `type(ev) is X`
        # tests cost ~4% of replay, and `match`/isinstance ~0.5 us an event); events without
        # a case (the calls' own) need only their time checked.
        check = self._by_type.get(type(ev))
        if check is not None:
            check(state, ev)
        else:
            _on_clock(state, ev)

    def _first(self, state: State, ev: WorldCreated | LogRewound) -> None:
        if ev.seq == 0:
            _in_calendar(ev, ev.at)
        else:
            raise ReplayError(f"{type(ev).__name__} may only be event 0 (it is {ev.seq}).")

    def _clock(self, state: State, ev: ClockAdvanced) -> None:
        _in_calendar(ev, ev.to)  # the events that set the clock: in the calendar
        if ev.seq == 0:
            return
        if ev.at != state.clock:
            raise _off_clock(state, ev)
        if not ev.to > ev.at:
            raise ReplayError(
                f"ClockAdvanced goes from {ev.at.isoformat()} to "
                f"{ev.to.isoformat()}; expected a later time: the clock only moves "
                "forward"
            )

    @staticmethod
    def _behind(state: State, ev: WebhookAttempted | FaultInjected) -> None:
        """A webhook attempt (and its delivery's fault) is stamped when it was due, at or
        before the clock: a shell that sends behind the clock logs it later
        (`World.webhook_attempted(at=)`, `serve --webhook-url`)."""
        _in_calendar(ev, ev.at)
        if ev.at > state.clock:
            raise _off_clock(state, ev)

    def _fault(self, state: State, ev: FaultInjected) -> None:
        if ev.tool == WEBHOOKS:
            self._behind(state, ev)
        else:
            _on_clock(state, ev)

    def _created(self, state: State, ev: RecordCreated) -> None:
        if not _on_clock(state, ev):
            return
        fields = self._fields.get(ev.table)
        if fields is not None:
            self._typed(ev, ev.fields, fields, whole=True)
            if ev.fields.get("id") != ev.id:
                raise ReplayError(f"RecordCreated of id {ev.id!r} has another id in its fields")

    def _updated(self, state: State, ev: RecordUpdated) -> None:
        if not _on_clock(state, ev):
            return
        fields = self._fields.get(ev.table)
        if fields is not None:
            self._typed(ev, ev.changes, fields, whole=False)
            if ev.old:
                self._same(state, ev, ev.old, set(ev.changes))

    def _effect(self, state: State, ev: EffectScheduled) -> None:
        """A change scheduled on a table the world declares, to fields of their types."""
        if not _on_clock(state, ev):
            return
        fields = self._fields.get(ev.table)
        if fields is None:
            raise ReplayError(
                f"EffectScheduled {short_repr(ev.effect_id)} changes table "
                f"{short_repr(ev.table)}, which the world does not declare; expected one of "
                f"{', '.join(self._fields) or 'no table'}"
            )
        self._typed(ev, ev.changes, fields, whole=False)
        if not ev.due >= ev.at:
            raise ReplayError(
                f"EffectScheduled {short_repr(ev.effect_id)} is due at {ev.due.isoformat()}, "
                f"before it was scheduled ({ev.at.isoformat()}); expected a time to come"
            )
        _in_calendar(ev, ev.due)

    def _token(self, state: State, ev: TokenIssued) -> None:
        """A token for a principal the world's `auth:` block declares."""
        if not _on_clock(state, ev):
            return
        if self._principals is None:
            raise ReplayError(
                f"TokenIssued for principal {short_repr(ev.principal)}, but the world has no "
                "auth: block; expected no tokens"
            )
        if ev.principal not in self._principals:
            raise ReplayError(
                f"TokenIssued for principal {short_repr(ev.principal)}, which the world's "
                f"auth: block does not declare; expected one of {', '.join(self._principals)}"
            )
        _in_calendar(ev, ev.expires_at)

    def _attempt(self, state: State, ev: WebhookAttempted) -> None:
        """A delivery attempt numbered from 1, with an HTTP status if any, and an outcome
        `webhook_attempted` gives, stamped at or before the clock (`_behind`)."""
        self._behind(state, ev)
        if ev.attempt < 1:
            raise ReplayError(
                f"WebhookAttempted of {short_repr(ev.delivery)} is attempt {ev.attempt}; "
                "expected 1 or more"
            )
        if ev.status is not None and not 100 <= ev.status <= 599:
            raise ReplayError(
                f"WebhookAttempted of {short_repr(ev.delivery)} has status {ev.status}; "
                "expected an HTTP status from 100 to 599"
            )
        if ev.outcome not in ("succeeded", "failed", "dropped"):
            raise ReplayError(
                f"WebhookAttempted of {short_repr(ev.delivery)} has outcome "
                f"{short_repr(ev.outcome)}; expected succeeded, failed or dropped"
            )
        if ev.retry_at is not None:
            _in_calendar(ev, ev.retry_at)

    def _deleted(self, state: State, ev: RecordDeleted) -> None:
        if not _on_clock(state, ev):
            return
        if ev.old:
            self._same(state, ev, ev.old, None)

    @staticmethod
    def _typed(ev: Any, values: dict[str, Any], fields: dict[str, Any], *, whole: bool) -> None:
        for name, value in values.items():
            field = fields.get(name)
            if field is None or (not whole and name == "id"):
                raise ReplayError(
                    f"{type(ev).__name__} of {ev.table} {ev.id!r} sets {short_repr(name)}, which "
                    f"is not a field it may set; expected some of {', '.join(fields)}"
                )
            ok, _ = _coerce(field, value)
            if not ok:
                raise ReplayError(
                    f"{type(ev).__name__} of {ev.table} {ev.id!r} sets {name} to "
                    f"{short_repr(value)}, not a value of its type ({field.raw})"
                )
        if whole and set(values) != set(fields):
            missing = ", ".join(sorted(set(fields) - set(values)))
            raise ReplayError(
                f"RecordCreated of {ev.table} {ev.id!r} lacks fields: {missing}; expected the "
                "whole record"
            )

    @staticmethod
    def _same(state: State, ev: Any, old: dict[str, Any], keys: set[str] | None) -> None:
        rows = state.tables.get(ev.table)
        current = rows.get(ev.id) if rows is not None else None
        if current is None:
            return  # apply says it is missing
        names = set(current) if keys is None else keys
        if set(old) != names or any(current.get(k) != v for k, v in old.items()):
            raise ReplayError(
                f"{type(ev).__name__} of {ev.table} {ev.id!r} says the old values were "
                f"{short_repr(old)}, but the state holds "
                f"{short_repr({k: current.get(k) for k in names})}"
            )
