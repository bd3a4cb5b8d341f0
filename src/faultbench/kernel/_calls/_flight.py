"""A call in flight between admission and its answer, and what every stage of the pipeline
does with one: run its operation once (`attempt`), log the fault it received (`log_fault`),
move its clock (`advance_to`), read the past a stale read or a rate limit needs
(`state_as_of`, `stale_reach`). `Runner` is what these need of the `Pipeline`
(`_pipeline.py`), so that the effects (`_effects.py`) sit beside it, not under it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from .._errors import ToolCallError
from .._faults import kind
from .._store import (
    Draft,
    Event,
    FaultInjected,
    RecordCreated,
    RecordDeleted,
    RecordUpdated,
    WorldCreated,
    move_clock,
)
from ._ops import CompiledOp, Transaction

if TYPE_CHECKING:
    from .._faults import FaultDecision
    from .._spec import WorldSpec
    from .._store import Book, State


class Runner(Protocol):
    """What a call's stages read of the world running it (`_pipeline.Pipeline` is one)."""

    spec: WorldSpec
    ops: dict[str, CompiledOp]
    book: Book
    genesis_seq: int | None

    def transaction(self, d: Draft, state: State | None = None) -> Transaction: ...


class Flight:
    """A valid call between `admit` and `finish`."""

    __slots__ = (
        "args",
        "call_id",
        "decision",
        "end_at",
        "error",
        "exec_at",
        "jargs",
        "k",
        "op",
        "principal",
        "started",
        "structured",
        "text",
        "token",
        "value",
    )

    def __init__(self, call_id: str, op: CompiledOp, args: dict[str, Any], jargs: dict[str, Any]):
        self.call_id = call_id
        self.op = op
        self.args = args
        self.jargs = jargs
        self.k = 0
        self.decision: FaultDecision | None = None
        self.started: datetime = None  # type: ignore[assignment]  # set by admit before any read
        self.exec_at: datetime = None  # type: ignore[assignment]  # set by admit before any read
        self.end_at: datetime = None  # type: ignore[assignment]  # set by admit before any read
        self.value: Any = None
        self.text: str | None = None
        #: `invalid_structured_content`: the broken copy sent as `structuredContent`
        self.structured: Any = None
        self.error: ToolCallError | None = None
        self.principal: str | None = None
        self.token: str | None = None


def log_fault(d: Draft, flight: Flight, detail: dict[str, Any]) -> None:
    state = d.state
    assert flight.decision is not None
    assert flight.decision.kind is not None
    d.emit(
        FaultInjected(
            seq=state.seq,
            at=state.clock,
            call_id=flight.call_id,
            tool=flight.op.name,
            kind=flight.decision.kind,
            detail=detail,
        )
    )


def advance_to(d: Draft, to: datetime, call_id: str) -> None:
    """Move the call's clock to `to`; effects due on the way fire (`_store/_later.py`)."""
    if to > d.state.clock:
        move_clock(d, to, call_id)


def attempt(
    cx: Runner, d: Draft, flight: Flight, state: State | None = None
) -> tuple[Any, Transaction]:
    """Run the operation once in a fresh transaction; raises ToolCallError."""
    d.call_id = flight.call_id
    tx = cx.transaction(d, state)
    tx.principal, tx.token = flight.principal, flight.token
    return flight.op.run(tx, dict(flight.args)), tx


# ---------------------------------------------------------------------------------------------
# History from the log: what rate limits and stale reads need, derived from events only, so a
# replay, a fork or a restored snapshot sees exactly what the live world saw.
# ---------------------------------------------------------------------------------------------


def _backwards(cx: Runner, d: Draft) -> Iterator[Event]:
    """The events before the draft's state, newest first: the draft's own, then the log's."""
    yield from reversed(d.pending)
    yield from reversed(cx.book.log)


def stale_reach(rules: Mapping[str, Any]) -> float:
    """How far back in virtual time a stale read under `rules` may look: the largest lag_s
    of their stale_read errors and scripts (0.0: none)."""
    reach = 0.0
    for rule in rules.values():
        for error in (*rule.errors, *(e for _, e in rule.script)):
            if error.kind == "stale_read":
                lag = error.lag_s if error.lag_s is not None else _DEFAULT_LAG
                reach = max(reach, float(lag))
    return reach


_DEFAULT_LAG = next(o.default for o in kind("stale_read").options if o.name == "lag_s") or 0.0


def _genesis_seq(cx: Runner) -> int:
    """Events before this seq are the world's genesis (WorldCreated and the seed rows)."""
    if cx.genesis_seq is None:
        # A replayed world: its genesis is the leading run of events written outside any call.
        log = cx.book.log
        if log.first:  # a window (lowlevel.keep_events): nothing before it can be undone
            return log.first
        cx.genesis_seq = len(log)
        for ev in log:
            if type(ev) is not WorldCreated and not (
                type(ev) is RecordCreated and ev.call_id is None
            ):
                cx.genesis_seq = ev.seq
                break
    return cx.genesis_seq


def state_as_of(cx: Runner, d: Draft, cutoff: datetime) -> State:
    """The world's records as they were at virtual time `cutoff` (the clock stays now).

    Walks the log back, undoing record events later than `cutoff`: a creation is removed, an
    update gets its `old` values back, a deletion brings `old` back. The seeded genesis is
    never undone: seed rows have existed "forever", however young the world is. Only the
    events after `cutoff` are read, and the tables' indexes are undone with their records.
    """
    state = d.state
    genesis = _genesis_seq(cx)
    tables = dict(state.tables.items())
    index = dict(state.index.items())
    touched = False
    for ev in _backwards(cx, d):
        if ev.at <= cutoff or ev.seq < genesis:
            break
        # `type(ev) is X` (not isinstance: events are final classes, and it is cheaper) narrows
        if type(ev) is RecordCreated or type(ev) is RecordUpdated or type(ev) is RecordDeleted:
            name, rid = ev.table, ev.id
            rows = tables[name]
            now_ = rows.get(rid)
            if type(ev) is RecordCreated:
                before = None
                rows = rows.delete(rid)
            elif type(ev) is RecordUpdated:
                before = {**rows[rid], **ev.old}
                rows = rows.set(rid, before)
            elif type(ev) is RecordDeleted:
                before = ev.old
                rows = rows.set(rid, before)
            tables[name] = rows
            ix = index.get(name)
            if ix is not None:
                index[name] = ix.changed(rows, rid, now_, before)
            touched = True
    if not touched:
        return state
    import immutables

    return state.derived(tables=immutables.Map(tables), index=immutables.Map(index))
