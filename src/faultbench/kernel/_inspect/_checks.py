"""Assertions on a trace: the checks tests of tool-using agents write again and again.

`Trace` inherits them (`world.trace.required_tools("get_order")`). Each one raises
`AssertionError` whose message says what was expected, what the agent did (the call line of
`Trace.summary`) and then the whole numbered trace, so a failing test reads on its own.
Each returns the trace, so checks chain; `tool_call_count` returns the count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._calls import CallResult

__all__ = ["TraceChecks"]


def _names(tools: Iterable[str | Sequence[str]]) -> list[str]:
    """`("a", "b")` or `(["a", "b"],)` (as Attest's checks take them) -> ["a", "b"]."""
    out: list[str] = []
    for t in tools:
        if isinstance(t, str):
            out.append(t)
        else:
            out.extend(t)
    for name in out:
        if not isinstance(name, str):
            raise TypeError(f"Expected tool names (str). Instead, received: {name!r}")
    return out


class TraceChecks:
    """Mixin of `Trace`: assertions over `self.calls`."""

    __slots__ = ()

    # provided by Trace
    @property
    def calls(self) -> list[CallResult]:
        raise NotImplementedError

    def summary(self, sep: str = " → ") -> str:
        raise NotImplementedError

    def _fail(self, expected: str, instead: str) -> AssertionError:
        line = self.summary() or "no calls"
        return AssertionError(f"Expected {expected}. Instead, {instead}.\nCalls: {line}\n{self}")

    def tools_called_in_order(self, *tools: str | Sequence[str]) -> Any:
        """The tools were called in this order, other calls allowed in between (a tool
        named twice must be called twice)."""
        wanted = _names(tools)
        called = [c.tool for c in self.calls]
        i = 0
        for tool in called:
            if i < len(wanted) and tool == wanted[i]:
                i += 1
        if i < len(wanted):
            done = " → ".join(wanted[:i]) or "nothing"
            raise self._fail(
                f"calls in the order {' → '.join(wanted)}",
                f"after {done} there was no call to {wanted[i]}",
            )
        return self

    def required_tools(self, *tools: str | Sequence[str]) -> Any:
        """Each of these tools was called at least once."""
        called = {c.tool for c in self.calls}
        missing = [t for t in _names(tools) if t not in called]
        if missing:
            raise self._fail(
                f"calls to {', '.join(_names(tools))}", f"{', '.join(missing)} never called"
            )
        return self

    def forbidden_tools(self, *tools: str | Sequence[str]) -> Any:
        """None of these tools was called."""
        counts: dict[str, int] = {}
        for c in self.calls:
            counts[c.tool] = counts.get(c.tool, 0) + 1
        hit = [f"{t} ({counts[t]}x)" for t in _names(tools) if t in counts]
        if hit:
            raise self._fail(
                f"no call to {', '.join(_names(tools))}", f"the agent called {', '.join(hit)}"
            )
        return self

    def no_tool_loops(self, tool: str, max_repetitions: int = 1) -> Any:
        """`tool` was never called more than `max_repetitions` times in a row (a retry loop:
        calls to other tools in between break a run)."""
        if isinstance(max_repetitions, bool) or not isinstance(max_repetitions, int):
            raise TypeError(
                f"Expected max_repetitions: int. Instead, received: {max_repetitions!r}"
            )
        longest = run = 0
        at = start = 0
        for i, c in enumerate(self.calls):
            run = run + 1 if c.tool == tool else 0
            if run == 1:
                start = i
            if run > longest:
                longest, at = run, start
        if longest > max_repetitions:
            raise self._fail(
                f"at most {max_repetitions} call(s) in a row to {tool}",
                f"{longest} in a row from call {at + 1}",
            )
        return self

    def tool_call_count(
        self,
        tool: str | None = None,
        *,
        exactly: int | None = None,
        at_least: int | None = None,
        at_most: int | None = None,
    ) -> int:
        """How many calls (to `tool`, if given) there were; with `exactly`, `at_least` or
        `at_most`, also checks the count."""
        n = sum(1 for c in self.calls if tool is None or c.tool == tool)
        what = f"calls to {tool}" if tool is not None else "calls"
        for bound, ok, words in (
            (exactly, exactly is None or n == exactly, "exactly"),
            (at_least, at_least is None or n >= at_least, "at least"),
            (at_most, at_most is None or n <= at_most, "at most"),
        ):
            if not ok:
                raise self._fail(f"{words} {bound} {what}", f"there were {n}")
        return n
