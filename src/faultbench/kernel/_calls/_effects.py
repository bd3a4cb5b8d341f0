"""One executor per effect of `_faults/_kinds.py`'s EFFECTS (a test checks they match): how
a fault of that effect changes what the call does and what the agent reads. `_pipeline.execute`
picks one from `EFFECTS` for a call with a fault."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import msgspec

from .._errors import InjectedFault, ToolCallError
from .._faults import REWRITES, FaultDecision, broken_structure, injection_text, plant
from .._store import Draft, RecordUpdated
from ._auth import token_fault
from ._feed import perturb
from ._flight import Flight, Runner, attempt, log_fault, state_as_of
from ._surface import decide_change

_encode = msgspec.json.Encoder().encode


def _fail(cx: Runner, d: Draft, flight: Flight, decision: FaultDecision) -> None:
    flight.error = InjectedFault(decision.message, kind=decision.kind)
    if decision.commit:
        # The server did the work; only the answer is lost. If the operation itself fails
        # there is nothing to keep, and the caller still only sees the fault.
        try:
            _, tx = attempt(cx, d, flight)
        except ToolCallError:
            pass
        else:
            tx.commit()


def _empty(cx: Runner, d: Draft, flight: Flight, decision: FaultDecision) -> None:
    if decision.commit:
        # The write happened and the body got lost: 200 with nothing in it. An error answer
        # is passed on intact, as for malformed_json.
        _, tx = attempt(cx, d, flight)
        tx.commit()
    flight.value = flight.op.empty()


def _stale(cx: Runner, d: Draft, flight: Flight, decision: FaultDecision) -> None:
    past = state_as_of(cx, d, flight.exec_at - timedelta(seconds=decision.lag_s or 0.0))
    flight.value, _ = attempt(cx, d, flight, past)


def _malformed(cx: Runner, d: Draft, flight: Flight, decision: FaultDecision) -> None:
    # Logged here rather than at admission: the event carries the broken text.
    detail = decision.detail()
    try:
        flight.value, tx = attempt(cx, d, flight)
    except ToolCallError:
        log_fault(d, flight, detail)  # an error answer is passed on intact
        raise
    if decision.commit:
        tx.commit()
    flight.text = detail["text"] = break_json(_encode(flight.value).decode())
    log_fault(d, flight, detail)


def _duplicate(cx: Runner, d: Draft, flight: Flight, decision: FaultDecision) -> None:
    flight.value, tx = attempt(cx, d, flight)
    tx.commit()
    # At-least-once delivery: the same request arrives again. A repeat that fails (a second
    # delete, a handler refusing) changes nothing; the caller saw the first.
    for _ in range(decision.times):
        try:
            _, tx = attempt(cx, d, flight)
        except ToolCallError:
            continue
        tx.commit()


def _feed(cx: Runner, d: Draft, flight: Flight, decision: FaultDecision) -> None:
    # Logged here rather than at admission: the event names the feed events it touched.
    detail = decision.detail()
    try:
        value, _ = attempt(cx, d, flight)  # a read: nothing to commit
    except ToolCallError:
        log_fault(d, flight, detail)  # a bad cursor is answered as it is
        raise
    assert decision.kind is not None
    flight.value, detail["events"] = perturb(
        value, decision.kind, flight.k, decision.delay_s or 0.0, d.state.clock
    )
    log_fault(d, flight, detail)


def _run_committed(cx: Runner, d: Draft, flight: Flight, decision: FaultDecision) -> dict[str, Any]:
    """The operation as usual, its writes committed, for a kind that changes only the answer
    on its way out; returns the fault's detail for the caller to add to and log. An error
    answer is passed on intact (the fault logged as decided)."""
    detail = decision.detail()
    try:
        flight.value, tx = attempt(cx, d, flight)
    except ToolCallError:
        log_fault(d, flight, detail)
        raise
    tx.commit()
    return detail


def _inject(cx: Runner, d: Draft, flight: Flight, decision: FaultDecision) -> None:
    # Logged here, with what was placed: `injected` is the text, `into` the records that
    # carry it (or `text`, the whole answer, when it went after the answer's text).
    detail = _run_committed(cx, d, flight, decision)
    payload = injection_text(decision)
    detail["injected"] = payload
    value, into = plant(flight.value, decision.field, payload)
    if into:
        flight.value = value
        detail["into"] = into
    else:  # no such string field in the answer: the text follows the answer's
        flight.text = detail["text"] = _encode(flight.value).decode() + "\n\n" + payload
    log_fault(d, flight, detail)


def _rewrite(cx: Runner, d: Draft, flight: Flight, decision: FaultDecision) -> None:
    # A lying tool: the operation runs as usual, its answer is rewritten on the way out and
    # the log says what changed (`_lies.py`).
    detail = _run_committed(cx, d, flight, decision)
    record = cx.spec.records.get(flight.op.record)
    choices = {f.name: f.choices for f in record.fields if f.choices} if record else {}
    assert decision.kind is not None
    flight.value, said = REWRITES[decision.kind](flight.value, decision, choices)
    detail.update(said)
    log_fault(d, flight, detail)


def _structured(cx: Runner, d: Draft, flight: Flight, decision: FaultDecision) -> None:
    # A fault of the MCP protocol: the operation runs as usual and its text stays true; the
    # copy an MCP answer carries as `structuredContent` breaks the tool's output schema. The
    # log holds that copy (`structured`), as a malformed answer's holds its text.
    detail = _run_committed(cx, d, flight, decision)
    flight.structured, said = broken_structure(flight.value, decision.field)
    detail.update(said)
    detail["structured"] = flight.structured
    log_fault(d, flight, detail)


def _surface(cx: Runner, d: Draft, flight: Flight, decision: FaultDecision) -> None:
    # The call runs as usual; then the tool list changes, whatever the call answered. The
    # change is worked out against the tools of this moment and logged with the fault, which
    # the reducer folds into `State.surface`.
    detail = decision.detail()
    detail["surface"] = decide_change(decision, flight.op.name, cx.ops, d.state.surface)
    try:
        flight.value, tx = attempt(cx, d, flight)
        tx.commit()
    finally:
        log_fault(d, flight, detail)


def _protocol(cx: Runner, d: Draft, flight: Flight, decision: FaultDecision) -> None:
    # The call runs as usual (the fault was logged at admission); what happens to its answer
    # on the wire is the MCP server's to enact (`_faults/_protocol.py`).
    flight.value, tx = attempt(cx, d, flight)
    tx.commit()


def _page(cx: Runner, d: Draft, flight: Flight, decision: FaultDecision) -> None:
    # A read: the list runner serves the page the fault describes (`_lists.py`).
    d.call_id = flight.call_id
    tx = cx.transaction(d)
    lister = flight.op.lister
    assert lister is not None  # page kinds happen to lists with `page:` only (FaultKind.paged)
    flight.value = lister.run(tx, dict(flight.args), fault=decision.kind)


def _conflict(cx: Runner, d: Draft, flight: Flight, decision: FaultDecision) -> None:
    """Effect "conflict": another client writes the record first. The update or delete never
    runs; at the moment it would have, a write by someone else lands on its record: a `version`
    field moves on by one (a `RecordUpdated` outside any call, so the end state, diffs and the
    report show it) and the agent reads a 409 with the version the record is at now. A careful
    agent reads the record again and retries with the new `expected_version`; one that retries
    blindly with the old one gets a real 409 from the version check. A record without a
    `version` field has nothing a concurrent write could visibly change: only the 409."""
    op = flight.op
    rid = flight.args.get("id")
    table = op.record
    field = op.version
    state = d.state
    data = state.tables[table].get(rid) if table and isinstance(rid, str) else None
    if data is None or field is None or not isinstance(rid, str):
        # a missing record (nothing to write over) or one without a version: only the 409
        flight.error = InjectedFault(decision.message, kind=decision.kind)
        return
    now = data[field] + 1
    d.emit(
        RecordUpdated(
            seq=state.seq, at=state.clock, table=table, id=rid,
            changes={field: now}, old={field: data[field]}, call_id=None,
        )
    )  # fmt: skip
    flight.error = InjectedFault(
        f"409 Conflict: {op.spec.qualname}: {table} {rid!r} was changed by another request "
        f"and is now at {field} {now}; read it again, then retry with expected_version: {now}",
        kind=decision.kind,
    )


Executor = Callable[["Runner", Draft, Flight, FaultDecision], None]
EFFECTS: dict[str, Executor] = {
    "fail": _fail,
    "empty": _empty,
    "stale": _stale,
    "malformed": _malformed,
    "duplicate": _duplicate,
    "conflict": _conflict,
    "token": token_fault,
    "feed": _feed,
    "inject": _inject,
    "rewrite": _rewrite,
    "page": _page,
    "surface": _surface,
    "protocol": _protocol,
    "structured": _structured,
}


def break_json(text: str) -> str:
    """`text` cut short, as a proxy that drops the end of a response does; never valid JSON."""
    cut = text[: max(1, len(text) // 2)]
    try:
        msgspec.json.decode(cut)
    except msgspec.DecodeError:
        return cut
    return cut + ","  # a number cut in half is still a number
