"""Diffs: what changed between two states (`diff_tables`) and where two runs parted ways
(`diff_events`).

Both are pure functions over plain data: table views (`Mapping[table, Mapping[id,
Mapping[field, value]]]`) and event sequences. `World.diff` and `faultbench.diff_events` call
them; the pytest report prints an `EventDiff` between a failing run and a passing one.

Output is deterministic: tables in name order, ids in natural order ("2" before "10"), fields
in record order, so a diff printed in CI reads the same as on a laptop.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import msgspec

from .._store import (
    CallFailed,
    CallStarted,
    CallSucceeded,
    ClockAdvanced,
    EffectFired,
    EffectScheduled,
    Event,
    FaultInjected,
    RecordCreated,
    RecordDeleted,
    RecordUpdated,
    WorldCreated,
    WorldForked,
)
from .._text import format_key, format_value, id_order, iso_time

__all__ = [
    "Divergence",
    "EventDiff",
    "FieldChange",
    "RecordAdded",
    "RecordChanged",
    "RecordRemoved",
    "StateDiff",
    "diff_events",
    "diff_tables",
    "format_event",
    "format_value",
]


def _seconds(s: float) -> str:
    return f"{s:g}s"


def format_event(event: Event, limit: int = 160) -> str:
    """One event as one readable line: `RecordCreated refund 2 {order_id: "1", amount: 30.0}`.

    No seq, time or call id: those are positions, shown around the line where they matter.
    """
    name = type(event).__name__
    if isinstance(event, RecordCreated):
        fields = {k: v for k, v in event.fields.items() if k != "id"}
        text = f"{name} {event.table} {event.id} {format_value(fields)}"
    elif isinstance(event, RecordUpdated):
        parts = []
        for k, new in event.changes.items():
            if k in event.old:
                parts.append(
                    f"{format_key(k)}: {format_value(event.old[k])} -> {format_value(new)}"
                )
            else:
                parts.append(f"{format_key(k)}: {format_value(new)}")
        text = f"{name} {event.table} {event.id} " + ", ".join(parts)
    elif isinstance(event, RecordDeleted):
        text = f"{name} {event.table} {event.id}"
    elif isinstance(event, ClockAdvanced):
        step = (event.to - event.at).total_seconds()
        text = f"{name} +{_seconds(step)} to {iso_time(event.to)}"
    elif isinstance(event, CallStarted):
        text = f"{name} {event.tool} {format_value(event.args)}"
    elif isinstance(event, FaultInjected):
        text = f"{name} {event.tool} {event.kind}"
        if event.detail:
            text += f" {format_value(event.detail)}"
    elif isinstance(event, CallSucceeded):
        text = f"{name} {event.tool} -> {format_value(event.value)}"
    elif isinstance(event, CallFailed):
        text = f"{name} {event.tool} {event.kind}: {event.message}"
    elif isinstance(event, WorldCreated):
        text = f"{name} {event.world} seed={event.seed} run={event.run}"
        if not event.faults:
            text += " faults=off"
    elif isinstance(event, WorldForked):
        text = f"{name} at seq {event.parent_seq} run={event.run}"
        if not event.faults:
            text += " faults=off"
    elif isinstance(event, EffectScheduled):
        branch = f" ({event.branch})" if event.branch else ""
        text = (
            f"{name} {event.effect_id} {event.table} {event.id} {format_value(event.changes)} "
            f"at {iso_time(event.due)}{branch}"
        )
    elif isinstance(event, EffectFired):
        gone = "" if event.outcome == "applied" else f" ({event.outcome})"
        text = f"{name} {event.effect_id} {event.table} {event.id}{gone}"
    else:  # an event type added later: still readable
        fields = {f: getattr(event, f) for f in event.__struct_fields__ if f not in ("seq", "at")}
        text = f"{name} {format_value(fields)}"
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


# ---------------------------------------------------------------------------------------------
# State diffs
# ---------------------------------------------------------------------------------------------


def _field_names(record: Mapping[str, Any]) -> list[str]:
    # A dict keeps record (file) order; other mappings (e.g. immutables.Map) iterate in hash
    # order, which changes between processes, so they are sorted.
    return list(record) if isinstance(record, dict) else sorted(record)


def _same(x: Any, y: Any) -> bool:
    # 1 == True == 1.0 in Python, but a field that went from 1 to True did change.
    return x is y or (type(x) is type(y) and x == y)


class FieldChange(msgspec.Struct, frozen=True):
    old: Any
    new: Any


class _WholeRecord(msgspec.Struct, frozen=True):
    """A record that is only on one side of a diff, with all its fields."""

    table: str
    id: str
    fields: dict[str, Any]
    _sign: ClassVar[str] = ""

    def __str__(self) -> str:
        rest = {k: v for k, v in self.fields.items() if k != "id"}
        return f"{self._sign} {self.table} {self.id} {format_value(rest)}"


class RecordAdded(_WholeRecord, frozen=True, tag="added"):
    _sign: ClassVar[str] = "+"


class RecordRemoved(_WholeRecord, frozen=True, tag="removed"):
    _sign: ClassVar[str] = "-"


class RecordChanged(msgspec.Struct, frozen=True, tag="changed"):
    table: str
    id: str
    changes: dict[str, FieldChange]  # field -> old/new, in record field order

    def __str__(self) -> str:
        parts: list[str] = []
        for k, c in self.changes.items():
            _changed_parts(format_key(k), c.old, c.new, parts)
        return f"~ {self.table} {self.id} " + ", ".join(parts)


def _changed_parts(path: str, old: Any, new: Any, out: list[str]) -> None:
    """`path: old -> new`, or for two objects only their differing fields, by nested path
    (`address.city: "Oslo" -> "Bergen"`); lists and other values are shown whole."""
    if isinstance(old, dict) and isinstance(new, dict) and set(old) == set(new):
        for k in old:
            if not _same(old[k], new[k]):
                _changed_parts(f"{path}.{format_key(k)}", old[k], new[k], out)
        return
    out.append(f"{path}: {format_value(old)} -> {format_value(new)}")


RecordDiff = RecordAdded | RecordRemoved | RecordChanged


class StateDiff:
    """Records added, removed and changed between two states (a -> b).

    Falsy when nothing changed. Iterating yields `RecordAdded` / `RecordRemoved` /
    `RecordChanged` entries in table order, then natural id order; `str()` prints one line each::

        + refund 2 {order_id: "1", amount: 30.0}
        ~ order 1 status: "delivered" -> "returned"
        - session 7 {user: "ann"}
    """

    __slots__ = ("entries",)

    def __init__(self, entries: Sequence[RecordDiff] = ()):
        self.entries: tuple[RecordDiff, ...] = tuple(entries)

    @property
    def added(self) -> list[RecordAdded]:
        return [e for e in self.entries if isinstance(e, RecordAdded)]

    @property
    def removed(self) -> list[RecordRemoved]:
        return [e for e in self.entries if isinstance(e, RecordRemoved)]

    @property
    def changed(self) -> list[RecordChanged]:
        return [e for e in self.entries if isinstance(e, RecordChanged)]

    @property
    def tables(self) -> list[str]:
        """Names of the tables with at least one difference, in order."""
        return list(dict.fromkeys(e.table for e in self.entries))

    def table(self, name: str) -> StateDiff:
        """The part of this diff about one table."""
        return StateDiff([e for e in self.entries if e.table == name])

    def __bool__(self) -> bool:
        return bool(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[RecordDiff]:
        return iter(self.entries)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StateDiff) and self.entries == other.entries

    __hash__ = None  # type: ignore[assignment]  # compared by value, so not hashable

    def __str__(self) -> str:
        if not self.entries:
            return "no changes"
        return "\n".join(str(e) for e in self.entries)

    def __repr__(self) -> str:
        if not self.entries:
            return "StateDiff(no changes)"
        counts = f"+{len(self.added)} ~{len(self.changed)} -{len(self.removed)}"
        return f"StateDiff({counts}):\n" + "\n".join(f"  {e}" for e in self.entries)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form: `{"added": [...], "removed": [...], "changed": [...]}`."""
        return {
            "added": msgspec.to_builtins([_untag(e) for e in self.added]),
            "removed": msgspec.to_builtins([_untag(e) for e in self.removed]),
            "changed": [
                {
                    "table": e.table,
                    "id": e.id,
                    "changes": {
                        k: {"old": msgspec.to_builtins(c.old), "new": msgspec.to_builtins(c.new)}
                        for k, c in e.changes.items()
                    },
                }
                for e in self.changed
            ],
        }


def _untag(e: RecordAdded | RecordRemoved) -> dict[str, Any]:
    return {"table": e.table, "id": e.id, "fields": e.fields}


def diff_tables(
    a: Mapping[str, Mapping[str, Mapping[str, Any]]],
    b: Mapping[str, Mapping[str, Mapping[str, Any]]],
) -> StateDiff:
    """Compare two table views, a (before) -> b (after).

    A table present on one side only counts as empty on the other. Values compare by type and
    value, so `1 -> True` and `30 -> 30.0` are changes. Records that are the same object (a
    persistent map shared by a snapshot and its world) are skipped without a look inside, so
    diffing a world against a recent snapshot costs little more than walking the ids.
    """
    entries: list[RecordDiff] = []
    empty: Mapping[str, Mapping[str, Any]] = {}
    for table in sorted(set(a) | set(b)):
        ta = a.get(table, empty)
        tb = b.get(table, empty)
        if ta is tb:
            continue
        # Find the differing ids first and sort only those: most records are shared or equal.
        differing = [rid for rid, ra in ta.items() if tb.get(rid) is not ra]
        differing += [rid for rid in tb if rid not in ta]
        for rid in sorted(differing, key=id_order):
            ra = ta.get(rid)
            rb = tb.get(rid)
            if ra is None:
                assert rb is not None  # a differing id is in one table at least
                entries.append(RecordAdded(table, rid, {k: rb[k] for k in _field_names(rb)}))
            elif rb is None:
                entries.append(RecordRemoved(table, rid, {k: ra[k] for k in _field_names(ra)}))
            else:
                names = _field_names(ra)
                names += [k for k in _field_names(rb) if k not in ra]
                missing = object()
                changes = {}
                for k in names:
                    old, new = ra.get(k, missing), rb.get(k, missing)
                    if not _same(old, new):
                        changes[k] = FieldChange(
                            None if old is missing else old, None if new is missing else new
                        )
                if changes:
                    entries.append(RecordChanged(table, rid, changes))
    return StateDiff(entries)


# ---------------------------------------------------------------------------------------------
# Event-log diffs
#
# Two runs of the same scenario never have byte-identical logs once they diverge: every later
# event has another `seq`, call ids are numbered in order, and one extra 30 s timeout shifts
# every later `at`. Comparing raw events would mark everything after the first difference as
# changed. So events are compared by *content*: a normalized key without the fields that are
# positions rather than facts (see `_IGNORED`). A clock step compares by its duration, not by
# its absolute times.
# ---------------------------------------------------------------------------------------------

#: Fields left out of the comparison key, per event type (plus `seq` and `at` everywhere).
_IGNORED: dict[type, frozenset[str]] = {
    # Runs compared in a report differ in their run index by construction, and a faults-off
    # reference run is a natural baseline; the path is where the world file sat on disk. These
    # are settings, not behaviour: `EventDiff.settings` names them when they differ.
    WorldCreated: frozenset({"run", "path", "faults"}),
    WorldForked: frozenset({"parent_seq", "run", "faults"}),
}
_ALWAYS_IGNORED = frozenset({"seq", "at", "call_id", "k"})
_key_encoder = msgspec.json.Encoder(order="deterministic")
_key_fields: dict[type, tuple[int, ...]] = {}

#: Above this many cell comparisons, the middle of two logs is not aligned (difflib's worst
#: case is quadratic); it is shown as all removed then all added instead.
_ALIGN_LIMIT = 10_000_000


def _event_key(event: Event) -> bytes:
    cls = type(event)
    idx = _key_fields.get(cls)
    if idx is None:
        ignored = _ALWAYS_IGNORED | _IGNORED.get(cls, frozenset())
        idx = tuple(i for i, f in enumerate(cls.__struct_fields__) if f not in ignored)
        _key_fields[cls] = idx
    values = msgspec.structs.astuple(event)
    if isinstance(event, ClockAdvanced):
        return _key_encoder.encode(("ClockAdvanced", (event.to - event.at).total_seconds()))
    return _key_encoder.encode((cls.__name__, *[values[i] for i in idx]))


class Divergence(msgspec.Struct, frozen=True):
    """Where two logs first differ: list indexes, seqs, and the two events (None past the end
    of the shorter log)."""

    index_a: int
    index_b: int
    seq_a: int | None
    seq_b: int | None
    a: Event | None
    b: Event | None


class EventDiff:
    """How two event logs differ. Falsy when they are equal by content.

    `first_divergence` says where they part; `lines` is a unified-diff-like body: two lines
    of context, then `-` events only in a and `+` events only in b, with `@@` headers giving
    the indexes of each hunk::

        @@ a[7:9] b[7:13] @@
          CallStarted issue_refund {order_id: "1", amount: 30.0}
        - CallSucceeded issue_refund -> {id: "1", order_id: "1", amount: 30.0}
        + FaultInjected issue_refund timeout {timeout_s: 30}
        + CallFailed issue_refund timeout: 504 Gateway Timeout: ...
        + CallStarted issue_refund {order_id: "1", amount: 30.0}
        + RecordCreated refund 2 {order_id: "1", amount: 30.0}
    """

    __slots__ = ("added", "first_divergence", "len_a", "len_b", "lines", "removed", "settings")

    def __init__(
        self,
        first_divergence: Divergence | None,
        lines: list[str],
        *,
        len_a: int,
        len_b: int,
        removed: int = 0,
        added: int = 0,
        settings: str = "",
    ):
        self.first_divergence = first_divergence
        self.lines = lines
        self.len_a = len_a
        self.len_b = len_b
        self.removed = removed  # events only in a
        self.added = added  # events only in b
        #: how the two logs' settings differ (run index, faults on/off), "" when they do not
        self.settings = settings

    def __bool__(self) -> bool:
        return self.first_divergence is not None

    @property
    def distance(self) -> int:
        """Events only in a plus events only in b: how to pick the closest of several runs."""
        return self.removed + self.added

    def header(self) -> str:
        d = self.first_divergence
        if d is None:
            return f"event logs are equal ({self.len_a} events)"
        return (
            f"event logs differ at event {d.index_a} (a: {self.len_a} events, -{self.removed};"
            f" b: {self.len_b} events, +{self.added})"
        )

    def __str__(self) -> str:
        d = self.first_divergence
        if d is None:
            return self.header()
        first = [
            self.header(),
            *([f"  settings: {self.settings}"] if self.settings else []),
            "  a: " + (format_event(d.a) if d.a is not None else "(end of log)"),
            "  b: " + (format_event(d.b) if d.b is not None else "(end of log)"),
        ]
        return "\n".join(first + self.lines)

    def __repr__(self) -> str:
        return f"<EventDiff {self.header()}>"

    def to_dict(self) -> dict[str, Any]:
        d = self.first_divergence
        return {
            "equal": d is None,
            "first_divergence": None if d is None else msgspec.to_builtins(d),
            "len_a": self.len_a,
            "len_b": self.len_b,
            "removed": self.removed,
            "added": self.added,
            "distance": self.distance,
            "settings": self.settings,
            "lines": list(self.lines),
        }


def diff_events(
    a: Sequence[Event], b: Sequence[Event], *, context: int = 2, max_lines: int = 200
) -> EventDiff:
    """Align two event logs and report where they diverge.

    Events compare by content, ignoring `seq`, `at`, `call_id` and `k` (positions that shift
    as soon as one run makes an extra call), a `WorldCreated`'s `run` and `path`, and a
    `WorldForked`'s `parent_seq` and `run`; a `ClockAdvanced` compares by its duration. Record
    values, call arguments, answers and fault kinds all count.

    The common prefix and suffix are stripped before aligning (difflib) the middle, so two
    100k-event logs that differ in a few calls cost a linear scan. `context` equal events are
    shown around each hunk; `lines` stops after `max_lines` with a count of what was left out.
    """
    a = list(a)
    b = list(b)
    na, nb = len(a), len(b)
    ka = [_event_key(e) for e in a]
    kb = [_event_key(e) for e in b] if b is not a else ka

    lo = 0
    stop = min(na, nb)
    while lo < stop and (a[lo] is b[lo] or ka[lo] == kb[lo]):
        lo += 1
    settings = _settings(a, b)
    if lo == na == nb:
        return EventDiff(None, [], len_a=na, len_b=nb, settings=settings)
    hi_a, hi_b = na, nb
    while hi_a > lo and hi_b > lo and ka[hi_a - 1] == kb[hi_b - 1]:
        hi_a -= 1
        hi_b -= 1

    first = Divergence(
        index_a=lo,
        index_b=lo,
        seq_a=a[lo].seq if lo < na else None,
        seq_b=b[lo].seq if lo < nb else None,
        a=a[lo] if lo < na else None,
        b=b[lo] if lo < nb else None,
    )

    mid_a, mid_b = ka[lo:hi_a], kb[lo:hi_b]
    if len(mid_a) * len(mid_b) <= _ALIGN_LIMIT:
        import difflib  # only when logs differ: keeps `import faultbench` light

        matcher = difflib.SequenceMatcher(None, mid_a, mid_b, autojunk=False)
        ops = [
            (t, i1 + lo, i2 + lo, j1 + lo, j2 + lo) for t, i1, i2, j1, j2 in matcher.get_opcodes()
        ]
    else:
        ops = [("replace", lo, hi_a, lo, hi_b)]
    # The stripped prefix and suffix are equal runs too: they give the hunks their context.
    if lo:
        ops.insert(0, ("equal", 0, lo, 0, lo))
    if hi_a < na:
        ops.append(("equal", hi_a, na, hi_b, nb))

    removed = sum(i2 - i1 for t, i1, i2, _, _ in ops if t in ("delete", "replace"))
    added = sum(j2 - j1 for t, _, _, j1, j2 in ops if t in ("insert", "replace"))
    lines = _render(a, b, ops, context, max_lines)
    return EventDiff(
        first, lines, len_a=na, len_b=nb, removed=removed, added=added, settings=settings
    )


def _settings(a: list[Event], b: list[Event]) -> str:
    """The run settings the comparison ignores, when they differ: `a: run=0 faults=off; b: ...`."""
    if not a or not b or not isinstance(a[0], WorldCreated) or not isinstance(b[0], WorldCreated):
        return ""
    fa: list[WorldCreated | WorldForked] = [a[0], *_forks(a)]
    fb: list[WorldCreated | WorldForked] = [b[0], *_forks(b)]
    sa, sb = _setting(fa[-1]), _setting(fb[-1])
    return "" if sa == sb else f"a: {sa}; b: {sb}"


def _forks(events: list[Event]) -> list[WorldForked]:
    return [e for e in events if isinstance(e, WorldForked)]


def _setting(ev: WorldCreated | WorldForked) -> str:
    return f"run={ev.run} faults={'on' if ev.faults else 'off'}"


#: difflib's opcode: (tag, a from, a to, b from, b to)
_Opcode = tuple[str, int, int, int, int]


def _render(
    a: list[Event], b: list[Event], ops: Sequence[_Opcode], context: int, max_lines: int
) -> list[str]:
    lines: list[str] = []
    total = 0  # lines that would have been printed without the cap

    def emit(line: str) -> None:
        nonlocal total
        total += 1
        if len(lines) < max_lines:
            lines.append(line)

    # Group opcodes into hunks separated by more than 2*context equal events (as difflib's
    # unified_diff does), each with an @@ header of the index ranges it covers.
    hunks: list[list[_Opcode]] = []
    current: list[_Opcode] = []
    for op in ops:
        tag, i1, i2, j1, j2 = op
        if tag == "equal":
            if not current:
                if i2 - i1 > context:
                    op = ("equal", i2 - context, i2, j2 - context, j2)
                current.append(op)
                continue
            if i2 - i1 > 2 * context:
                current.append(("equal", i1, i1 + context, j1, j1 + context))
                hunks.append(current)
                current = [("equal", i2 - context, i2, j2 - context, j2)] if context else []
                continue
        current.append(op)
    if current and any(op[0] != "equal" for op in current):
        # A trailing equal run belongs to the previous hunk only as context.
        if current[-1][0] == "equal" and current[-1][2] - current[-1][1] > context:
            t, i1, _i2, j1, _j2 = current[-1]
            current[-1] = (t, i1, i1 + context, j1, j1 + context)
        hunks.append(current)

    for hunk in hunks:
        i_lo, j_lo = hunk[0][1], hunk[0][3]
        i_hi, j_hi = hunk[-1][2], hunk[-1][4]
        emit(f"@@ a[{i_lo}:{i_hi}] b[{j_lo}:{j_hi}] @@")
        for tag, i1, i2, j1, j2 in hunk:
            if tag == "equal":
                for i in range(i1, i2):
                    emit("  " + format_event(a[i]))
                continue
            if tag in ("delete", "replace"):
                for i in range(i1, i2):
                    emit("- " + format_event(a[i]))
            if tag in ("insert", "replace"):
                for j in range(j1, j2):
                    emit("+ " + format_event(b[j]))
    if total > len(lines):
        lines.append(f"... {total - len(lines)} more lines")
    return lines
