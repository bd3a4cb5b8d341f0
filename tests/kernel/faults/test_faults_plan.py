"""The fault plan on its own: pure decisions from (seed, run, operation, k) and the rule."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from faultbench.kernel._faults._plan import FaultDecision, FaultPlan, created_field
from faultbench.kernel._faults._types import ErrorRule, FaultRule, Latency, RateLimit
from faultbench.kernel._spec._types import FieldSpec, OperationSpec, RecordSpec
from faultbench.kernel.lowlevel import effective_rule

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
REFUND = OperationSpec(name="issue_refund", service="payments", kind="create", record="refund")
GET_ORDER = OperationSpec(name="get_order", service="orders", kind="get", record="order")
LIST_ORDERS = OperationSpec(name="list_orders", service="orders", kind="list", record="order")


def plan(rules: dict[str, FaultRule], seed: int = 7, run: int = 0, **kw) -> FaultPlan:
    return FaultPlan(rules, seed=seed, run=run, **kw)


def decisions(p: FaultPlan, op: OperationSpec, n: int, **kw) -> list[FaultDecision | None]:
    return [p.decide(op, k, now=NOW, **kw) for k in range(1, n + 1)]


def err(kind: str, p: float = 1.0, **kw) -> ErrorRule:
    return ErrorRule(kind=kind, p=p, **kw)


# ---------------------------------------------------------------------------------------------
# Determinism
# ---------------------------------------------------------------------------------------------

FLAKY = {
    "default": FaultRule(latency=Latency("uniform", lo_ms=50, hi_ms=200)),
    "payments.issue_refund": FaultRule(errors=(err("timeout", 0.3), err("http_500", 0.2))),
}


def test_same_inputs_give_the_same_decisions_in_a_fresh_plan():
    a = decisions(plan(FLAKY), REFUND, 200)
    b = decisions(plan(FLAKY), REFUND, 200)
    assert a == b
    kinds = {d.kind for d in a}
    assert kinds == {None, "timeout", "http_500"}  # the sample really varies


def test_seed_and_run_each_change_the_draws():
    base = decisions(plan(FLAKY, seed=7, run=0), REFUND, 50)
    assert decisions(plan(FLAKY, seed=8, run=0), REFUND, 50) != base
    assert decisions(plan(FLAKY, seed=7, run=1), REFUND, 50) != base


def test_calls_to_other_operations_never_change_a_decision():
    alone = decisions(plan(FLAKY), REFUND, 30)
    p = plan(FLAKY)
    interleaved = []
    for k in range(1, 31):
        for j in range(k % 4):  # a varying number of unrelated calls in between
            p.decide(GET_ORDER, 10 * k + j, now=NOW)
        interleaved.append(p.decide(REFUND, k, now=NOW))
    assert interleaved == alone
    # and the same k of two operations are independent draws, not copies
    get_latency = [d.latency_s for d in decisions(plan(FLAKY), GET_ORDER, 30)]
    assert get_latency != [d.latency_s for d in alone]


def test_decisions_are_identical_across_processes_with_different_hash_seeds():
    script = textwrap.dedent(
        """
        from datetime import datetime, timezone
        import msgspec
        from faultbench.kernel._faults._plan import FaultPlan
        from faultbench.kernel._faults._types import ErrorRule, FaultRule, Latency
        from faultbench.kernel._spec._types import OperationSpec
        rules = {
            "default": FaultRule(latency=Latency("lognormal", p50_ms=80, p99_ms=900)),
            "payments.issue_refund": FaultRule(
                errors=(ErrorRule("timeout", 0.3), ErrorRule("http_503", 0.2))),
        }
        op = OperationSpec(name="issue_refund", service="payments", kind="create")
        p = FaultPlan(rules, seed=123, run=4)
        now = datetime(2025, 6, 1, tzinfo=timezone.utc)
        print(msgspec.json.encode([p.decide(op, k, now=now) for k in range(1, 300)]).decode())
        """
    )
    outputs = []
    for hash_seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        proc = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]
    assert '"timeout"' in outputs[0]
    assert '"http_503"' in outputs[0]


# ---------------------------------------------------------------------------------------------
# Distributions
# ---------------------------------------------------------------------------------------------


def test_uniform_latency_stays_in_bounds_and_covers_them():
    p = plan({"default": FaultRule(latency=Latency("uniform", lo_ms=50, hi_ms=200))})
    lat = [d.latency_s for d in decisions(p, REFUND, 4000)]
    assert all(0.050 <= s <= 0.200 for s in lat)
    assert min(lat) < 0.052
    assert max(lat) > 0.198
    assert statistics.fmean(lat) == pytest.approx(0.125, abs=0.004)


def test_lognormal_latency_matches_the_given_p50_and_p99():
    p = plan({"default": FaultRule(latency=Latency("lognormal", p50_ms=100, p99_ms=1000))})
    lat = sorted(d.latency_s for d in decisions(p, REFUND, 20000))
    assert lat[len(lat) // 2] == pytest.approx(0.100, rel=0.05)
    assert lat[int(len(lat) * 0.99)] == pytest.approx(1.000, rel=0.15)
    assert all(s > 0 for s in lat)


def test_fixed_latency():
    p = plan({"default": FaultRule(latency=Latency("fixed", lo_ms=250, hi_ms=250))})
    assert {d.latency_s for d in decisions(p, REFUND, 20)} == {0.25}


def test_error_frequencies_follow_their_probabilities():
    p = plan(FLAKY)
    kinds = [d.kind for d in decisions(p, REFUND, 20000)]
    assert kinds.count("timeout") / 20000 == pytest.approx(0.3, abs=0.015)
    assert kinds.count("http_500") / 20000 == pytest.approx(0.2, abs=0.015)


# ---------------------------------------------------------------------------------------------
# What a decision carries
# ---------------------------------------------------------------------------------------------


def test_no_rule_or_disabled_plan_decides_nothing():
    assert plan({}).decide(REFUND, 1, now=NOW) is None
    assert plan(FLAKY, enabled=False).decide(REFUND, 1, now=NOW) is None
    latency_only = plan({"default": FaultRule(latency=Latency("fixed", lo_ms=5, hi_ms=5))})
    d = latency_only.decide(REFUND, 1, now=NOW)
    assert d == FaultDecision(latency_s=0.005, k=1)
    assert not d.fails
    assert d.duration_s == 0.005


@pytest.mark.parametrize(
    ("kind", "commit", "message"),
    [
        ("timeout", True, "504 Gateway Timeout: payments.issue_refund did not answer within 30s"),
        (
            "timeout_before_commit",
            False,
            "504 Gateway Timeout: payments.issue_refund did not answer within 30s",
        ),
        (
            "http_500",
            False,
            "500 Internal Server Error: payments.issue_refund failed with an unexpected error",
        ),
        (
            "http_502",
            False,
            "502 Bad Gateway: the upstream server for payments.issue_refund sent an invalid response",
        ),
        (
            "http_503",
            False,
            "503 Service Unavailable: payments.issue_refund is temporarily unavailable; try again later",
        ),
        (
            "http_429",
            False,
            "429 Too Many Requests: payments.issue_refund is rate limited; retry after 1s",
        ),
        (
            "not_found",
            False,
            "404 Not Found: payments.issue_refund: the requested refund was not found",
        ),
        ("empty_result", False, ""),
        ("malformed_json", False, ""),
        ("duplicate", True, ""),
    ],
)
def test_each_kind_has_its_commit_default_and_message(kind, commit, message):
    d = plan({"payments.issue_refund": FaultRule(errors=(err(kind),))}).decide(REFUND, 1, now=NOW)
    assert (d.kind, d.commit, d.message, d.source) == (kind, commit, message, "random")
    assert d.fails == bool(message)


def test_kind_parameters_and_overrides():
    rules = {
        "payments.issue_refund": FaultRule(
            errors=(err("timeout", commit=False, timeout_s=2.5),),
            latency=Latency("fixed", lo_ms=100, hi_ms=100),
        )
    }
    d = plan(rules).decide(REFUND, 1, now=NOW)
    assert (d.kind, d.commit, d.timeout_s) == ("timeout", False, 2.5)
    assert d.duration_s == pytest.approx(2.6)
    assert d.message.endswith("did not answer within 2.5s")
    assert d.detail() == {"source": "random", "commit": False, "timeout_s": 2.5}

    d = plan({"default": FaultRule(errors=(err("http_429", retry_after_s=12),))}).decide(
        REFUND, 1, now=NOW
    )
    assert d.retry_after_s == 12
    assert d.message.endswith("retry after 12s")
    d = plan({"default": FaultRule(errors=(err("stale_read"),))}).decide(GET_ORDER, 1, now=NOW)
    assert (d.kind, d.lag_s) == ("stale_read", 60.0)
    d = plan({"default": FaultRule(errors=(err("duplicate", times=2),))}).decide(REFUND, 1, now=NOW)
    assert (d.kind, d.times, d.detail()["times"]) == ("duplicate", 2, 2)


def test_kinds_that_do_not_fit_the_operation_are_ignored():
    stale = plan({"default": FaultRule(errors=(err("stale_read"),))})
    assert stale.decide(REFUND, 1, now=NOW) is None  # a create has nothing stale to read
    assert stale.decide(LIST_ORDERS, 1, now=NOW).kind == "stale_read"
    dup = plan({"default": FaultRule(errors=(err("duplicate"),))})
    assert dup.decide(GET_ORDER, 1, now=NOW) is None  # a read cannot be applied twice


# ---------------------------------------------------------------------------------------------
# Scripts: the k-th call gets that fault instead of the probabilistic draw
# ---------------------------------------------------------------------------------------------


def test_script_entries_replace_the_draw_for_their_k_only():
    base = FaultRule(latency=Latency("uniform", lo_ms=10, hi_ms=900), errors=(err("http_503"),))
    scripted = msgspec.structs.replace(
        base, script=((2, err("timeout")), (5, err("http_500", commit=True)))
    )
    plain = decisions(plan({"payments.issue_refund": base}), REFUND, 6)
    pinned = decisions(plan({"payments.issue_refund": scripted}), REFUND, 6)
    assert [d.kind for d in pinned] == [
        "http_503",
        "timeout",
        "http_503",
        "http_503",
        "http_500",
        "http_503",
    ]
    assert (pinned[1].source, pinned[4].source, pinned[4].commit) == ("script", "script", True)
    # the latency draw still applies, unchanged, to scripted calls
    assert [d.latency_s for d in pinned] == [d.latency_s for d in plain]


def test_a_script_entry_wins_over_the_rate_limit():
    rule = FaultRule(rate_limit=RateLimit(calls=1, per_seconds=60), script=((3, err("http_502")),))
    recent = [NOW - timedelta(seconds=5)]
    p = plan({"payments.issue_refund": rule})
    assert p.decide(REFUND, 2, now=NOW, recent=recent).kind == "rate_limit"
    assert p.decide(REFUND, 3, now=NOW, recent=recent).kind == "http_502"


# ---------------------------------------------------------------------------------------------
# Rate limits: a sliding window over the virtual times of earlier admitted calls
# ---------------------------------------------------------------------------------------------


def test_rate_limit_slides_with_virtual_time():
    p = plan({"payments.*": FaultRule(rate_limit=RateLimit(calls=2, per_seconds=60))})
    t0 = NOW
    admitted = [t0, t0 + timedelta(seconds=20)]
    at = t0 + timedelta(seconds=30)
    d = p.decide(REFUND, 3, now=at, recent=admitted)
    assert (d.kind, d.commit, d.retry_after_s, d.source) == ("rate_limit", False, 30, "rate_limit")
    assert d.message == (
        "429 Too Many Requests: rate limit of 2 calls per 60s exceeded for "
        "payments.issue_refund; retry after 30s"
    )
    # waiting exactly the advertised time is enough: the oldest call has left the window
    assert p.decide(REFUND, 3, now=at + timedelta(seconds=30), recent=admitted) is None
    assert p.decide(REFUND, 3, now=at + timedelta(seconds=29.5), recent=admitted).kind == (
        "rate_limit"
    )


def test_rate_limit_retry_after_rounds_up_and_counts_the_right_call():
    p = plan({"default": FaultRule(rate_limit=RateLimit(calls=2, per_seconds=10))})
    recent = [NOW - timedelta(seconds=s) for s in (9.5, 4.2, 1.0)]
    # three in the window, limit two: two must leave, the second oldest (4.2s ago) last
    assert p.decide(REFUND, 4, now=NOW, recent=recent).retry_after_s == 6


# ---------------------------------------------------------------------------------------------
# not_found_if_newer_than
# ---------------------------------------------------------------------------------------------


def test_records_newer_than_the_threshold_are_not_found():
    p = plan({"orders.*": FaultRule(not_found_if_newer_than_s=7200)})
    young, old = NOW - timedelta(hours=1), NOW - timedelta(hours=3)
    d = p.decide(GET_ORDER, 1, now=NOW, record_time=young, target_id="17")
    assert (d.kind, d.source) == ("not_found", "not_found_if_newer_than")
    assert d.message == "404 Not Found: orders.get_order: no order with id '17'"
    assert p.decide(GET_ORDER, 1, now=NOW, record_time=old) is None
    assert p.decide(GET_ORDER, 1, now=NOW, record_time=None) is None
    assert p.decide(LIST_ORDERS, 1, now=NOW, record_time=young) is None


def test_created_field_prefers_creation_names_then_falls_back_to_the_first_datetime():
    def rec(*fields: tuple[str, str]) -> RecordSpec:
        specs = tuple(FieldSpec(name=n, kind=k) for n, k in (("id", "str"), *fields))
        return RecordSpec(name="r", service="s", plural="rs", fields=specs)

    assert created_field(rec(("updated_at", "datetime"), ("created_at", "datetime"))) == (
        "created_at"
    )
    assert created_field(rec(("shipped_at", "datetime"), ("placed", "datetime"))) == "placed"
    assert created_field(rec(("due", "datetime"), ("paid_at", "datetime"))) == "paid_at"
    assert created_field(rec(("due", "datetime"), ("name", "str"))) == "due"
    assert created_field(rec(("name", "str"))) is None


# ---------------------------------------------------------------------------------------------
# Merged rules
# ---------------------------------------------------------------------------------------------


def test_the_plan_decides_from_the_merged_rule():
    rules = {
        "default": FaultRule(latency=Latency("fixed", lo_ms=40, hi_ms=40)),
        "payments.*": FaultRule(errors=(err("http_503", 0.0),)),
        "payments.issue_refund": FaultRule(errors=(err("http_503", 1.0),)),
    }
    p = plan(rules)
    d = p.decide(REFUND, 1, now=NOW)
    assert (d.kind, d.latency_s) == ("http_503", 0.04)
    assert p.decide(GET_ORDER, 1, now=NOW) == FaultDecision(latency_s=0.04, k=1)


UPDATE_ORDER = OperationSpec(name="update_order", service="orders", kind="update", record="order")
EVERYTHING = {
    "default": FaultRule(
        errors=(
            err("stale_read", 0.2),
            err("duplicate", 0.2),
            err("timeout", 0.2),
            err("http_429", 0.1),
        ),
        not_found_if_newer_than_s=3600,
        script=((7, err("duplicate")), (8, err("stale_read"))),
    ),
    "orders.*": FaultRule(errors=(err("timeout", 0.2, timeout_s=5),)),
}


@pytest.mark.parametrize("op", [GET_ORDER, LIST_ORDERS, UPDATE_ORDER, REFUND])
def test_the_effective_rule_is_exactly_what_decisions_can_be(op):
    p = plan(EVERYTHING)
    rule = p.effective_rule(op)
    assert rule == effective_rule(EVERYTHING, op)
    shown = {e.kind: e for e in rule.errors} | {e.kind: e for _, e in rule.script}
    drawn = {}
    young = NOW - timedelta(minutes=5)  # hidden from get/update/delete by the 1h rule
    for record_time in (None, young):
        for k in range(1, 400):
            d = p.decide(op, k, now=NOW, record_time=record_time)
            if d is not None and d.kind is not None:
                drawn.setdefault(d.kind, d)
    if rule.not_found_if_newer_than_s is not None:
        shown["not_found"] = None
    assert set(drawn) == set(shown)  # nothing shown that cannot happen, nothing hidden
    for kind, d in drawn.items():
        entry = shown[kind]
        if kind == "timeout":
            assert d.timeout_s == entry.timeout_s == (5 if op.service == "orders" else 30)
        if kind == "http_429":
            assert d.retry_after_s == entry.retry_after_s == 1
        if kind == "stale_read":
            assert d.lag_s == entry.lag_s == 60
        if kind == "duplicate":
            assert d.times == entry.times == 1


def test_the_effective_rule_keeps_the_merged_order_and_drops_what_cannot_happen():
    rule = effective_rule(EVERYTHING, UPDATE_ORDER)
    assert [e.kind for e in rule.errors] == ["duplicate", "http_429", "timeout"]
    assert [(k, e.kind) for k, e in rule.script] == [(7, "duplicate")]
    assert rule.not_found_if_newer_than_s == 3600
    listed = effective_rule(EVERYTHING, LIST_ORDERS)
    assert [e.kind for e in listed.errors] == ["stale_read", "http_429", "timeout"]
    assert listed.not_found_if_newer_than_s is None  # only get, update and delete hide records


# ---------------------------------------------------------------------------------------------
# What a decision does not depend on
# ---------------------------------------------------------------------------------------------


def test_the_order_kinds_are_written_in_never_changes_a_decision():
    a, b = err("http_500", 0.3), err("http_502", 0.3)
    lat = Latency("uniform", lo_ms=10, hi_ms=900)
    written = [
        {"payments.issue_refund": FaultRule(latency=lat, errors=(a, b))},
        {"payments.issue_refund": FaultRule(latency=lat, errors=(b, a))},
        # the same kinds split over two keys, each way round: merging orders them differently
        {"default": FaultRule(errors=(a,)), "payments.*": FaultRule(latency=lat, errors=(b,))},
        {"default": FaultRule(errors=(b,)), "payments.*": FaultRule(latency=lat, errors=(a,))},
    ]
    results = [decisions(plan(rules), REFUND, 60) for rules in written]
    assert all(r == results[0] for r in results[1:])
    assert {d.kind for d in results[0]} == {None, "http_500", "http_502"}


def test_a_script_entry_that_cannot_happen_to_the_operation_is_no_entry():
    # a `default:` script's duplicate means nothing to a read: call 1 takes the rules instead
    rule = FaultRule(errors=(err("http_503"),), script=((1, err("duplicate")),))
    p = plan({"default": rule})
    assert p.decide(GET_ORDER, 1, now=NOW).kind == "http_503"
    assert (p.decide(REFUND, 1, now=NOW).kind, p.decide(REFUND, 1, now=NOW).source) == (
        "duplicate",
        "script",
    )


# ---------------------------------------------------------------------------------------------
# may_fault, and operations without an OperationSpec
# ---------------------------------------------------------------------------------------------


def test_may_fault_is_false_only_when_the_plan_surely_leaves_the_operation_alone():
    assert plan(FLAKY).may_fault(REFUND)
    assert plan(FLAKY).may_fault(GET_ORDER)  # the default latency
    assert not plan(FLAKY, enabled=False).may_fault(REFUND)
    only_refunds = {"payments.issue_refund": FaultRule(errors=(err("http_500", 0.5),))}
    p = plan(only_refunds)
    assert not p.may_fault(GET_ORDER)
    assert decisions(p, GET_ORDER, 20) == [None] * 20
    # a rule written but empty does nothing either
    assert not plan({"default": FaultRule()}).may_fault(GET_ORDER)


def test_a_fault_target_decides_exactly_as_the_operation_spec_it_names():
    from faultbench.kernel._faults._plan import FaultTarget

    target = FaultTarget(service="orders", name="get_order", kind="get", record="order")
    assert target.qualname == GET_ORDER.qualname
    rules = {
        "default": FaultRule(latency=Latency("uniform", lo_ms=50, hi_ms=200)),
        "orders.get_order": FaultRule(
            errors=(err("not_found", 0.3), err("stale_read", 0.3), err("duplicate", 0.3))
        ),
    }
    by_spec = decisions(plan(rules), GET_ORDER, 60, target_id="4")
    assert decisions(plan(rules), target, 60, target_id="4") == by_spec
    assert plan(rules).effective_rule(target) == plan(rules).effective_rule(GET_ORDER)
    messages = {d.message for d in by_spec if d is not None and d.kind == "not_found"}
    assert messages == {"404 Not Found: orders.get_order: no order with id '4'"}
