"""Grading rules as data: expectations on the end state, policies over the calls, milestones.

A world file's top-level `expect_state`, `nothing_else_changes`, `policies` and `milestones`
keys (and a test's own, `@pytest.mark.checks(...)`, or a mapping given to `trace.check`)
are parsed here into frozen records, `Checks`; `_inspect/_grade.py` evaluates them against
a run's log. The language is small on purpose (docs/CHECKS.md):

    policies:
      before: {issue_refund: get_order}          # every refund after a read sharing an argument
      at_most_once: {issue_refund: [order_id]}   # one effect per order_id
      never: [delete_customer]                   # or {issue_refund: {order_id: {not_in: ["1"]}}}
      requires_confirmation: [cancel_*]          # a confirming user turn first (scenarios)
      no_retry_after: [timeout]                  # no same call again after a timeout
      max_calls: {list_orders: 5}

Tool names are glob patterns (`cancel_*`). The parser reports each mistake through a
callback with the container and key it is about, so the world-file reader places it at
`file:line:col` and the Python entry points name its path (`policies.before.issue_refund`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from fnmatch import fnmatchcase
from typing import Any, Literal, TypeVar

import msgspec

from .._text import did_you_mean, format_value, one_of, short_repr

__all__ = [
    "ArgCondition",
    "Checks",
    "Milestone",
    "Policy",
    "RecordExpectation",
    "as_checks",
    "parse_checks",
]

CHECK_KEYS = ("expect_state", "nothing_else_changes", "policies", "milestones")
RULES = (
    "before",
    "at_most_once",
    "never",
    "requires_confirmation",
    "no_retry_after",
    "max_calls",
)
CONDITION_OPS = ("eq", "ne", "in", "not_in")

_T = TypeVar("_T")

#: the problem callback: (container, key, message, at_value)
Report = Callable[[Any, Any, str, bool], None]


# ---------------------------------------------------------------------------------------------
# The rules as records: what `_inspect/_grade.py` evaluates. Tool names stay patterns here
# (matched against each call's tool), so a rule reads as it was written.
# ---------------------------------------------------------------------------------------------


class ArgCondition(msgspec.Struct, frozen=True):
    """`order_id: {not_in: ["1"]}`: a condition on one argument (or field) value."""

    name: str
    op: Literal["eq", "ne", "in", "not_in"]
    values: tuple[Any, ...]

    def holds(self, args: Mapping[str, Any]) -> bool:
        missing = self.name not in args
        value = args.get(self.name)
        if self.op == "eq":
            return not missing and _equal(value, self.values[0])
        if self.op == "ne":
            return missing or not _equal(value, self.values[0])
        inside = not missing and any(_equal(value, v) for v in self.values)
        return inside if self.op == "in" else not inside

    def __str__(self) -> str:
        if self.op == "eq":
            return f"{self.name}={format_value(self.values[0])}"
        if self.op == "ne":
            return f"{self.name}!={format_value(self.values[0])}"
        shown = ", ".join(format_value(v) for v in self.values)
        return f"{self.name} {'in' if self.op == 'in' else 'not in'} [{shown}]"


def _equal(a: Any, b: Any) -> bool:
    # `1 == True` and `1 == 1.0` are not the same value in a world's records
    return (type(a) is type(b) and a == b) or (
        isinstance(a, int | float) and isinstance(b, int | float)
        and not isinstance(a, bool) and not isinstance(b, bool) and a == b
    )  # fmt: skip


class CallPattern(msgspec.Struct, frozen=True):
    """A tool (glob) and conditions on its arguments."""

    tool: str
    when: tuple[ArgCondition, ...] = ()

    def matches(self, tool: str, args: Mapping[str, Any]) -> bool:
        return fnmatchcase(tool, self.tool) and all(c.holds(args) for c in self.when)

    def __str__(self) -> str:
        if not self.when:
            return self.tool
        return f"{self.tool} where {' and '.join(map(str, self.when))}"


class BeforeRule(msgspec.Struct, frozen=True):
    """Every call to `tool` follows a successful call to `first` that matches it: on
    `match` (later argument -> earlier argument), or, without one, sharing an argument value."""

    tool: str
    first: str
    match: tuple[tuple[str, str], ...] = ()


class OnceRule(msgspec.Struct, frozen=True):
    """At most one call to `tool` takes effect per value of the `key` arguments."""

    tool: str
    key: tuple[str, ...] = ()


class NoRetryRule(msgspec.Struct, frozen=True):
    """No call repeats (same tool, same arguments) a call that failed with one of `kinds`."""

    tool: str
    kinds: tuple[str, ...]


class Policy(msgspec.Struct, frozen=True):
    """The `policies:` block, parsed (`Policy.parse({...})` from Python)."""

    before: tuple[BeforeRule, ...] = ()
    at_most_once: tuple[OnceRule, ...] = ()
    never: tuple[CallPattern, ...] = ()
    requires_confirmation: tuple[str, ...] = ()
    no_retry_after: tuple[NoRetryRule, ...] = ()
    max_calls: tuple[tuple[str, int], ...] = ()

    @classmethod
    def parse(cls, block: Mapping[str, Any], *, tools: Collection[str] | None = None) -> Policy:
        """A `policies:` block from plain values; ValueError naming every mistake."""
        return _raise_or(lambda report: _Parser(report, tools).policy(block, "policies"))

    def __bool__(self) -> bool:
        return any(getattr(self, name) for name in RULES)


class RecordExpectation(msgspec.Struct, frozen=True):
    """One entry of `expect_state`: the records of `table` matching `where` at the end."""

    table: str
    where: tuple[ArgCondition, ...] = ()
    count: int | None = None  # exactly this many match (None: at least one)
    changed: dict[str, Any] | None = None  # they were created or changed, and have these values
    unchanged: bool = False  # they are as they were before the first call

    @property
    def allows_change(self) -> bool:
        return self.count is not None or self.changed is not None

    def __str__(self) -> str:
        where = " and ".join(map(str, self.where)) or "any"
        what = (
            "unchanged" if self.unchanged
            else f"changed to {format_value(self.changed)}" if self.changed
            else "changed" if self.changed is not None
            else f"exactly {self.count}" if self.count is not None
            else "at least one"
        )  # fmt: skip
        return f"{self.table} where {where}: {what}"


class Milestone(msgspec.Struct, frozen=True):
    """A named sub-goal: a call pattern (a successful call matching it) or a state predicate."""

    name: str
    weight: float = 1.0
    call: CallPattern | None = None
    state: RecordExpectation | None = None


class Checks(msgspec.Struct, frozen=True):
    """Everything a run is graded on besides the test's own assertions."""

    expect_state: tuple[RecordExpectation, ...] = ()
    nothing_else_changes: bool = False
    policy: Policy = Policy()
    milestones: tuple[Milestone, ...] = ()

    @classmethod
    def parse(
        cls,
        block: Mapping[str, Any],
        *,
        tools: Collection[str] | None = None,
        tables: Mapping[str, Collection[str]] | None = None,
    ) -> Checks:
        """Checks from the top-level keys as plain values; ValueError naming every mistake."""
        return _raise_or(lambda report: parse_checks(block, report, tools=tools, tables=tables))

    def __bool__(self) -> bool:
        return bool(
            self.expect_state or self.nothing_else_changes or self.policy or self.milestones
        )

    def merged(self, other: Checks) -> Checks:
        """These checks with `other`'s added: its rules join these, its expectations and
        milestones come after (a milestone of the same name replaces this one's)."""
        names = {m.name for m in other.milestones}
        policy = Policy(
            **{name: getattr(self.policy, name) + getattr(other.policy, name) for name in RULES}
        )
        return Checks(
            expect_state=self.expect_state + other.expect_state,
            nothing_else_changes=self.nothing_else_changes or other.nothing_else_changes,
            policy=policy,
            milestones=tuple(m for m in self.milestones if m.name not in names) + other.milestones,
        )


def as_checks(value: Any) -> Checks:
    """A `Checks` from a `Checks`, a `Policy`, or a mapping: the check keys of a world file
    (`{"policies": {...}, "expect_state": {...}}`) or the rules of a `policies:` block."""
    if isinstance(value, Checks):
        return value
    if isinstance(value, Policy):
        return Checks(policy=value)
    if isinstance(value, Mapping):
        if any(k in CHECK_KEYS for k in value):
            return Checks.parse(value)
        return Checks(policy=Policy.parse(value))
    raise TypeError(
        "Expected a Checks, a Policy or a mapping such as {'never': ['delete_customer']}. "
        f"Instead, received: {short_repr(value)}"
    )


def _raise_or(parse: Callable[[Report], _T]) -> _T:
    problems: list[str] = []

    def report(container: Any, key: Any, message: str, at_value: bool) -> None:
        head = f"{key}: " if isinstance(key, str) and key not in message else ""
        problems.append(head + message)

    result = parse(report)
    if problems:
        raise ValueError("; ".join(problems) if len(problems) < 2 else "\n".join(problems))
    return result


def parse_checks(
    block: Mapping[str, Any],
    report: Report,
    *,
    tools: Collection[str] | None = None,
    tables: Mapping[str, Collection[str]] | None = None,
    only_checks: bool = True,
) -> Checks:
    """The check keys of `block` (a test's own mapping; with `only_checks=False`, a world
    file's top level, whose other keys the reader checks)."""
    p = _Parser(report, tools, tables)
    for key in block if only_checks else ():
        if key not in CHECK_KEYS:
            report(block, key, f"unknown check '{key}'; expected one of {one_of(CHECK_KEYS)}"
                   f"{did_you_mean(str(key), CHECK_KEYS)}", False)  # fmt: skip
    nothing_else = block.get("nothing_else_changes", False)
    if not isinstance(nothing_else, bool):
        report(block, "nothing_else_changes",
               f"nothing_else_changes must be true or false, not {short_repr(nothing_else)}", True)  # fmt: skip
        nothing_else = False
    policy = Policy()
    if block.get("policies") is not None:
        policy = p.policy(block["policies"], "policies", block)
    expect: tuple[RecordExpectation, ...] = ()
    if block.get("expect_state") is not None:
        expect = p.expect_state(block, "expect_state")
    milestones: tuple[Milestone, ...] = ()
    if block.get("milestones") is not None:
        milestones = p.milestones(block, "milestones")
    return Checks(expect, nothing_else, policy, milestones)


# ---------------------------------------------------------------------------------------------
# The parser: each method reads one level and reports at the key or value it is about, then
# goes on, so one load reports every mistake.
# ---------------------------------------------------------------------------------------------


class _Parser:
    def __init__(
        self,
        report: Report,
        tools: Collection[str] | None,
        tables: Mapping[str, Collection[str]] | None = None,
    ):
        self.report = report
        self.tools = tools
        self.tables = tables

    def _mapping(self, parent: Any, key: Any, what: str, example: str) -> dict[Any, Any] | None:
        value = parent[key]
        if not isinstance(value, dict):
            self.report(parent, key, f"{what} must be a mapping; expected e.g. '{example}'", True)
            return None
        return value

    def _names(self, parent: Any, key: Any, what: str, example: str) -> list[str]:
        value = parent[key]
        if isinstance(value, str):
            return [value]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return list(value)
        self.report(parent, key, f"{what} must be a name or a list of names, not "
                    f"{short_repr(value)}; expected e.g. '{example}'", True)  # fmt: skip
        return []

    def tool(self, container: Any, key: Any, name: Any, rule: str, at_value: bool = False) -> bool:
        """Whether `name` is a tool pattern matching a tool of the world (always, without one)."""
        if not isinstance(name, str) or not name:
            self.report(
                container,
                key,
                f"{rule}: a tool name must be text, not {short_repr(name)}",
                at_value,
            )
            return False
        if self.tools is None or any(fnmatchcase(t, name) for t in self.tools):
            return True
        tools = sorted(self.tools)
        self.report(container, key, f"{rule}: no tool '{name}' in this world; expected one of "
                    f"{one_of(tools)} (or a pattern such as 'cancel_*'){did_you_mean(name, tools)}",
                    at_value)  # fmt: skip
        return False

    # --- policies ----------------------------------------------------------------------------

    def policy(self, block: Any, where: str, parent: Any = None) -> Policy:
        if not isinstance(block, dict):
            if parent is not None:
                self.report(parent, where, "policies must be a mapping of rules; expected e.g. "
                            "'policies: {never: [delete_customer]}'", True)  # fmt: skip
            else:
                self.report(None, where, f"Expected a mapping of rules (one of {one_of(RULES)}). "
                            f"Instead, received: {short_repr(block)}", True)  # fmt: skip
            return Policy()
        out: dict[str, list[Any]] = {name: [] for name in RULES}
        for rule in block:
            if rule not in RULES:
                self.report(block, rule, f"unknown policy rule '{rule}'; expected one of "
                            f"{one_of(RULES)}{did_you_mean(str(rule), RULES)}", False)  # fmt: skip
                continue
            getattr(self, "_" + rule)(block, rule, out[rule])
        return Policy(**{name: tuple(rules) for name, rules in out.items()})

    def _before(self, parent: Any, key: str, out: list[BeforeRule]) -> None:
        body = self._mapping(parent, key, "before", "before: {issue_refund: get_order}")
        for tool, first in (body or {}).items():
            if not self.tool(body, tool, tool, "before"):
                continue
            if isinstance(first, str):
                if self.tool(body, tool, first, "before", at_value=True):
                    out.append(BeforeRule(tool, first))
                continue
            if not isinstance(first, dict) or "tool" not in first:
                self.report(body, tool, "before: expected a tool name, or {tool: get_order, "
                            "match: {order_id: id}}, not " + short_repr(first), True)  # fmt: skip
                continue
            for k in first:
                if k not in ("tool", "match"):
                    self.report(
                        first, k, f"unknown key '{k}' in before; expected 'tool' or 'match'", False
                    )
            match = first.get("match") or {}
            if not isinstance(match, dict) or not all(
                isinstance(a, str) and isinstance(b, str) for a, b in match.items()
            ):
                self.report(first, "match", "match must map an argument of the later call to one "
                            "of the earlier call, e.g. 'match: {order_id: id}'", True)  # fmt: skip
                continue
            if self.tool(first, "tool", first["tool"], "before", at_value=True):
                out.append(BeforeRule(tool, first["tool"], tuple(match.items())))

    def _at_most_once(self, parent: Any, key: str, out: list[OnceRule]) -> None:
        value = parent[key]
        if isinstance(value, str | list):
            names = self._names(
                parent, key, "at_most_once", "at_most_once: {issue_refund: [order_id]}"
            )
            out.extend(OnceRule(t) for t in names if self.tool(parent, key, t, "at_most_once"))
            return
        body = self._mapping(
            parent, key, "at_most_once", "at_most_once: {issue_refund: [order_id]}"
        )
        for tool in body or {}:
            assert body is not None
            if not self.tool(body, tool, tool, "at_most_once"):
                continue
            keys = [] if body[tool] is None else self._names(body, tool, "at_most_once's key",
                                                             "issue_refund: [order_id]")  # fmt: skip
            out.append(OnceRule(tool, tuple(keys)))

    def _never(self, parent: Any, key: str, out: list[CallPattern]) -> None:
        value = parent[key]
        if isinstance(value, str | list):
            names = self._names(parent, key, "never", "never: [delete_customer]")
            out.extend(CallPattern(t) for t in names if self.tool(parent, key, t, "never"))
            return
        body = self._mapping(
            parent, key, "never", "never: {issue_refund: {order_id: {not_in: ['1']}}}"
        )
        for tool in body or {}:
            if self.tool(body, tool, tool, "never"):
                out.append(CallPattern(tool, self.conditions(body, tool, "never")))

    def _requires_confirmation(self, parent: Any, key: str, out: list[str]) -> None:
        names = self._names(
            parent, key, "requires_confirmation", "requires_confirmation: [cancel_*]"
        )
        out.extend(t for t in names if self.tool(parent, key, t, "requires_confirmation"))

    def _no_retry_after(self, parent: Any, key: str, out: list[NoRetryRule]) -> None:
        value = parent[key]
        example = "no_retry_after: [timeout] or {issue_refund: [timeout]}"
        if isinstance(value, str | list):
            out.append(NoRetryRule("*", tuple(self._names(parent, key, "no_retry_after", example))))
            return
        body = self._mapping(parent, key, "no_retry_after", example)
        for tool in body or {}:
            if self.tool(body, tool, tool, "no_retry_after"):
                kinds = self._names(body, tool, "no_retry_after's error kinds", example)
                out.append(NoRetryRule(tool, tuple(kinds)))

    def _max_calls(self, parent: Any, key: str, out: list[tuple[str, int]]) -> None:
        body = self._mapping(parent, key, "max_calls", "max_calls: {list_orders: 5}")
        for tool, limit in (body or {}).items():
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
                self.report(body, tool, f"max_calls: the limit must be a whole number >= 0, not "
                            f"{short_repr(limit)}; e.g. '{tool}: 5'", True)  # fmt: skip
            elif self.tool(body, tool, tool, "max_calls"):
                out.append((tool, limit))

    # --- conditions on values ------------------------------------------------------------------

    def conditions(self, parent: Any, key: Any, what: str) -> tuple[ArgCondition, ...]:
        """`{order_id: "1", amount: {in: [1, 2]}}` -> conditions (None or {} -> none)."""
        body = parent[key]
        if body is None:
            return ()
        if not isinstance(body, dict):
            self.report(parent, key, f"{what}: expected conditions on values, e.g. "
                        "'{order_id: {not_in: [\"1\"]}}', not " + short_repr(body), True)  # fmt: skip
            return ()
        out = []
        for name, cond in body.items():
            if not isinstance(name, str):
                self.report(body, name, f"{what}: a field or argument name must be text", False)
                continue
            if not isinstance(cond, dict):
                out.append(ArgCondition(name, "eq", (cond,)))
                continue
            if len(cond) != 1 or next(iter(cond)) not in CONDITION_OPS:
                self.report(body, name, f"{what}: a condition is a value or one of "
                            f"{one_of(CONDITION_OPS)}, e.g. '{name}: {{not_in: [\"1\"]}}', not "
                            f"{short_repr(cond)}", True)  # fmt: skip
                continue
            op, values = next(iter(cond.items()))
            if op in ("in", "not_in"):
                if not isinstance(values, list):
                    self.report(cond, op, f"{what}: '{op}' takes a list of values, not "
                                f"{short_repr(values)}", True)  # fmt: skip
                    continue
                out.append(ArgCondition(name, op, tuple(values)))
            else:
                out.append(ArgCondition(name, op, (values,)))
        return tuple(out)

    # --- expectations and milestones -------------------------------------------------------------

    def expect_state(self, parent: Any, key: str) -> tuple[RecordExpectation, ...]:
        body = self._mapping(parent, key, "expect_state",
                             "expect_state: {refund: [{where: {order_id: \"1\"}, count: 1}]}")  # fmt: skip
        out = []
        for table, entries in (body or {}).items():
            if not self.table(body, table):
                continue
            if isinstance(entries, dict):  # a single expectation
                one = self.record_expectation(body, table, table)
                out.extend([one] if one is not None else [])
                continue
            if not isinstance(entries, list):
                self.report(body, table, f"expect_state.{table} must be a list of expectations, "
                            "e.g. '- {where: {id: \"1\"}, unchanged: true}'", True)  # fmt: skip
                continue
            for i in range(len(entries)):
                e = self.record_expectation(entries, i, table)
                if e is not None:
                    out.append(e)
        return tuple(out)

    def table(self, container: Any, name: Any) -> bool:
        if self.tables is None or name in self.tables:
            return True
        names = sorted(self.tables)
        self.report(container, name, f"no record '{name}' in this world; expected one of "
                    f"{one_of(names)}{did_you_mean(str(name), names)}", False)  # fmt: skip
        return False

    def record_expectation(self, parent: Any, key: Any, table: str) -> RecordExpectation | None:
        entry = parent[key]
        allowed = ("where", "count", "changed", "unchanged")
        if not isinstance(entry, dict):
            self.report(parent, key, f"an expectation on {table} must be a mapping with keys "
                        f"{one_of(allowed)}, e.g. '{{where: {{id: \"1\"}}, unchanged: true}}'", True)  # fmt: skip
            return None
        for k in entry:
            if k not in allowed:
                self.report(entry, k, f"unknown key '{k}' in an expectation on {table}; expected "
                            f"one of {one_of(allowed)}{did_you_mean(str(k), allowed)}", False)  # fmt: skip
        where = (
            self.conditions(entry, "where", f"expect_state.{table}.where")
            if "where" in entry
            else ()
        )
        fields = None if self.tables is None else self.tables.get(table)
        for c in where:
            if fields is not None and c.name not in fields:
                self.report(entry, "where", f"no field '{c.name}' in record {table}; expected one "
                            f"of {one_of(sorted(fields))}{did_you_mean(c.name, fields)}", True)  # fmt: skip
        count = entry.get("count")
        if count is not None and (
            isinstance(count, bool) or not isinstance(count, int) or count < 0
        ):
            self.report(
                entry, "count", f"count must be a whole number >= 0, not {short_repr(count)}", True
            )
            count = None
        changed = entry.get("changed")
        if changed is True:
            changed = {}
        elif changed is not None and changed is not False and not isinstance(changed, dict):
            self.report(entry, "changed", "changed must be true or the values the records end "
                        "with, e.g. 'changed: {status: returned}'", True)  # fmt: skip
            changed = None
        if changed is False:
            changed = None
        unchanged = entry.get("unchanged", False)
        if not isinstance(unchanged, bool):
            self.report(entry, "unchanged", "unchanged must be true or false", True)
            unchanged = False
        if unchanged and changed is not None:
            self.report(
                entry, "unchanged", "an expectation cannot be both changed and unchanged", False
            )
        return RecordExpectation(table, where, count, changed, unchanged)

    def milestones(self, parent: Any, key: str) -> tuple[Milestone, ...]:
        example = "milestones: {refunded: {call: issue_refund, weight: 2}}"
        body = self._mapping(parent, key, "milestones", example)
        out = []
        for name, m in (body or {}).items():
            if not isinstance(m, dict):
                self.report(body, name, f"milestone '{name}' must be a mapping; expected e.g. "
                            "'{call: get_order}' or '{state: {refund: {where: {order_id: \"1\"}}}}'", True)  # fmt: skip
                continue
            allowed = ("call", "args", "state", "weight")
            for k in m:
                if k not in allowed:
                    self.report(m, k, f"unknown key '{k}' in milestone '{name}'; expected one of "
                                f"{one_of(allowed)}{did_you_mean(str(k), allowed)}", False)  # fmt: skip
            weight = m.get("weight", 1)
            if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
                self.report(
                    m, "weight", f"weight must be a number > 0, not {short_repr(weight)}", True
                )
                weight = 1
            call = state = None
            if ("call" in m) == ("state" in m):
                self.report(body, name, f"milestone '{name}' needs one of 'call' (a call "
                            "pattern) or 'state' (an expectation on records)", False)  # fmt: skip
                continue
            if "call" in m:
                if self.tool(m, "call", m["call"], f"milestone '{name}'", at_value=True):
                    conds = self.conditions(m, "args", f"milestone '{name}'") if "args" in m else ()
                    call = CallPattern(m["call"], conds)
                else:
                    continue
            else:
                st = self._mapping(m, "state", f"milestone '{name}' state",
                                   "state: {refund: {where: {order_id: \"1\"}}}")  # fmt: skip
                if not st or len(st) != 1:
                    if st is not None:
                        self.report(m, "state", "state names one record type, e.g. "
                                    "'state: {refund: {where: {order_id: \"1\"}}}'", True)  # fmt: skip
                    continue
                table = next(iter(st))
                if not self.table(st, table):
                    continue
                state = self.record_expectation(st, table, str(table))
                if state is None:
                    continue
            out.append(Milestone(str(name), float(weight), call, state))
        return tuple(out)
