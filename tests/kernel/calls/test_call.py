"""The call pipeline's guarantees about the log: what a caller gets back is its own (changing
it never rewrites history), and a call that started always finishes, even when faultbench
itself breaks."""

from __future__ import annotations

import asyncio
from types import MappingProxyType

import pytest

from faultbench.kernel import (
    CallFailed,
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


# --- a call that breaks still finishes ---------------------------------------------------------


def _boom(tx, args):
    raise RuntimeError("boom")


def _every_call_finished(world: World) -> None:
    started = {e.call_id for e in world.events if type(e) is CallStarted}
    ended = [e.call_id for e in world.events if type(e) in (CallSucceeded, CallFailed)]
    assert sorted(ended) == sorted(started)


def test_an_unexpected_exception_is_an_internal_error_answer(world, monkeypatch):
    monkeypatch.setattr(world._ops["get_order"], "run", _boom)
    r = world.call("get_order", {"id": "1"})
    assert (r.ok, r.error_kind) == (False, "internal_error")
    assert r.text == r.error == "internal error in get_order: RuntimeError: boom"
    last = world.events[-1]
    assert type(last) is CallFailed
    assert (last.call_id, last.kind, last.message) == ("c1", "internal_error", r.text)
    _every_call_finished(world)
    assert world.trace.summary() == "get_order!internal_error"
    assert replay(world.spec, world.events).state_hash() == world.state_hash()
    # the world carries on
    monkeypatch.undo()
    assert world.call("get_order", {"id": "1"}).ok


def test_writes_committed_before_the_exception_are_undone(world, monkeypatch):
    # A duplicate commits the first write, then breaks on the repeat.
    op = world._ops["create_order"]
    runs = []
    original = op.run

    def second_run_breaks(tx, args):
        runs.append(1)
        if len(runs) == 2:
            raise KeyError("lost")
        return original(tx, args)

    monkeypatch.setattr(op, "run", second_run_breaks)
    world.set_faults({"shop.create_order": {"errors": {"duplicate": 1.0}}})
    held = world.events
    r = world.call("create_order", {"customer": "1", "status": "placed", "total": 5.0})
    assert r.error_kind == "internal_error"
    assert r.text == "internal error in create_order: KeyError: 'lost'"
    assert r.fault == "duplicate"
    assert len(world.orders) == 3
    names = [type(e).__name__ for e in world.events_since(held.__len__())]
    assert names == ["CallStarted", "FaultInjected", "CallFailed"]
    _every_call_finished(world)
    assert replay(world.spec, world.events).state_hash() == world.state_hash()
    # a view of the log taken before the call is untouched; ids carry on as if nothing ran
    assert len(held) == len(world.events) - 3
    world.set_faults({})
    again = world.call("create_order", {"customer": "1", "status": "placed", "total": 1.0})
    assert again.value["id"] == "4"


def test_an_answer_that_is_not_json_is_an_internal_error_too(world, monkeypatch):
    monkeypatch.setattr(world._ops["get_order"], "run", lambda tx, args: {"n": object()})
    r = world.call("get_order", {"id": "1"})
    assert r.error_kind == "internal_error"
    assert r.text.startswith("internal error in get_order: ")
    _every_call_finished(world)


def test_a_long_exception_text_is_cut(world, monkeypatch):
    def long(tx, args):
        raise ValueError("x" * 5000)

    monkeypatch.setattr(world._ops["get_order"], "run", long)
    r = world.call("get_order", {"id": "1"})
    assert len(r.text) <= 600
    assert r.text.endswith("…")


def test_concurrent_calls_finish_when_one_of_them_breaks(world, monkeypatch):
    monkeypatch.setattr(world._ops["get_customer"], "run", _boom)

    async def both():
        return await asyncio.gather(
            world.acall("get_order", {"id": "1"}), world.acall("get_customer", {"id": "1"})
        )

    order, customer = asyncio.run(both())
    assert order.ok
    assert customer.error_kind == "internal_error"
    _every_call_finished(world)
    assert replay(world.spec, world.events).state_hash() == world.state_hash()


@pytest.mark.parametrize("kind", ["timeout", "malformed_json"])
def test_a_fault_whose_operation_breaks_answers_internal_error(world, monkeypatch, kind):
    monkeypatch.setattr(world._ops["update_order"], "run", _boom)
    world.set_faults({"shop.update_order": {"errors": {kind: {"p": 1.0, "commit": True}}}})
    r = world.call("update_order", {"id": "1", "status": "shipped"})
    assert r.error_kind == "internal_error"
    assert world.orders.get("1").status == "placed"
    _every_call_finished(world)
