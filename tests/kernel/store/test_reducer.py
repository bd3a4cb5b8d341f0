"""The reducer: pure, total, order-checked, non-reentrant; the incremental state hash."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from faultbench.kernel import (
    CallFailed,
    CallStarted,
    CallSucceeded,
    ClockAdvanced,
    FaultInjected,
    RecordCreated,
    RecordDeleted,
    RecordUpdated,
    ReplayError,
    State,
    WorldCreated,
    WorldForked,
    apply,
)

T0 = datetime(2025, 6, 1, tzinfo=UTC)


def _genesis() -> State:
    return apply(State.empty(["item"], T0), WorldCreated(seq=0, at=T0, world="w", seed=1))


def _created(seq: int, rid: str, **fields) -> RecordCreated:
    return RecordCreated(seq=seq, at=T0, table="item", id=rid, fields={"id": rid, **fields})


def test_apply_returns_a_new_state_and_leaves_the_input_alone():
    s0 = _genesis()
    s1 = apply(s0, _created(1, "1", n=1))
    assert len(s0.tables["item"]) == 0
    assert s0.seq == 1
    assert dict(s1.tables["item"]) == {"1": {"id": "1", "n": 1}}
    assert s1.seq == 2
    assert s0.state_hash() != s1.state_hash()


def test_every_event_type_has_a_case():
    s = _genesis()
    t1 = T0 + timedelta(seconds=5)
    events = [
        _created(1, "1", n=1),
        RecordUpdated(seq=2, at=T0, table="item", id="1", changes={"n": 2}, old={"n": 1}),
        CallStarted(seq=3, at=T0, call_id="c1", tool="t", args={}, k=1),
        FaultInjected(seq=4, at=T0, call_id="c1", tool="t", kind="http_500"),
        ClockAdvanced(seq=5, at=T0, to=t1),
        CallFailed(seq=6, at=t1, call_id="c1", tool="t", kind="http_500"),
        CallStarted(seq=7, at=t1, call_id="c2", tool="t", args={}, k=None),
        CallSucceeded(seq=8, at=t1, call_id="c2", tool="t"),
        WorldForked(seq=9, at=t1, parent_seq=8),
        RecordDeleted(seq=10, at=t1, table="item", id="1"),
    ]
    for ev in events:
        s = apply(s, ev)
    assert s.seq == 11
    assert s.clock == t1
    assert s.calls == 2
    assert dict(s.k) == {"t": 1}
    assert len(s.tables["item"]) == 0
    assert s.rsum == 0  # every record digest added was subtracted again


def test_events_out_of_order_are_refused():
    with pytest.raises(
        ReplayError, match=r"Expected event seq 1. Instead, received: RecordCreated with seq 2"
    ):
        apply(_genesis(), _created(2, "1"))


def test_updates_of_missing_records_are_refused():
    ev = RecordUpdated(seq=1, at=T0, table="item", id="9", changes={"n": 1})
    with pytest.raises(ReplayError, match=r"refers to item '9', which does not exist"):
        apply(_genesis(), ev)


def test_non_events_are_refused():
    with pytest.raises(TypeError, match=r"Expected a faultbench event"):
        apply(_genesis(), "RecordCreated")  # type: ignore[arg-type]


def test_a_bookkeeping_event_only_advances_seq():
    s = _genesis()
    after = apply(s, CallSucceeded(seq=1, at=T0, call_id="c", tool="t"))
    assert after.seq == 2
    assert (after.tables, after.clock, after.settings) == (s.tables, s.clock, s.settings)


def test_record_hash_is_independent_of_write_order():
    a = apply(apply(_genesis(), _created(1, "1", n=1)), _created(2, "2", n=2))
    b = apply(apply(_genesis(), _created(1, "2", n=2)), _created(2, "1", n=1))
    assert a.rsum == b.rsum
    assert a.state_hash() == b.state_hash()


def test_update_and_revert_returns_to_the_same_hash():
    s = apply(_genesis(), _created(1, "1", n=1, tag="x"))
    h = s.state_hash()
    s = apply(s, RecordUpdated(seq=2, at=T0, table="item", id="1", changes={"n": 5}))
    assert s.state_hash() != h
    s = apply(s, RecordUpdated(seq=3, at=T0, table="item", id="1", changes={"n": 1}))
    assert s.state_hash() == h  # seq is not part of the hash; content is


def test_hash_covers_clock_counters_and_types():
    s = apply(_genesis(), _created(1, "1", n=1))
    later = apply(s, ClockAdvanced(seq=2, at=T0, to=T0 + timedelta(seconds=1)))
    assert later.state_hash() != s.state_hash()
    called = apply(s, CallStarted(seq=2, at=T0, call_id="c1", tool="t", args={}, k=None))
    assert called.state_hash() != s.state_hash()
    as_float = apply(_genesis(), _created(1, "1", n=1.0))
    assert as_float.state_hash() != s.state_hash()


def test_automatic_id_counter_follows_numeric_ids():
    s = apply(_genesis(), _created(1, "7"))
    assert s.next_ids["item"] == 8
    s = apply(s, _created(2, "x-1"))
    s = apply(s, _created(3, "007"))
    assert s.next_ids["item"] == 8
