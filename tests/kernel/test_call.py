"""The call pipeline's guarantees about the log: what a caller gets back is its own (changing
it never rewrites history)."""

from __future__ import annotations

from types import MappingProxyType

from faultbench.kernel import (
    CallStarted,
    CallSucceeded,
    World,
    encode_events,
    replay,
)

# --- results are copies ------------------------------------------------------------------------


def _log(world: World) -> bytes:
    return encode_events(world.events)


def test_changing_a_result_never_rewrites_the_log(world):
    ok = world.call("get_order", {"id": "1"})
    failed = world.call("get_order", {"id": "9"})
    rejected = world.call("no_such_tool", {"id": "1"})
    before = _log(world)
    ok.value["status"] = "shipped"
    ok.args["id"] = "2"
    failed.args["id"] = "3"
    rejected.args["id"] = "4"
    assert _log(world) == before
    started = [e for e in world.events if type(e) is CallStarted]
    assert [e.args["id"] for e in started] == ["1", "9", "1"]
    succeeded = [e for e in world.events if type(e) is CallSucceeded]
    assert succeeded[0].value["status"] == "placed"


def test_changing_a_malformed_json_result_never_rewrites_the_log(world):
    world.set_faults({"shop.get_order": {"errors": {"malformed_json": 1.0}}})
    r = world.call("get_order", {"id": "1"})
    assert r.fault == "malformed_json"
    before = _log(world)
    r.value["status"] = "shipped"
    assert _log(world) == before


def test_the_result_and_the_log_hold_equal_values_of_the_same_types(world):
    r = world.call("stats")
    logged = world.events[-1]
    assert type(logged) is CallSucceeded
    assert r.value == logged.value
    assert r.value is not logged.value
    # datetimes are RFC 3339 text in both, as the agent reads them
    assert type(r.value["now"]) is type(logged.value["now"]) is str


def test_changing_the_callers_arguments_after_the_call_never_rewrites_the_log(world):
    args = {"order_id": "1", "amount": 2.5}
    world.call("issue_refund", args)
    before = _log(world)
    args["amount"] = 9.0
    args["extra"] = [1]
    assert _log(world) == before


def test_any_mapping_of_arguments_is_logged_as_the_mapping_it_is(world):
    r = world.call("get_order", MappingProxyType({"id": "2"}))
    assert r.ok
    assert r.args == {"id": "2"}
    assert world.events[-2].args == {"id": "2"}


def test_changing_a_traced_result_never_rewrites_the_log(world):
    world.call("get_order", {"id": "1"})
    world.call("get_order", {"id": "9"})
    before = _log(world)
    calls = world.trace.calls
    calls[0].value["status"] = "shipped"
    calls[0].args["id"] = "7"
    calls[1].args["id"] = "8"
    world.trace[0].value["total"] = 0
    assert _log(world) == before
    assert replay(world.spec, world.events).trace.calls[0].value["status"] == "placed"
