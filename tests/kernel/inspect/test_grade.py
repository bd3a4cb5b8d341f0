"""Grading a run (docs/CHECKS.md): each policy rule, expectations on the end state, collateral
damage and milestones, through `trace.grade` / `trace.check` and from a world file."""

from __future__ import annotations

from pathlib import Path

import pytest

import faultbench
from faultbench import Checks, Policy

WORLD = Path(__file__).parents[2] / "testing" / "worlds" / "refund.yaml"

TIMEOUT_AFTER_COMMIT = {"payments.issue_refund": {"script": {1: "timeout"}}}


def world(faults=None):
    w = faultbench.load_world(WORLD, faults=faults is not None)
    w.set_faults(faults or {})
    return w


def rules(trace, policy, **kw):
    return [v.rule for v in trace.grade(policy, **kw).violations]


def test_before_matches_on_a_shared_argument_or_an_explicit_match():
    w = world()
    w.call("get_order", {"id": "1"})
    w.call("issue_refund", {"order_id": "1", "amount": 1.0})
    w.call("issue_refund", {"order_id": "2", "amount": 1.0})
    grade = w.trace.grade({"before": {"issue_refund": "get_order"}})
    assert [v.calls for v in grade.violations] == [(3,)]
    assert grade.violations[0].message == (
        'before: {issue_refund: get_order}: call 3 issue_refund(order_id="2", amount=1.0) had '
        "no successful get_order sharing an argument value before it"
    )
    explicit = {"before": {"issue_refund": {"tool": "get_order", "match": {"order_id": "id"}}}}
    assert [v.calls for v in w.trace.grade(explicit).violations] == [(3,)]
    # a read that failed is no read
    w2 = world()
    w2.call("get_order", {"id": "999"})
    w2.call("issue_refund", {"order_id": "999", "amount": 1.0})
    assert rules(w2.trace, {"before": {"issue_refund": "get_order"}}) == ["before"]


def test_at_most_once_counts_effects_a_timeout_after_commit_included():
    w = world(TIMEOUT_AFTER_COMMIT)
    w.call("issue_refund", {"order_id": "1", "amount": 1.0})  # timeout, but written
    w.call("issue_refund", {"order_id": "1", "amount": 1.0})
    w.call("issue_refund", {"order_id": "2", "amount": 1.0})
    grade = w.trace.grade({"at_most_once": {"issue_refund": ["order_id"]}})
    assert [v.message for v in grade.violations] == [
        'at_most_once: {issue_refund: [order_id]}: issue_refund for order_id="1" took effect '
        "2 times (calls 1 and 2)"
    ]
    # a failure that wrote nothing is not an effect: retrying it is fine
    w2 = world({"payments.issue_refund": {"script": {1: "http_500"}}})
    w2.call("issue_refund", {"order_id": "1", "amount": 1.0})
    w2.call("issue_refund", {"order_id": "1", "amount": 1.0})
    assert w2.trace.grade({"at_most_once": {"issue_refund": ["order_id"]}}).ok


def test_never_with_and_without_conditions_counts_every_attempt():
    w = world()
    w.call("issue_refund", {"order_id": "1", "amount": 1.0})
    w.call("issue_refund", {"order_id": "2"})  # invalid arguments: still an attempt
    assert rules(w.trace, {"never": ["update_order"]}) == []
    assert [v.calls for v in w.trace.grade({"never": "issue_*"}).violations] == [(1, 2)]
    cond = {"never": {"issue_refund": {"order_id": {"not_in": ["1"]}}}}
    assert [v.calls for v in w.trace.grade(cond).violations] == [(2,)]
    assert [
        v.calls for v in w.trace.grade({"never": {"issue_refund": {"amount": 1.0}}}).violations
    ] == [(1,)]
    assert w.trace.grade({"never": {"issue_refund": {"order_id": {"ne": "2"}}}}).violations[
        0
    ].calls == (1,)


def test_requires_confirmation_needs_a_confirming_turn_per_call():
    w = world()
    w.call("update_order", {"id": "1", "status": "returned"})
    w.call("get_order", {"id": "2"})
    w.call("update_order", {"id": "2", "status": "returned"})
    policy = {"requires_confirmation": ["update_*"]}
    assert [v.calls for v in w.trace.grade(policy).violations] == [(1,), (3,)]
    turns = [(0, "Yes, go ahead."), (2, "What about order 2?")]
    graded = w.trace.grade(policy, turns=turns)
    assert [v.calls for v in graded.violations] == [(3,)]
    assert "no confirming user turn since the last such call" in graded.violations[0].message
    assert w.trace.grade(policy, turns=[(0, "yes"), (1, "ok, do it")]).ok
    assert not w.trace.grade(policy, turns=[(0, "no, don't"), (2, "yes")]).ok


def test_no_retry_after_is_a_same_call_after_that_failure():
    w = world(TIMEOUT_AFTER_COMMIT)
    w.call("issue_refund", {"order_id": "1", "amount": 1.0})
    w.call("list_refunds", {"order_id": "1"})
    w.call("issue_refund", {"order_id": "1", "amount": 1.0})
    grade = w.trace.grade({"no_retry_after": ["timeout"]})
    assert grade.violations[0].calls == (1, 3)
    assert grade.violations[0].message == (
        'no_retry_after: [timeout]: call 3 issue_refund(order_id="1", amount=1.0) retried '
        "call 1, which failed with timeout"
    )
    assert w.trace.grade({"no_retry_after": {"get_order": ["timeout"]}}).ok
    assert w.trace.grade({"no_retry_after": ["http_500"]}).ok


def test_max_calls_names_the_calls_over_the_limit():
    w = world()
    for i in range(4):
        w.call("get_order", {"id": str(i % 3 + 1)})
    grade = w.trace.grade({"max_calls": {"get_order": 2}})
    assert grade.violations[0].calls == (3, 4)
    assert grade.violations[0].message.endswith(
        "4 calls to get_order (calls 3 and 4 over the limit)"
    )


def test_check_raises_with_every_violation_and_the_trace():
    w = world()
    w.call("issue_refund", {"order_id": "2", "amount": 1.0})
    assert w.trace.check({"max_calls": {"issue_refund": 1}}) is not None
    with pytest.raises(AssertionError) as err:
        w.trace.check(
            Policy.parse({"never": ["issue_refund"], "before": {"issue_refund": "get_order"}})
        )
    text = str(err.value)
    assert text.startswith("Expected the run to keep its checks. Instead, 2 violations:\n  before:")
    assert "Calls: issue_refund" in text
    assert "Trace: 1 call, 0 failed" in text


def test_expect_state_exists_count_changed_unchanged():
    w = world()
    w.call("issue_refund", {"order_id": "1", "amount": 5.0})
    w.call("update_order", {"id": "1", "status": "returned"})
    ok = {
        "expect_state": {
            "refund": [{"where": {"order_id": "1"}, "count": 1}],
            "order": [
                {"where": {"id": "1"}, "changed": {"status": "returned"}},
                {"where": {"id": "2"}, "unchanged": True},
            ],
        },
        "nothing_else_changes": True,
    }
    assert w.trace.check(ok)
    bad = Checks.parse(
        {
            "expect_state": {
                "refund": [{"where": {"order_id": "1"}, "count": 2}, {"where": {"order_id": "3"}}],
                "order": [
                    {"where": {"id": "1"}, "unchanged": True},
                    {"where": {"id": "2"}, "changed": True},
                    {"where": {"id": "1"}, "changed": {"status": "placed"}},
                ],
            }
        }
    )
    messages = [v.message for v in w.trace.grade(bad).violations]
    assert messages[0] == 'expect_state: refund where order_id="1": expected exactly 2, found 1 (1)'
    assert (
        messages[1]
        == 'expect_state: refund where order_id="3": expected at least one at the end, found none'
    )
    assert messages[2].startswith(
        'expect_state: order where id="1": expected unchanged, but 1 record changed:'
    )
    assert '~ order 1 status: "' in messages[2]
    assert '-> "returned"' in messages[2]
    assert (
        messages[3]
        == 'expect_state: order where id="2": expected changed, but 2 ended as it started'
    )
    assert (
        messages[4]
        == 'expect_state: order where id="1": expected {status: "placed"}, but 1 has status="returned"'
    )


def test_nothing_else_changes_lists_collateral_damage_as_a_diff():
    w = world()
    w.call("issue_refund", {"order_id": "1", "amount": 5.0})
    w.call("update_order", {"id": "2", "status": "returned"})
    checks = {
        "expect_state": {"refund": {"where": {"order_id": "1"}, "count": 1}},
        "nothing_else_changes": True,
    }
    (v,) = w.trace.grade(checks).violations
    assert v.rule == "nothing_else_changes"
    assert (
        v.message.splitlines()[0] == "nothing_else_changes: 1 record changed outside expect_state:"
    )
    assert v.message.splitlines()[1].startswith("    ~ order 2 status: ")


def test_milestones_score_by_weight():
    w = world()
    w.call("get_order", {"id": "1"})
    w.call("issue_refund", {"order_id": "1", "amount": 5.0})
    grade = w.trace.grade(
        {
            "milestones": {
                "read": {"call": "get_order", "args": {"id": "1"}},
                "refunded": {
                    "state": {"refund": {"where": {"order_id": "1"}, "count": 1}},
                    "weight": 2,
                },
                "returned": {
                    "state": {"order": {"where": {"id": "1"}, "changed": {"status": "returned"}}}
                },
            }
        }
    )
    assert grade.ok
    assert grade.milestones == {"read": True, "refunded": True, "returned": False}
    assert grade.score == pytest.approx(3 / 4)
    assert w.trace.grade({"never": ["x"]}).score is None


def test_world_file_checks_are_read_with_the_world(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(
        WORLD.read_text()
        + "\npolicies: {never: [update_order], max_calls: {get_order: 3}}\n"
        + "expect_state: {order: [{where: {id: '1'}, unchanged: true}]}\n"
        + "nothing_else_changes: true\n"
        + "milestones: {read: {call: get_order}}\n"
    )
    w = faultbench.load_world(path)
    checks = w.spec.checks
    assert checks.policy.never[0].tool == "update_order"
    assert checks.policy.max_calls == (("get_order", 3),)
    assert checks.nothing_else_changes
    assert checks.milestones[0].name == "read"
    w.call("update_order", {"id": "1", "status": "returned"})
    assert {v.rule for v in w.trace.grade(checks).violations} == {
        "never",
        "expect_state",
        "nothing_else_changes",
    }


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "policies: {nevr: [x]}",
            (1, 12),
            "unknown policy rule 'nevr'; expected one of before, at_most_once, never, requires_confirmation, no_retry_after or max_calls; did you mean 'never'?",
        ),
        (
            "policies: {max_calls: {get_order: -1}}",
            (1, 35),
            "max_calls: the limit must be a whole number >= 0, not -1; e.g. 'get_order: 5'",
        ),
        (
            "policies: {before: {issue_refund: get_ordr}}",
            (1, 35),
            "before: no tool 'get_ordr' in this world; expected one of get_order, issue_refund, list_refunds or update_order (or a pattern such as 'cancel_*'); did you mean 'get_order'?",
        ),
        (
            "policies: {never: {issue_refund: {order_id: {nin: [1]}}}}",
            (1, 45),
            "never: a condition is a value or one of eq, ne, in or not_in, e.g. 'order_id: {not_in: [\"1\"]}', not {'nin': [1]}",
        ),
        (
            "expect_state: {refnd: []}",
            (1, 16),
            "no record 'refnd' in this world; expected one of order or refund; did you mean 'refund'?",
        ),
        (
            "expect_state: {refund: [{wher: {}}]}",
            (1, 26),
            "unknown key 'wher' in an expectation on refund; expected one of where, count, changed or unchanged; did you mean 'where'?",
        ),
        ("nothing_else_changes: 3", (1, 23), "nothing_else_changes must be true or false, not 3"),
        (
            "milestones: {a: {call: get_order, weight: 0}}",
            (1, 43),
            "weight must be a number > 0, not 0",
        ),
        (
            "milestones: {a: {weight: 1}}",
            (1, 14),
            "milestone 'a' needs one of 'call' (a call pattern) or 'state' (an expectation on records)",
        ),
        ("polices: {}", (1, 1), "unknown key 'polices' in the world file"),
    ],
)
def test_world_file_check_mistakes_name_file_line_col(tmp_path, text, where, message):
    base = WORLD.read_text()
    path = tmp_path / "w.yaml"
    path.write_text(base + "\n" + text + "\n")
    line = len(base.splitlines()) + 1 + where[0]
    with pytest.raises(faultbench.WorldFileError) as err:
        faultbench.load_world(path)
    assert f"w.yaml:{line}:{where[1]}: {message}" in str(err.value)


def test_python_mistakes_are_value_errors_naming_every_one():
    with pytest.raises(ValueError, match=r"(?s)unknown policy rule 'nevr'.*max_calls: the limit"):
        Policy.parse({"nevr": [], "max_calls": {"x": "many"}})
    with pytest.raises(TypeError, match="Expected a Checks, a Policy or a mapping"):
        world().trace.check(["never"])


def test_each_violation_points_at_the_events_that_broke_it():
    from faultbench.kernel.lowlevel import format_event

    w = world(TIMEOUT_AFTER_COMMIT)
    w.call("issue_refund", {"order_id": "1", "amount": 1.0})  # timeout, but written
    w.call("issue_refund", {"order_id": "1", "amount": 1.0})  # a retry: the second effect
    w.call("update_order", {"id": "2", "status": "returned"})
    w.call("update_order", {"id": "2", "status": "placed"})
    checks = {
        "policies": {
            "at_most_once": {"issue_refund": ["order_id"]},
            "no_retry_after": ["timeout"],
            "never": "update_order",
        },
        "expect_state": {"order": {"where": {"id": "2"}, "unchanged": True}},
    }
    events = w.events
    at = {
        v.rule: [format_event(events[s]) for s in v.events]
        for v in w.trace.grade(checks).violations
    }
    assert at == {
        # the second refund's write: the moment it took effect twice
        "at_most_once": ['RecordCreated refund 2 {order_id: "1", amount: 1.0}'],
        # the retry's start
        "no_retry_after": ['CallStarted issue_refund {order_id: "1", amount: 1.0}'],
        # every attempt
        "never": [
            'CallStarted update_order {id: "2", status: "returned"}',
            'CallStarted update_order {id: "2", status: "placed"}',
        ],
        # the last write that left the record as it ended
        "expect_state": ['RecordUpdated order 2 status: "returned" -> "placed"'],
    }
    (retry,) = [v for v in w.trace.grade(checks).violations if v.rule == "no_retry_after"]
    assert events[retry.events[0]].call_id == w.trace.calls_to("issue_refund")[1].call_id
