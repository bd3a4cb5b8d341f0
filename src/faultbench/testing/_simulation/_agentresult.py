"""`AgentResult` and `TraceBuilder`: what one agent run produced, in the shape Attest's
simulation runtime passes around (`AgentResult(trace=builder.build())`).

A `TraceBuilder` records the steps of a run (tool calls, model calls, retrievals), its input,
output and usage (`set_metadata(total_tokens=, cost_usd=, latency_ms=, model=)`);
`build()` freezes them into an `AgentTrace`. `add_tool_call(name, args)` without a `result`
calls the tool `name` of the current world when it has one (a mock tool of `scenario`'s
`mock_tools`, of a `MockToolRegistry` in a `with` block, or any tool of the world): the
call is logged, faulted and traced like any other and its value becomes the step's result.
A failed call is recorded with its error and raised, as the mock's own exception would be.

`AgentResult.of(value)` reads what an agent function returned (an `AgentResult`, a string,
a framework's run result with `output` and its usage, an integration's `AgentRun` with its
world calls and error) into one; `expect(result)` asserts on
it (`_expect.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from faultbench.kernel import CallResult, InjectedFault, ToolCallError, Trace, current_world

__all__ = ["AgentResult", "AgentTrace", "Step", "TraceBuilder"]

StepType = Literal["tool_call", "llm_call", "retrieval"]


@dataclass(frozen=True)
class Step:
    """One step of a run: a tool call (`type="tool_call"`), a model call or a retrieval."""

    type: StepType
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    #: what the agent read instead of a result, for a call that failed
    error: str | None = None
    metadata: dict[str, Any] | None = None
    #: the world call that answered it (`CallResult.call_id`), for a tool of a world
    call_id: str | None = None


@dataclass(frozen=True)
class AgentTrace:
    """A finished run's record (`TraceBuilder.build()`)."""

    agent_id: str | None = None
    input: dict[str, Any] | None = None
    output: dict[str, Any] | None = None
    steps: tuple[Step, ...] = ()
    total_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    model: str | None = None

    @property
    def tool_calls(self) -> list[Step]:
        return [s for s in self.steps if s.type == "tool_call"]


class TraceBuilder:
    """Builds an `AgentTrace` step by step; every method returns the builder."""

    def __init__(self, agent_id: str | None = None):
        self.agent_id = agent_id
        self._input: dict[str, Any] | None = None
        self._output: dict[str, Any] | None = None
        self._steps: list[Step] = []
        self._usage: dict[str, Any] = {}

    def set_input(self, **fields: Any) -> TraceBuilder:
        self._input = dict(fields)
        return self

    def set_output(self, **fields: Any) -> TraceBuilder:
        """The run's answer, e.g. `set_output(message="Refund processed.")`."""
        self._output = dict(fields)
        return self

    def set_metadata(
        self,
        total_tokens: int | None = None,
        cost_usd: float | None = None,
        latency_ms: float | None = None,
        model: str | None = None,
    ) -> TraceBuilder:
        """Usage of the run: what `expect(...).tokens_under/cost_under/latency_under` read."""
        for key, value in (
            ("total_tokens", total_tokens),
            ("cost_usd", cost_usd),
            ("latency_ms", latency_ms),
        ):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float) or value < 0
            ):
                raise ValueError(f"Expected {key} >= 0 (a number). Instead, received: {value!r}")
        updates: dict[str, Any] = {
            "total_tokens": total_tokens,
            "cost_usd": cost_usd,
            "latency_ms": latency_ms,
            "model": model,
        }
        self._usage.update({k: v for k, v in updates.items() if v is not None})
        return self

    def add_tool_call(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        result: Any = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> TraceBuilder:
        """Record a tool call. Without `result`, the current world's tool `name` (a mock
        tool) answers it; a failed call is recorded, then raised (`InjectedError` for
        `fault_inject`'s default fault, else `InjectedFault` or `ToolCallError`)."""
        args = dict(args or {})
        meta = dict(metadata) if metadata is not None else None
        world = current_world()
        if result is not None or world is None or not _has_tool(world, name):
            self._steps.append(Step("tool_call", name, args, result, metadata=meta))
            return self
        answer = world.call(name, args)
        if answer.ok:
            self._steps.append(
                Step("tool_call", name, args, answer.value, metadata=meta, call_id=answer.call_id)
            )
            return self
        self._steps.append(
            Step("tool_call", name, args, error=answer.text, metadata=meta, call_id=answer.call_id)
        )
        raise call_error(answer)

    def add_llm_call(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        result: Any = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> TraceBuilder:
        """Record a model call (each is one model turn: `expect(...).turns_under(n)`)."""
        return self._add("llm_call", name, args, result, metadata)

    def add_retrieval(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        result: Any = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> TraceBuilder:
        return self._add("retrieval", name, args, result, metadata)

    def _add(
        self,
        kind: StepType,
        name: str,
        args: Mapping[str, Any] | None,
        result: Any,
        metadata: Mapping[str, Any] | None,
    ) -> TraceBuilder:
        meta = dict(metadata) if metadata is not None else None
        self._steps.append(Step(kind, name, dict(args or {}), result, metadata=meta))
        return self

    def build(self) -> AgentTrace:
        return AgentTrace(
            agent_id=self.agent_id,
            input=self._input,
            output=self._output,
            steps=tuple(self._steps),
            **self._usage,
        )


def _has_tool(world: Any, name: str) -> bool:
    try:
        world.tool(name)
    except LookupError:
        return False
    return True


def call_error(answer: CallResult) -> ToolCallError:
    """The exception a failed world call stands for, as its tool would have raised it."""
    from ._inject import InjectedError

    text = answer.text
    if answer.fault == InjectedError.kind and text.startswith("Injected fault in "):
        return InjectedError(text)
    if answer.fault is not None:
        return InjectedFault(text, kind=answer.fault)
    return ToolCallError(text, kind=answer.error_kind)


@dataclass
class AgentResult:
    """One agent run (one turn of a `scenario`): its trace, whether it passed, and why not.

    `output` is the answer as text; `tools` the tools called, in order; `cost_usd`,
    `total_tokens`, `latency_ms` the usage the trace recorded (None if unknown); `turns` the
    model calls made (`add_llm_call`), at least 1 for a run that answered."""

    trace: AgentTrace = field(default_factory=AgentTrace)
    passed: bool = True
    #: why the run failed: what it raised (an injected fault, a failed `expect`, ...)
    error: BaseException | None = None
    #: the turn of its scenario (0-based), or None outside one
    turn: int | None = None
    #: what the agent function returned, when it was not an AgentResult itself
    value: Any = None

    @property
    def output(self) -> str:
        out = self.trace.output
        if not out:
            return ""
        if "message" in out:
            return str(out["message"])
        return " ".join(str(v) for v in out.values())

    @property
    def tools(self) -> list[str]:
        return [s.name for s in self.trace.tool_calls]

    @property
    def cost_usd(self) -> float | None:
        return self.trace.cost_usd

    @property
    def total_tokens(self) -> int | None:
        return self.trace.total_tokens

    @property
    def latency_ms(self) -> float | None:
        return self.trace.latency_ms

    @property
    def turns(self) -> int:
        model_calls = sum(1 for s in self.trace.steps if s.type == "llm_call")
        return model_calls or (1 if self.trace.output else 0)

    @classmethod
    def of(
        cls,
        value: Any,
        *,
        turn: int | None = None,
        calls: Sequence[CallResult] = (),
    ) -> AgentResult:
        """`value` (what an agent returned) as an AgentResult. `calls`: the world calls the
        run made, recorded as its tool steps when `value` brings no trace of its own."""
        if isinstance(value, AgentResult):
            if turn is not None and value.turn is None:
                value.turn = turn
            return value
        if isinstance(value, AgentTrace):
            return cls(value, turn=turn)
        world_trace = getattr(value, "trace", None)
        if isinstance(world_trace, Trace) and not calls:  # an integration's AgentRun
            calls = world_trace.calls
        steps = tuple(
            Step(
                "tool_call",
                c.tool,
                dict(c.args),
                c.value if c.ok else None,
                error=None if c.ok else c.text,
                call_id=c.call_id,
            )
            for c in calls
        )
        text, usage = _read_run(value)
        trace = AgentTrace(output={"message": text} if text is not None else None, steps=steps)
        if usage:
            trace = AgentTrace(**{**trace.__dict__, **usage})
        passed = value if isinstance(value, bool) else _passed_attr(value)
        error = getattr(value, "error", None)
        if isinstance(error, BaseException):  # a failed AgentRun says what ended it
            return cls(trace, passed=False, error=error, turn=turn, value=value)
        return cls(trace, passed=passed, turn=turn, value=value)


def _passed_attr(value: Any) -> bool:
    verdict = getattr(value, "passed", None)
    if verdict is not None and not callable(verdict):
        return bool(verdict)
    return True


def _read_run(value: Any) -> tuple[str | None, dict[str, Any]]:
    """(answer text, usage) of a string, a framework's run result, or anything else."""
    if value is None or isinstance(value, bool):
        return None, {}
    if isinstance(value, str):
        return value, {}
    text: str | None = None
    for attr in ("output", "final_output"):  # Pydantic AI, OpenAI Agents SDK
        out = getattr(value, attr, None)
        if out is not None:
            text = str(out)
            break
    usage: dict[str, Any] = {}
    tokens = _total_tokens(value)
    if tokens is None:  # an integration's AgentRun: its framework's result
        tokens = _total_tokens(getattr(value, "result", None))
    if tokens is not None:
        usage["total_tokens"] = tokens
    if text is None:
        text = str(value)
    return text, usage


def _total_tokens(result: Any) -> int | None:
    """The tokens a framework's run result used: Pydantic AI's `usage()`, the Agents SDK's
    `context_wrapper.usage`."""
    if result is None:
        return None
    read = getattr(result, "usage", None)
    if read is None:
        read = getattr(getattr(result, "context_wrapper", None), "usage", None)
    # a usage object (Pydantic AI 2's `usage` property), else a method returning one
    info = read() if callable(read) and not hasattr(read, "total_tokens") else read
    tokens = getattr(info, "total_tokens", None)
    if isinstance(tokens, int) and not isinstance(tokens, bool):
        return tokens
    return None
