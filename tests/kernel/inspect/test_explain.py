"""`explain_runs`: two runs aligned by their calls, the divergence in words, then the end
states; timing left out."""

from __future__ import annotations

from faultbench import load_world
from faultbench.kernel import decode_events, encode_events
from faultbench.kernel.lowlevel import explain_runs

SHOP = "examples/shop/worlds/shop.yaml"
LATENCY = {"default": {"latency_ms": [40, 250]}}


def run(faults, *, retry=True, run_index=0, calls=()):
    w = load_world(SHOP, run=run_index)
    w.set_faults({**LATENCY, **faults})
    w.call("get_order", {"id": "1"})
    for tool, args in calls:
        w.call(tool, args)
    w.call("create_return", {"order_id": "1", "reason": "damaged"})
    if not w.call("issue_refund", {"order_id": "1", "amount": 25.0}).ok and retry:
        w.call("issue_refund", {"order_id": "1", "amount": 25.0})
    return list(w.events)


def test_a_retry_after_a_timeout_after_commit_is_told_in_words():
    a = run({})
    b = run({"payments.issue_refund": {"script": {1: "timeout"}}}, run_index=12)
    x = explain_runs(a, b, a_name="run0", b_name="run12")
    assert x.sentences == [
        "call 3 issue_refund: run0 succeeded, run12 timeout after commit -> run12 retried "
        "(call 4) -> refund 2 created"
    ]
    lines = x.lines()
    assert lines[1] == "end state (- run0, + run12):"
    assert lines[2].startswith('  + refund 2 {order_id: "1", amount: 25.0')
    assert len(lines) == 3  # the return's created_at differs by latency only: not shown
    # the JSON form carries the same, and survives the logs' round trip through JSON Lines
    again = explain_runs(
        decode_events(encode_events(a)),
        decode_events(encode_events(b)),
        a_name="run0",
        b_name="run12",
    )
    assert again.sentences == x.sentences
    assert [e["id"] for e in again.to_dict()["state"]["added"]] == ["2"]


def test_a_failure_that_wrote_nothing_and_a_missing_call():
    a = run({})
    b = run({"payments.issue_refund": {"script": {1: "http_500"}}}, retry=False)
    x = explain_runs(a, b, a_name="run0", b_name="run3")
    assert x.sentences == ["call 3 issue_refund: run0 succeeded, run3 http_500"]
    assert str(x.state).startswith("- refund 1 ")
    c = run({}, calls=[("list_refunds", {"order_id": "1"})])
    y = explain_runs(c, a, a_name="run1", b_name="run0")
    assert y.sentences == ['run0 did not call list_refunds(order_id="1") (run1\'s call 2)']
    assert not y.state
    assert y.lines()[-1] == "end state: the same as run1's"
    z = explain_runs(a, c, a_name="run0", b_name="run1")
    assert z.sentences == ['run1 called list_refunds(order_id="1") (call 2)']


def test_runs_that_differ_only_in_timing_are_the_same():
    a = run({}, run_index=0)
    b = run({}, run_index=5)  # other latencies, other times in the records
    x = explain_runs(a, b, a_name="run0", b_name="run5")
    assert not x
    assert x.distance == 0
    assert str(x) == "the same calls, outcomes and end state as run0"
