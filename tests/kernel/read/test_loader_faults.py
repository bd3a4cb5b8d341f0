"""The `faults:` block on its own: parse_faults, merged_rule, parse_duration."""

from __future__ import annotations

import pytest

from faultbench.kernel import WorldFileError
from faultbench.kernel._faults._types import ErrorRule, FaultRule, Latency, RateLimit
from faultbench.kernel._read._reader import merged_rule
from faultbench.kernel.lowlevel import load_spec, parse_duration, parse_faults

WORLD = """\
services:
  orders:
    records: { order: { status: enum[placed, delivered], total: float } }
    operations: { get_order: { kind: get, record: order } }
  payments:
    records: { refund: { order_id: ref[order], amount: float } }
    operations: { issue_refund: { kind: create, record: refund } }
"""


@pytest.fixture
def spec():
    return load_spec("world.yaml", text=WORLD)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("500ms", 0.5),
        ("30s", 30.0),
        ("5m", 300.0),
        ("2h", 7200.0),
        ("1d", 86400.0),
        ("1.5s", 1.5),
        (" 10 s ", 10.0),
        ("45", 45.0),
        (12, 12.0),
        (0.25, 0.25),
    ],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "text",
    ["2 hours", "1w", "-5s", "s", "", True, -1, None, "1h30m", float("inf"), float("nan"), "1e3s"],
)
def test_parse_duration_rejects(text):
    with pytest.raises(ValueError, match="expected a number of seconds or a number with a unit"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (-1, "-1: negative"),
        (float("nan"), "nan: not a number"),
        (float("inf"), "inf: over 3650d"),
        (10**400, "0: over 3650d"),
        ("9" * 400 + "s", "9s': over 3650d"),
        ("3651d", "'3651d': over 3650d"),
    ],
)
def test_parse_duration_says_why_a_number_is_out_of_range(value, why):
    with pytest.raises(ValueError) as info:
        parse_duration(value)
    assert str(info.value).endswith(
        f"{why}; expected a number of seconds or a number with a unit: 500ms, 30s, 5m, 2h or 1d"
    )
    assert parse_duration("3650d") == 3650 * 86400


def test_parse_faults_from_python_objects(spec):
    rules = parse_faults(
        {
            "default": {"latency_ms": [10, 20]},
            "payments.issue_refund": {
                "errors": {"timeout": {"p": 0.2, "commit": False}},
                "script": {1: "http_503", "3": {"kind": "duplicate", "times": 2}},
            },
        },
        spec,
    )
    assert rules["default"].latency == Latency("uniform", lo_ms=10, hi_ms=20)
    refund = rules["payments.issue_refund"]
    assert refund.errors == (ErrorRule("timeout", 0.2, commit=False),)
    assert refund.script == (
        (1, ErrorRule("http_503", 1.0)),
        (3, ErrorRule("duplicate", 1.0, times=2)),
    )


def test_parse_faults_from_yaml_text_with_positions(spec):
    text = "payments.*:\n  rate_limit: { calls: 2, per_seconds: 1m }\n"
    assert parse_faults(text, spec)["payments.*"].rate_limit == RateLimit(2, 60.0)
    # a document with a top-level `faults:` key works too
    assert parse_faults("faults:\n" + "  " + text.replace("\n  ", "\n    "), spec)

    with pytest.raises(WorldFileError) as err:
        parse_faults("payments.issue_refund:\n  errors: { timout: 0.1 }\n", spec, source="f.yaml")
    assert str(err.value).startswith("f.yaml:2:13: unknown error kind 'timout';")
    assert str(err.value).endswith("did you mean 'timeout'?")


def test_parse_faults_checks_merged_probabilities(spec):
    with pytest.raises(
        WorldFileError, match=r"add up to 1\.1 after merging default and orders\.get_order"
    ):
        parse_faults(
            {
                "default": {"errors": {"http_500": 0.6}},
                "orders.get_order": {"errors": {"not_found": 0.5}},
            },
            spec,
        )


def test_parse_faults_reports_unknown_targets_without_positions(spec):
    with pytest.raises(WorldFileError) as err:
        parse_faults({"orders.get_ordr": {}, "payments.*": {"errors": {"boom": 1}}}, spec)
    assert [e.message.split(";")[0] for e in err.value.errors] == [
        "fault key 'orders.get_ordr' names an unknown operation 'get_ordr' of service 'orders'",
        "unknown error kind 'boom'",
    ]


def test_merged_rule_script_and_scalars_most_specific_wins():
    rules = {
        "default": FaultRule(
            latency=Latency("fixed", 5, 5),
            script=((1, ErrorRule("http_500", 1.0)), (2, ErrorRule("http_502", 1.0))),
            not_found_if_newer_than_s=60,
            timeout_s=10,
        ),
        "s.*": FaultRule(rate_limit=RateLimit(1, 1.0), errors=(ErrorRule("timeout", 0.1),)),
        "s.op": FaultRule(
            script=((2, ErrorRule("timeout", 1.0)),),
            not_found_if_newer_than_s=5,
        ),
    }
    merged = merged_rule(rules, "s", "op")
    assert merged.latency == Latency("fixed", 5, 5)
    assert merged.rate_limit == RateLimit(1, 1.0)
    assert merged.not_found_if_newer_than_s == 5
    assert merged.script == (
        (1, ErrorRule("http_500", 1.0)),
        (2, ErrorRule("timeout", 1.0, timeout_s=10)),
    )
    assert merged.errors == (ErrorRule("timeout", 0.1, timeout_s=10),)
    # another service sees only the default
    other = merged_rule(rules, "t", "op")
    assert other.rate_limit is None
    assert other.errors == ()
    assert merged_rule({}, "s", "op") == FaultRule()


def test_misspelled_rate_limit_and_latency_keys(spec):
    with pytest.raises(WorldFileError) as err:
        parse_faults(
            "default: {rate_limit: {calls: 5, per_second: 60}}\n"
            "orders.*: {latency_ms: {p50: 5, p90: 9}}\n",
            spec,
            source="f.yaml",
        )
    assert str(err.value).splitlines() == [
        "f.yaml:1:34: unknown key 'per_second' in rate_limit; expected calls and per_seconds; "
        "did you mean 'per_seconds'?",
        "f.yaml:2:33: unknown key 'p90' in latency_ms; expected p50 and p99; did you mean 'p99'?",
    ]


def test_parse_faults_reports_keys_that_are_not_text(spec):
    with pytest.raises(WorldFileError) as info:
        parse_faults({1: {}, "default": {"latency_ms": 5}}, spec)
    assert str(info.value) == (
        "<faults>:1:1: fault key 1 is not text; expected default, service.* or service.operation"
    )


def test_a_script_step_has_no_probability(spec):
    with pytest.raises(WorldFileError) as info:
        parse_faults("orders.get_order:\n  script: { 2: { kind: timeout, p: 0.5 } }\n", spec)
    assert str(info.value) == (
        "<faults>:2:33: a script step has no probability: the call always gets timeout; "
        "expected no 'p' here; remove it, or move the kind under errors:"
    )
