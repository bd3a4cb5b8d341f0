"""diff_tables and diff_events over plain mappings and event lists (no World needed)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import immutables

from faultbench.kernel import (
    CallFailed,
    CallStarted,
    CallSucceeded,
    ClockAdvanced,
    Event,
    FaultInjected,
    RecordCreated,
    RecordUpdated,
    WorldCreated,
    decode_events,
    diff_events,
    encode_events,
)
from faultbench.kernel._inspect._diff import (
    FieldChange,
    RecordAdded,
    RecordChanged,
    RecordRemoved,
    diff_tables,
    format_event,
)

T0 = datetime(2025, 6, 1, tzinfo=UTC)
TIMEOUT_MSG = "504 Gateway Timeout: payments.issue_refund did not answer within 30s"


# ---------------------------------------------------------------------------------------------
# diff_tables
# ---------------------------------------------------------------------------------------------


def test_added_removed_changed_in_table_then_natural_id_order():
    before = {
        "order": {
            "1": {"id": "1", "status": "delivered", "total": 30.0},
            "2": {"id": "2", "status": "placed", "total": 5.0},
            "10": {"id": "10", "status": "placed", "total": 7.0},
        },
        "refund": {"1": {"id": "1", "order_id": "1", "amount": 30.0}},
    }
    after = {
        "order": {
            "1": {"id": "1", "status": "returned", "total": 30.0},
            "2": {"id": "2", "status": "placed", "total": 5.0},
            "10": {"id": "10", "status": "delivered", "total": 8.5},
        },
        "refund": {
            "1": {"id": "1", "order_id": "1", "amount": 30.0},
            "2": {"id": "2", "order_id": "1", "amount": 30.0},
        },
        "session": {},
    }
    d = diff_tables(before, after)
    assert d
    assert len(d) == 3
    assert str(d) == "\n".join(
        [
            '~ order 1 status: "delivered" -> "returned"',
            '~ order 10 status: "placed" -> "delivered", total: 7.0 -> 8.5',
            '+ refund 2 {order_id: "1", amount: 30.0}',
        ]
    )
    assert d.added == [RecordAdded("refund", "2", {"id": "2", "order_id": "1", "amount": 30.0})]
    assert d.changed[0] == RecordChanged(
        "order", "1", {"status": FieldChange("delivered", "returned")}
    )
    assert d.removed == []
    assert d.tables == ["order", "refund"]
    assert [e.id for e in d.table("order")] == ["1", "10"]

    back = diff_tables(after, before)
    assert str(back).splitlines()[-1] == '- refund 2 {order_id: "1", amount: 30.0}'
    assert back.removed == [RecordRemoved("refund", "2", after["refund"]["2"])]


def test_equal_states_give_an_empty_falsy_diff():
    state = {"order": {"1": {"id": "1", "status": "placed"}}}
    copy = {"order": {"1": {"id": "1", "status": "placed"}}}
    d = diff_tables(state, copy)
    assert not d
    assert len(d) == 0
    assert str(d) == "no changes"
    assert repr(d) == "StateDiff(no changes)"
    assert d.to_dict() == {"added": [], "removed": [], "changed": []}
    assert diff_tables({}, {"order": {}}) == d


def test_types_count_not_just_equality():
    a = {"t": {"1": {"id": "1", "flag": 1, "amount": 30}}}
    b = {"t": {"1": {"id": "1", "flag": True, "amount": 30.0}}}
    [change] = diff_tables(a, b).changed
    assert change.changes == {"flag": FieldChange(1, True), "amount": FieldChange(30, 30.0)}


def test_new_and_dropped_fields_and_datetimes():
    when = datetime(2025, 6, 1, 12, tzinfo=UTC)
    a = {"t": {"1": {"id": "1", "x": 1}}}
    b = {"t": {"1": {"id": "1", "x": 1, "seen_at": when}}}
    d = diff_tables(a, b)
    assert str(d) == "~ t 1 seen_at: None -> 2025-06-01T12:00:00Z"


def test_persistent_maps_and_shared_records():
    rec = immutables.Map(id="1", status="placed", note=None)
    a = immutables.Map(order=immutables.Map({"1": rec, "2": rec.set("id", "2")}))
    b = a.set("order", a["order"].set("2", rec.set("id", "2").set("status", "shipped")))
    d = diff_tables(a, b)
    # immutables.Map iterates in hash order: fields come out sorted, the same in every process
    assert str(d) == '~ order 2 status: "placed" -> "shipped"'
    assert not diff_tables(a, a)


def test_to_dict_is_json_able():
    when = datetime(2025, 6, 1, 12, tzinfo=UTC)
    a = {"t": {"1": {"id": "1", "at": when}, "2": {"id": "2"}}}
    b = {"t": {"1": {"id": "1", "at": when + timedelta(hours=1)}, "3": {"id": "3"}}}
    data = json.loads(json.dumps(diff_tables(a, b).to_dict()))
    assert data == {
        "added": [{"table": "t", "id": "3", "fields": {"id": "3"}}],
        "removed": [{"table": "t", "id": "2", "fields": {"id": "2"}}],
        "changed": [
            {
                "table": "t",
                "id": "1",
                "changes": {"at": {"old": "2025-06-01T12:00:00Z", "new": "2025-06-01T13:00:00Z"}},
            }
        ],
    }


def test_large_tables_with_few_changes():
    rows = {str(i): {"id": str(i), "n": i} for i in range(100_000)}
    a = {"t": rows}
    b = {"t": {**rows, "77": {"id": "77", "n": -1}}}
    start = time.perf_counter()
    d = diff_tables(a, b)
    assert time.perf_counter() - start < 5  # a generous bound: a linear walk
    assert str(d) == "~ t 77 n: 77 -> -1"


# ---------------------------------------------------------------------------------------------
# diff_events
# ---------------------------------------------------------------------------------------------


class Log:
    def __init__(self, *, run: int = 0) -> None:
        self.events: list[Event] = [WorldCreated(seq=0, at=T0, world="shop", seed=1, run=run)]
        self.now = T0
        self.n = 0

    def add(self, cls: type[Event], **kw: Any) -> None:
        self.events.append(cls(seq=len(self.events), at=self.now, **kw))

    def advance(self, s: float, cid: str | None = None) -> None:
        to = self.now + timedelta(seconds=s)
        self.add(ClockAdvanced, to=to, call_id=cid)
        self.now = to

    def call(self, tool, args, *, value=None, error=None, fault=None, creates=None, latency=0.1):
        self.n += 1
        cid = f"c{self.n}"
        self.add(CallStarted, call_id=cid, tool=tool, args=args)
        if fault:
            self.add(FaultInjected, call_id=cid, tool=tool, kind=fault, detail={"commit": True})
        if creates:
            table, rid, fields = creates
            self.add(RecordCreated, table=table, id=rid, fields={"id": rid, **fields}, call_id=cid)
        self.advance(latency, cid)
        if error:
            self.add(CallFailed, call_id=cid, tool=tool, kind=error[0], message=error[1])
        else:
            self.add(CallSucceeded, call_id=cid, tool=tool, value=value)


ORDER = {"id": "1", "status": "delivered", "total": 30.0}
REFUND = {"order_id": "1", "amount": 30.0}


def one_refund(run: int = 0) -> Log:
    log = Log(run=run)
    log.add(RecordCreated, table="order", id="1", fields=ORDER)
    log.call("get_order", {"id": "1"}, value=ORDER)
    log.call("issue_refund", REFUND, value={"id": "1", **REFUND}, creates=("refund", "1", REFUND))
    log.call("update_order", {"id": "1", "status": "returned"}, value={**ORDER, "status": "x"})
    return log


def two_refunds(run: int = 3) -> Log:
    log = Log(run=run)
    log.add(RecordCreated, table="order", id="1", fields=ORDER)
    log.call("get_order", {"id": "1"}, value=ORDER)
    log.call(
        "issue_refund",
        REFUND,
        fault="timeout",
        creates=("refund", "1", REFUND),
        latency=30.1,
        error=("timeout", TIMEOUT_MSG),
    )
    log.call("issue_refund", REFUND, value={"id": "2", **REFUND}, creates=("refund", "2", REFUND))
    log.call("update_order", {"id": "1", "status": "returned"}, value={**ORDER, "status": "x"})
    return log


def test_one_refund_vs_two_reads_well():
    a, b = one_refund().events, two_refunds().events
    d = diff_events(a, b)
    assert d
    first = d.first_divergence
    assert first is not None
    # the runs part right after the first issue_refund call started
    assert isinstance(a[first.index_a - 1], CallStarted)
    assert a[first.index_a - 1].tool == "issue_refund"
    assert (first.index_a, first.index_b) == (6, 6)
    assert (first.seq_a, first.seq_b) == (6, 6)
    assert isinstance(first.a, RecordCreated)
    assert isinstance(first.b, FaultInjected)
    text = str(d)
    assert text.splitlines()[0] == (
        "event logs differ at event 6 (a: 12 events, -1; b: 17 events, +6)"
    )
    assert "\n  a: RecordCreated refund 1" in text
    assert "\n  b: FaultInjected issue_refund timeout" in text
    assert d.lines == [
        "@@ a[4:11] b[4:16] @@",
        '  CallSucceeded get_order -> {id: "1", status: "delivered", total: 30.0}',
        '  CallStarted issue_refund {order_id: "1", amount: 30.0}',
        "+ FaultInjected issue_refund timeout {commit: True}",
        '  RecordCreated refund 1 {order_id: "1", amount: 30.0}',
        "+ ClockAdvanced +30.1s to 2025-06-01T00:00:30.200000Z",
        f"+ CallFailed issue_refund timeout: {TIMEOUT_MSG}",
        '+ CallStarted issue_refund {order_id: "1", amount: 30.0}',
        '+ RecordCreated refund 2 {order_id: "1", amount: 30.0}',
        # equal by content: a 0.1 s step, whatever the absolute time
        "  ClockAdvanced +0.1s to 2025-06-01T00:00:00.200000Z",
        '- CallSucceeded issue_refund -> {id: "1", order_id: "1", amount: 30.0}',
        '+ CallSucceeded issue_refund -> {id: "2", order_id: "1", amount: 30.0}',
        # after the divergence, the same update_order call matches despite new times and ids
        '  CallStarted update_order {id: "1", status: "returned"}',
        "  ClockAdvanced +0.1s to 2025-06-01T00:00:00.300000Z",
    ]
    assert (d.removed, d.added) == (1, 6)
    assert d.distance == 7
    assert d.settings == "a: run=0 faults=on; b: run=3 faults=on"
    assert not diff_events(a, a).settings
    # the closest of several runs: fewer events apart
    assert diff_events(a, one_refund(run=9).events).distance == 0


def test_equal_logs_and_logs_that_differ_only_in_positions():
    d = diff_events(one_refund().events, one_refund().events)
    assert not d
    assert d.first_divergence is None
    assert d.lines == []
    assert str(d) == "event logs are equal (12 events)"
    # another run index, another world path, other call ids: still the same behaviour
    other = one_refund(run=5).events
    other = [
        e.__class__(**{**{f: getattr(e, f) for f in e.__struct_fields__}, "call_id": "x"})
        if hasattr(e, "call_id") and e.call_id
        else e
        for e in other
    ]
    assert not diff_events(one_refund().events, other)


def test_a_prefix_of_the_other():
    a = one_refund().events
    d = diff_events(a[:7], a)
    assert d.first_divergence.index_a == 7
    assert d.first_divergence.a is None
    assert d.first_divergence.b is a[7]
    assert "  a: (end of log)" in str(d)
    assert all(line.startswith(("+", " ", "@")) for line in d.lines)
    assert (d.removed, d.added) == (0, len(a) - 7)


def test_value_and_argument_changes_are_differences():
    a = one_refund().events
    b = list(a)
    ev = b[6]  # RecordCreated refund 1
    assert isinstance(ev, RecordCreated)
    b[6] = RecordCreated(seq=6, at=ev.at, table="refund", id="1", fields={**ev.fields, "amount": 3})
    d = diff_events(a, b)
    assert d.first_divergence.index_a == 6
    assert '- RecordCreated refund 1 {order_id: "1", amount: 30.0}' in d.lines
    assert '+ RecordCreated refund 1 {order_id: "1", amount: 3}' in d.lines


def test_a_log_read_back_from_a_file_equals_the_live_one():
    log = two_refunds()
    assert not diff_events(log.events, decode_events(encode_events(log.events)))


def test_to_dict_and_max_lines():
    a, b = one_refund().events, two_refunds().events
    data = json.loads(json.dumps(diff_events(a, b).to_dict()))
    assert data["equal"] is False
    assert data["first_divergence"]["index_a"] == 6
    assert data["first_divergence"]["b"]["type"] == "FaultInjected"
    short = diff_events(a, b, max_lines=3)
    assert len(short.lines) == 4
    assert short.lines[-1] == f"... {len(diff_events(a, b).lines) - 3} more lines"


def test_format_event_updates_show_old_and_new():
    ev = RecordUpdated(
        seq=3, at=T0, table="order", id="1", changes={"status": "returned"}, old={"status": "x"}
    )
    assert format_event(ev) == 'RecordUpdated order 1 status: "x" -> "returned"'


def test_long_logs_with_a_late_divergence_are_fast():
    def make(n_calls: int, fault_at: int | None) -> list[Event]:
        log = Log()
        for i in range(n_calls):
            if i == fault_at:
                log.call("get_order", {"id": "1"}, error=("http_503", "503"), fault="http_503")
            log.call("get_order", {"id": str(i % 50)}, value={"id": str(i % 50)})
        return log.events

    a = make(34_000, None)  # 100k events
    b = make(34_000, 33_000)
    assert len(a) > 100_000
    start = time.perf_counter()
    d = diff_events(a, b)
    elapsed = time.perf_counter() - start
    assert elapsed < 10  # generous: CI machines are slow, the point is "not quadratic"
    assert d.first_divergence.index_a == 1 + 33_000 * 3
    assert "+ FaultInjected get_order http_503 {commit: True}" in d.lines
    assert (d.removed, d.added) == (0, 4)


def test_wholly_different_long_logs_do_not_align_quadratically():
    a = Log()
    b = Log()
    for i in range(6_000):
        a.call("get_order", {"id": str(i)}, value=None)
        b.call("list_orders", {"page": i}, value=[])
    start = time.perf_counter()
    d = diff_events(a.events, b.events, max_lines=50)
    assert time.perf_counter() - start < 10
    assert d.first_divergence.index_a == 1
    assert len(d.lines) == 51


# ---------------------------------------------------------------------------------------------
# End to end: two real worlds
# ---------------------------------------------------------------------------------------------

SHOP = """\
name: shop
seed: 3
services:
  orders:
    records:
      order: { status: "enum[placed, delivered, returned]", total: float }
    seed:
      order:
        rows:
          - { id: "1", status: delivered, total: 30.0 }
    operations:
      get_order: { kind: get, record: order }
      update_order: { kind: update, record: order }
  payments:
    records:
      refund: { order_id: str, amount: float }
    operations:
      issue_refund: { kind: create, record: refund }
"""


def run_agent(world, refunds: int) -> None:
    order = world.call("get_order", {"id": "1"}).value
    for _ in range(refunds):
        world.call("issue_refund", {"order_id": "1", "amount": order["total"]})
    world.call("update_order", {"id": "1", "status": "returned"})


def test_two_real_worlds_one_refund_vs_two(tmp_path):
    import faultbench

    path = tmp_path / "shop.yaml"
    path.write_text(SHOP)
    once = faultbench.load_world(path)
    twice = faultbench.load_world(path)
    before = twice.snapshot()
    run_agent(once, 1)
    run_agent(twice, 2)

    # state: the extra refund, nothing else
    assert str(twice.diff(once)) == '+ refund 2 {order_id: "1", amount: 30.0}'
    assert str(twice.diff(before)) == "\n".join(
        [
            '~ order 1 status: "delivered" -> "returned"',
            '+ refund 1 {order_id: "1", amount: 30.0}',
            '+ refund 2 {order_id: "1", amount: 30.0}',
        ]
    )
    assert not once.diff(once)

    # log: the runs part at the second issue_refund, and meet again at update_order
    d = faultbench.diff_events(once.events, twice.events)
    assert d
    assert isinstance(d.first_divergence.b, CallStarted)
    assert d.first_divergence.b.tool == "issue_refund"
    assert isinstance(d.first_divergence.a, CallStarted)
    assert d.first_divergence.a.tool == "update_order"
    plus = [line for line in d.lines if line.startswith(("+", "-"))]
    assert plus == [
        '+ CallStarted issue_refund {order_id: "1", amount: 30.0}',
        '+ RecordCreated refund 2 {order_id: "1", amount: 30.0}',
        '+ CallSucceeded issue_refund -> {id: "2", order_id: "1", amount: 30.0}',
    ]
    assert (d.removed, d.added) == (0, 3)
    assert not faultbench.diff_events(once.events, faultbench.replay(path, once.events).events)


def test_two_real_worlds_a_timeout_then_a_retry(tmp_path):
    import faultbench

    path = tmp_path / "shop.yaml"
    path.write_text(SHOP + "faults:\n  payments.issue_refund: { script: { 1: timeout } }\n")

    def retrying_agent(world) -> None:
        order = world.call("get_order", {"id": "1"}).value
        for _ in range(3):
            if world.call("issue_refund", {"order_id": "1", "amount": order["total"]}).ok:
                break
        world.call("update_order", {"id": "1", "status": "returned"})

    passing = faultbench.load_world(path, faults=False)
    failing = faultbench.load_world(path)
    retrying_agent(passing)
    retrying_agent(failing)
    assert failing.trace.summary() == (
        "get_order → issue_refund!timeout → issue_refund → update_order"
    )
    assert str(failing.diff(passing)) == '+ refund 2 {order_id: "1", amount: 30.0}'

    d = faultbench.diff_events(passing.events, failing.events)
    first = d.first_divergence
    assert isinstance(first.b, FaultInjected)
    assert (first.b.tool, first.b.kind) == ("issue_refund", "timeout")
    assert d.settings == "a: run=0 faults=off; b: run=0 faults=on"
    text = str(d)
    assert "\n  settings: a: run=0 faults=off; b: run=0 faults=on\n" in text
    assert "\n+ FaultInjected issue_refund timeout" in text
    assert '\n+ RecordCreated refund 2 {order_id: "1", amount: 30.0}' in text
    assert "\n+ CallFailed issue_refund timeout: 504 Gateway Timeout" in text
    # the runs meet again at update_order, 30 virtual seconds apart
    assert '\n  CallStarted update_order {id: "1", status: "returned"}' in text
