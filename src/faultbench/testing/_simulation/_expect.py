"""`expect(result)`: a chain of assertions over one agent run, checked as it is written.

Each link checks at once and returns the chain, so the first link that does not hold raises
`AssertionError` naming the link, what it expected and what the run did::

    expect(result).output_not_contains("error").cost_under(0.05)
    # AssertionError: expect(result).output_not_contains('error'): Expected the output not
    # to contain 'error'. Instead, received: 'internal error while searching'

`result` is an `AgentResult`, a `ScenarioResult` (its turns together: the last turn's
output, every turn's tools, usage summed, `turns` = its turns), or anything an agent returns
(read by `AgentResult.of`). Usage that the run did not record fails its link: a budget that
cannot be checked is not met.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from faultbench.kernel import Trace, World, current_world

from ._agentresult import AgentResult, AgentTrace

__all__ = ["Expectation", "expect"]


def expect(result: Any) -> Expectation:
    """Start a chain of assertions on `result` (see the module's docstring)."""
    return Expectation(result)


class Expectation:
    """The chain `expect(result)` returns; every method asserts, then returns the chain."""

    def __init__(self, result: Any):
        self._view = _view(result)
        self.result = result

    # --- the answer ------------------------------------------------------------------------

    def output_contains(self, text: str, *, case_sensitive: bool = True) -> Expectation:
        out = self._view.output
        ok = text in out if case_sensitive else text.lower() in out.lower()
        return self._check(
            ok, f"output_contains({text!r})", f"the output to contain {text!r}", repr(out)
        )

    def output_not_contains(self, text: str, *, case_sensitive: bool = True) -> Expectation:
        out = self._view.output
        found = text in out if case_sensitive else text.lower() in out.lower()
        return self._check(
            not found,
            f"output_not_contains({text!r})",
            f"the output not to contain {text!r}",
            repr(out),
        )

    def output_matches(self, pattern: str | re.Pattern[str]) -> Expectation:
        """The output matches the regular expression `pattern` somewhere (`re.search`)."""
        out = self._view.output
        ok = re.search(pattern, out) is not None
        shown = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
        return self._check(
            ok, f"output_matches({shown!r})", f"output matching /{shown}/", repr(out)
        )

    output_matches_regex = output_matches  # Attest's name

    # --- tools -------------------------------------------------------------------------------

    def tools_called(self, *names: str | Iterable[str]) -> Expectation:
        """Every tool in `names` was called at least once."""
        wanted = _names(names)
        called = self._view.tools
        missing = [n for n in wanted if n not in called]
        return self._tools_check(
            "tools_called",
            wanted,
            not missing,
            f"calls to {', '.join(wanted)} (missing: {', '.join(missing)})",
            called,
        )

    required_tools = tools_called  # Attest's name

    def tools_not_called(self, *names: str | Iterable[str]) -> Expectation:
        """No tool in `names` was called."""
        banned = _names(names)
        called = self._view.tools
        hit = [n for n in banned if n in called]
        return self._tools_check(
            "tools_not_called",
            banned,
            not hit,
            f"no call to {', '.join(banned)} (called: {', '.join(hit)})",
            called,
        )

    forbidden_tools = tools_not_called  # Attest's name

    def tools_called_in_order(self, *names: str | Iterable[str]) -> Expectation:
        """The tools in `names` were called in this order (other calls may come between)."""
        wanted = _names(names)
        called = self._view.tools
        it = iter(called)
        ok = all(any(c == n for c in it) for n in wanted)
        return self._check(
            ok,
            f"tools_called_in_order({', '.join(map(repr, wanted))})",
            f"calls in the order {' → '.join(wanted)}",
            _calls(called),
        )

    # --- policies and expectations -------------------------------------------------------------

    def keeps(self, checks: Any) -> Expectation:
        """The run's world calls keep `checks`: a `Policy`, a `Checks` or their mapping
        (`{"never": ["delete_customer"]}`, docs/CHECKS.md). Takes a `ScenarioResult` (its
        user turns confirm for `requires_confirmation`), a `World` or a `Trace`; any other
        result is graded on the current world's trace."""
        trace, turns = _world_trace(self.result)
        grade = trace.grade(checks, turns=turns)
        shown = "; ".join(v.message for v in grade.violations)
        return self._check(grade.ok, "keeps(...)", "the run to keep its checks", shown)

    # --- budgets -----------------------------------------------------------------------------

    def cost_under(self, usd: float) -> Expectation:
        return self._budget("cost_under", usd, self._view.cost_usd, "cost", "$", "cost_usd")

    def tokens_under(self, tokens: int) -> Expectation:
        return self._budget(
            "tokens_under", tokens, self._view.total_tokens, "tokens", "", "total_tokens"
        )

    def latency_under(self, ms: float) -> Expectation:
        return self._budget("latency_under", ms, self._view.latency_ms, "latency", "", "latency_ms")

    def turns_under(self, turns: int) -> Expectation:
        got = self._view.turns
        return self._check(
            got < turns, f"turns_under({turns})", f"fewer than {turns} turns", f"{got} turns"
        )

    # --- plumbing ----------------------------------------------------------------------------

    def _budget(
        self, link: str, limit: float, got: float | None, what: str, unit: str, field: str
    ) -> Expectation:
        if isinstance(limit, bool) or not isinstance(limit, int | float):
            raise TypeError(f"Expected {link}(a number). Instead, received: {limit!r}")
        suffix = " ms" if field == "latency_ms" else ""
        if got is None:
            return self._check(
                False,
                f"{link}({limit!r})",
                f"{what} under {unit}{limit}{suffix}",
                f"no {what} recorded (TraceBuilder.set_metadata({field}=...))",
            )
        return self._check(
            got < limit,
            f"{link}({limit!r})",
            f"{what} under {unit}{limit}{suffix}",
            f"{unit}{got}{suffix}",
        )

    def _tools_check(
        self, link: str, names: list[str], ok: bool, expected: str, called: list[str]
    ) -> Expectation:
        return self._check(ok, f"{link}({', '.join(map(repr, names))})", expected, _calls(called))

    def _check(self, ok: bool, link: str, expected: str, received: str) -> Expectation:
        if not ok:
            raise AssertionError(
                f"expect(result).{link}: Expected {expected}. Instead, received: {received}"
            )
        return self

    def __repr__(self) -> str:
        return f"<expect({self._view!r})>"


def _world_trace(result: Any) -> tuple[Trace, list[tuple[int, str]] | None]:
    """The trace to grade a result on, and the user's turns when it is a conversation."""
    if isinstance(result, Trace):
        return result, None
    if isinstance(result, World):
        return result.trace, None
    world = getattr(result, "world", None)
    turns = getattr(result, "turns", None)
    if isinstance(world, World):
        said: list[tuple[int, str]] | None = None
        if isinstance(turns, list):
            said, before = [], 0
            for t in turns:
                said.append((before, str(getattr(t, "user", ""))))
                before += len(getattr(t, "tool_calls", ()))
        return world.trace, said
    current = current_world()
    if current is None:
        raise TypeError(
            "Expected a ScenarioResult, a World or a Trace to check a policy on (or a current "
            f"world). Instead, received: {type(result).__name__}"
        )
    return current.trace, None


def _names(names: tuple[str | Iterable[str], ...]) -> list[str]:
    out: list[str] = []
    for n in names:
        if isinstance(n, str):
            out.append(n)
        else:
            out.extend(n)
    if not out:
        raise ValueError("Expected at least one tool name.")
    return out


def _calls(called: list[str]) -> str:
    return "[" + ", ".join(called) + "]" if called else "[no tool calls]"


def _view(result: Any) -> AgentResult:
    """The run to assert on; a scenario's turns are taken together."""
    results = getattr(result, "results", None)
    if isinstance(results, list) and results and all(isinstance(r, AgentResult) for r in results):
        return _together(results)
    return AgentResult.of(result)


def _together(results: list[AgentResult]) -> AgentResult:
    def total(field: str) -> Any:
        values = [getattr(r.trace, field) for r in results]
        return None if any(v is None for v in values) else sum(values)

    last = results[-1].trace
    trace = AgentTrace(
        agent_id=last.agent_id,
        output=last.output,
        steps=tuple(s for r in results for s in r.trace.steps),
        total_tokens=total("total_tokens"),
        cost_usd=total("cost_usd"),
        latency_ms=total("latency_ms"),
        model=last.model,
    )
    return _Turns(trace, len(results))


class _Turns(AgentResult):
    """A scenario's turns seen as one run: `turns` is the number of turns."""

    def __init__(self, trace: AgentTrace, turns: int):
        super().__init__(trace)
        self._count = turns

    @property
    def turns(self) -> int:
        return self._count
