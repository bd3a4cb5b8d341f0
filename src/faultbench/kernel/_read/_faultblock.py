"""The `faults:` block: parsing, validation and rendering of fault rules.

Rules are keyed by `default`, `service.*` or `service.operation` and stored as written; a call
sees `_faults/_rules.merged_rule(...)`, the fold of the three keys from general to specific.
What each error kind accepts (options, `commit:`, the operations it fits) comes from the
fault-kind registry (`_faults/_kinds.py`). Public entry points are re-exported by `_reader.py`
(`parse_faults`, `parse_duration`, and `render_faults`, which turns parsed rules back into a
block `parse_faults` accepts).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from .._errors import Location
from .._faults import (
    CHANGES,
    ERROR_KINDS,
    ERROR_OPTIONS,
    FEED_KINDS,
    MODEL_KEY,
    SURFACE_KINDS,
    TEMPLATES,
    ErrorRule,
    FaultRule,
    Latency,
    RateLimit,
    kinds_with_option,
    merged_rule,
)
from .._faults import kind as fault_kind
from .._text import did_you_mean, one_of, short_repr
from ._durations import MAX_DURATION_S, parse_duration, render_duration
from ._modelblock import parse_model_rule
from ._yaml import Document

RULE_KEYS = ("latency_ms", "errors", "rate_limit", "not_found_if_newer_than", "script", "timeout_s")
#: the longest injection text (`inject`'s `payload`) a rule may carry
MAX_PAYLOAD = 10_000
#: the most a whole-number option (`times`: extra applications of a `duplicate` write) may
#: be; each one is an event, so keep it small
MAX_TIMES = 100

# ---------------------------------------------------------------------------------------------
# Parsing one faults block
# ---------------------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_ms(value: Any) -> bool:
    """A latency in milliseconds: finite, from 0 to the longest duration."""
    return _is_number(value) and 0 <= value <= MAX_DURATION_S * 1000


class _RuleParser:
    """Parses the rules of one `faults:` mapping, recording problems into `doc`."""

    def __init__(
        self,
        doc: Document,
        services: Mapping[str, Sequence[str]],
        op_kinds: Mapping[str, str] | None = None,
        tool_args: Mapping[str, Sequence[str]] | None = None,
        paged: Collection[str] = (),
    ):
        self.doc = doc
        self.services = services
        #: tool name -> its argument names, to check what the tool-surface kinds name
        self.tool_args = tool_args or {}
        #: the key of the rule being parsed (`service.operation`, `service.*`, `default`)
        self.target = ""
        #: "service.operation" -> operation kind, to reject kinds that cannot happen to it
        self.op_kinds = op_kinds or {}
        #: the "service.operation" lists with `page:`, the only ones page kinds happen to
        self.paged = paged
        self.keys = ["default", MODEL_KEY]
        for svc, ops in services.items():
            self.keys.append(f"{svc}.*")
            self.keys.extend(f"{svc}.{op}" for op in ops)

    def key_problem(self, container: Any, key: Any, message: str) -> None:
        self.doc.problem(self.doc.key_at(container, key), message)

    def value_problem(self, container: Any, key: Any, message: str) -> None:
        self.doc.problem(self.doc.value_at(container, key), message)

    # -- the block ------------------------------------------------------------------------------

    def parse_block(self, block: Any, parent: Any, key: Any) -> dict[str, FaultRule]:
        if block is None:
            return {}
        if not isinstance(block, dict):
            self.value_problem(
                parent, key,
                f"faults must be a mapping of rules, not {_kind(block)}; expected e.g. "
                "'faults: {default: {latency_ms: [50, 200]}}'",
            )  # fmt: skip
            return {}
        rules: dict[str, FaultRule] = {}
        for target, body in block.items():
            if target == MODEL_KEY:  # the agent's model API, not a tool (`_modelblock.py`)
                model = parse_model_rule(self, block, body)
                if model is not None:
                    rules[target] = model
                continue
            if not self.check_target(block, target):
                continue
            rule = self.parse_rule(block, target, body)
            if rule is not None:
                rules[target] = rule
        return rules

    def check_target(self, block: dict[str, Any], target: Any) -> bool:
        if target in self.keys:
            return True
        if not isinstance(target, str):  # only from Python objects: YAML keys are text
            self.key_problem(
                block, target,
                f"fault key {short_repr(target)} is not text; expected default, service.* or "
                "service.operation",
            )  # fmt: skip
            return False
        svc, dot, op = target.partition(".")
        hint = did_you_mean(target, self.keys)
        if not dot:
            owner = next((s for s, ops in self.services.items() if target in ops), None)
            if owner is not None:
                hint = f"; did you mean '{owner}.{target}'?"
            elif target in self.services:
                hint = f"; did you mean '{target}.*'?"
            self.key_problem(
                block, target,
                f"unknown fault target '{target}'; expected default, model, service.* or "
                f"service.operation{hint}",
            )  # fmt: skip
        elif svc not in self.services:
            self.key_problem(
                block, target,
                f"fault key '{target}' names an unknown service '{svc}'; expected one of "
                f"{one_of(self.services)}{hint}",
            )  # fmt: skip
        else:
            owner = next((s for s, ops in self.services.items() if op in ops), None)
            if owner is not None and not hint:
                hint = f"; did you mean '{owner}.{op}'?"
            self.key_problem(
                block, target,
                f"fault key '{target}' names an unknown operation '{op}' of service "
                f"'{svc}'; expected "
                + (f"one of {one_of(self.services[svc])}" if self.services[svc] else
                   f"an operation, but '{svc}' has none")
                + hint,
            )  # fmt: skip
        return False

    # -- one rule ------------------------------------------------------------------------------

    def parse_rule(self, block: dict[str, Any], target: str, body: Any) -> FaultRule | None:
        self.target = target
        line, col = self.doc.key_at(block, target)
        loc = Location(self.doc.path, line, col)
        if body is None:
            return FaultRule(loc=loc)
        if not isinstance(body, dict):
            self.value_problem(
                block, target,
                f"the rule for {target} must be a mapping, not {_kind(body)}; expected e.g. "
                "'{errors: {timeout: 0.1}}'",
            )  # fmt: skip
            return None
        before = len(self.doc.problems)
        fields: dict[str, Any] = {"loc": loc}
        for key, value in body.items():
            if key == "latency_ms":
                fields["latency"] = self.latency(body, key, value)
            elif key == "errors":
                fields["errors"] = self.errors(body, key, value, fields)
            elif key == "rate_limit":
                fields["rate_limit"] = self.rate_limit(body, key, value)
            elif key == "not_found_if_newer_than":
                fields["not_found_if_newer_than_s"] = self.duration(body, key, value)
            elif key == "script":
                fields["script"] = self.script(body, key, value)
            elif key == "timeout_s":
                fields["timeout_s"] = self.duration(body, key, value)
            elif key in ERROR_KINDS:
                self.key_problem(
                    body, key,
                    f"'{key}' is an error kind; expected it under errors:, e.g. "
                    f"'errors: {{{key}: {value if _is_number(value) else 0.1}}}'",
                )  # fmt: skip
            else:
                self.key_problem(
                    body, key,
                    f"unknown fault rule key '{key}'; expected one of {one_of(RULE_KEYS)}"
                    f"{did_you_mean(key, RULE_KEYS)}",
                )  # fmt: skip
        if self.op_kinds.get(target) == "webhooks":
            for key in body:
                if key not in ("errors", "script"):
                    self.key_problem(
                        body, key,
                        f"'{key}' does not apply to {target}, the webhook deliveries; expected "
                        "errors: or script: with the feed kinds (a delivery's time is its "
                        "event's, and its retries follow webhooks: backoff)",
                    )  # fmt: skip
        if len(self.doc.problems) > before:
            return None
        rule = FaultRule(**{k: v for k, v in fields.items() if v is not None})
        if not self.kinds_fit(target, body, rule):
            return None
        total = sum(e.p for e in rule.errors)
        if total > 1 + 1e-9:
            parts = " + ".join(f"{e.kind} {e.p:g}" for e in rule.errors)
            self.doc.problem(
                (line, col),
                f"error probabilities under {target} add up to {_num(total)} ({parts}); "
                "expected at most 1 in total; lower some of them",
            )
            return None
        return rule

    def kinds_fit(self, target: str, body: dict[str, Any], rule: FaultRule) -> bool:
        """A rule keyed by one operation may not name a kind that can never happen to it
        (`duplicate` on a read, `stale_read` on a write): it would be silently ignored."""
        op_kind = self.op_kinds.get(target)
        if op_kind is None:
            return True
        ok = True
        steps = [(e, body["errors"], e.kind, self.key_problem) for e in rule.errors]
        script = body.get("script") or {}
        for n, e in rule.script:
            key = next(k for k in script if not isinstance(k, bool) and int(k) == n)
            steps.append((e, script, key, self.value_problem))
        paged = target in self.paged
        for e, container, key, report in steps:
            spec = fault_kind(e.kind)
            if spec.fits(op_kind, paged) and (op_kind != "webhooks" or e.kind in FEED_KINDS):
                continue
            ok = False
            if op_kind == "webhooks":
                report(
                    container, key,
                    f"{e.kind} cannot happen to {target}, the webhook deliveries; expected one "
                    f"of {one_of(FEED_KINDS)}",
                )  # fmt: skip
                continue
            if spec.fits(op_kind):  # a page kind on a list that answers everything at once
                op = target.split(".", 1)[1]
                report(
                    container, key,
                    f"{e.kind} cannot happen to {target}, a list without `page:`: it answers "
                    f"every record at once, so there is no page to break; give {op} pages "
                    f"(`page: {{style: cursor}}` or `page: {{style: offset}}` in its "
                    "operation) or remove it",
                )  # fmt: skip
                continue
            fits = one_of(spec.applies_to or ())
            report(
                container, key,
                f"{e.kind} cannot happen to {target}, a {op_kind} operation; expected it "
                f"only on {fits} operations; remove it (a default: or service.* rule may "
                "name it: the operations it does not fit skip it)",
            )  # fmt: skip
        return ok

    def latency(self, body: dict[str, Any], key: str, value: Any) -> Latency | None:
        if _is_ms(value):
            return Latency("fixed", lo_ms=float(value), hi_ms=float(value))
        if isinstance(value, list) and len(value) == 2 and all(_is_ms(v) for v in value):
            lo, hi = float(value[0]), float(value[1])
            if lo <= hi:
                return Latency("uniform", lo_ms=lo, hi_ms=hi)
            self.value_problem(
                body, key, f"latency_ms [{value[0]}, {value[1]}] has lo > hi; expected [lo, hi]"
            )
            return None
        if self.unknown_options(value, ("p50", "p99"), "latency_ms"):
            return None
        if isinstance(value, dict) and set(value) == {"p50", "p99"}:
            p50, p99 = value["p50"], value["p99"]
            if _is_ms(p50) and _is_ms(p99) and 0 < p50 <= p99:
                return Latency("lognormal", p50_ms=float(p50), p99_ms=float(p99))
            self.value_problem(
                body,
                key,
                f"invalid latency_ms {_show(value)}; expected numbers of milliseconds with "
                "0 < p50 <= p99, e.g. {p50: 80, p99: 900}",
            )
            return None
        self.value_problem(
            body, key,
            f"invalid latency_ms {_show(value)}; expected [lo, hi] in milliseconds "
            "(uniform), a number (fixed) or {p50: ms, p99: ms}",
        )  # fmt: skip
        return None

    def errors(
        self, body: dict[str, Any], key: str, value: Any, fields: dict[str, Any]
    ) -> tuple[ErrorRule, ...]:
        if not isinstance(value, dict):
            self.value_problem(
                body, key,
                f"errors must map error kinds to probabilities, not {_kind(value)}; expected "
                "e.g. '{timeout: 0.1, http_500: 0.02}'",
            )  # fmt: skip
            return ()
        found: list[ErrorRule] = []
        for kind, spec in value.items():
            if kind == "not_found_if_newer_than":  # faultbench 0.1 wrote it here
                fields["not_found_if_newer_than_s"] = self.duration(value, kind, spec)
                continue
            if kind not in ERROR_KINDS:
                self.key_problem(
                    value, kind,
                    f"unknown error kind '{kind}'; expected one of {one_of(ERROR_KINDS)}"
                    f"{did_you_mean(kind, ERROR_KINDS)}",
                )  # fmt: skip
                continue
            rule = self.error_rule(value, kind, kind, spec, need_p=True)
            if rule is not None:
                found.append(rule)
        return tuple(found)

    def error_rule(
        self, parent: Any, key: Any, kind: str, spec: Any, *, need_p: bool
    ) -> ErrorRule | None:
        if not isinstance(spec, dict):
            if need_p and _is_number(spec) and 0 <= spec <= 1:
                return ErrorRule(kind, float(spec))
            if not need_p and spec is None:
                return ErrorRule(kind, 1.0)
            self.value_problem(
                parent, key,
                f"invalid probability {_show(spec)} for {kind}; expected a number from 0 to 1 "
                f"or a mapping such as {{p: 0.1, commit: true}}",
            )  # fmt: skip
            return None
        allowed = ERROR_OPTIONS if need_p else ("kind", *ERROR_OPTIONS[1:])
        options: dict[str, Any] = {}
        for opt, v in spec.items():
            if opt == "p" and not need_p:
                self.key_problem(
                    spec, opt,
                    f"a script step has no probability: the call always gets {kind}; "
                    "expected no 'p' here; remove it, or move the kind under errors:",
                )  # fmt: skip
            elif opt not in allowed:
                self.key_problem(
                    spec, opt,
                    f"unknown option '{opt}' for {kind}; expected one of {one_of(allowed)}"
                    f"{did_you_mean(opt, allowed)}",
                )  # fmt: skip
            elif opt == "kind":
                continue
            elif opt != "p" and kind not in kinds_with_option(opt):
                self.key_problem(
                    spec, opt,
                    f"'{opt}' does not apply to {kind}; expected it only with "
                    f"{one_of(kinds_with_option(opt))}",
                )  # fmt: skip
            elif opt == "p":
                if _is_number(v) and 0 <= v <= 1:
                    options["p"] = float(v)
                else:
                    self.value_problem(
                        spec, opt, f"invalid probability {_show(v)}; expected a number from 0 to 1"
                    )
            elif opt == "commit":
                if isinstance(v, bool):
                    options["commit"] = v
                else:
                    self.value_problem(spec, opt, f"commit must be true or false, not {_show(v)}")
            elif (option := fault_kind(kind).option(opt)) is not None and option.text:
                text_problem = _text_option(opt, v)
                if text_problem is None:
                    options[opt] = v
                else:
                    self.value_problem(spec, opt, text_problem)
            elif (option := fault_kind(kind).option(opt)) is not None and option.whole:
                if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_TIMES:
                    options[opt] = v
                else:
                    self.value_problem(
                        spec, opt,
                        f"{opt} must be a whole number from 1 to {MAX_TIMES}, not {_show(v)}",
                    )  # fmt: skip
            else:
                options[opt] = self.duration(spec, opt, v)
        if need_p and "p" not in options and "p" not in spec:
            self.doc.problem(
                self.doc.key_at(parent, key),
                f"{kind} needs a probability; expected e.g. {{p: 0.1, ...}}",
            )
            return None
        if kind in SURFACE_KINDS and not self.surface_options(kind, spec, options):
            return None
        return ErrorRule(kind, options.pop("p", 1.0), **options)

    def surface_options(self, kind: str, spec: dict[str, Any], options: dict[str, Any]) -> bool:
        """The tools and arguments a tool-surface kind names exist (or, for `tool_added`'s
        new tool, do not yet); False after reporting a problem."""
        tools = list(self.tool_args)
        tool = options.get("tool")
        if tool is not None and kind == "tool_added" and tool in self.tool_args:
            self.value_problem(
                spec, "tool",
                f"tool_added adds a new tool, and '{tool}' is already one; expected a new "
                f"name such as '{tool}_v2'",
            )  # fmt: skip
            return False
        if tool is not None and kind != "tool_added" and tool not in self.tool_args:
            self.value_problem(
                spec, "tool",
                f"unknown tool '{tool}' for {kind}; expected one of {one_of(tools)}"
                f"{did_you_mean(tool, tools)}",
            )  # fmt: skip
            return False
        if kind != "renamed_args" or ("arg" not in options and "to" not in options):
            return True
        owner = tool or self.target.partition(".")[2]
        if owner not in self.tool_args:
            key = "arg" if "arg" in options else "to"
            self.key_problem(
                spec, key,
                f"renamed_args names an argument, but the rule under {self.target} is not "
                "one tool's; expected it under service.operation, or with 'tool:' naming "
                "the tool",
            )  # fmt: skip
            return False
        names = list(self.tool_args[owner])
        arg = options.get("arg")
        if arg is not None and arg not in names:
            self.value_problem(
                spec, "arg",
                f"'{arg}' is not an argument of {owner}; expected one of {one_of(names)}"
                f"{did_you_mean(arg, names)}",
            )  # fmt: skip
            return False
        to = options.get("to")
        if to is not None and to in names:
            self.value_problem(
                spec, "to",
                f"'{to}' is already an argument of {owner}; expected a name it does not take",
            )  # fmt: skip
            return False
        return True

    def unknown_options(self, value: Any, allowed: tuple[str, ...], what: str) -> bool:
        """Report keys of `value` not in `allowed`; True if there were any."""
        if not isinstance(value, dict):
            return False
        extra = [k for k in value if k not in allowed]
        for k in extra:
            self.key_problem(
                value, k,
                f"unknown key '{k}' in {what}; expected {' and '.join(allowed)}"
                f"{did_you_mean(k, allowed)}",
            )  # fmt: skip
        return bool(extra)

    def rate_limit(self, body: dict[str, Any], key: str, value: Any) -> RateLimit | None:
        if self.unknown_options(value, ("calls", "per_seconds"), "rate_limit"):
            return None
        if isinstance(value, dict) and set(value) == {"calls", "per_seconds"}:
            calls, per = value["calls"], value["per_seconds"]
            if not (isinstance(calls, int) and not isinstance(calls, bool) and calls >= 1):
                self.value_problem(
                    value, "calls", f"calls must be a whole number >= 1, not {_show(calls)}"
                )
                return None
            seconds = self.duration(value, "per_seconds", per)
            if seconds is None:
                return None
            if seconds <= 0:
                self.value_problem(value, "per_seconds", "per_seconds must be more than 0")
                return None
            return RateLimit(calls, seconds)
        self.value_problem(
            body, key,
            f"invalid rate_limit {_show(value)}; expected {{calls: N, per_seconds: S}}, "
            "e.g. {calls: 5, per_seconds: 60}",
        )  # fmt: skip
        return None

    def script(
        self, body: dict[str, Any], key: str, value: Any
    ) -> tuple[tuple[int, ErrorRule], ...]:
        if not isinstance(value, dict):
            self.value_problem(
                body, key,
                f"script must map call numbers to faults, not {_kind(value)}; expected e.g. "
                "'{2: timeout, 5: {kind: http_500, commit: true}}'",
            )  # fmt: skip
            return ()
        steps: list[tuple[int, ErrorRule]] = []
        for k, spec in value.items():
            try:
                n = int(k)
            except (TypeError, ValueError):
                n = 0
            if isinstance(k, bool) or n < 1:
                self.key_problem(
                    value,
                    k,
                    f"script key {short_repr(k)} is not a call number; expected 1, 2, 3, ...",
                )
                continue
            kind = spec.get("kind") if isinstance(spec, dict) else spec
            if kind not in ERROR_KINDS:
                container, key = (
                    (spec, "kind") if isinstance(spec, dict) and "kind" in spec else (value, k)
                )
                self.value_problem(
                    container,
                    key,
                    f"unknown error kind {_show(kind)} in script; expected one of "
                    f"{one_of(ERROR_KINDS)}{did_you_mean(kind, ERROR_KINDS)}",
                )  # fmt: skip
                continue
            rule = (
                self.error_rule(value, k, kind, spec, need_p=False)
                if isinstance(spec, dict)
                else ErrorRule(kind, 1.0)
            )
            if rule is not None:
                steps.append((n, rule))
        return tuple(sorted(steps, key=lambda s: s[0]))

    def duration(self, parent: Any, key: Any, value: Any) -> float | None:
        try:
            return parse_duration(value)
        except ValueError as exc:
            self.value_problem(parent, key, str(exc))
            return None


# ---------------------------------------------------------------------------------------------
# Probabilities after merging
# ---------------------------------------------------------------------------------------------


def check_merged_probabilities(
    doc: Document, rules: Mapping[str, FaultRule], services: Mapping[str, Sequence[str]]
) -> None:
    """Report every group of rules whose error probabilities add up to more than 1 once
    merged (a single rule over 1 was reported while parsing)."""
    groups: dict[tuple[tuple[str, float, str], ...], list[str]] = {}
    for svc, ops in services.items():
        for op in ops:
            merged = merged_rule(rules, svc, op)
            if sum(e.p for e in merged.errors) <= 1 + 1e-9:
                continue
            sources = tuple((e.kind, e.p, _source(rules, svc, op, e.kind)) for e in merged.errors)
            if len({s[2] for s in sources}) > 1:
                groups.setdefault(sources, []).append(f"{svc}.{op}")
    for sources, ops in groups.items():
        keys = list(dict.fromkeys(s[2] for s in sources))
        where = rules[_most_specific(keys)].loc
        total = sum(s[1] for s in sources)
        parts = " + ".join(f"{kind} {p:g} ({key})" for kind, p, key in sources)
        doc.problem(
            (where.line, where.col) if where else (1, 1),
            f"error probabilities for {', '.join(ops)} add up to {_num(total)} after merging "
            f"{' and '.join(keys)}: {parts}; expected at most 1 in total; lower some of them",
        )


def _source(rules: Mapping[str, FaultRule], svc: str, op: str, kind: str) -> str:
    for key in (f"{svc}.{op}", f"{svc}.*", "default"):
        rule = rules.get(key)
        if rule is not None and any(e.kind == kind for e in rule.errors):
            return key
    return "default"


def _most_specific(keys: list[str]) -> str:
    return max(keys, key=lambda k: 0 if k == "default" else 1 if k.endswith(".*") else 2)


# ---------------------------------------------------------------------------------------------
# Rendering: rules back to the block they were parsed from
# ---------------------------------------------------------------------------------------------


def render_faults(rules: Mapping[str, FaultRule]) -> dict[str, dict[str, Any]]:
    """The `faults:` block (plain JSON-able values) that `parse_faults` reads back into
    `rules`, locations aside: what a user edits and sets again. Options left at their default
    stay out, so the block reads like one written by hand."""
    return {key: _render_rule(rule) for key, rule in rules.items()}


def _render_rule(rule: FaultRule) -> dict[str, Any]:
    body: dict[str, Any] = {}
    lat = rule.latency
    if lat is not None:
        if lat.dist == "lognormal":
            body["latency_ms"] = {"p50": _whole(lat.p50_ms), "p99": _whole(lat.p99_ms)}
        elif lat.dist == "fixed":
            body["latency_ms"] = _whole(lat.lo_ms)
        else:
            body["latency_ms"] = [_whole(lat.lo_ms), _whole(lat.hi_ms)]
    if rule.errors:
        body["errors"] = {e.kind: _render_error(e, with_p=True) for e in rule.errors}
    if rule.rate_limit is not None:
        rl = rule.rate_limit
        body["rate_limit"] = {"calls": rl.calls, "per_seconds": _whole(rl.per_seconds)}
    if rule.not_found_if_newer_than_s is not None:
        body["not_found_if_newer_than"] = render_duration(rule.not_found_if_newer_than_s)
    if rule.script:
        body["script"] = {k: _render_error(e, with_p=False) for k, e in rule.script}
    if rule.timeout_s is not None:
        body["timeout_s"] = _whole(rule.timeout_s)
    return body


def _render_error(e: ErrorRule, *, with_p: bool) -> Any:
    # A script step always happens (p is 1 and cannot be written); an error is `kind: p`.
    options = {
        opt: _whole(value) for opt in ERROR_OPTIONS[1:] if (value := getattr(e, opt)) is not None
    }
    if not options:
        return _whole(e.p) if with_p else e.kind
    return {"p": _whole(e.p), **options} if with_p else {"kind": e.kind, **options}


def _text_option(opt: str, value: Any) -> str | None:
    """Why `value` cannot be the text option `opt` (None: it can)."""
    if not isinstance(value, str) or not value:
        return f"{opt} must be text, not {_show(value)}"
    if opt == "template" and value not in TEMPLATES:
        return (
            f"unknown injection template '{value}'; expected one of {one_of(list(TEMPLATES))}, "
            f"or your own text as 'payload:'{did_you_mean(value, list(TEMPLATES))}"
        )
    if opt == "change" and value not in CHANGES:
        return (
            f"unknown change '{value}'; expected one of {one_of(CHANGES)}"
            f"{did_you_mean(value, CHANGES)}"
        )
    if len(value) > MAX_PAYLOAD:
        return f"{opt} is {len(value)} characters; expected at most {MAX_PAYLOAD}"
    return None


def _whole(value: Any) -> Any:
    """Whole floats as ints (`50`, not `50.0`): the block is for people to read and edit;
    the parser turns them back into the same floats."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


# ---------------------------------------------------------------------------------------------
# Small helpers for messages
# ---------------------------------------------------------------------------------------------


def _num(x: float) -> str:
    return f"{round(x, 6):g}"


def _show(value: Any) -> str:
    if value is None:
        return "nothing"
    return short_repr(value)


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the text {short_repr(value)}"
    return _show(value)
