"""Idempotency keys (`_calls/_idempotency.py`): an operation's `idempotency: {key:, window:}`."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultbench.kernel import World, WorldFileError, decode_events, encode_events, replay
from faultbench.kernel.lowlevel import load_spec

WORLD = """
services:
  payments:
    records:
      charge: { amount: int, currency: "enum[usd, eur]" }
    operations:
      create_charge:
        kind: create
        record: charge
        idempotency: { key: idempotency_key, window: 24h }
      plain_charge: { kind: create, record: charge }
      get_charge: { kind: get, record: charge }
"""
SPEC = load_spec("<idempotency>", text=WORLD)
ARGS = {"amount": 500, "currency": "usd"}


def world(**kw) -> World:
    return World.from_spec(SPEC, **kw)


def test_the_key_is_an_optional_argument_the_schema_describes():
    schema = world().tool("create_charge").input_schema
    assert "idempotency_key" in schema["properties"]
    assert "idempotency_key" not in schema["required"]
    assert "24h" in schema["properties"]["idempotency_key"]["description"]
    assert "idempotency_key" not in world().tool("plain_charge").input_schema["properties"]


def test_a_retry_with_the_same_key_and_arguments_answers_the_first_result_and_writes_nothing():
    w = world()
    first = w.call("create_charge", {**ARGS, "idempotency_key": "k1"})
    again = w.call("create_charge", {**ARGS, "idempotency_key": "k1"})
    assert first.ok
    assert again.ok
    assert again.value == first.value == {"id": "1", "amount": 500, "currency": "usd"}
    assert len(w.charges) == 1
    kinds = [type(e).__name__ for e in w.events if getattr(e, "call_id", None) == again.call_id]
    assert "IdempotentRetryAnswered" in kinds
    assert "RecordCreated" not in kinds


def test_the_same_key_with_other_arguments_is_a_409_naming_the_key():
    w = world()
    w.call("create_charge", {**ARGS, "idempotency_key": "k1"})
    other = w.call("create_charge", {"amount": 900, "currency": "usd", "idempotency_key": "k1"})
    assert not other.ok
    assert other.error_kind == "idempotency_conflict"
    assert other.text.startswith("409 Conflict: idempotency key 'k1' was already used")
    assert len(w.charges) == 1


def test_calls_without_a_key_and_with_new_keys_each_write():
    w = world()
    w.call("create_charge", ARGS)
    w.call("create_charge", ARGS)
    w.call("create_charge", {**ARGS, "idempotency_key": "a"})
    w.call("create_charge", {**ARGS, "idempotency_key": "b"})
    assert len(w.charges) == 4


def test_keys_are_forgotten_after_the_window_of_virtual_time():
    w = world()
    w.call("create_charge", {**ARGS, "idempotency_key": "k1"})
    w.clock.advance(24 * 3600 - 1)
    assert w.call("create_charge", {**ARGS, "idempotency_key": "k1"}).value["id"] == "1"
    w.clock.advance(1)
    assert w.call("create_charge", {**ARGS, "idempotency_key": "k1"}).value["id"] == "2"
    # and the key counts from its new recording
    assert w.call("create_charge", {**ARGS, "idempotency_key": "k1"}).value["id"] == "2"


def test_a_retry_after_a_timeout_that_committed_gets_the_first_result():
    w = world()
    w.set_faults({"payments.create_charge": {"script": {1: "timeout"}}})
    lost = w.call("create_charge", {**ARGS, "idempotency_key": "k1"})
    assert not lost.ok
    assert lost.fault == "timeout"
    assert len(w.charges) == 1  # it committed
    retry = w.call("create_charge", {**ARGS, "idempotency_key": "k1"})
    assert retry.ok
    assert retry.value["id"] == "1"
    assert len(w.charges) == 1


def test_a_duplicate_delivery_with_a_key_writes_once():
    w = world()
    w.set_faults({"payments.create_charge": {"script": {1: "duplicate"}}})
    w.call("create_charge", {**ARGS, "idempotency_key": "k1"})
    assert len(w.charges) == 1
    w.call("plain_charge", ARGS)  # no key: nothing to deduplicate on
    w.set_faults({"payments.plain_charge": {"script": {2: "duplicate"}}})
    w.call("plain_charge", ARGS)
    assert len(w.charges) == 4


def test_a_refused_write_records_no_key():
    w = world()
    bad = w.call(
        "create_charge", {"amount": 5, "currency": "usd", "id": "", "idempotency_key": "k"}
    )
    assert not bad.ok
    fixed = w.call("create_charge", {"amount": 5, "currency": "usd", "idempotency_key": "k"})
    assert not fixed.ok or fixed.value["id"] == "1"


def test_keys_replay_fork_and_hash():
    w = world()
    w.call("create_charge", {**ARGS, "idempotency_key": "k1"})
    fork = w.fork()
    again = replay(SPEC, decode_events(encode_events(w.events)))
    assert again.state_hash() == w.state_hash()
    # the replayed world and the fork remember the key
    for other in (again, fork):
        assert other.call("create_charge", {**ARGS, "idempotency_key": "k1"}).value["id"] == "1"
        assert len(other.charges) == 1
    # the key is part of the state: the same record written without one hashes otherwise
    plain = world()
    plain.call("create_charge", ARGS)
    assert plain.to_dict() == w.to_dict()
    assert plain.state_hash() != w.state_hash()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    retries=st.integers(1, 8),
    p_timeout=st.floats(0, 1),
    p_dup=st.floats(0, 0.5),
)
def test_n_retries_with_one_key_never_write_twice_under_timeouts_after_commit(
    seed, retries, p_timeout, p_dup
):
    w = world(seed=seed)
    if p_timeout + p_dup > 1:
        p_dup = 1 - p_timeout
    w.set_faults({"payments.create_charge": {"errors": {"timeout": p_timeout, "duplicate": p_dup}}})
    results = [
        w.call("create_charge", {**ARGS, "idempotency_key": "order-7"}) for _ in range(retries)
    ]
    assert len(w.charges) <= 1
    answered = {r.value["id"] for r in results if r.ok}
    assert answered <= {"1"}
    if any(r.fault == "timeout" for r in results) or answered:
        assert len(w.charges) == 1
    assert replay(SPEC, w.events).state_hash() == w.state_hash()


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (
            "{kind: get, record: charge, idempotency: {key: k}}",
            "6:39: 'idempotency' is only for operations that write",
        ),
        (
            "{kind: create, record: charge, idempotency: {key: amount}}",
            "6:61: idempotency key 'amount' of 'op' is already an argument of the tool",
        ),
        (
            "{kind: create, record: charge, idempotency: {key: k, window: soon}}",
            "6:72: invalid idempotency window 'soon'",
        ),
        (
            "{kind: create, record: charge, idempotency: {key: k, window: 0}}",
            "6:72: idempotency window 0 remembers no key",
        ),
        (
            "{kind: create, record: charge, idempotency: {key: k, windw: 1h}}",
            "6:64: unknown key 'windw' in the idempotency of 'op'; expected one of key or "
            "window; did you mean 'window'?",
        ),
        (
            "{kind: create, record: charge, idempotency: {window: 1h}}",
            "6:42: the idempotency of 'op' needs key:",
        ),
    ],
)
def test_idempotency_mistakes_name_the_place_and_the_fix(op, message):
    text = (
        "services:\n  payments:\n    records:\n      charge: { amount: int }\n"
        f"    operations:\n      op: {op}\n"
    )
    with pytest.raises(WorldFileError) as info:
        load_spec("<w>", text=text)
    assert f"<w>:{message}" in str(info.value)
