"""Trace: calls rebuilt from an event log (built directly from `_events` types)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from faultbench.kernel import (
    CallFailed,
    CallResult,
    CallStarted,
    CallSucceeded,
    ClockAdvanced,
    Event,
    FaultInjected,
    RecordCreated,
    Trace,
    WorldCreated,
    decode_events,
    encode_events,
)

T0 = datetime(2025, 6, 1, tzinfo=UTC)
TIMEOUT_MSG = "504 Gateway Timeout: payments.issue_refund did not answer within 30s"


class Log:
    """Writes an event log the way the call pipeline does, one call at a time."""

    def __init__(self, *, seed: int = 1, run: int = 0) -> None:
        self.events: list[Event] = [WorldCreated(seq=0, at=T0, world="shop", seed=seed, run=run)]
        self.now = T0
        self.n_calls = 0
        self.ks: dict[str, int] = {}

    def add(self, cls: type[Event], **kw: Any) -> Event:
        ev = cls(seq=len(self.events), at=self.now, **kw)
        self.events.append(ev)
        return ev

    def advance(self, seconds: float, call_id: str | None = None) -> None:
        to = self.now + timedelta(seconds=seconds)
        self.add(ClockAdvanced, to=to, call_id=call_id)
        self.now = to

    def seed(self, table: str, id: str, **fields: Any) -> None:
        self.add(RecordCreated, table=table, id=id, fields={"id": id, **fields})

    def start(self, tool: str, args: dict[str, Any] | None = None) -> str:
        self.n_calls += 1
        cid = f"c{self.n_calls}"
        self.ks[tool] = self.ks.get(tool, 0) + 1
        self.add(CallStarted, call_id=cid, tool=tool, args=args or {}, k=self.ks[tool])
        return cid

    def call(
        self,
        tool: str,
        args: dict[str, Any] | None = None,
        *,
        value: Any = None,
        error: tuple[str, str] | None = None,
        fault: str | None = None,
        detail: dict[str, Any] | None = None,
        creates: tuple[str, str, dict[str, Any]] | None = None,
        latency: float = 0.0,
    ) -> str:
        cid = self.start(tool, args)
        if fault:
            self.add(FaultInjected, call_id=cid, tool=tool, kind=fault, detail=detail or {})
        if creates:
            table, rid, fields = creates
            self.add(RecordCreated, table=table, id=rid, fields={"id": rid, **fields}, call_id=cid)
        if latency:
            self.advance(latency, cid)
        self.finish(cid, tool, value=value, error=error)
        return cid

    def finish(self, cid: str, tool: str, *, value: Any = None, error=None) -> None:
        if error:
            self.add(CallFailed, call_id=cid, tool=tool, kind=error[0], message=error[1])
        else:
            self.add(CallSucceeded, call_id=cid, tool=tool, value=value)


ORDER = {"id": "1", "status": "delivered", "total": 30.0}
REFUND_ARGS = {"order_id": "1", "amount": 30.0}


def refund_twice() -> Log:
    """get_order, then issue_refund times out after committing, then a retry succeeds."""
    log = Log()
    log.seed("order", "1", status="delivered", total=30.0)
    log.call("get_order", {"id": "1"}, value=ORDER, latency=0.1)
    log.call(
        "issue_refund",
        REFUND_ARGS,
        fault="timeout",
        detail={"timeout_s": 30, "commit": True},
        creates=("refund", "1", REFUND_ARGS),
        latency=30.2,
        error=("timeout", TIMEOUT_MSG),
    )
    log.call(
        "issue_refund",
        REFUND_ARGS,
        value={"id": "2", **REFUND_ARGS},
        creates=("refund", "2", REFUND_ARGS),
        latency=0.2,
    )
    return log


def test_calls_are_rebuilt_with_times_text_and_kinds():
    trace = Trace(refund_twice().events)
    calls = trace.calls
    assert [c.tool for c in calls] == ["get_order", "issue_refund", "issue_refund"]
    get, timed_out, retry = calls
    assert get == CallResult(
        call_id="c1",
        tool="get_order",
        args={"id": "1"},
        ok=True,
        text=msgspec.json.encode(ORDER).decode(),
        value=ORDER,
        k=1,
        started_at=T0,
        finished_at=T0 + timedelta(seconds=0.1),
    )
    assert json.loads(get.text) == ORDER
    assert not timed_out.ok
    assert timed_out.text == timed_out.error == TIMEOUT_MSG
    assert (timed_out.error_kind, timed_out.fault, timed_out.k) == ("timeout", "timeout", 1)
    assert timed_out.latency_s == pytest.approx(30.2)
    assert timed_out.started_at == T0 + timedelta(seconds=0.1)
    assert retry.ok
    assert retry.k == 2
    assert retry.fault is None
    assert retry.value == {"id": "2", **REFUND_ARGS}


def test_count_calls_to_faults_failures():
    trace = Trace(refund_twice().events)
    assert len(trace) == trace.count() == 3
    assert trace.count("issue_refund") == 2
    assert trace.count("issue_refund", ok=True) == 1
    assert trace.count("issue_refund", ok=False) == 1
    assert trace.count(ok=False) == 1
    assert trace.count(ok=True) == 2
    assert trace.count("nope") == 0
    assert [c.call_id for c in trace.calls_to("issue_refund")] == ["c2", "c3"]
    assert trace.calls_to("nope") == []
    [fault] = trace.faults()
    assert (fault.tool, fault.kind, fault.detail) == (
        "issue_refund",
        "timeout",
        {"timeout_s": 30, "commit": True},
    )
    assert trace.faults("issue_refund") == [fault]
    assert trace.faults("get_order") == []
    assert [c.call_id for c in trace.failures()] == ["c2"]
    assert [c.call_id for c in trace] == ["c1", "c2", "c3"]
    assert trace[-1].call_id == "c3"


def test_summary_marks_faults_and_failures_and_keeps_successes_bare():
    assert Trace(refund_twice().events).summary() == (
        "get_order → issue_refund!timeout → issue_refund"
    )
    log = Log()
    log.call("get_order", {"id": "9"}, error=("not_found", "order 9 not found"))
    log.call("get_order", {"id": "1"}, value=ORDER, fault="stale_read", detail={"lag_s": 60})
    log.call("explode", {}, error=("unknown_tool", "no tool named 'explode'"))
    trace = Trace(log.events)
    assert trace.summary() == "get_order!not_found → get_order!stale_read → explode!unknown_tool"
    assert trace.summary(sep=", ").count(", ") == 2
    assert Trace([]).summary() == ""


def test_call_in_flight_is_not_a_call_yet_and_concurrent_calls_keep_start_order():
    log = Log()
    a = log.start("slow", {})
    b = log.start("fast", {})
    assert Trace(log.events).calls == []
    log.finish(b, "fast", value=1)
    assert Trace(log.events).summary() == "fast"
    log.advance(5, a)
    log.finish(a, "slow", error=("http_503", "503 Service Unavailable"))
    trace = Trace(log.events)
    assert trace.summary() == "slow!http_503 → fast"
    assert [c.tool for c in trace.calls_to("slow")] == ["slow"]
    assert [c.tool for c in trace.failures()] == ["slow"]
    assert trace.count("slow", ok=False) == 1


def test_extend_is_incremental_and_old_traces_do_not_change():
    log = refund_twice()
    first = Trace(log.events[:5])
    assert first.summary() == "get_order"
    full = first.extend(log.events[5:])
    assert full.summary() == Trace(log.events).summary()
    assert full.calls == Trace(log.events).calls
    assert full.n_events == len(log.events)
    # the earlier trace is a snapshot of the earlier log
    assert first.summary() == "get_order"
    assert len(first) == 1
    assert first.count("issue_refund") == 0
    assert first.faults() == []
    # extending an older trace again branches instead of corrupting the newer one
    other = first.extend([])
    assert other.summary() == "get_order"
    assert full.summary() == "get_order → issue_refund!timeout → issue_refund"


def test_follow_reuses_work_and_rebuilds_when_the_log_was_cut():
    log = refund_twice()
    events = log.events
    t1 = Trace.follow(events[:5])
    t2 = Trace.follow(events, t1)
    assert t2._index is t1._index  # only the new events were read
    assert Trace.follow(events, t2) is t2
    # a restore cuts the log, then different calls follow
    cut = events[:5]
    alt = Log()
    alt.events = list(cut)
    alt.now = cut[-1].at
    alt.n_calls = 1
    alt.call("cancel_order", {"id": "1"}, value=None)
    t3 = Trace.follow(alt.events, t2)
    assert t3.summary() == "get_order → cancel_order"
    assert t2.summary() == "get_order → issue_refund!timeout → issue_refund"
    # same length, different events: rebuilt, not mistaken for the old log
    failed = CallFailed(seq=6, at=T0, call_id="c2", tool="issue_refund", kind="http_500")
    same_len = [*events[:6], failed]
    assert (
        Trace.follow(same_len, Trace(events[:7])).summary() == "get_order → issue_refund!http_500"
    )


def test_trace_of_a_log_read_back_from_json_lines():
    log = refund_twice()
    again = decode_events(encode_events(log.events))
    read, live = Trace(again).calls, Trace(log.events).calls
    # JSON Lines sort mapping keys, so the text is the same JSON with keys in another order
    assert [json.loads(c.text) if c.ok else c.text for c in read] == [
        json.loads(c.text) if c.ok else c.text for c in live
    ]
    strip = [msgspec.structs.replace(c, text="") for c in read]
    assert strip == [msgspec.structs.replace(c, text="") for c in live]


def test_malformed_json_text_comes_from_the_fault_detail():
    log = Log()
    log.call(
        "get_order",
        {"id": "1"},
        value=ORDER,
        fault="malformed_json",
        detail={"text": '{"id": "1", "stat'},
    )
    [call] = Trace(log.events).calls
    assert call.ok
    assert call.text == '{"id": "1", "stat'
    assert call.fault == "malformed_json"


def test_to_dict_is_json_able():
    data = Trace(refund_twice().events).to_dict()
    text = json.dumps(data)
    back = json.loads(text)
    assert back["count"] == 3
    assert back["failed"] == 1
    assert back["summary"] == "get_order → issue_refund!timeout → issue_refund"
    assert back["calls"][1]["error_kind"] == "timeout"
    assert back["calls"][1]["started_at"] == "2025-06-01T00:00:00.100000Z"
    assert back["faults"][0]["kind"] == "timeout"


def test_str_lists_numbered_calls_with_time_offsets_and_outcomes():
    text = str(Trace(refund_twice().events))
    lines = text.splitlines()
    assert lines[0] == "Trace: 3 calls, 1 failed (offsets from 2025-06-01T00:00:00Z)"
    assert lines[1].startswith('  1  +0.000s  get_order(id="1") -> ok {"id":"1"')
    assert lines[2].startswith('  2  +0.100s  issue_refund(order_id="1", amount=30.0) -> FAILED')
    assert "timeout [fault]: 504 Gateway Timeout" in lines[2]
    assert lines[2].endswith("(30.2s)")
    assert lines[3].startswith("  3  +30.300s  issue_refund(")
    assert repr(Trace(refund_twice().events)) == (
        "<Trace 3 calls: get_order → issue_refund!timeout → issue_refund>"
    )
    assert repr(Trace()) == "<Trace 0 calls>"
    assert not Trace()


def test_long_logs_are_read_once_when_followed():
    log = Log()
    for i in range(20_000):
        log.call("get_order", {"id": str(i)}, value={"id": str(i)})
    # asking for the trace after every few calls reuses one index: each event is read once
    trace = Trace.follow(log.events[:400])
    index = trace._index
    for end in range(800, len(log.events) + 1, 400):
        trace = Trace.follow(log.events[:end], trace)
        assert trace._index is index
    trace = Trace.follow(log.events, trace)
    assert trace._index is index
    assert trace.count("get_order") == 20_000
    assert len(index.events) == len(log.events)


# ---------------------------------------------------------------------------------------------
# End to end: a real world's trace is what its calls returned
# ---------------------------------------------------------------------------------------------

SHOP = """\
name: shop
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
      list_orders: { kind: list, record: order, filter: [status] }
  payments:
    records:
      refund: { order_id: str, amount: float }
    operations:
      issue_refund: { kind: create, record: refund }
"""


@pytest.fixture
def shop(tmp_path):
    path = tmp_path / "shop.yaml"
    path.write_text(SHOP)
    return path


def test_world_trace_equals_the_results_of_its_calls(shop):
    import faultbench

    world = faultbench.load_world(shop)
    results = [
        world.call("get_order", {"id": "1"}),
        world.call("get_order", {"id": "42"}),
        world.call("issue_refund", {"order_id": "1", "amount": "lots"}),
        world.call("issue_refund", {"order_id": "1", "amount": 30.0}),
        world.call("list_orders", {"status": "delivered"}),
        world.call("refund_everything", {}),
    ]
    trace = world.trace
    assert trace.calls == results
    assert trace.summary() == (
        "get_order → get_order!not_found → issue_refund!invalid_arguments → issue_refund"
        " → list_orders → refund_everything!unknown_tool"
    )
    assert trace.count(ok=False) == 3
    assert trace.count("issue_refund", ok=True) == 1
    # the same trace from the log alone, live or replayed
    assert Trace(world.events).calls == results
    replayed = faultbench.replay(shop, decode_events(encode_events(world.events)))
    assert [c.ok for c in replayed.trace.calls] == [c.ok for c in results]
    assert replayed.trace.summary() == trace.summary()


def test_world_trace_after_restore_and_fork(shop):
    import faultbench

    world = faultbench.load_world(shop)
    world.call("get_order", {"id": "1"})
    snap = world.snapshot()
    world.call("issue_refund", {"order_id": "1", "amount": 30.0})
    before = world.trace
    assert before.summary() == "get_order → issue_refund"
    world.restore(snap)
    assert world.trace.summary() == "get_order"
    world.call("get_order", {"id": "2"})
    assert world.trace.summary() == "get_order → get_order!not_found"
    assert before.summary() == "get_order → issue_refund"  # an old trace never changes
    fork = world.fork(snap)
    fork.call("list_orders", {})
    assert fork.trace.summary() == "get_order → list_orders"
    assert world.trace.summary() == "get_order → get_order!not_found"


FAULTY = (
    SHOP
    + """\
faults:
  default: { latency_ms: [10, 500] }
  orders.get_order: { script: { 2: malformed_json, 3: http_429 } }
  orders.list_orders: { script: { 1: stale_read, 2: empty_result } }
  payments.issue_refund: { script: { 1: timeout, 2: duplicate } }
"""
)


def test_trace_of_faulty_calls_equals_what_the_agent_saw(tmp_path):
    import faultbench

    path = tmp_path / "faulty.yaml"
    path.write_text(FAULTY)
    world = faultbench.load_world(path)
    calls = [
        ("get_order", {"id": "1"}),
        ("issue_refund", {"order_id": "1", "amount": 30.0}),
        ("get_order", {"id": "1"}),
        ("list_orders", {}),
        ("get_order", {"id": "1"}),
        ("issue_refund", {"order_id": "1", "amount": 30.0}),
        ("list_orders", {}),
    ]
    results = [world.call(tool, args) for tool, args in calls]
    trace = world.trace
    assert trace.calls == results  # texts included: the broken JSON, the 429 message...
    assert trace.summary() == (
        "get_order → issue_refund!timeout → get_order!malformed_json → list_orders!stale_read"
        " → get_order!http_429 → issue_refund!duplicate → list_orders!empty_result"
    )
    assert trace.count(ok=False) == 2
    assert [f.kind for f in trace.faults("issue_refund")] == ["timeout", "duplicate"]
    assert trace[1].latency_s >= 30
    # offsets from the first call's start, in seconds: call 2 starts after call 1's latency
    assert re.search(r"\n  2  \+0\.\d{3}s  issue_refund\(", str(trace))


def test_trace_of_concurrent_calls_equals_their_results(tmp_path):
    trio = pytest.importorskip("trio")
    import faultbench

    path = tmp_path / "faulty.yaml"
    path.write_text(FAULTY)
    world = faultbench.load_world(path)
    results: list[CallResult] = []

    async def main() -> None:
        async def one(tool: str, args: dict[str, Any]) -> None:
            results.append(await world.acall(tool, args))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, "get_order", {"id": "1"})
            nursery.start_soon(one, "issue_refund", {"order_id": "1", "amount": 30.0})
            nursery.start_soon(one, "list_orders", {})

    trio.run(main)
    trace = world.trace
    # in the log the calls interleave; the trace lists each whole call, in start order
    assert sorted(results, key=lambda r: int(r.call_id[1:])) == trace.calls
    assert len({c.started_at for c in trace}) == 1


def test_a_result_is_built_once_read_and_later_traces_share_it(world):
    """Results are built from the log when read (counts and summaries copy nothing), then
    kept: every later trace of the world hands out the same object, and changing it leaves
    the log as it was."""
    world.call("get_order", {"id": "1"})
    world.call("get_order", {"id": "nope"})
    first = world.trace
    assert first.summary() == "get_order → get_order!not_found"
    call = first.calls[0]
    call.value["status"] = "changed by the test"
    world.call("get_order", {"id": "2"})
    later = world.trace
    assert later.calls[0] is call is later[0]
    assert later.to_dict()["calls"][0]["value"]["status"] == "changed by the test"
    logged = next(e for e in world.events if isinstance(e, CallSucceeded))
    assert logged.value["status"] != "changed by the test"
    assert [c.error_kind for c in later.failures()] == ["not_found"]
    assert later.failures()[0] is later.calls[1]
    assert str(later).count("get_order(") == 3
    assert later.to_dict()["count"] == 3
