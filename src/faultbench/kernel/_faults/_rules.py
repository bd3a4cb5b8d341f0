"""Fault rules as a call sees them: merged, defaults written out, cut to what can happen.

Rules are stored as written, per key (`default`, `service.*`, `service.operation`). A call to
an operation sees `merged_rule(...)`, the fold of its three keys from general to specific;
the plan draws from that rule with every kind's defaults written out (`with_defaults`), and
`effective_rule` is what can actually happen to the operation (`faultbench check`). Pure
functions of frozen data; every kind property comes from the registry (`_kinds.py`).

An operation is anything with `service`, `name`, `kind` (and `qualname`): an `OperationSpec`
or a `_faults.FaultTarget`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ._kinds import kind
from ._types import ErrorRule, FaultRule

__all__ = ["effective_rule", "fits", "merged_rule", "with_defaults"]

_EMPTY = FaultRule()
#: operations that name one record by id (`not_found_if_newer_than` looks at its age)
BY_ID = frozenset({"get", "update", "delete"})


def fits(kind_name: str, op: Any) -> bool:
    """Can a fault of this kind happen to `op`?"""
    # A `FaultTarget` (a tool without an `OperationSpec`) has no `page:`: never paged.
    return kind(kind_name).fits(op.kind, getattr(op, "page", None) is not None)


def merged_rule(faults: Mapping[str, FaultRule], service: str, operation: str) -> FaultRule:
    """The rule a call to `service.operation` sees: `default`, then `service.*`, then
    `service.operation`. Error kinds and script steps merge one by one (the more specific
    rule wins per kind and per call number); latency, rate limit, `not_found_if_newer_than`
    and `timeout_s` come from the most specific rule that sets them. Errors of kinds with a
    `timeout_s` option that set none take the merged rule-level one."""
    rules = [
        r
        for r in (
            faults.get("default"),
            faults.get(f"{service}.*"),
            faults.get(f"{service}.{operation}"),
        )
        if r is not None
    ]
    if not rules:
        return _EMPTY
    if len(rules) == 1:
        rule = rules[0]
    else:
        errors: dict[str, ErrorRule] = {}
        script: dict[int, ErrorRule] = {}
        scalars: dict[str, Any] = {}
        for r in rules:
            for e in r.errors:
                errors.pop(e.kind, None)  # keep file order of the rule that wins
                errors[e.kind] = e
            script.update(r.script)
            for name in ("latency", "rate_limit", "not_found_if_newer_than_s", "timeout_s"):
                value = getattr(r, name)
                if value is not None:
                    scalars[name] = value
        rule = FaultRule(
            errors=tuple(errors.values()),
            script=tuple(sorted(script.items())),
            loc=rules[-1].loc,
            **scalars,
        )
    if rule.timeout_s is not None:
        rule = _fill_timeouts(rule)
    return rule


def _fill_timeouts(rule: FaultRule) -> FaultRule:
    def fill(e: ErrorRule) -> ErrorRule:
        if e.timeout_s is None and kind(e.kind).option("timeout_s") is not None:
            return msgspec.structs.replace(e, timeout_s=rule.timeout_s)
        return e

    return msgspec.structs.replace(
        rule,
        errors=tuple(fill(e) for e in rule.errors),
        script=tuple((k, fill(e)) for k, e in rule.script),
    )


def with_defaults(rule: FaultRule) -> FaultRule:
    """`rule` with each error's and script step's unset options set to the kind's default:
    what a decision uses; the only place those defaults are applied."""

    def fill(e: ErrorRule) -> ErrorRule:
        changes = {
            o.name: o.default
            for o in kind(e.kind).options
            if o.default is not None and getattr(e, o.name) is None
        }
        return msgspec.structs.replace(e, **changes) if changes else e

    errors = tuple(fill(e) for e in rule.errors)
    script = tuple((k, fill(e)) for k, e in rule.script)
    if errors == rule.errors and script == rule.script:
        return rule
    return msgspec.structs.replace(rule, errors=errors, script=script)


def drawn_rule(rules: Mapping[str, FaultRule], op: Any) -> FaultRule:
    """The merged rule of `op`, defaults written out, in the order merging left it."""
    return with_defaults(merged_rule(rules, op.service, op.name))


def effective_rule(rules: Mapping[str, FaultRule], op: Any) -> FaultRule:
    """The faults that can happen to `op` under `rules`, in the merged rule's order, with
    every default the plan applies written out (`timeout_s`, `retry_after_s`, `lag_s`,
    `times`): what `faultbench check` shows.

    It is the rule the plan draws from (`FaultPlan.rule_for`) minus what cannot happen to
    this kind of operation, by the same tests `decide` applies: error kinds and script steps
    that do not fit it (`FaultKind.applies_to`), and `not_found_if_newer_than` except on get,
    update and delete. A `default:` rule's `stale_read: 0.1` on an update is no fault at all;
    its share of the draw runs the call normally, so the other kinds keep their probabilities.
    """
    rule = drawn_rule(rules, op)
    errors = tuple(e for e in rule.errors if fits(e.kind, op))
    script = tuple((k, e) for k, e in rule.script if fits(e.kind, op))
    threshold = rule.not_found_if_newer_than_s if op.kind in BY_ID else None
    if (errors, script, threshold) == (rule.errors, rule.script, rule.not_found_if_newer_than_s):
        return rule
    return msgspec.structs.replace(
        rule, errors=errors, script=script, not_found_if_newer_than_s=threshold
    )
