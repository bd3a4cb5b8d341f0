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
- langchain-core 1.8 has provider-neutral model errors (`langchain_core.exceptions`:
  `ModelRateLimitError`, `ModelAPIError` for a 5xx, `ModelTimeoutError`, each
  `is_retryable`), which its provider integrations raise; `ModelRetryMiddleware` (opt-in)
  retries exactly the retryable ones by default. `create_agent` calls its model with
  `bind_tools(...)` then `ainvoke`, and answers each of an `AIMessage`'s
  `invalid_tool_calls` (arguments that do not parse) with an error `ToolMessage` before the
  next model call.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Sequence
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
    from langchain.agents import create_agent
    from langchain.chat_models import init_chat_model
    from langchain_core.exceptions import (
        ModelAPIError,
        ModelError,
        ModelRateLimitError,
        ModelTimeoutError,
    )
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.messages.tool import invalid_tool_call
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langchain_mcp_adapters.sessions import create_session
    from langchain_mcp_adapters.tools import load_mcp_tools
    from langgraph.errors import GraphRecursionError
except ImportError as error:  # pragma: no cover - exercised in a fresh interpreter
    raise missing_extra("langgraph", error) from error

from pydantic import ConfigDict, Field

from faultbench.kernel import World
from faultbench.kernel.lowlevel import ModelFault
from faultbench.serve import WorldServer, connect_in_process

__all__ = [
    "RECURSION_LIMIT",
    "FaultyChatModel",
    "RateLimitError",
    "ScriptedChatModel",
    "ServerError",
    "load_tools",
    "run_agent",
    "scripted_model",
]

#: `run_agent`'s default `recursion_limit`: graph steps (a model turn and a tool turn are two)
#: before the run fails with `GraphRecursionError`.
RECURSION_LIMIT = 40


@contextlib.asynccontextmanager
async def _session(where: Target) -> AsyncIterator[Any]:
    if isinstance(where, InProcess):
        async with connect_in_process(where.server()) as session:
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
async def load_tools(mcp: World | WorldServer | str | Sequence[str]) -> AsyncIterator[list[Any]]:
    """The world's tools as LangChain tools, over one MCP session open for the block:
    `async with load_tools(server) as tools: create_agent(model, tools)`."""
    async with _session(target(mcp)) as session:
        yield await load_mcp_tools(session)


@agent_helper
async def run_agent(
    model: Any,
    prompt: str,
    *,
    mcp: World | WorldServer | str | Sequence[str],
    system_prompt: str | None = None,
    recursion_limit: int = RECURSION_LIMIT,
    model_faults_world: World | None = None,
    **agent_kwargs: Any,
) -> AgentRun:
    """Run a LangChain agent (`langchain.agents.create_agent`) once with the world's tools;
    return its result and the trace.

    `model` is anything `create_agent` accepts ("openai:gpt-5-mini", a chat model,
    `scripted_model(policy)`); `agent_kwargs` go to `create_agent` (`middleware=`...).
    `run.result` is the graph's final state, `run.output` the last message's text. A run that
    hits `recursion_limit` is returned as a failed run (`run.ok` False, `run.error` set); so
    is one that ends in a model error (`langchain_core.exceptions.ModelError`: a 429, a 5xx,
    a timeout). When the world's fault rules have a `model:` key, the model is wrapped in
    `FaultyChatModel` (an in-process world; otherwise pass the run's world as
    `model_faults_world=`).
    """
    async with observe(target(mcp)) as seen, _session(seen.target) as session:
        world = model_world(seen.target, model_faults_world)
        if world is not None and not isinstance(model, FaultyChatModel):
            model = FaultyChatModel.around(model, world)
        tools = await load_mcp_tools(session)
        agent = create_agent(model, tools, system_prompt=system_prompt, **agent_kwargs)
        try:
            result = await agent.ainvoke(
                {"messages": [{"role": "user", "content": prompt}]},
                config={"recursion_limit": recursion_limit},
            )
        except (GraphRecursionError, ModelError) as error:
            failed: Exception | None = error
            result = None
        else:
            failed = None
    output = None if result is None else _text(result["messages"][-1].content)
    return seen.finish(result, output, failed)


# --- model faults ---------------------------------------------------------------------------


class FaultyChatModel(BaseChatModel):
    """A LangChain chat model whose calls meet the world's model faults (docs/FAULTS.md,
    "Model faults"): `FaultyChatModel.around(model, world)`, `model` a chat model or a name
    `init_chat_model` resolves ("openai:gpt-5-mini").

    Each call asks `world.model_call()` first: an error kind raises langchain-core's own
    provider-neutral error (`ModelRateLimitError` with `status_code` 429 and `retry_after`,
    `ModelAPIError` with 500 or 503, `ModelTimeoutError`), what LangChain's provider
    integrations raise, so the agent's own handling (`ModelRetryMiddleware`, if you add it)
    is what runs; an answer kind breaks the wrapped model's real answer. The usage of each
    answer (`AIMessage.usage_metadata`) is logged (`world.model_used`). The wrapped model is
    asked with its public `invoke` / `ainvoke` and answers whole: a caller that streams gets
    the (possibly broken) answer as one chunk, so every kind applies to every call.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    #: the chat model, or the model with its tools bound (`bind_tools` binds them there)
    wrapped: Any
    world: World
    label: str = ""
    #: each bound tool's parameters (JSON Schema), for `malformed_tool_call`'s missing field
    schemas: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def around(cls, model: Any, world: World) -> FaultyChatModel:
        label = model if isinstance(model, str) else type(model).__name__
        wrapped = init_chat_model(model) if isinstance(model, str) else model
        # never answered from LangChain's cache: every call is a model call the plan decides
        return cls(wrapped=wrapped, world=world, label=label, cache=False)

    @property
    def _llm_type(self) -> str:
        return "faultbench-faulty"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FaultyChatModel:
        schemas = {}
        for tool in tools:
            function = convert_to_openai_tool(tool)["function"]
            schemas[function["name"]] = function.get("parameters")
        bound = self.wrapped.bind_tools(tools, **kwargs)
        return self.model_copy(update={"wrapped": bound, "schemas": schemas})

    def _before(self) -> ModelFault:
        fault = self.world.model_call(self.label)
        if fault.kind in ERROR_KINDS:
            raise _error(fault)
        return fault

    def _after(self, fault: ModelFault, message: Any) -> ChatResult:
        usage = getattr(message, "usage_metadata", None) or {}
        self.world.model_used(
            fault.k, usage.get("input_tokens", 0), usage.get("output_tokens", 0), self.label
        )
        return ChatResult(
            generations=[ChatGeneration(message=_broken(message, fault, self.schemas))]
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        fault = self._before()
        return self._after(fault, self.wrapped.invoke(messages, stop=stop, **kwargs))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        fault = self._before()
        message = await self.wrapped.ainvoke(messages, stop=stop, **kwargs)
        return self._after(fault, message)


class RateLimitError(ModelRateLimitError):
    """LangChain's rate-limit error (`is_retryable`), with what a provider's 429 carries:
    `status_code` and `retry_after` (seconds)."""

    status_code = 429

    def __init__(self, message: str, retry_after: float | None):
        super().__init__(message)
        self.retry_after = retry_after


class ServerError(ModelAPIError):
    """LangChain's server error (a 5xx, `is_retryable`), with its `status_code`."""

    def __init__(self, message: str, status_code: int):
        super().__init__(message)
        self.status_code = status_code


def _error(fault: ModelFault) -> ModelError:
    if fault.kind == "timeout":
        return ModelTimeoutError(fault.message)
    if fault.status == 429:
        return RateLimitError(fault.message, fault.retry_after_s)
    return ServerError(fault.message, fault.status or 500)


def _invalid(call: Any, args: str) -> Any:
    """A tool call whose arguments do not parse, as LangChain's provider integrations report
    it: an `invalid_tool_calls` entry, which `create_agent` answers with an error."""
    error = f"Function {call['name']} arguments:\n\n{args}\n\nare not valid JSON."
    return invalid_tool_call(name=call["name"], args=args, id=call["id"], error=error)


def _broken(message: AIMessage, fault: ModelFault, schemas: dict[str, Any]) -> AIMessage:
    calls = list(message.tool_calls)
    invalid = list(message.invalid_tool_calls)
    if fault.kind == "empty_completion":
        return message.model_copy(
            update={"content": "", "tool_calls": [], "invalid_tool_calls": []}
        )
    if fault.kind == "stream_cut":
        # The stream ends in the middle of its last part: a tool call comes after the text.
        update: dict[str, Any] = {
            "response_metadata": {**message.response_metadata, "finish_reason": "length"}
        }
        if calls:
            last = calls.pop()
            update |= {
                "tool_calls": calls,
                "invalid_tool_calls": [*invalid, _invalid(last, cut(json.dumps(last["args"])))],
            }
        else:
            update["content"] = cut(_text(message.content))
        return message.model_copy(update=update)
    if fault.kind == "malformed_tool_call" and calls:
        first = calls[0]
        if fault.how == "missing_field":
            args = drop_required(first["args"], schemas.get(first["name"]))
            return message.model_copy(update={"tool_calls": [{**first, "args": args}, *calls[1:]]})
        bad = _invalid(first, unparsable(first["args"]))
        return message.model_copy(
            update={"tool_calls": calls[1:], "invalid_tool_calls": [bad, *invalid]}
        )
    return message


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


def _history(messages: Sequence[BaseMessage]) -> History:
    """The tool calls so far and their results, oldest first, and the user's prompt, from
    the graph's messages."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    seen = History()
    for message in messages:
        if message.type == "human" and not seen.prompt:
            seen.prompt = _text(message.content)
        elif isinstance(message, AIMessage):
            for call in message.tool_calls:
                calls[call["id"] or ""] = (call["name"], dict(call["args"]))
            for bad in message.invalid_tool_calls:  # arguments that did not parse
                calls[bad["id"] or ""] = (bad["name"] or "", {})
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
        # usage as a provider reports it, counted in words: what was read, what was written
        read = sum(len(_text(m.content).split()) for m in messages)
        wrote = len(_text(message.content).split()) + sum(
            len(json.dumps(c["args"]).split()) for c in message.tool_calls
        )
        message.usage_metadata = {
            "input_tokens": read, "output_tokens": wrote, "total_tokens": read + wrote
        }  # fmt: skip
        return ChatResult(generations=[ChatGeneration(message=message)])


_ids = itertools.count(1)


def scripted_model(policy: Policy) -> ScriptedChatModel:
    """A LangChain chat model that plays `policy` (see `faultbench.integrations.Seen`)."""
    return ScriptedChatModel(policy=policy)
