"""Faults executed through World.call: what the agent sees, what the state holds, what the log
holds, for every kind; merging, scripts, rate limits, stale reads, determinism, replay."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import pytest

from faultbench.kernel import World, WorldFileError, decode_events, encode_events, replay
from faultbench.kernel.lowlevel import load_spec

WORLD = Path(__file__).resolve().parents[2] / "worlds" / "faults.yaml"
SPEC = load_spec(WORLD)
T0 = datetime(2025, 6, 1, tzinfo=UTC)
REFUND = {"order_id": "1", "amount": 5.0}


def shop(faults=None, *, seed: int | None = None, run: int = 0, enabled: bool = True) -> World:
    world = World.from_spec(SPEC, seed=seed, run=run, faults=enabled)
    if faults is not None:
        world.set_faults(faults)
    return world


def call_events(world: World, call_id: str) -> list[str]:
    """Names of the events of one call, in log order."""
    out = []
    for ev in world.events:
        if getattr(ev, "call_id", None) == call_id:
            out.append(type(ev).__name__)
    return out


def fixed(ms: float) -> dict:
    return {"latency_ms": [ms, ms]}


# ---------------------------------------------------------------------------------------------
# Latency and the virtual clock
# ---------------------------------------------------------------------------------------------


def test_latency_moves_the_virtual_clock_and_nothing_sleeps():
    world = shop({"default": {"latency_ms": [50, 200]}})
    for _ in range(20):
        start = world.clock.now()
        result = world.call("get_order", {"id": "1"})
        assert result.ok
        assert result.fault is None
        assert 0.05 <= result.latency_s <= 0.2
        assert result.started_at == start
        assert (
            world.clock.now() == result.finished_at == start + timedelta(seconds=result.latency_s)
        )
    assert call_events(world, "c1") == ["CallStarted", "ClockAdvanced", "CallSucceeded"]
    assert not world.trace.faults()


def test_a_world_without_faults_ignores_its_rules():
    # rules can only be set on a world with faults; a fork without them keeps but ignores them
    world = shop({"default": {"latency_ms": [50, 200], "errors": {"http_500": 1.0}}})
    world = world.fork(faults=False)
    assert world.fault_rules
    result = world.call("get_order", {"id": "1"})
    assert result.ok
    assert world.clock.now() == T0


# ---------------------------------------------------------------------------------------------
# Each kind: the agent's text, the state after, the log
# ---------------------------------------------------------------------------------------------


def test_timeout_commits_then_fails_after_timeout_s():
    world = shop({"payments.issue_refund": {**fixed(100), "errors": {"timeout": 1.0}}})
    result = world.call("issue_refund", REFUND)
    assert not result.ok
    assert result.text == "504 Gateway Timeout: payments.issue_refund did not answer within 30s"
    assert (result.error_kind, result.fault) == ("timeout", "timeout")
    # the write happened, stamped with the virtual time the server ran it
    (refund,) = world.refunds.all()
    assert refund.created_at == T0 + timedelta(seconds=0.1)
    assert world.orders.get("1").status == "refunded"
    assert world.clock.now() == T0 + timedelta(seconds=30.1)
    assert call_events(world, result.call_id) == [
        "CallStarted",
        "FaultInjected",
        "ClockAdvanced",
        "RecordCreated",
        "RecordUpdated",
        "ClockAdvanced",
        "CallFailed",
    ]
    (fault,) = world.trace.faults()
    assert (fault.kind, fault.detail) == (
        "timeout",
        {"source": "random", "commit": True, "timeout_s": 30.0},
    )
    assert world.trace.summary() == "issue_refund!timeout"


def test_timeout_s_and_timeout_before_commit():
    world = shop(
        {"payments.issue_refund": {"errors": {"timeout_before_commit": {"p": 1, "timeout_s": 5}}}}
    )
    before = world.snapshot()
    result = world.call("issue_refund", REFUND)
    assert result.text == "504 Gateway Timeout: payments.issue_refund did not answer within 5s"
    assert result.error_kind == "timeout_before_commit"
    assert not world.diff(before)
    assert world.clock.now() == T0 + timedelta(seconds=5)


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("http_500", "500 Internal Server Error: payments.issue_refund failed with an unexpected error"),
        ("http_502", "502 Bad Gateway: the upstream server for payments.issue_refund sent an invalid response"),
        ("http_503", "503 Service Unavailable: payments.issue_refund is temporarily unavailable; try again later"),
        ("http_429", "429 Too Many Requests: payments.issue_refund is rate limited; retry after 1s"),
        ("not_found", "404 Not Found: payments.issue_refund: the requested resource was not found"),
    ],
)  # fmt: skip
def test_errors_before_commit_change_nothing(kind, text):
    world = shop({"payments.issue_refund": {**fixed(40), "errors": {kind: 1.0}}})
    before = world.snapshot()
    result = world.call("issue_refund", REFUND)
    assert (result.ok, result.text, result.error, result.error_kind) == (False, text, text, kind)
    assert not world.diff(before)
    assert world.clock.now() == T0 + timedelta(seconds=0.04)
    assert call_events(world, result.call_id) == [
        "CallStarted",
        "FaultInjected",
        "ClockAdvanced",
        "CallFailed",
    ]
    assert world.trace.summary() == f"issue_refund!{kind}"


def test_http_500_after_the_write_committed_is_one_line():
    world = shop({"payments.issue_refund": {"errors": {"http_500": {"p": 1, "commit": True}}}})
    result = world.call("issue_refund", REFUND)
    assert result.error_kind == "http_500"
    assert len(world.refunds) == 1


def test_http_429_carries_retry_after():
    world = shop({"payments.issue_refund": {"errors": {"http_429": {"p": 1, "retry_after_s": 12}}}})
    result = world.call("issue_refund", REFUND)
    assert result.text.endswith("retry after 12s")
    assert world.trace.faults()[0].detail["retry_after_s"] == 12


def test_not_found_names_the_id():
    world = shop({"orders.get_order": {"errors": {"not_found": 1.0}}})
    result = world.call("get_order", {"id": "3"})
    assert result.text == "404 Not Found: orders.get_order: no order with id '3'"
    assert result.error_kind == "not_found"
    assert world.orders.get("3") is not None


def test_empty_result_answers_an_empty_value_of_the_right_shape_and_runs_nothing():
    world = shop({"default": {"errors": {"empty_result": 1.0}}})
    listed = world.call("list_orders", {})
    got = world.call("get_order", {"id": "1"})
    created = world.call("create_order", {"status": "placed", "total": 1.0})
    assert (listed.ok, listed.value, listed.text, listed.fault) == (True, [], "[]", "empty_result")
    assert (got.value, got.text) == ({}, "{}")
    assert created.ok
    assert len(world.orders) == 3  # the create did not run
    assert world.trace.summary() == (
        "list_orders!empty_result → get_order!empty_result → create_order!empty_result"
    )


def test_malformed_json_is_a_success_whose_text_does_not_parse():
    world = shop({"orders.get_order": {"errors": {"malformed_json": 1.0}}})
    result = world.call("get_order", {"id": "1"})
    assert result.ok
    assert result.fault == "malformed_json"
    assert result.value["id"] == "1"
    with pytest.raises(msgspec.DecodeError):
        msgspec.json.decode(result.text)
    full = msgspec.json.encode(result.value).decode()
    assert full.startswith(result.text)
    # the log keeps the exact text, so the trace shows what the agent read
    assert world.trace.calls[-1].text == result.text
    assert world.trace.faults()[0].detail["text"] == result.text


@pytest.mark.parametrize(("commit", "created"), [(None, 0), (True, 1)])
def test_malformed_json_on_a_write_rolls_back_unless_commit(commit, created):
    rule = 1.0 if commit is None else {"p": 1.0, "commit": commit}
    world = shop({"orders.create_order": {"errors": {"malformed_json": rule}}})
    result = world.call("create_order", {"status": "placed", "total": 2.5})
    assert result.ok
    assert result.value["total"] == 2.5
    assert len(world.orders) == 3 + created


def test_duplicate_applies_a_write_twice():
    world = shop({"default": {"errors": {"duplicate": 1.0}}})
    created = world.call("create_order", {"status": "placed", "total": 7.0})
    assert created.ok
    assert created.value["id"] == "4"
    assert [o.total for o in world.orders.where(status="placed")][-2:] == [7.0, 7.0]
    assert len(world.orders) == 5
    refund = world.call("issue_refund", REFUND)
    assert refund.ok
    assert refund.value["id"] == "1"
    assert len(world.refunds) == 2  # the handler ran twice
    deleted = world.call("delete_order", {"id": "3"})
    assert deleted.ok  # the second delete found nothing and was dropped
    assert world.orders.get("3") is None
    assert world.trace.summary().count("!duplicate") == 3


def test_duplicate_times():
    world = shop({"orders.create_order": {"errors": {"duplicate": {"p": 1, "times": 2}}}})
    world.call("create_order", {"status": "placed", "total": 7.0})
    assert len(world.orders) == 6


# ---------------------------------------------------------------------------------------------
# Stale reads: the exact state of lag_s ago, rebuilt from the log
# ---------------------------------------------------------------------------------------------


def test_stale_reads_return_the_exact_earlier_values():
    world = shop()
    world.call("update_order", {"id": "1", "status": "shipped", "total": 11.0})  # at T0
    world.clock.advance(30)
    world.call("update_order", {"id": "1", "status": "refunded"})  # at T0+30
    world.call("create_order", {"status": "placed", "total": 99.0})  # at T0+30
    world.call("delete_order", {"id": "2"})
    world.clock.advance(30)  # now T0+60
    world.set_faults({"orders.*": {"errors": {"stale_read": {"p": 1, "lag_s": 45}}}})
    # 45 s ago is T0+15: after the first update, before everything else
    got = world.call("get_order", {"id": "1"})
    assert got.ok
    assert got.fault == "stale_read"
    assert (got.value["status"], got.value["total"]) == ("shipped", 11.0)
    assert world.orders.get("1").status == "refunded"  # the truth is untouched
    listed = world.call("list_orders", {})
    assert [o["id"] for o in listed.value] == ["1", "2", "3"]  # 2 not yet deleted, 4 not there
    missing = world.call("get_order", {"id": "4"})
    assert (missing.ok, missing.error_kind, missing.fault) == (False, "not_found", "stale_read")
    assert world.trace.summary().endswith("get_order!stale_read")


def test_stale_reads_never_go_before_the_seed_data():
    world = shop({"orders.get_order": {"errors": {"stale_read": 1.0}}})
    result = world.call("get_order", {"id": "1"})
    assert result.ok
    assert result.value["status"] == "placed"


# ---------------------------------------------------------------------------------------------
# Rate limits
# ---------------------------------------------------------------------------------------------


def test_rate_limit_slides_with_the_virtual_clock():
    world = shop(
        {"orders.list_orders": {**fixed(1000), "rate_limit": {"calls": 2, "per_seconds": 10}}}
    )
    ok = [world.call("list_orders", {}) for _ in range(2)]  # start at T0, T0+1
    assert all(r.ok for r in ok)
    refused = world.call("list_orders", {})  # starts at T0+2: both still in the window
    assert (refused.ok, refused.error_kind, refused.fault) == (False, "rate_limit", "rate_limit")
    assert refused.text == (
        "429 Too Many Requests: rate limit of 2 calls per 10s exceeded for "
        "orders.list_orders; retry after 8s"
    )
    # refused calls do not count, and the clock moved 1 s per call: at T0+3 still refused
    assert world.call("list_orders", {}).error_kind == "rate_limit"
    world.clock.advance(6)  # T0+10: the call of T0 has left the window
    assert world.call("list_orders", {}).ok
    assert world.call("list_orders", {}).ok  # T0+11: the call of T0+1 has left it too
    assert world.call("list_orders", {}).error_kind == "rate_limit"  # T0+12: T0+10, T0+11
    assert world.trace.faults()[0].detail["retry_after_s"] == 8


def test_waiting_the_advertised_retry_after_is_enough():
    world = shop({"orders.list_orders": {"rate_limit": {"calls": 1, "per_seconds": 60}}})
    assert world.call("list_orders", {}).ok
    world.clock.advance(17.5)
    refused = world.call("list_orders", {})
    wait = world.trace.faults()[-1].detail["retry_after_s"]
    assert wait == 43
    assert refused.text.endswith("retry after 43s")
    world.clock.advance(wait)
    assert world.call("list_orders", {}).ok


def test_a_rate_limit_on_a_service_counts_each_operation_apart():
    world = shop({"orders.*": {"rate_limit": {"calls": 1, "per_seconds": 60}}})
    assert world.call("list_orders", {}).ok
    assert world.call("get_order", {"id": "1"}).ok
    assert not world.call("get_order", {"id": "1"}).ok


# ---------------------------------------------------------------------------------------------
# not_found_if_newer_than
# ---------------------------------------------------------------------------------------------


def test_records_newer_than_the_threshold_are_not_found_until_they_age():
    world = shop({"orders.*": {"not_found_if_newer_than": "2h"}})
    # order 2 was placed at 23:00 the day before: one hour old
    young = world.call("get_order", {"id": "2"})
    assert young.text == "404 Not Found: orders.get_order: no order with id '2'"
    assert world.call("update_order", {"id": "2", "total": 1.0}).error_kind == "not_found"
    assert world.orders.get("2").total == 20.0
    assert world.call("get_order", {"id": "1"}).ok  # a month old
    assert len(world.call("list_orders", {}).value) == 3  # lists are not filtered
    world.clock.advance(3600)
    assert world.call("get_order", {"id": "2"}).ok
    assert world.trace.faults()[0].detail["source"] == "not_found_if_newer_than"


# ---------------------------------------------------------------------------------------------
# Scripts, merging, run-time rules
# ---------------------------------------------------------------------------------------------


def test_scripts_pin_the_kth_valid_call_instead_of_the_draw():
    world = shop(
        """
        payments.issue_refund:
          errors: { http_503: 1.0 }
          script: { 2: timeout, 4: { kind: http_500, commit: true } }
        """
    )
    kinds = []
    for i in range(5):
        if i == 1:  # invalid calls take no fault and are not counted
            bad = world.call("issue_refund", {"order_id": 1})
            assert (bad.error_kind, bad.fault, bad.k) == ("invalid_arguments", None, None)
        kinds.append(world.call("issue_refund", REFUND).error_kind)
    assert kinds == ["http_503", "timeout", "http_503", "http_500", "http_503"]
    assert len(world.refunds) == 2  # the timeout and the committed 500
    assert [f.detail["source"] for f in world.trace.faults()] == [
        "random",
        "script",
        "random",
        "script",
        "random",
    ]


def test_rules_merge_from_default_to_service_to_operation():
    world = shop(
        {
            "default": fixed(10),
            "payments.*": {"errors": {"http_503": 1.0}},
            "payments.issue_refund": {"errors": {"http_503": 0.0, "http_502": 1.0}},
        }
    )
    assert world.call("get_order", {"id": "1"}).latency_s == pytest.approx(0.01)
    assert world.call("get_refund", {"id": "1"}).error_kind == "http_503"
    assert world.call("issue_refund", REFUND).error_kind == "http_502"
    assert sorted(world.fault_rules) == ["default", "payments.*", "payments.issue_refund"]


def test_set_faults_validates_like_the_loader():
    world = shop()
    with pytest.raises(WorldFileError, match="timeuot"):
        world.set_faults({"payments.issue_refund": {"errors": {"timeuot": 0.5}}})
    with pytest.raises(WorldFileError):
        world.set_faults({"payments.refund_all": {"errors": {"timeout": 0.5}}})
    assert world.fault_rules == {}
    world.set_faults("payments.issue_refund: { errors: { timeout: 1.0 } }")
    assert world.call("issue_refund", REFUND).error_kind == "timeout"
    world.set_faults({})
    assert world.call("issue_refund", REFUND).ok


def test_forks_keep_rules_and_call_numbers_and_a_new_run_draws_anew():
    rules = {"payments.issue_refund": {"errors": {"timeout": 0.5}}}
    world = shop(rules)
    world.call("issue_refund", REFUND)
    snap = world.snapshot()
    same = [world.fork(snap).call("issue_refund", REFUND).error_kind for _ in range(2)]
    assert same[0] == same[1]
    assert world.fork(snap).call("issue_refund", REFUND).k == 2
    kinds = {world.fork(snap, run=r).call("issue_refund", REFUND).error_kind for r in range(12)}
    assert kinds == {None, "timeout"}  # some runs time out, some do not


# ---------------------------------------------------------------------------------------------
# Determinism and replay
# ---------------------------------------------------------------------------------------------

FLAKY = {
    "default": {"latency_ms": {"p50": 80, "p99": 2000}},
    "payments.issue_refund": {
        "errors": {
            "timeout": 0.2,
            "http_503": 0.1,
            "duplicate": 0.1,
            "http_500": {"p": 0.1, "commit": True},
        }
    },
    "orders.get_order": {"errors": {"stale_read": 0.2, "malformed_json": 0.1, "not_found": 0.1}},
    "orders.list_orders": {"rate_limit": {"calls": 3, "per_seconds": 2}},
    "orders.create_order": {"errors": {"duplicate": 0.3, "empty_result": 0.1}},
}


def agent_session(world: World, n: int = 40) -> None:
    for i in range(n):
        world.call("get_order", {"id": str(1 + i % 3)})
        world.call("list_orders", {"status": "placed"} if i % 2 else {})
        if i % 3 == 0:
            world.call("issue_refund", {"order_id": "1", "amount": float(i)})
        if i % 5 == 0:
            world.call("create_order", {"status": "placed", "total": float(i)})
            world.call("update_order", {"id": "3", "total": float(i)})
        if i % 7 == 0:
            world.call("get_order", {"id": 7})  # invalid


def test_same_world_seed_run_and_calls_give_byte_identical_logs_in_fresh_processes():
    script = textwrap.dedent(
        f"""
        import hashlib, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[3])!r})
        from tests.kernel.calls.test_faults_calls import FLAKY, agent_session, shop
        from faultbench.kernel import encode_events
        world = shop(FLAKY, run=5)
        agent_session(world)
        data = encode_events(world.events)
        print(hashlib.sha256(data).hexdigest(), len(data))
        """
    )
    outs = []
    for hash_seed in ("1", "987"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        proc = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        outs.append(proc.stdout.strip())
    world = shop(FLAKY, run=5)
    agent_session(world)
    data = encode_events(world.events)
    assert outs[0] == outs[1] == f"{hashlib.sha256(data).hexdigest()} {len(data)}"
    kinds = {f.kind for f in world.trace.faults()}
    assert {"timeout", "duplicate", "stale_read", "rate_limit"} <= kinds  # a rich log


def test_calls_to_other_operations_do_not_change_an_operations_faults():
    def refund_faults(world: World) -> list:
        return [(c.k, c.fault, c.latency_s) for c in world.trace.calls_to("issue_refund")]

    quiet = shop(FLAKY, run=2)
    busy = shop(FLAKY, run=2)
    for i in range(30):
        quiet.call("issue_refund", REFUND)
        for _ in range(i % 3):
            busy.call("get_order", {"id": "1"})
            busy.call("create_order", {"status": "placed", "total": 1.0})
        busy.call("issue_refund", REFUND)
    assert refund_faults(quiet) == refund_faults(busy)


def test_replay_of_a_faulty_log_rebuilds_the_same_state():
    world = shop(FLAKY, run=3)
    agent_session(world)
    assert world.trace.faults()
    assert replay(SPEC, world.events).state_hash() == world.state_hash()
    # and through the JSON Lines codec (datetimes come back as text and are coerced)
    again = replay(SPEC, decode_events(encode_events(world.events)))
    assert again.state_hash() == world.state_hash()


# ---------------------------------------------------------------------------------------------
# commit: where it means something, and where the loader refuses it
# ---------------------------------------------------------------------------------------------

ORDER = {"status": "placed", "total": 4.0}


@pytest.mark.parametrize(
    "kind",
    ["timeout", "http_500", "http_502", "http_503", "not_found", "empty_result", "malformed_json"],
)
@pytest.mark.parametrize("commit", [True, False])
def test_commit_decides_whether_the_write_stays(kind, commit):
    world = shop({"orders.create_order": {"errors": {kind: {"p": 1, "commit": commit}}}})
    result = world.call("create_order", ORDER)
    assert result.fault == kind
    assert len(world.orders) == (4 if commit else 3)
    assert world.trace.faults()[0].detail["commit"] is commit


def test_empty_result_with_commit_answers_empty_after_the_write():
    world = shop({"orders.update_order": {"errors": {"empty_result": {"p": 1, "commit": True}}}})
    result = world.call("update_order", {"id": "1", "total": 9.0})
    assert (result.ok, result.text) == (True, "{}")
    assert world.orders.get("1").total == 9.0
    missing = world.call("update_order", {"id": "9", "total": 9.0})
    assert (missing.ok, missing.error_kind) == (False, "not_found")  # the real answer


@pytest.mark.parametrize("kind", ["timeout_before_commit", "http_429", "stale_read", "duplicate"])
def test_commit_is_a_load_error_where_there_is_no_choice(kind):
    world = shop()
    text = f"orders.*: {{errors: {{{kind}: {{p: 0.1, commit: true}}}}}}"
    with pytest.raises(WorldFileError) as info:
        world.set_faults(text)
    (problem,) = info.value.errors
    assert (problem.line, problem.col) == (1, text.index(", commit") + 3)
    assert problem.message.startswith(f"'commit' does not apply to {kind}; expected it only with")
    with pytest.raises(WorldFileError, match="'commit' does not apply to duplicate"):
        world.set_faults({"orders.*": {"script": {1: {"kind": "duplicate", "commit": False}}}})


# ---------------------------------------------------------------------------------------------
# Kinds that cannot happen to an operation
# ---------------------------------------------------------------------------------------------


def test_a_kind_that_cannot_happen_to_the_operation_it_names_is_a_load_error(tmp_path):
    world_file = tmp_path / "w.yaml"
    world_file.write_text(
        WORLD.read_text()
        + textwrap.dedent(
            """
            faults:
              orders.get_order:
                errors: { duplicate: 0.1 }
                script: { 2: duplicate }
              orders.create_order: { errors: { stale_read: 0.1 } }
            """
        )
    )
    (tmp_path / "faults_handlers.py").write_text((WORLD.parent / "faults_handlers.py").read_text())
    with pytest.raises(WorldFileError) as info:
        load_spec(world_file)
    lines = WORLD.read_text().count("\n")
    got = [(e.line - lines, e.col, e.message) for e in info.value.errors]
    assert got == [
        (
            4,
            15,
            "duplicate cannot happen to orders.get_order, a get operation; expected it only "
            "on create, update, delete or custom operations; remove it (a default: or "
            "service.* rule may name it: the operations it does not fit skip it)",
        ),
        (5, 18, got[1][2]),
        (6, 36, got[2][2]),
    ]
    assert got[1][2].startswith("duplicate cannot happen to orders.get_order")
    assert got[2][2].startswith(
        "stale_read cannot happen to orders.create_order, a create operation; expected it "
        "only on get or list operations"
    )


def test_general_rules_may_name_them_and_the_operations_they_do_not_fit_skip_them():
    world = shop(
        {"default": {"errors": {"stale_read": 0.5, "duplicate": 0.5}, "script": {1: "duplicate"}}}
    )
    got = world.call("get_order", {"id": "1"})
    assert got.ok
    created = world.call("create_order", ORDER)
    assert created.fault == "duplicate"
    assert len(world.orders) == 5


# ---------------------------------------------------------------------------------------------
# More rate-limit and clock details
# ---------------------------------------------------------------------------------------------


def test_calls_answered_by_an_http_429_fault_do_not_count_towards_the_limit():
    world = shop(
        {
            "orders.list_orders": {
                "rate_limit": {"calls": 1, "per_seconds": 60},
                "script": {1: "http_429"},
            }
        }
    )
    assert world.call("list_orders", {}).error_kind == "http_429"
    assert world.call("list_orders", {}).ok  # the 429 left the window empty
    assert world.call("list_orders", {}).error_kind == "rate_limit"


def test_a_handler_reading_the_clock_sees_the_virtual_time_its_operation_runs_at():
    world = shop({"payments.issue_refund": {"latency_ms": 250, "script": {2: "timeout"}}})
    world.clock.advance(7)
    first = world.call("issue_refund", REFUND)
    second = world.call("issue_refund", REFUND)
    at = [r.created_at for r in world.refunds.all()]
    assert at == [T0 + timedelta(seconds=7.25), T0 + timedelta(seconds=7.5)]
    assert first.finished_at == T0 + timedelta(seconds=7.25)
    assert world.clock.now() == second.finished_at == T0 + timedelta(seconds=37.5)
