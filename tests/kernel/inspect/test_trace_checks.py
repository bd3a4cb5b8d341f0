"""Trace assertions: tools_called_in_order, required_tools, forbidden_tools, no_tool_loops,
tool_call_count."""

from __future__ import annotations

import pytest

import faultbench


@pytest.fixture
def trace():
    world = faultbench.load_world("examples/readme/world.yaml")
    world.orders.insert(status="delivered", total=3.0)
    world.call("get_order", {"id": "1"})
    for _ in range(3):
        world.call("issue_refund", {"order_id": "1", "amount": 1.0})
    world.call("get_order", {"id": "1"})
    return world.trace


def test_passing_checks_chain(trace):
    assert trace.tools_called_in_order("get_order", "issue_refund", "get_order") is trace
    trace.tools_called_in_order(["get_order", "issue_refund"]).required_tools("issue_refund")
    trace.forbidden_tools("delete_order").no_tool_loops("issue_refund", max_repetitions=3)
    assert trace.tool_call_count("issue_refund") == 3
    assert trace.tool_call_count(exactly=5) == 5
    assert trace.tool_call_count("get_order", at_least=2, at_most=2) == 2


def test_order_violation_says_what_is_missing_and_shows_the_trace(trace):
    with pytest.raises(AssertionError) as err:
        trace.tools_called_in_order("issue_refund", "get_order", "issue_refund")
    text = str(err.value)
    assert text.startswith(
        "Expected calls in the order issue_refund → get_order → issue_refund. Instead, after "
        "issue_refund → get_order there was no call to issue_refund."
    )
    assert "Calls: get_order → issue_refund → issue_refund → issue_refund → get_order" in text
    assert "Trace: 5 calls, 0 failed" in text


def test_required_forbidden_loops_and_counts_fail_readably(trace):
    with pytest.raises(AssertionError, match="get_refund never called"):
        trace.required_tools("get_order", "get_refund")
    with pytest.raises(AssertionError, match=r"the agent called issue_refund \(3x\)"):
        trace.forbidden_tools(["issue_refund"])
    with pytest.raises(
        AssertionError, match=r"at most 2 call.s. in a row to issue_refund.*3 in a row from call 2"
    ):
        trace.no_tool_loops("issue_refund", max_repetitions=2)
    with pytest.raises(
        AssertionError, match=r"exactly 1 calls to issue_refund\. Instead, there were 3"
    ):
        trace.tool_call_count("issue_refund", exactly=1)


def test_the_trace_fixture_of_the_plugin_has_them_too():
    from faultbench.testing import LiveTrace

    world = faultbench.load_world("examples/readme/world.yaml")
    live = LiveTrace(world)
    world.orders.insert(status="delivered", total=3.0)
    world.call("get_order", {"id": "1"})
    live.required_tools("get_order")
    with pytest.raises(AssertionError):
        live.forbidden_tools("get_order")
