"""The `model:` rule of a `faults:` block: faults between the agent and its model API.

    faults:
      model:
        latency_ms: [200, 900]
        errors: {http_429: {p: 0.1, retry_after_s: 2}, stream_cut: 0.05}
        script: {1: http_503, 3: malformed_tool_call}

It is parsed into a `FaultRule` (stored under the key `model`) like a tool rule, but against
the model kinds (`_faults/_model.py`), which take no `commit:` (nothing is written). Problems
go to the same document, with the same `file:line:col` and did-you-mean as every other key.
"""

from __future__ import annotations

from typing import Any, Protocol

from .._errors import Location
from .._faults import MODEL_KIND_NAMES, ErrorRule, FaultRule, Latency, model_kind
from .._text import did_you_mean, one_of, short_repr
from ._yaml import Document


class _RuleParser(Protocol):
    """What this module uses of the `faults:` block's parser (`_faultblock._RuleParser`)."""

    doc: Document

    def key_problem(self, container: Any, key: Any, message: str) -> None: ...
    def value_problem(self, container: Any, key: Any, message: str) -> None: ...
    def latency(self, body: dict[str, Any], key: str, value: Any) -> Latency | None: ...
    def duration(self, parent: Any, key: Any, value: Any) -> float | None: ...


MODEL_RULE_KEYS = ("latency_ms", "errors", "script", "timeout_s")


def parse_model_rule(p: _RuleParser, block: dict[str, Any], body: Any) -> FaultRule | None:
    """The rule under `model:`, or None after recording its problems."""
    line, col = p.doc.key_at(block, "model")
    loc = Location(p.doc.path, line, col)
    if body is None:
        return FaultRule(loc=loc)
    if not isinstance(body, dict):
        p.value_problem(
            block, "model",
            f"the model rule must be a mapping, not {short_repr(body)}; expected e.g. "
            "'{errors: {http_429: 0.1}, latency_ms: [200, 900]}'",
        )  # fmt: skip
        return None
    before = len(p.doc.problems)
    fields: dict[str, Any] = {"loc": loc}
    for key, value in body.items():
        if key == "latency_ms":
            fields["latency"] = p.latency(body, key, value)
        elif key == "timeout_s":
            fields["timeout_s"] = p.duration(body, key, value)
        elif key == "errors":
            fields["errors"] = _errors(p, body, value)
        elif key == "script":
            fields["script"] = _script(p, body, value)
        else:
            hint = did_you_mean(key, MODEL_RULE_KEYS) if isinstance(key, str) else ""
            p.key_problem(
                body, key,
                f"unknown key {short_repr(key)} in the model rule; expected one of "
                f"{one_of(MODEL_RULE_KEYS)}{hint}",
            )  # fmt: skip
    if len(p.doc.problems) > before:
        return None
    rule = FaultRule(**{k: v for k, v in fields.items() if v is not None})
    total = sum(e.p for e in rule.errors)
    if total > 1 + 1e-9:
        p.doc.problem(
            (line, col),
            f"model error probabilities add up to {total:g}; expected at most 1 in total; "
            "lower some of them",
        )
        return None
    return rule


def _known(p: _RuleParser, container: Any, key: Any, kind: Any, *, at_value: bool) -> bool:
    if kind in MODEL_KIND_NAMES:
        return True
    hint = did_you_mean(kind, MODEL_KIND_NAMES) if isinstance(kind, str) else ""
    report = p.value_problem if at_value else p.key_problem
    report(
        container, key,
        f"unknown model fault kind {short_repr(kind)}; expected one of "
        f"{one_of(MODEL_KIND_NAMES)}{hint}",
    )  # fmt: skip
    return False


def _errors(p: _RuleParser, body: dict[str, Any], value: Any) -> tuple[ErrorRule, ...]:
    if not isinstance(value, dict):
        p.value_problem(
            body, "errors",
            f"errors must map model fault kinds to probabilities, not {short_repr(value)}; "
            "expected e.g. '{http_429: 0.1, stream_cut: 0.02}'",
        )  # fmt: skip
        return ()
    found = []
    for kind, spec in value.items():
        if _known(p, value, kind, kind, at_value=False):
            rule = _one(p, value, kind, kind, spec, need_p=True)
            if rule is not None:
                found.append(rule)
    return tuple(found)


def _script(p: _RuleParser, body: dict[str, Any], value: Any) -> tuple[tuple[int, ErrorRule], ...]:
    if not isinstance(value, dict):
        p.value_problem(
            body, "script",
            f"script must map model call numbers to faults, not {short_repr(value)}; "
            "expected e.g. '{1: http_503, 3: {kind: http_429, retry_after_s: 5}}'",
        )  # fmt: skip
        return ()
    steps = []
    for k, spec in value.items():
        n = k if isinstance(k, int) and not isinstance(k, bool) else 0
        if isinstance(k, str) and k.isdigit():
            n = int(k)
        if n < 1:
            p.key_problem(
                value, k, f"script key {short_repr(k)} is not a call number; expected 1, 2, 3, ..."
            )
            continue
        kind: Any = spec.get("kind") if isinstance(spec, dict) else spec
        container, key = (spec, "kind") if isinstance(spec, dict) and "kind" in spec else (value, k)
        if not _known(p, container, key, kind, at_value=True):
            continue
        rule = _one(p, value, k, kind, spec, need_p=False)
        if rule is not None:
            steps.append((n, rule))
    return tuple(sorted(steps, key=lambda s: s[0]))


def _one(
    p: _RuleParser, parent: Any, key: Any, kind: str, spec: Any, *, need_p: bool
) -> ErrorRule | None:
    if not isinstance(spec, dict):
        if (
            need_p
            and isinstance(spec, int | float)
            and not isinstance(spec, bool)
            and 0 <= spec <= 1
        ):
            return ErrorRule(kind, float(spec))
        if not need_p and isinstance(spec, str):
            return ErrorRule(kind, 1.0)
        p.value_problem(
            parent, key,
            f"invalid probability {short_repr(spec)} for {kind}; expected a number from 0 to 1 "
            "or a mapping such as {p: 0.1}",
        )  # fmt: skip
        return None
    names = [o.name for o in model_kind(kind).options]
    allowed = ["p", *names] if need_p else ["kind", *names]
    options: dict[str, Any] = {}
    for opt, v in spec.items():
        if opt == "kind" and not need_p:
            continue
        if opt not in allowed:
            p.key_problem(
                spec, opt,
                f"unknown option {short_repr(opt)} for the model fault {kind}; expected "
                f"{one_of(allowed)}{did_you_mean(opt, allowed) if isinstance(opt, str) else ''}",
            )  # fmt: skip
        elif opt == "p":
            if isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 1:
                options["p"] = float(v)
            else:
                p.value_problem(
                    spec, opt, f"invalid probability {short_repr(v)}; expected a number from 0 to 1"
                )
        else:
            options[opt] = p.duration(spec, opt, v)
    if need_p and "p" not in spec:
        p.key_problem(parent, key, f"{kind} needs a probability; expected e.g. {{p: 0.1}}")
        return None
    return ErrorRule(kind, options.pop("p", 1.0), **options)
