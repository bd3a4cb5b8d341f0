"""LangChain / LangGraph agents against a faultbench world (`pip install 'faultbench[langgraph]'`).

```python
from faultbench.integrations.langgraph import run_agent

run = await run_agent("openai:gpt-5-mini", "Refund order 7", mcp=build_server(world))
run.output, run.trace.summary()
```

The agent is LangChain's `create_agent` (a LangGraph graph) with the world's tools loaded by
`langchain-mcp-adapters`. Facts about langchain-mcp-adapters 0.3 and langchain 1.5 this
module relies on (checked in their source):

- `langchain-mcp-adapters` requires mcp 1.x (`mcp>=1.24,<2`): this extra installs faultbench
  beside mcp 1.x, which faultbench's server supports (docs/ARCHITECTURE.md).
- `load_mcp_tools(session)` turns an open `ClientSession`'s tools into `StructuredTool`s whose
  `args_schema` is the tool's JSON Schema as listed. One session serves the whole run: an
  in-process memory-stream session for a `WorldServer`, `create_session(connection)` for a
  URL (`streamable_http`) or a command (`stdio`).
- A result flagged `isError` reaches the model as a `ToolMessage` with `status="error"` and
  the error's text (`handle_tool_errors=True`, the default); a success carries the text and,
  as the message's `artifact`, `{"structured_content": ...}`.
- A run that reaches the graph's `recursion_limit` raises `GraphRecursionError`: `run_agent`
  reports it as a failed run (`AgentRun.error`).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ._run import AgentRun, Http, InProcess, Target, missing_extra, observe, target
from ._script import Policy, Reply, Seen, ToolCall, seen_result

try:
    from langchain.agents import create_agent
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_mcp_adapters.sessions import create_session
    from langchain_mcp_adapters.tools import load_mcp_tools
    from langgraph.errors import GraphRecursionError
except ImportError as error:  # pragma: no cover - exercised in a fresh interpreter
    raise missing_extra("langgraph", error) from error

from faultbench.serve import WorldServer, connect_in_process

__all__ = ["RECURSION_LIMIT", "ScriptedChatModel", "load_tools", "run_agent", "scripted_model"]

#: `run_agent`'s default `recursion_limit`: graph steps (a model turn and a tool turn are two)
#: before the run fails with `GraphRecursionError`.
RECURSION_LIMIT = 40


@contextlib.asynccontextmanager
async def _session(where: Target) -> AsyncIterator[Any]:
    if isinstance(where, InProcess):
        async with connect_in_process(where.server) as session:
            yield session
        return
    connection: dict[str, Any]
    if isinstance(where, Http):
        connection = {"transport": "streamable_http", "url": where.url}
        if where.headers:
            connection["headers"] = where.headers
    else:
        command, *args = where.argv
        connection = {"transport": "stdio", "command": command, "args": args}
    async with create_session(connection) as session:  # type: ignore[arg-type]
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def load_tools(mcp: WorldServer | str | Sequence[str]) -> AsyncIterator[list[Any]]:
    """The world's tools as LangChain tools, over one MCP session open for the block:
    `async with load_tools(server) as tools: create_agent(model, tools)`."""
    async with _session(target(mcp)) as session:
        yield await load_mcp_tools(session)


async def run_agent(
    model: Any,
    prompt: str,
    *,
    mcp: WorldServer | str | Sequence[str],
    system_prompt: str | None = None,
    recursion_limit: int = RECURSION_LIMIT,
    **agent_kwargs: Any,
) -> AgentRun:
    """Run a LangChain agent (`langchain.agents.create_agent`) once with the world's tools;
    return its result and the trace.

    `model` is anything `create_agent` accepts ("openai:gpt-5-mini", a chat model,
    `scripted_model(policy)`); `agent_kwargs` go to `create_agent` (`middleware=`...).
    `run.result` is the graph's final state, `run.output` the last message's text. A run that
    hits `recursion_limit` is returned as a failed run (`run.ok` False, `run.error` set).
    """
    async with observe(target(mcp)) as seen, _session(seen.target) as session:
        tools = await load_mcp_tools(session)
        agent = create_agent(model, tools, system_prompt=system_prompt, **agent_kwargs)
        try:
            result = await agent.ainvoke(
                {"messages": [{"role": "user", "content": prompt}]},
                config={"recursion_limit": recursion_limit},
            )
        except GraphRecursionError as error:
            failed: Exception | None = error
            result = None
        else:
            failed = None
    output = None if result is None else _text(result["messages"][-1].content)
    return seen.finish(result, output, failed)


# --- scripted agents --------------------------------------------------------------------------


def _text(content: Any) -> str:
    """A message's content as text: a string, or the text of its content blocks."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(block.get("text", ""))
    return "".join(parts)


def _history(messages: Sequence[BaseMessage]) -> list[Seen]:
    """The tool calls so far and their results, oldest first, from the graph's messages."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    seen: list[Seen] = []
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                calls[call["id"] or ""] = (call["name"], dict(call["args"]))
        elif isinstance(message, ToolMessage) and message.tool_call_id in calls:
            tool, args = calls[message.tool_call_id]
            # The text is the server's: JSON for an answer, the error's text for a failure.
            failed = message.status == "error"
            seen.append(seen_result(tool, args, _text(message.content), failed=failed))
    return seen


class ScriptedChatModel(BaseChatModel):
    """A chat model that plays a policy: one tool call or the final reply per turn.

    `bind_tools` keeps the model as it is (the policy names its tools itself), so
    `create_agent` can use it like any tool-calling chat model.
    """

    policy: Any

    @property
    def _llm_type(self) -> str:
        return "faultbench-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        step = self.policy(_history(messages))
        if isinstance(step, Reply):
            message = AIMessage(content=step.text)
        else:
            assert isinstance(step, ToolCall), f"a policy returns ToolCall or Reply, not {step!r}"
            call_id = f"call_{next(_ids)}"
            message = AIMessage(
                content="",
                tool_calls=[{"name": step.tool, "args": dict(step.args), "id": call_id}],
            )
        return ChatResult(generations=[ChatGeneration(message=message)])


_ids = itertools.count(1)


def scripted_model(policy: Policy) -> ScriptedChatModel:
    """A LangChain chat model that plays `policy` (see `faultbench.integrations.Seen`)."""
    return ScriptedChatModel(policy=policy)
