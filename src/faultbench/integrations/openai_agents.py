"""OpenAI Agents SDK agents against a faultbench world (`pip install 'faultbench[openai-agents]'`).

```python
from faultbench.integrations.openai_agents import run_agent

run = await run_agent("gpt-5-mini", "Refund order 7", mcp=build_server(world))
run.output, run.trace.summary()
```

Facts about openai-agents 0.24 this module relies on (checked in its source):

- It has `MCPServerStdio` and `MCPServerStreamableHttp` but no in-process server class; its
  public base class `agents.mcp.MCPServer` (connect, cleanup, list_tools, call_tool, prompts)
  is what an in-process server implements, here over the installed MCP SDK's own client
  (`mcp.Client(server)` on 2.x, a memory-stream `ClientSession` on 1.x; the SDK accepts both
  `mcp>=1.19`).
- A tool result flagged `isError` reaches the model as its text, like an answer; a run raises
  `MaxTurnsExceeded` after `max_turns` model turns, and `ModelBehaviorError` for a malformed
  tool call: `run_agent` reports both as a failed run (`AgentRun.error`).
- Every run is traced and the traces are uploaded to OpenAI unless tracing is disabled:
  `run_agent` disables it unless `tracing=True`.
- The Runner asks each MCP server for its tools on every turn. `MCPServerStdio` and
  `MCPServerStreamableHttp` with `cache_tools_list=True` answer from their cache until
  `invalidate_tools_cache()`, and do nothing with `notifications/tools/list_changed` but pass
  it to `message_handler=`: `mcp_server` gives them one that drops the cache.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

from . import _run
from ._modelfaults import ERROR_KINDS, cut, drop_required, model_world, unparsable
from ._run import (
    STDIO_START_TIMEOUT,
    AgentRun,
    Http,
    InProcess,
    Target,
    Transport,
    agent_helper,
    check_transport,
    missing_extra,
    observe,
    target,
)
from ._script import History, Policy, Reply, ToolCall, seen_result

try:
    import httpx2
    import mcp.types as mcp_types
    import openai
    from agents import Agent, RunConfig, RunHooks, Runner
    from agents.exceptions import MaxTurnsExceeded, ModelBehaviorError
    from agents.items import ModelResponse
    from agents.mcp import (
        MCPServer,
        MCPServerStdio,
        MCPServerStreamableHttp,
        MCPServerStreamableHttpParams,
    )
    from agents.models.interface import Model
    from agents.models.multi_provider import MultiProvider
    from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
    from openai.types import responses
except ImportError as error:  # pragma: no cover - exercised in a fresh interpreter
    raise missing_extra("openai-agents", error) from error

from faultbench.kernel import World
from faultbench.kernel.lowlevel import ModelFault
from faultbench.serve import IN_PROCESS_PROTOCOL, WorldServer, call_result, connect_in_process

__all__ = [
    "MAX_TURNS",
    "FaultyModel",
    "WorldDirectServer",
    "WorldMCPServer",
    "mcp_server",
    "run_agent",
    "scripted_model",
]

#: `run_agent`'s default `max_turns`: model turns before the run fails with `MaxTurnsExceeded`.
MAX_TURNS = 20


# ---------------------------------------------------------------------------------------------
# The world as the SDK's MCP server
# ---------------------------------------------------------------------------------------------


class WorldMCPServer(MCPServer):
    """An Agents SDK MCP server for a `WorldServer` in this process: no subprocess, no socket.

    Use it like the SDK's own servers: `async with WorldMCPServer(server):` (or `connect()` /
    `cleanup()`), then `Agent(mcp_servers=[...])`.
    """

    def __init__(self, server: WorldServer, **kwargs: Any):
        super().__init__(**kwargs)
        self.server = server
        self._client: Any = None
        self._stack: contextlib.AsyncExitStack | None = None

    @property
    def name(self) -> str:
        return f"faultbench-{self.server.world.name}"

    async def connect(self) -> None:
        async with contextlib.AsyncExitStack() as stack:
            self._client = await stack.enter_async_context(connect_in_process(self.server))
            self._stack = stack.pop_all()

    async def cleanup(self) -> None:
        stack, self._stack, self._client = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    async def __aenter__(self) -> WorldMCPServer:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.cleanup()

    def _connected(self) -> Any:
        if self._client is None:
            raise RuntimeError(
                f"MCP server {self.name} is not connected: use `async with` or call connect()"
            )
        return self._client

    async def list_tools(self, run_context: Any = None, agent: Any = None) -> list[mcp_types.Tool]:
        return list((await self._connected().list_tools()).tools)

    async def call_tool(
        self, tool_name: str, arguments: dict[str, Any] | None, meta: dict[str, Any] | None = None
    ) -> mcp_types.CallToolResult:
        # The SDK hands `_meta` over as a plain dict; the client's TypedDict is the same shape.
        # The client is mcp 1.x's ClientSession or 2.x's Client (serve/_sdk.py): both answer
        # a CallToolResult of the installed SDK's types.
        result = await self._connected().call_tool(tool_name, arguments or {}, meta=cast(Any, meta))
        return cast(mcp_types.CallToolResult, result)

    async def list_prompts(self) -> mcp_types.ListPromptsResult:
        return mcp_types.ListPromptsResult(prompts=[])

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None
    ) -> mcp_types.GetPromptResult:
        raise LookupError(f"MCP server {self.name} has no prompts; asked for {name!r}")


class WorldDirectServer(WorldMCPServer):
    """A `WorldServer` in this process for the Agents SDK, called without an MCP session.

    `list_tools` and `call_tool` answer the SDK's own `Tool` and `CallToolResult` models, as
    `WorldMCPServer`'s in-process client does (at the protocol version it speaks, with the
    server's identity stamped in `_meta` as the SDK's server runner stamps it), from the
    server's own handler (`WorldServer.call_direct`); only the session is skipped.
    `tests/integrations/test_direct.py` compares both paths. Used like the other servers
    (`async with`, or `connect()` / `cleanup()`), though connecting opens nothing.
    """

    async def connect(self) -> None:
        self._client = self.server
        self._listed: tuple[list[Any], list[mcp_types.Tool]] | None = None

    async def cleanup(self) -> None:
        self._client = None

    async def list_tools(self, run_context: Any = None, agent: Any = None) -> list[mcp_types.Tool]:
        """The world's tools now. While they are the same kernel tools (no tool-surface fault
        has changed them) the same list is answered again: `run_agent`'s agent converts a
        list to function tools once, and the SDK's own servers answer their cached list the
        same way. Treat it as read-only."""
        self._connected()
        tools = self.server.world.tools
        listed = self._listed
        if listed is None or not _same_items(listed[0], tools):
            shown = self.server.tool_list(None, IN_PROCESS_PROTOCOL)  # as the session lists
            listed = self._listed = (tools, cast(list[mcp_types.Tool], shown))
        return listed[1]

    async def call_tool(
        self, tool_name: str, arguments: dict[str, Any] | None, meta: dict[str, Any] | None = None
    ) -> mcp_types.CallToolResult:
        self._connected()
        out = await self.server.call_direct(
            tool_name, arguments or {}, protocol_version=IN_PROCESS_PROTOCOL
        )
        # as the SDK's client session does: an answer that breaks the tool's outputSchema
        self.server.check_output(tool_name, out, IN_PROCESS_PROTOCOL)
        return cast(mcp_types.CallToolResult, call_result(out))


def _same_items(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


class _RunAgent(Agent[Any]):
    """`run_agent`'s agent: it converts its MCP servers' tool lists to function tools once,
    not on every turn, as long as each server answers the same list object again.

    The Runner asks for the tools on every turn and the SDK converts every MCP tool anew each
    time (a deep copy of its schema and a new `FunctionTool`): 0.5-1 ms a turn for the shop's
    nine tools, ~15% of a scripted run's CPU (`benchmarks/bench_agents.py --floor`). The
    servers are still asked on every turn, so a changed list (a tool-surface fault, a
    `tools/list_changed` that dropped a cache) is a new object and is converted again: the
    model is offered what the SDK would offer it. `WorldDirectServer` and the SDK's servers
    with `cache_tools_list=True` answer the same object while nothing changed; a session
    without a cache (`WorldMCPServer`) answers a new one each turn and gains nothing. With
    server-prefixed names (`mcp_config`), which depend on the turn's handoffs, every turn
    converts, as the SDK does.
    """

    async def get_mcp_tools(self, run_context: Any) -> list[Any]:
        if self.mcp_config.get("include_server_in_tool_names"):
            return await super().get_mcp_tools(run_context)
        lists = [await server.list_tools(run_context, self) for server in self.mcp_servers]
        cached = self.__dict__.get("_faultbench_tools")
        if cached is None or not _same_items(cached[0], lists):
            cached = self.__dict__["_faultbench_tools"] = (
                lists,
                await super().get_mcp_tools(run_context),
            )
        return list(cached[1])


def _server_for(where: Target, transport: Transport = "direct") -> MCPServer:
    if isinstance(where, InProcess):
        if check_transport(transport) == "direct":
            return WorldDirectServer(where.server())
        return WorldMCPServer(where.server())
    # The tool list is cached for speed, and the cache dropped when the server says the list
    # changed (a tool-surface fault): the SDK itself never reads that notification.
    servers: list[MCPServerStdio | MCPServerStreamableHttp] = []

    async def on_message(message: Any) -> None:
        if _notification_method(message) == "notifications/tools/list_changed":
            for server in servers:
                server.invalidate_tools_cache()  # type: ignore[no-untyped-call]  # unannotated in the SDK

    if isinstance(where, Http):
        params = MCPServerStreamableHttpParams(url=where.url)
        if where.headers:
            params["headers"] = where.headers
        servers.append(
            MCPServerStreamableHttp(
                params,
                cache_tools_list=True,
                message_handler=on_message,
            )
        )
    else:
        command, *args = where.argv
        servers.append(
            MCPServerStdio(
                {"command": command, "args": args},
                cache_tools_list=True,
                client_session_timeout_seconds=STDIO_START_TIMEOUT,
                message_handler=on_message,
            )
        )
    return servers[0]


def _notification_method(message: Any) -> str | None:
    """The method of a notification as the MCP SDK's session delivers it (1.x wraps it in a
    `ServerNotification` root model; 2.x hands it over as it is); None for anything else."""
    method = getattr(getattr(message, "root", message), "method", None)
    return method if isinstance(method, str) else None


# ---------------------------------------------------------------------------------------------
# Running an agent on a world
# ---------------------------------------------------------------------------------------------


def mcp_server(
    mcp: World | WorldServer | str | Sequence[str], *, transport: Transport = "direct"
) -> MCPServer:
    """An Agents SDK MCP server for the world: in-process `WorldDirectServer` (no MCP
    session; `WorldMCPServer`, over one, with `transport="mcp"`), `MCPServerStreamableHttp`
    for a URL, `MCPServerStdio` for a command (a new subprocess per connection, stopped by
    `cleanup()`). Connect it before the run, clean it up after."""
    return _server_for(target(mcp), transport)


@contextlib.asynccontextmanager
async def _connected(server: MCPServer) -> AsyncIterator[MCPServer]:
    await server.connect()
    try:
        yield server
    finally:
        await server.cleanup()


@agent_helper
async def run_agent(
    model: Any,
    prompt: str,
    *,
    mcp: World | WorldServer | str | Sequence[str],
    system_prompt: str | None = None,
    max_turns: int = MAX_TURNS,
    tracing: bool = False,
    model_faults_world: World | None = None,
    transport: Transport = "direct",
    **agent_kwargs: Any,
) -> AgentRun:
    """Run an Agents SDK agent once with the world's tools; return its result and the trace.

    A `World` or a `WorldServer` in this process is called directly (`WorldDirectServer`: no
    MCP session, what the agent sees is the same; a `World` gets a `WorldServer` made for the
    run, since the Agents SDK imports mcp anyway) unless `transport="mcp"`; a URL or a command
    is an MCP server.

    `model` is anything `Agent` accepts ("gpt-5-mini", a `ScriptedModel`...); `agent_kwargs`
    go to `Agent` (`name=` defaults to "agent"). A run that ends in `MaxTurnsExceeded` or
    `ModelBehaviorError`, or in a model API error (`openai.APIError`: a 429, a 5xx, a timeout)
    is returned as a failed run (`run.ok` False, `run.error` set). OpenAI
    tracing is off unless `tracing=True`. When the world's fault rules have a `model:` key,
    the model is wrapped in `FaultyModel` (an in-process world; otherwise pass the run's world
    as `model_faults_world=`).
    """
    agent_kwargs.setdefault("name", "agent")
    _run.counting_model_requests()
    async with (
        observe(target(mcp)) as seen,
        _connected(_server_for(seen.target, transport)) as server,
    ):
        world = model_world(seen.target, model_faults_world)
        if world is not None and not isinstance(model, FaultyModel):
            model = FaultyModel(model, world)
        # Traced runs keep the SDK's own listing, which opens a span on every turn.
        agent: Agent[Any] = (Agent if tracing else _RunAgent)(
            model=model, instructions=system_prompt, mcp_servers=[server], **agent_kwargs
        )
        try:
            result = await Runner.run(
                agent,
                prompt,
                max_turns=max_turns,
                run_config=RunConfig(tracing_disabled=not tracing),
                hooks=_CountingHooks(),
            )
        except (MaxTurnsExceeded, ModelBehaviorError, openai.APIError) as error:
            failed: Exception | None = error
            result = None
        else:
            failed = None
    return seen.finish(result, None if result is None else result.final_output, failed)


class _CountingHooks(RunHooks[Any]):
    """Counts the run's model requests (none: a set-up problem for the pytest plugin)."""

    async def on_llm_start(self, *args: Any, **kwargs: Any) -> None:
        _run.model_request()


# ---------------------------------------------------------------------------------------------
# Model faults
# ---------------------------------------------------------------------------------------------


class FaultyModel(Model):
    """An Agents SDK model whose calls meet the world's model faults (docs/FAULTS.md,
    "Model faults"). `model` is a `Model` or a name the SDK's default provider resolves.

    Each call asks `world.model_call()` first: an error kind raises the `openai` SDK's own
    error (`RateLimitError` with a `retry-after` header, `InternalServerError`,
    `APITimeoutError`), so the Runner's own handling (and its opt-in `ModelSettings.retry`)
    is what runs; an answer kind breaks the wrapped model's real answer. The usage of each
    answer is logged (`world.model_used`).
    """

    def __init__(self, model: Model | str, world: World):
        self.model = MultiProvider().get_model(model) if isinstance(model, str) else model
        self.world = world
        self.name = model if isinstance(model, str) else type(model).__name__

    def _before(self) -> ModelFault:
        fault = self.world.model_call(self.name)
        if fault.kind in ERROR_KINDS:
            raise _error(fault)
        return fault

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        fault = self._before()
        response = await self.model.get_response(*args, **kwargs)
        usage = response.usage
        self.world.model_used(fault.k, usage.input_tokens, usage.output_tokens, self.name)
        tools = args[3] if len(args) > 3 else kwargs.get("tools", [])
        return _broken(response, fault, tools)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        # Streams meet the error kinds and latency; answer kinds apply to get_response.
        self._before()
        return self.model.stream_response(*args, **kwargs)

    async def close(self) -> None:
        await self.model.close()


_REQUEST = httpx2.Request("POST", "https://model.invalid/v1/responses")


def _error(fault: ModelFault) -> Exception:
    if fault.kind == "timeout":
        return openai.APITimeoutError(request=_REQUEST)
    status = fault.status or 500  # the registry's (`ModelKind.status`)
    headers = {"retry-after": f"{fault.retry_after_s:g}"} if fault.retry_after_s else {}
    response = httpx2.Response(status, headers=headers, request=_REQUEST)
    body = {"error": {"message": fault.message}}
    cls = openai.RateLimitError if status == 429 else openai.InternalServerError
    return cls(fault.message, response=response, body=body)


def _broken(response: ModelResponse, fault: ModelFault, tools: Any) -> ModelResponse:
    output = list(response.output)
    if fault.kind == "empty_completion":
        output = []
    elif fault.kind == "stream_cut" and output:
        last = output[-1]
        if isinstance(last, responses.ResponseFunctionToolCall):
            last = last.model_copy(update={"arguments": cut(last.arguments)})
        elif isinstance(last, responses.ResponseOutputMessage):
            texts = [c for c in last.content if isinstance(c, responses.ResponseOutputText)]
            content = [c.model_copy(update={"text": cut(c.text)}) for c in texts]
            last = last.model_copy(update={"content": content, "status": "incomplete"})
        output[-1] = last
    elif fault.kind == "malformed_tool_call":
        for i, item in enumerate(output):
            if isinstance(item, responses.ResponseFunctionToolCall):
                if fault.how == "missing_field":
                    schema = next(
                        (getattr(t, "params_json_schema", None) for t in tools
                         if getattr(t, "name", None) == item.name),
                        None,
                    )  # fmt: skip
                    arguments = json.dumps(drop_required(item.arguments, schema))
                else:
                    arguments = unparsable(item.arguments)
                output[i] = item.model_copy(update={"arguments": arguments})
                break
    return dataclasses.replace(response, output=output)


# ---------------------------------------------------------------------------------------------
# Scripted agents
# ---------------------------------------------------------------------------------------------


def _output_text(output: Any) -> Any:
    """A function call output as the model reads it: a string, or text blocks."""
    if isinstance(output, list):
        texts = [item.get("text", "") for item in output if isinstance(item, dict)]
        return "".join(texts)
    if isinstance(output, dict) and output.get("type") in ("text", "input_text"):
        return output.get("text", "")
    return output


def _arguments(text: str | None) -> dict[str, Any]:
    """A function call's arguments; {} for text that is not a JSON object (a malformed call)."""
    try:
        args = json.loads(text or "{}")
    except ValueError:
        return {}
    return args if isinstance(args, dict) else {}


def _history(items: Any) -> History:
    """The tool calls so far and their results, oldest first, and the user's prompt, from
    the model's input items."""
    if isinstance(items, str):
        return History(prompt=items)
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    seen = History()
    for raw in items:
        item = raw if isinstance(raw, dict) else raw.model_dump(exclude_unset=True)
        if item.get("role") == "user" and not seen.prompt:
            seen.prompt = _output_text(item.get("content"))
        elif item.get("type") == "function_call":
            calls[item["call_id"]] = (item["name"], _arguments(item.get("arguments")))
        elif item.get("type") == "function_call_output" and item.get("call_id") in calls:
            tool, args = calls[item["call_id"]]
            seen.append(seen_result(tool, args, _output_text(item.get("output")), failed=None))
    return seen


def scripted_model(policy: Policy, *, max_turns: int = MAX_TURNS) -> ScriptedModel:
    """A `ScriptedModel` that plays `policy`: one tool call or the final reply per turn (at
    most `max_turns` turns, like `run_agent`'s default)."""
    ids = itertools.count(1)
    turns = itertools.count(1)

    def respond(call: ModelCall) -> Any:
        # The next turn's step is made now, not all `max_turns` up front: the SDK checks
        # each step as it is added (~0.15 ms), and most runs take a few turns of twenty.
        if next(turns) < max_turns:
            model.enqueue(ModelStep.respond(respond))
        step = policy(_history(call.input))
        if isinstance(step, Reply):
            return [assistant_message(step.text)]
        assert isinstance(step, ToolCall), f"a policy returns ToolCall or Reply, not {step!r}"
        return [function_call(step.tool, dict(step.args), call_id=f"call_{next(ids)}")]

    model = ScriptedModel([ModelStep.respond(respond)] if max_turns > 0 else [])
    return model
