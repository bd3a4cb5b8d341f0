"""Pydantic AI agents against a faultbench world (`pip install 'faultbench[pydantic-ai]'`).

```python
from faultbench.integrations.pydantic_ai import run_agent

run = await run_agent("openai:gpt-5-mini", "Refund order 7", mcp=world)
run.output, run.trace.summary()
```

`mcp=world` (a `World` in this process) calls the world's tools without an MCP session and
without importing the MCP SDK at all; `mcp=build_server(world)` does the same through the
server (and `transport="mcp"` opens a real MCP session on it).

Facts about pydantic-ai-slim 2.68 / fastmcp 4 this module relies on (checked in their source):

- `MCPToolset(client)` takes a URL, a fastmcp `ClientTransport` or a `fastmcp.Client`, but not
  a low-level `mcp.server.Server` such as `WorldServer` (`ValueError: Could not infer a valid
  transport`). The in-process path is therefore a `ClientTransport` of ours
  (`WorldTransport`): memory streams from `mcp.shared.memory`, the server's public
  `Server.run` in a task, and the session class fastmcp asks for; the same shape as fastmcp's
  own `FastMCPTransport`, through public names only.
- fastmcp's `StdioTransport` keeps its subprocess alive between connections unless
  `keep_alive=False`; a world served over stdio would then carry one run's writes into the next.
- A tool error becomes a retry prompt (`ToolReturnPart(outcome='retried')`); when a tool's
  retry budget is spent, the run raises `UnexpectedModelBehavior`. `run_agent` reports that as
  a failed run (`AgentRun.error`), not an exception.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from ._modelfaults import ERROR_KINDS, cut, drop_required, model_world, unparsable
from ._run import (
    AgentRun,
    InProcess,
    Target,
    Transport,
    agent_helper,
    check_transport,
    counting_model_requests,
    missing_extra,
    model_request,
    observe,
    target,
)
from ._script import History, Policy, Reply, ToolCall, seen_result

try:
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import (
        ModelAPIError,
        ModelHTTPError,
        ModelRateLimitError,
        ModelRetry,
        ModelServerError,
        ModelTimeoutError,
        ModelUnavailableError,
        UnexpectedModelBehavior,
    )
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        RetryPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.wrapper import WrapperModel
    from pydantic_ai.settings import ModelSettings
    from pydantic_ai.tools import RunContext, ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
    from pydantic_core import SchemaValidator, core_schema, from_json
except ImportError as error:  # pragma: no cover - exercised in a fresh interpreter
    raise missing_extra("pydantic-ai", error) from error


import msgspec.json as msgspec_json

from faultbench.kernel import World
from faultbench.kernel.lowlevel import ModelFault
from faultbench.serve import WorldCalls

if TYPE_CHECKING:
    from faultbench.serve import WorldServer

    from ._pydantic_ai_mcp import WorldTransport


def __getattr__(name: str) -> Any:
    """`WorldTransport` (a fastmcp transport) on first use: fastmcp is imported only by who
    needs an MCP session."""
    if name == "WorldTransport":
        from ._pydantic_ai_mcp import WorldTransport

        return WorldTransport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FaultyModel",
    "WorldToolset",
    "WorldTransport",
    "run_agent",
    "scripted_model",
    "toolset",
]


def _toolset_for(
    where: Target, transport: Transport = "direct", **kwargs: Any
) -> AbstractToolset[Any]:
    if isinstance(where, InProcess) and check_transport(transport) == "direct":
        return WorldToolset(where.calls, **kwargs)
    # an MCP session: mcp, fastmcp and Pydantic AI's MCP client, imported only now (~1 s)
    from ._pydantic_ai_mcp import mcp_toolset

    return mcp_toolset(where, **kwargs)


def toolset(
    mcp: World | WorldServer | str | Sequence[str],
    *,
    transport: Transport = "direct",
    **kwargs: Any,
) -> AbstractToolset[Any]:
    """A toolset whose tools are the world's: pass it to your own `Agent(toolsets=[...])`.

    `mcp`: a `World` or a `WorldServer` (in-process), an http(s) URL, or a stdio command; a
    stdio server is started for each connection and stopped after it (`keep_alive=False`), so
    no state leaks from one run into the next. In-process, the toolset is a `WorldToolset`
    (the direct path, no MCP session; a `World` does not even import mcp) unless
    `transport="mcp"`, which gives an `MCPToolset` over an in-process MCP session (on a
    `World`, a `WorldServer` made for it); a URL or a command always gives an `MCPToolset`.
    `kwargs` go to the toolset (`max_retries=`, ...).
    """
    return _toolset_for(target(mcp), transport, **kwargs)


@agent_helper
async def run_agent(
    model: Any,
    prompt: str,
    *,
    mcp: World | WorldServer | str | Sequence[str],
    system_prompt: str | None = None,
    model_faults_world: World | None = None,
    transport: Transport = "direct",
    **agent_kwargs: Any,
) -> AgentRun:
    """Run a Pydantic AI agent once with the world's tools; return its result and the trace.

    A `World` or a `WorldServer` in this process is called directly (`WorldToolset`: no MCP
    session, what the agent sees is the same; a `World` imports no MCP SDK at all) unless
    `transport="mcp"`; a URL or a command is an MCP server.

    When the world's fault rules have a `model:` key, the model is wrapped in `FaultyModel`
    so that its calls meet the world's model faults (an in-process world; for a stdio or HTTP
    server, pass the run's world as `model_faults_world=`).

    `model` is anything `Agent` accepts ("openai:gpt-5-mini", a `FunctionModel`...);
    `agent_kwargs` go to `Agent` (`retries=`, `output_type=`...). A run that ends in
    `UnexpectedModelBehavior` (a tool's retry budget spent, or a model that misbehaves) is
    returned as a failed run: `run.ok` is False and `run.error` holds the exception; so is
    one that ends in a model API error (`ModelAPIError`: a 429, a 5xx, a timeout).
    """
    async with observe(target(mcp)) as seen:
        world = model_world(seen.target, model_faults_world)
        if world is not None and not isinstance(model, FaultyModel):
            model = FaultyModel(model, world)
        if model is not None:  # None: Agent says it needs one
            counting_model_requests()
            model = _CountedModel(model)
        agent: Agent[Any, Any] = Agent(
            model,
            system_prompt=system_prompt or (),
            toolsets=[_toolset_for(seen.target, transport)],
            **agent_kwargs,
        )
        try:
            result = await agent.run(prompt)
        except (UnexpectedModelBehavior, ModelAPIError) as error:
            failed: Exception | None = error
            result = None
        else:
            failed = None
    return seen.finish(result, None if result is None else result.output, failed)


# --- the direct in-process path ---------------------------------------------------------------

#: what `MCPToolset` validates a tool's arguments with: a JSON object, the server checks it
_ARGS = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))


class WorldToolset(AbstractToolset[Any]):
    """The tools of a world in this process, called without an MCP session.

    The agent sees what an `MCPToolset` over an in-process session shows it: the same tool
    definitions (name, description, schema, MCP annotations in `metadata`), the same values
    (a result's structured content, `{"result": ...}` unwrapped, else its text, parsed when it
    is JSON), and a tool error as the same `ModelRetry` text. `tests/integrations/
    test_direct.py` compares both paths message by message and event log by event log.
    Calls go through the handler every MCP call goes through (`WorldCalls.call_direct`; a
    `WorldServer` is a `WorldCalls`): faults, tokens, error texts and after-call hooks are the
    server's. What is skipped is the session: memory streams, JSON-RPC framing and model
    validation of every message; and with a bare world's `WorldCalls(world)`, the MCP SDK.
    """

    def __init__(
        self,
        calls: World | WorldCalls,
        *,
        max_retries: int | None = None,
        cache_tools: bool = True,
    ):
        #: the world's tools and their handler (a `WorldServer`, or `WorldCalls(world)`)
        self.calls = calls if isinstance(calls, WorldCalls) else WorldCalls(calls)
        self.max_retries = max_retries
        #: as `MCPToolset.cache_tools`: list the tools once per `async with` (the default), or
        #: at every step, which is how an agent sees a run's tool-surface faults
        self.cache_tools = cache_tools
        self._tools: list[tuple[str, ToolDefinition]] | None = None

    @property
    def id(self) -> str | None:
        return None

    @property
    def label(self) -> str:
        return f"WorldToolset({self.calls.world.name!r})"

    async def __aexit__(self, *args: Any) -> bool | None:
        self._tools = None  # MCPToolset forgets its list with its session
        return await super().__aexit__(*args)

    def _definitions(self) -> list[tuple[str, ToolDefinition]]:
        # MCPToolset keeps the first list it gets: a tool-surface fault's tools/list_changed
        # does not reach it at protocol 2026-07-28 (docs/FAULTS.md), so the default keeps it too.
        if self._tools is None or not self.cache_tools:
            self._tools = [(tool["name"], _definition(tool)) for tool in self.calls.tools_wire()]
        return self._tools

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        retries = self.max_retries if self.max_retries is not None else ctx.max_retries
        return {
            name: ToolsetTool(
                toolset=self, tool_def=definition, max_retries=retries, args_validator=_ARGS
            )
            for name, definition in self._definitions()
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        out = await self.calls.call_direct(name, tool_args)
        self.calls.check_output(name, out)  # as the SDK's client session does
        if out.get("isError"):
            text = ToolReturnPart(tool_name=name, content=_value(out))
            raise ModelRetry(text.model_response_str(wrap_if_error=False) or _no_text(name))
        return _value(out)


#: the fields of the MCP SDK's `ToolAnnotations` (1.x and 2.x), which `MCPToolset` dumps whole
_ANNOTATION_FIELDS = dict.fromkeys(
    ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
)


def _definition(wire: dict[str, Any]) -> ToolDefinition:
    """A tool (`tools/list`'s wire form) as `MCPToolset.get_tools` defines it from the SDK's
    `Tool`, whose annotations it dumps with every field (`test_direct.py` compares both). The
    schema is a copy, as a session's is: the wire form holds the world's own (compiled once
    per world file), which a toolset that edits definitions in place must not reach."""
    given = wire.get("annotations")
    annotations = None if given is None else {**_ANNOTATION_FIELDS, **given}
    return ToolDefinition(
        name=wire["name"],
        description=wire.get("description"),
        parameters_json_schema=from_json(msgspec_json.encode(wire["inputSchema"])),
        metadata={"meta": None, "annotations": annotations, "task": False},
    )


def _value(out: dict[str, Any]) -> Any:
    """What the model gets of a result: structured content if every part is text (always,
    here), with a lone `result` key unwrapped; else each text part, parsed if it is JSON. A
    copy through JSON, as a session gives: the agent never holds the world's own objects."""
    structured = out.get("structuredContent")
    if structured is not None:
        structured = from_json(msgspec_json.encode(structured))
        if isinstance(structured, dict) and len(structured) == 1 and "result" in structured:
            return structured["result"]
        return structured
    texts = [_text(part["text"]) for part in out["content"]]
    return texts[0] if len(texts) == 1 else texts


def _text(text: str) -> Any:
    if text.startswith(("[", "{")):
        try:
            return from_json(text)
        except ValueError:
            pass
    return text


def _no_text(name: str) -> str:
    return f"Tool {name!r} returned an error"


# --- model faults ---------------------------------------------------------------------------


class FaultyModel(WrapperModel):
    """A model whose requests meet the world's model faults (docs/FAULTS.md, "Model faults").

    Each request asks `world.model_call()` first: an error kind raises the error Pydantic AI's
    own provider models raise (`ModelHTTPError` of the rate-limit, server or unavailable
    category, `ModelTimeoutError`), so the agent's own handling is what runs; an answer kind
    breaks the wrapped model's real answer. The usage of each answer is logged
    (`world.model_used`).
    """

    def __init__(self, wrapped: Model | str, world: World):
        super().__init__(wrapped)
        self.world = world

    def _before(self) -> ModelFault:
        fault = self.world.model_call(self.model_name)
        if fault.kind in ERROR_KINDS:
            raise _error(fault, self.model_name)
        return fault

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        fault = self._before()
        response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        usage = response.usage
        self.world.model_used(fault.k, usage.input_tokens, usage.output_tokens, self.model_name)
        return _broken(response, fault, model_request_parameters)

    @contextlib.asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncIterator[StreamedResponse]:
        # Streams meet the error kinds and latency; answer kinds need the whole answer, so
        # they apply to `request` only (docs/FAULTS.md).
        self._before()
        async with self.wrapped.request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as stream:
            yield stream


class _CountedModel(WrapperModel):
    """The run's model, each request counted (`_run.model_request`): a run whose agent
    never reached its model is a set-up problem for the pytest plugin."""

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        model_request()
        return await self.wrapped.request(messages, model_settings, model_request_parameters)

    @contextlib.asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncIterator[StreamedResponse]:
        model_request()
        async with self.wrapped.request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as stream:
            yield stream


def _error(fault: ModelFault, model_name: str) -> ModelAPIError:
    body = {"error": {"message": fault.message}}
    if fault.kind == "timeout":
        return ModelTimeoutError(model_name, fault.message, phase="read")
    status = fault.status or 500  # the registry's (`ModelKind.status`)
    category: Any = (
        ModelRateLimitError
        if status == 429
        else ModelUnavailableError
        if status == 503
        else ModelServerError
    )
    headers = {"retry-after": f"{fault.retry_after_s:g}"} if fault.retry_after_s else None
    return ModelHTTPError.for_category(
        category, status_code=status, model_name=model_name, body=body, headers=headers,
        retry_after=fault.retry_after_s,
    )  # fmt: skip


def _broken(
    response: ModelResponse, fault: ModelFault, params: ModelRequestParameters
) -> ModelResponse:
    if fault.kind == "empty_completion":
        return dataclasses.replace(response, parts=[])
    parts = list(response.parts)
    if fault.kind == "stream_cut":
        # The stream ends in the middle of its last part; what follows never arrived.
        kept: list[Any] = parts[:-1] if parts else []
        if parts:
            last = parts[-1]
            if isinstance(last, TextPart):
                kept.append(dataclasses.replace(last, content=cut(last.content)))
            elif isinstance(last, ToolCallPart):
                kept.append(dataclasses.replace(last, args=cut(last.args_as_json_str())))
        return dataclasses.replace(response, parts=kept, finish_reason="length")
    if fault.kind == "malformed_tool_call":
        for i, part in enumerate(parts):
            if isinstance(part, ToolCallPart):
                if fault.how == "missing_field":
                    tool = params.tool_defs.get(part.tool_name)
                    schema = tool.parameters_json_schema if tool is not None else None
                    args: Any = drop_required(part.args, schema)
                else:
                    args = unparsable(part.args)
                parts[i] = dataclasses.replace(part, args=args)
                break
        return dataclasses.replace(response, parts=parts)
    return response


# --- scripted agents --------------------------------------------------------------------------


def _history(messages: list[ModelMessage]) -> History:
    """The tool calls so far and their results, oldest first, and the user's prompt, from
    Pydantic AI's messages."""
    calls: dict[str, ToolCallPart] = {}
    seen = History()
    for message in messages:
        for part in message.parts:
            if isinstance(part, UserPromptPart) and not seen.prompt:
                asked = part.content
                seen.prompt = (
                    asked
                    if isinstance(asked, str)
                    else " ".join(c for c in asked if isinstance(c, str))
                )
            elif isinstance(message, ModelResponse) and isinstance(part, ToolCallPart):
                calls[part.tool_call_id] = part
            elif isinstance(part, ToolReturnPart | RetryPromptPart):
                call = calls.get(part.tool_call_id)
                if call is None:
                    continue
                if isinstance(part, ToolReturnPart):
                    content: Any = part.content
                    failed = part.outcome != "success"
                else:
                    content = part.model_response()
                    failed = True
                seen.append(
                    seen_result(call.tool_name, call.args_as_dict(), content, failed=failed)
                )
    return seen


def scripted_model(policy: Policy) -> FunctionModel:
    """A `FunctionModel` that plays `policy`: one tool call or the final reply per turn."""
    ids = itertools.count(1)

    # async: FunctionModel runs a plain function in a worker thread, and a thread pool per
    # event loop (one per test run) costs more than the agent's own steps
    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = policy(_history(messages))
        if isinstance(step, Reply):
            return ModelResponse(parts=[TextPart(step.text)])
        assert isinstance(step, ToolCall), f"a policy returns ToolCall or Reply, not {step!r}"
        return ModelResponse(
            parts=[ToolCallPart(step.tool, dict(step.args), tool_call_id=f"call_{next(ids)}")]
        )

    return FunctionModel(respond)
