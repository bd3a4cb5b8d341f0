"""Pydantic AI agents against a faultbench world (`pip install 'faultbench[pydantic-ai]'`).

```python
from faultbench.integrations.pydantic_ai import run_agent

run = await run_agent("openai:gpt-5-mini", "Refund order 7", mcp=build_server(world))
run.output, run.trace.summary()
```

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
import itertools
from collections.abc import AsyncGenerator, Sequence
from typing import Any, Unpack

import anyio

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
    from fastmcp.client.transports import ClientTransport, StdioTransport
    from fastmcp.client.transports.base import SessionKwargs, TransportOptions
    from mcp import ClientSession
    from mcp.shared.memory import create_client_server_memory_streams
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import UnexpectedModelBehavior
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        RetryPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel
except ImportError as error:  # pragma: no cover - exercised in a fresh interpreter
    raise missing_extra("pydantic-ai", error) from error


from faultbench.serve import WorldServer

__all__ = ["WorldTransport", "run_agent", "scripted_model", "toolset"]


class WorldTransport(ClientTransport):
    """A fastmcp transport to a `WorldServer` in this process: no subprocess, no socket.

    Each connection runs the server over a fresh pair of memory streams in a task of the
    caller's task group and ends it when the connection closes.
    """

    def __init__(self, server: WorldServer):
        self.server = server

    @contextlib.asynccontextmanager
    async def connect_session(
        self,
        *,
        transport_options: TransportOptions | None = None,
        **session_kwargs: Unpack[SessionKwargs],
    ) -> AsyncGenerator[ClientSession, None]:
        options = transport_options or TransportOptions()
        server = self.server
        async with (
            create_client_server_memory_streams() as (client_streams, server_streams),
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(
                lambda: server.run(*server_streams, server.create_initialization_options())
            )
            try:
                async with options.session_class(
                    read_stream=client_streams[0],
                    write_stream=client_streams[1],
                    **session_kwargs,
                ) as session:
                    yield session
            finally:
                tg.cancel_scope.cancel()

    def __repr__(self) -> str:
        return f"<WorldTransport(world={self.server.world.name!r})>"


def _toolset_for(where: Target, **kwargs: Any) -> MCPToolset[Any]:
    if isinstance(where, InProcess):
        return MCPToolset(WorldTransport(where.server), **kwargs)
    if isinstance(where, Http):
        return MCPToolset(where.url, **kwargs)
    command, *args = where.argv
    kwargs.setdefault("init_timeout", STDIO_START_TIMEOUT)
    return MCPToolset(StdioTransport(command, args, keep_alive=False), **kwargs)


def toolset(mcp: WorldServer | str | Sequence[str], **kwargs: Any) -> MCPToolset[Any]:
    """An `MCPToolset` whose tools are the world's: pass it to your own `Agent(toolsets=[...])`.

    `mcp`: a `WorldServer` (in-process), an http(s) URL, or a stdio command; a stdio server is
    started for each connection and stopped after it (`keep_alive=False`), so no state leaks
    from one run into the next. `kwargs` go to `MCPToolset` (`max_retries=`, ...).
    """
    return _toolset_for(target(mcp), **kwargs)


async def run_agent(
    model: Any,
    prompt: str,
    *,
    mcp: WorldServer | str | Sequence[str],
    system_prompt: str | None = None,
    **agent_kwargs: Any,
) -> AgentRun:
    """Run a Pydantic AI agent once with the world's tools; return its result and the trace.

    `model` is anything `Agent` accepts ("openai:gpt-5-mini", a `FunctionModel`...);
    `agent_kwargs` go to `Agent` (`retries=`, `output_type=`...). A run that ends in
    `UnexpectedModelBehavior` (a tool's retry budget spent, or a model that misbehaves) is
    returned as a failed run: `run.ok` is False and `run.error` holds the exception.
    """
    async with observe(target(mcp)) as seen:
        agent: Agent[Any, Any] = Agent(
            model,
            system_prompt=system_prompt or (),
            toolsets=[_toolset_for(seen.target)],
            **agent_kwargs,
        )
        try:
            result = await agent.run(prompt)
        except UnexpectedModelBehavior as error:
            failed: UnexpectedModelBehavior | None = error
            result = None
        else:
            failed = None
    return seen.finish(result, None if result is None else result.output, failed)


# --- scripted agents --------------------------------------------------------------------------


def _history(messages: list[ModelMessage]) -> list[Seen]:
    """The tool calls so far and their results, oldest first, from Pydantic AI's messages."""
    calls: dict[str, ToolCallPart] = {}
    seen: list[Seen] = []
    for message in messages:
        for part in message.parts:
            if isinstance(message, ModelResponse) and isinstance(part, ToolCallPart):
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

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = policy(_history(messages))
        if isinstance(step, Reply):
            return ModelResponse(parts=[TextPart(step.text)])
        assert isinstance(step, ToolCall), f"a policy returns ToolCall or Reply, not {step!r}"
        return ModelResponse(
            parts=[ToolCallPart(step.tool, dict(step.args), tool_call_id=f"call_{next(ids)}")]
        )

    return FunctionModel(respond)
