"""smolagents agents against a faultbench world (`pip install 'faultbench[smolagents]'`).

```python
from faultbench.integrations.smolagents import run_agent

run = await run_agent(InferenceClientModel(), "Refund order 7", mcp=build_server(world))
run.output, run.trace.summary()
```

The agent is a `ToolCallingAgent` with the world's tools loaded by mcpadapt, smolagents' own
MCP client. Facts about smolagents 1.26 and mcpadapt 0.1 this module relies on (checked in
their source):

- mcpadapt imports names that only mcp 1.x has (`streamablehttp_client`): with mcp 2.x it
  fails, so this extra installs faultbench beside mcp 1.x (docs/ARCHITECTURE.md).
- mcpadapt connects by stdio (`StdioServerParameters`) or by URL
  (`{"url": ..., "transport": "streamable-http"}`), never to a session or server object, so a
  `WorldServer` is served over HTTP from a thread for the run (`serve_in_thread`): the world
  is still the one in this process.
- **mcpadapt drops `isError`**: `SmolAgentsAdapter` returns an error's text as the tool's
  answer, exactly as it returns a success, so the agent reads "504 Gateway Timeout: ..." as an
  observation and cannot tell it from data. `ErrorMarkingAdapter` (the default here,
  `error_marker=True`) wraps each tool through mcpadapt's public `ToolAdapter.adapt` hook and
  raises `MCPToolError` for an `isError` result, which smolagents reports to the model the
  way it reports any failing tool: an `Error:` step naming the tool and the error's text.
- `ToolCallingAgent.run` is synchronous (mcpadapt runs its own event loop in a thread); the
  run goes to a worker thread so that `run_agent` can be awaited like the other integrations.
  After `max_steps` steps the agent asks the model for a final answer and records
  `AgentMaxStepsError`: `run_agent` reports that as a failed run.
- Any exception from the model's `generate` ends the run (`AgentGenerationError`, raised from
  `run`); there is no provider-neutral model error: each `Model` raises its client's (openai's,
  huggingface_hub's, litellm's), and `ApiModel`'s own retry of rate limits sits around its
  client call, inside the model. A model answer without tool calls goes to the model's
  `parse_tool_calls`, and one that yields none is an error step (`AgentParsingError`) the
  model reads at its next step.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import dataclasses
import itertools
import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ._modelfaults import ERROR_KINDS, cut, drop_required, model_world, unparsable
from ._run import (
    AgentRun,
    Http,
    InProcess,
    Target,
    agent_helper,
    missing_extra,
    observe,
    target,
)
from ._script import History, Policy, Reply, ToolCall, seen_result

try:
    from mcp import StdioServerParameters
    from mcpadapt.core import MCPAdapt
    from mcpadapt.smolagents_adapter import SmolAgentsAdapter
    from smolagents import ToolCallingAgent
    from smolagents.memory import ActionStep
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        MessageRole,
        Model,
    )
    from smolagents.monitoring import LogLevel, TokenUsage
    from smolagents.utils import AgentGenerationError, AgentMaxStepsError
except ImportError as error:  # pragma: no cover - exercised in a fresh interpreter
    raise missing_extra("smolagents", error) from error

from faultbench.kernel import World
from faultbench.kernel.lowlevel import ModelFault
from faultbench.serve import WorldServer, serve_in_thread

__all__ = [
    "MAX_STEPS",
    "ErrorMarkingAdapter",
    "FaultyModel",
    "MCPToolError",
    "ModelHTTPError",
    "ModelTimeoutError",
    "ScriptedModel",
    "load_tools",
    "run_agent",
    "scripted_model",
]

#: `run_agent`'s default `max_steps`: agent steps before the run fails (`AgentMaxStepsError`).
MAX_STEPS = 20


class MCPToolError(RuntimeError):
    """An MCP tool answered with `isError`; the message is the tool's error text."""


class ErrorMarkingAdapter(SmolAgentsAdapter):
    """mcpadapt's smolagents adapter, with two faults of it mended through its public
    `adapt` hook:

    - a tool result flagged `isError` raises `MCPToolError` instead of being returned as if
      it were data;
    - optional arguments stay optional: mcpadapt hands smolagents the schema's `properties`
      without its `required` list, and smolagents then refuses any call that leaves one out
      ("Argument currency is required"); each argument the schema does not require is marked
      `nullable`, which is how smolagents spells optional.
    """

    def adapt(self, func: Callable[[dict[str, Any] | None], Any], mcp_tool: Any) -> Any:
        def call(arguments: dict[str, Any] | None) -> Any:
            result = func(arguments)
            if result.isError:
                text = "".join(getattr(c, "text", "") for c in result.content)
                raise MCPToolError(text or "the tool reported an error without text")
            return result

        return super().adapt(call, _optional_nullable(mcp_tool))


def _optional_nullable(mcp_tool: Any) -> Any:
    schema = dict(mcp_tool.inputSchema)
    required = set(schema.get("required", ()))
    schema["properties"] = {
        name: _smol_input(prop, optional=name not in required)
        for name, prop in schema.get("properties", {}).items()
    }
    return mcp_tool.model_copy(update={"inputSchema": schema})


def _smol_input(prop: dict[str, Any], *, optional: bool) -> dict[str, Any]:
    """One argument as smolagents reads it: a nullable value (`anyOf` [schema, null], as
    faultbench and the MCP SDK write it) as its schema marked `nullable` (mcpadapt would
    call an `anyOf` a string), an optional one `nullable` too."""
    branches = prop.get("anyOf")
    if isinstance(branches, list) and {"type": "null"} in branches:
        inner = [b for b in branches if b != {"type": "null"}]
        if len(inner) == 1 and isinstance(inner[0], dict):
            rest = {k: v for k, v in prop.items() if k != "anyOf"}
            prop = {**inner[0], **rest, "nullable": True}
    return {**prop, "nullable": True} if optional else prop


def _server_parameters(where: Target) -> Any:
    if isinstance(where, Http):
        params: dict[str, Any] = {"url": where.url, "transport": "streamable-http"}
        if where.headers:
            params["headers"] = where.headers
        return params
    assert not isinstance(where, InProcess)
    command, *args = where.argv
    return StdioServerParameters(command=command, args=args)


@contextlib.contextmanager
def _tools(where: Target, *, error_marker: bool) -> Iterator[list[Any]]:
    adapter = ErrorMarkingAdapter() if error_marker else SmolAgentsAdapter()
    if isinstance(where, InProcess):
        with (
            serve_in_thread(where.server()) as url,
            MCPAdapt(_server_parameters(Http(url)), adapter) as tools,
        ):
            yield tools
        return
    with MCPAdapt(_server_parameters(where), adapter) as tools:
        yield tools


@contextlib.contextmanager
def load_tools(
    mcp: World | WorldServer | str | Sequence[str], *, error_marker: bool = True
) -> Iterator[list[Any]]:
    """The world's tools as smolagents tools, connected for the block (a `WorldServer` is
    served over HTTP from a thread meanwhile): `with load_tools(server) as tools:
    ToolCallingAgent(tools=tools, model=model)`. `error_marker=False`: mcpadapt's own adapter,
    which hands an error's text to the agent as if it were data."""
    with _tools(target(mcp), error_marker=error_marker) as tools:
        yield tools


@agent_helper
async def run_agent(
    model: Any,
    prompt: str,
    *,
    mcp: World | WorldServer | str | Sequence[str],
    system_prompt: str | None = None,
    max_steps: int = MAX_STEPS,
    error_marker: bool = True,
    model_faults_world: World | None = None,
    **agent_kwargs: Any,
) -> AgentRun:
    """Run a smolagents `ToolCallingAgent` once with the world's tools; return its result and
    the trace.

    `model` is a smolagents `Model` (`InferenceClientModel()`, `scripted_model(policy)`...);
    `system_prompt` becomes the agent's `instructions`; `agent_kwargs` go to
    `ToolCallingAgent`. `run.result` is smolagents' `RunResult`, `run.output` the final
    answer. A run that reaches `max_steps` is returned as a failed run (`run.ok` False,
    `run.error` the `AgentMaxStepsError`); so is one that a model error ends (`run.error` the
    `AgentGenerationError`, the model's error as its `__cause__`). When the world's fault
    rules have a `model:` key, the model is wrapped in `FaultyModel` (an in-process world;
    otherwise pass the run's world as `model_faults_world=`).
    """

    def run(where: Target) -> Any:
        with _tools(where, error_marker=error_marker) as tools:
            agent = ToolCallingAgent(
                tools=tools,
                model=model,
                instructions=system_prompt,
                max_steps=max_steps,
                verbosity_level=agent_kwargs.pop("verbosity_level", LogLevel.OFF),
                **agent_kwargs,
            )
            result = agent.run(prompt, return_full_result=True)
            errors = [
                step.error
                for step in agent.memory.steps
                if isinstance(step, ActionStep) and isinstance(step.error, AgentMaxStepsError)
            ]
            return result, errors[-1] if errors and result.state != "success" else None

    async with observe(target(mcp)) as seen:
        world = model_world(seen.target, model_faults_world)
        if world is not None and not isinstance(model, FaultyModel):
            model = FaultyModel(model, world)
        try:
            result, failed = await asyncio.to_thread(run, seen.target)
        except AgentGenerationError as error:
            result, failed = None, error
    return seen.finish(result, None if result is None else result.output, failed)


# --- model faults ---------------------------------------------------------------------------


class ModelHTTPError(RuntimeError):
    """A model API's HTTP error (429, 500, 503), with what a provider's carries: `status_code`
    and, for a 429, `retry_after` (seconds)."""

    def __init__(self, message: str, status_code: int, retry_after: float | None = None):
        super().__init__(f"Error code: {status_code} - {message}")
        self.status_code = status_code
        self.retry_after = retry_after


class ModelTimeoutError(TimeoutError):
    """A model API request that timed out."""


class FaultyModel(Model):  # type: ignore[misc]  # smolagents ships no type information
    """A smolagents `Model` whose calls meet the world's model faults (docs/FAULTS.md, "Model
    faults").

    Each `generate` asks `world.model_call()` first: an error kind raises `ModelHTTPError`
    (429 with `retry_after`, 500, 503) or `ModelTimeoutError` (smolagents has no error types
    of its own for a model API, and ends the run on any: `AgentGenerationError`); an answer
    kind breaks the wrapped model's real answer. The usage of each answer (its
    `token_usage`) is logged (`world.model_used`). No `generate_stream`: an agent with
    `stream_outputs=True` refuses the wrapper.
    """

    def __init__(self, wrapped: Model, world: World):
        self.label = getattr(wrapped, "model_id", None) or type(wrapped).__name__
        super().__init__(model_id=self.label)
        self.wrapped = wrapped
        self.world = world

    def generate(
        self,
        messages: list[ChatMessage],
        stop_sequences: list[str] | None = None,
        response_format: dict[str, str] | None = None,
        tools_to_call_from: list[Any] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        fault = self.world.model_call(self.label)
        if fault.kind in ERROR_KINDS:
            raise _error(fault)
        message = self.wrapped.generate(
            messages,
            stop_sequences=stop_sequences,
            response_format=response_format,
            tools_to_call_from=tools_to_call_from,
            **kwargs,
        )
        usage = message.token_usage
        read, wrote = (usage.input_tokens, usage.output_tokens) if usage is not None else (0, 0)
        self.world.model_used(fault.k, read, wrote, self.label)
        return _broken(message, fault, tools_to_call_from or [])

    def parse_tool_calls(self, message: ChatMessage) -> ChatMessage:
        return self.wrapped.parse_tool_calls(message)


def _error(fault: ModelFault) -> Exception:
    if fault.kind == "timeout":
        return ModelTimeoutError(fault.message)
    return ModelHTTPError(fault.message, fault.status or 500, fault.retry_after_s)


def _schema(tools: list[Any], name: str) -> dict[str, Any]:
    """A smolagents tool's inputs as the JSON Schema `drop_required` reads: required are the
    inputs not marked `nullable`."""
    tool = next((t for t in tools if getattr(t, "name", None) == name), None)
    inputs = getattr(tool, "inputs", None) or {}
    return {"required": [n for n, spec in inputs.items() if not spec.get("nullable")]}


def _with_args(call: Any, arguments: Any) -> Any:
    function = dataclasses.replace(call.function, arguments=arguments)
    return dataclasses.replace(call, function=function)


def _broken(message: ChatMessage, fault: ModelFault, tools: list[Any]) -> ChatMessage:
    calls = list(message.tool_calls or [])
    if fault.kind == "empty_completion":
        return dataclasses.replace(message, content="", tool_calls=None)
    if fault.kind == "stream_cut":
        # The stream ends in the middle of its last part: a tool call comes after the text.
        if calls:
            last = calls[-1]
            args = last.function.arguments
            text = args if isinstance(args, str) else json.dumps(args)
            calls[-1] = _with_args(last, cut(text))
            return dataclasses.replace(message, tool_calls=calls)
        return dataclasses.replace(message, content=cut(_text(message)))
    if fault.kind == "malformed_tool_call" and calls:
        first = calls[0]
        args = first.function.arguments
        if fault.how == "missing_field":
            broken: Any = drop_required(args, _schema(tools, first.function.name))
        else:
            broken = unparsable(args)
        calls[0] = _with_args(first, broken)
        return dataclasses.replace(message, tool_calls=calls)
    return message


# --- scripted agents --------------------------------------------------------------------------

_CALLING = "Calling tools:\n"
_OBSERVATION = "Observation:\n"
_ERROR = "Error:\n"
_RETRY = "\nNow let's retry:"


def _text(message: ChatMessage) -> str:
    content = message.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content if block.get("type") == "text")


_FAILED_CALL = re.compile(
    r"Error executing tool '(?P<tool>[^']+)' with arguments (?P<args>\{.*?\}): "
    r"(?P<kind>\w+): (?P<text>.*?)(?:\nPlease try again or use another tool)?$",
    re.DOTALL,
)


def _failed_call(text: str) -> tuple[str, dict[str, Any], str] | None:
    """(tool, arguments, the tool's error text) from smolagents' "Error:" step for a tool that
    raised. Such a step records no tool call of its own: the error's text names it."""
    body = text.split(_ERROR, 1)[1].split(_RETRY, 1)[0]
    found = _FAILED_CALL.search(body)
    if found is None:
        return None
    try:
        args = ast.literal_eval(found["args"])
    except (ValueError, SyntaxError):
        return None
    return found["tool"], dict(args), found["text"]


def _history(messages: Sequence[ChatMessage]) -> History:
    """The tool calls so far and their results, oldest first, from the messages smolagents
    sends its model: a "Calling tools:" message (a Python repr of the calls) followed by an
    "Observation:" (the answer), or an "Error:" naming a tool that raised (`MCPToolError`)."""
    seen = History()
    pending: list[tuple[str, dict[str, Any]]] = []
    for message in messages:
        text = _text(message)
        if message.role == MessageRole.USER and not seen.prompt:
            # smolagents heads the task with "New task:"
            seen.prompt = text.split("New task:", 1)[-1].strip()
        elif message.role == MessageRole.TOOL_CALL and text.startswith(_CALLING):
            calls = ast.literal_eval(text[len(_CALLING) :])
            pending = [
                (c["function"]["name"], dict(c["function"]["arguments"] or {})) for c in calls
            ]
        elif (
            message.role == MessageRole.TOOL_RESPONSE and text.startswith(_OBSERVATION) and pending
        ):
            tool, args = pending.pop(0)
            # failed=None: without the marker an error arrives as an observation too, and only
            # its text (not JSON) tells it apart
            seen.append(seen_result(tool, args, text[len(_OBSERVATION) :], failed=None))
        elif message.role == MessageRole.TOOL_RESPONSE and _ERROR in text:
            failed = _failed_call(text)
            if failed is not None:
                tool, args, error = failed
                seen.append(seen_result(tool, args, error, failed=True))
    return seen


class ScriptedModel(Model):  # type: ignore[misc]  # smolagents ships no type information
    """A smolagents `Model` that plays a policy: one tool call per step, and the final reply as
    a call of smolagents' `final_answer` tool."""

    def __init__(self, policy: Policy, **kwargs: Any):
        super().__init__(model_id="faultbench-scripted", **kwargs)
        self.policy = policy
        self._ids = itertools.count(1)

    def generate(
        self,
        messages: list[ChatMessage],
        stop_sequences: list[str] | None = None,
        response_format: dict[str, str] | None = None,
        tools_to_call_from: list[Any] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        step = self.policy(_history(messages))
        if isinstance(step, Reply):
            if tools_to_call_from is None:  # asked for a final answer in plain text
                return ChatMessage(
                    role=MessageRole.ASSISTANT,
                    content=step.text,
                    token_usage=_usage(messages, step.text),
                )
            name, args = "final_answer", {"answer": step.text}
        else:
            assert isinstance(step, ToolCall), f"a policy returns ToolCall or Reply, not {step!r}"
            name, args = step.tool, dict(step.args)
        call = ChatMessageToolCall(
            function=ChatMessageToolCallFunction(name=name, arguments=args),
            id=f"call_{next(self._ids)}",
            type="function",
        )
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content="",
            tool_calls=[call],
            token_usage=_usage(messages, json.dumps(args)),
        )


def _usage(messages: Sequence[ChatMessage], wrote: str) -> TokenUsage:
    """Usage as a provider reports it, counted in words: what was read, what was written."""
    read = sum(len(_text(m).split()) for m in messages)
    return TokenUsage(input_tokens=read, output_tokens=len(wrote.split()))


def scripted_model(policy: Policy) -> ScriptedModel:
    """A smolagents model that plays `policy` (see `faultbench.integrations.Seen`)."""
    return ScriptedModel(policy)
