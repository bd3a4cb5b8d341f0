"""OpenAI Agents SDK agents against a faultbench world (`pip install 'faultbench[openai-agents]'`).

```python
from faultbench.integrations.openai_agents import run_agent

run = await run_agent("gpt-5-mini", "Refund order 7", mcp=build_server(world))
run.output, run.trace.summary()
```

Facts about openai-agents 0.24 this module relies on (checked in its source):

- It has `MCPServerStdio` and `MCPServerStreamableHttp` but no in-process server class; its
  public base class `agents.mcp.MCPServer` (connect, cleanup, list_tools, call_tool, prompts)
  is what an in-process server implements, here over the official `mcp.Client(server)`.
- A tool result flagged `isError` reaches the model as its text, like an answer; a run raises
  `MaxTurnsExceeded` after `max_turns` model turns, and `ModelBehaviorError` for a malformed
  tool call: `run_agent` reports both as a failed run (`AgentRun.error`).
- Every run is traced and the traces are uploaded to OpenAI unless tracing is disabled:
  `run_agent` disables it unless `tracing=True`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

from ._run import (
    STDIO_START_TIMEOUT,
    AgentRun,
    Http,
    InProcess,
    Target,
    missing_extra,
    observe,
    target,
)
from ._script import Policy, Reply, Seen, ToolCall, seen_result

try:
    import mcp as mcp_sdk
    import mcp.types as mcp_types
    from agents import Agent, RunConfig, Runner
    from agents.exceptions import MaxTurnsExceeded, ModelBehaviorError
    from agents.mcp import MCPServer, MCPServerStdio, MCPServerStreamableHttp
    from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
except ImportError as error:  # pragma: no cover - exercised in a fresh interpreter
    raise missing_extra("openai-agents", error) from error

from faultbench.serve import WorldServer

__all__ = ["MAX_TURNS", "WorldMCPServer", "mcp_server", "run_agent", "scripted_model"]

#: `run_agent`'s default `max_turns`: model turns before the run fails with `MaxTurnsExceeded`.
MAX_TURNS = 20


class WorldMCPServer(MCPServer):
    """An Agents SDK MCP server for a `WorldServer` in this process: no subprocess, no socket.

    Use it like the SDK's own servers: `async with WorldMCPServer(server):` (or `connect()` /
    `cleanup()`), then `Agent(mcp_servers=[...])`.
    """

    def __init__(self, server: WorldServer, **kwargs: Any):
        super().__init__(**kwargs)
        self.server = server
        self._client: mcp_sdk.Client | None = None
        self._stack: contextlib.AsyncExitStack | None = None

    @property
    def name(self) -> str:
        return f"faultbench-{self.server.world.name}"

    async def connect(self) -> None:
        async with contextlib.AsyncExitStack() as stack:
            self._client = await stack.enter_async_context(mcp_sdk.Client(self.server))
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

    def _connected(self) -> mcp_sdk.Client:
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
        return await self._connected().call_tool(tool_name, arguments or {}, meta=cast(Any, meta))

    async def list_prompts(self) -> mcp_types.ListPromptsResult:
        return mcp_types.ListPromptsResult(prompts=[])

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None
    ) -> mcp_types.GetPromptResult:
        raise LookupError(f"MCP server {self.name} has no prompts; asked for {name!r}")


def _server_for(where: Target) -> MCPServer:
    if isinstance(where, InProcess):
        return WorldMCPServer(where.server)
    if isinstance(where, Http):
        return MCPServerStreamableHttp({"url": where.url}, cache_tools_list=True)
    command, *args = where.argv
    return MCPServerStdio(
        {"command": command, "args": args},
        cache_tools_list=True,
        client_session_timeout_seconds=STDIO_START_TIMEOUT,
    )


def mcp_server(mcp: WorldServer | str | Sequence[str]) -> MCPServer:
    """An Agents SDK MCP server for the world: `WorldMCPServer` in-process,
    `MCPServerStreamableHttp` for a URL, `MCPServerStdio` for a command (a new subprocess per
    connection, stopped by `cleanup()`). Connect it before the run, clean it up after."""
    return _server_for(target(mcp))


@contextlib.asynccontextmanager
async def _connected(server: MCPServer) -> AsyncIterator[MCPServer]:
    await server.connect()
    try:
        yield server
    finally:
        await server.cleanup()


async def run_agent(
    model: Any,
    prompt: str,
    *,
    mcp: WorldServer | str | Sequence[str],
    system_prompt: str | None = None,
    max_turns: int = MAX_TURNS,
    tracing: bool = False,
    **agent_kwargs: Any,
) -> AgentRun:
    """Run an Agents SDK agent once with the world's tools; return its result and the trace.

    `model` is anything `Agent` accepts ("gpt-5-mini", a `ScriptedModel`...); `agent_kwargs`
    go to `Agent` (`name=` defaults to "agent"). A run that ends in `MaxTurnsExceeded` or
    `ModelBehaviorError` is returned as a failed run (`run.ok` False, `run.error` set). OpenAI
    tracing is off unless `tracing=True`.
    """
    agent_kwargs.setdefault("name", "agent")
    async with observe(target(mcp)) as seen, _connected(_server_for(seen.target)) as server:
        agent: Agent[Any] = Agent(
            model=model, instructions=system_prompt, mcp_servers=[server], **agent_kwargs
        )
        try:
            result = await Runner.run(
                agent,
                prompt,
                max_turns=max_turns,
                run_config=RunConfig(tracing_disabled=not tracing),
            )
        except (MaxTurnsExceeded, ModelBehaviorError) as error:
            failed: Exception | None = error
            result = None
        else:
            failed = None
    return seen.finish(result, None if result is None else result.final_output, failed)


# --- scripted agents --------------------------------------------------------------------------


def _output_text(output: Any) -> Any:
    """A function call output as the model reads it: a string, or text blocks."""
    if isinstance(output, list):
        texts = [item.get("text", "") for item in output if isinstance(item, dict)]
        return "".join(texts)
    if isinstance(output, dict) and output.get("type") in ("text", "input_text"):
        return output.get("text", "")
    return output


def _history(items: Any) -> list[Seen]:
    """The tool calls so far and their results, oldest first, from the model's input items."""
    if isinstance(items, str):
        return []
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    seen: list[Seen] = []
    for raw in items:
        item = raw if isinstance(raw, dict) else raw.model_dump(exclude_unset=True)
        if item.get("type") == "function_call":
            calls[item["call_id"]] = (item["name"], json.loads(item.get("arguments") or "{}"))
        elif item.get("type") == "function_call_output" and item.get("call_id") in calls:
            tool, args = calls[item["call_id"]]
            seen.append(seen_result(tool, args, _output_text(item.get("output")), failed=None))
    return seen


def scripted_model(policy: Policy, *, max_turns: int = MAX_TURNS) -> ScriptedModel:
    """A `ScriptedModel` that plays `policy`: one tool call or the final reply per turn (at
    most `max_turns` turns, like `run_agent`'s default)."""
    ids = itertools.count(1)

    def respond(call: ModelCall) -> Any:
        step = policy(_history(call.input))
        if isinstance(step, Reply):
            return [assistant_message(step.text)]
        assert isinstance(step, ToolCall), f"a policy returns ToolCall or Reply, not {step!r}"
        return [function_call(step.tool, dict(step.args), call_id=f"call_{next(ids)}")]

    return ScriptedModel([ModelStep.respond(respond) for _ in range(max_turns)])
