"""The `conflict` fault: another client writes the record first.

An update or delete the fault hits never runs. Instead, at the moment it would have run, a
write by someone else lands on its record: when the record has a `version` field, that
version moves on by one (a `RecordUpdated` outside any call, so the end state, diffs and the
report show it), and the agent reads a 409 with the version the record is at now. A careful
agent reads the record again and retries with the new `expected_version`; one that retries
blindly with the old one gets a real 409 from the version check. A record without a
`version` field has nothing a concurrent write could visibly change, so it only gets the 409.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._errors import InjectedFault
from .._store import RecordUpdated

if TYPE_CHECKING:
    from .._faults import FaultDecision
    from .._store import Draft


def conflict(cx: Any, d: Draft, flight: Any, decision: FaultDecision) -> None:
    """The executor of effect "conflict" (`_pipeline._EFFECTS`)."""
    op = flight.op
    rid = flight.args.get("id")
    table = op.record
    field = op.version
    state = d.state
    data = state.tables[table].get(rid) if table and isinstance(rid, str) else None
    if data is None or field is None:
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
