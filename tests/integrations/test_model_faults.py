"""Model faults under each framework: the fault reaches the framework through its own error or
answer types, the framework does what it does, and the world's log shows, replays and pins it."""

from __future__ import annotations

import importlib

import pytest

import faultbench
from faultbench.integrations import Reply, ToolCall
from faultbench.kernel import replay
from faultbench.kernel.lowlevel import faults_received, pin_block
from faultbench.serve import build_server

from .conftest import FRAMEWORKS, SHOP

pytestmark = pytest.mark.anyio

# every framework of the environment: Pydantic AI and the Agents SDK under mcp 2.x, the Agents
# SDK, LangGraph and smolagents under mcp 1.x (.ci/run)
MODEL_FRAMEWORKS = [
    f for f in FRAMEWORKS if f in ("pydantic_ai", "openai_agents", "langgraph", "smolagents")
]


def framework(name):
    return importlib.import_module(f"faultbench.integrations.{name}")


class LooksUpOrder:
    """Calls get_order once, then answers with what it saw."""

    def __init__(self):
        self.seen = []

    def __call__(self, seen):
        self.seen = list(seen)
        if not seen:
            return ToolCall("get_order", {"id": "1"})
        return Reply(f"ok={seen[-1].ok}")


def shop_with(rule, seed=3):
    w = faultbench.load_world(SHOP, seed=seed)
    w.set_faults({"model": rule})
    return w


async def run(name, rule, seed=3):
    mod = framework(name)
    world = shop_with(rule, seed)
    agent = LooksUpOrder()
    result = await mod.run_agent(mod.scripted_model(agent), "go", mcp=build_server(world))
    return world, agent, result


# What each framework does with each kind, as observed: (run ok?, error class name or output)
ERRORS = {
    "pydantic_ai": {
        "http_429": "ModelRateLimitError",
        "http_500": "ModelServerError",
        "http_503": "ModelUnavailableError",
        "timeout": "ModelTimeoutError",
    },
    "openai_agents": {
        "http_429": "RateLimitError",
        "http_500": "InternalServerError",
        "http_503": "InternalServerError",
        "timeout": "APITimeoutError",
    },
    # langchain-core's provider-neutral errors (RateLimitError and ServerError subclass them)
    "langgraph": {
        "http_429": "RateLimitError",
        "http_500": "ServerError",
        "http_503": "ServerError",
        "timeout": "ModelTimeoutError",
    },
    # smolagents ends the run on any model error: AgentGenerationError, the fault as its cause
    "smolagents": {
        "http_429": "ModelHTTPError",
        "http_500": "ModelHTTPError",
        "http_503": "ModelHTTPError",
        "timeout": "ModelTimeoutError",
    },
}


def model_error(name, error):
    """The model's own error in what ended the run."""
    return error.__cause__ if name == "smolagents" else error


@pytest.mark.parametrize("name", MODEL_FRAMEWORKS)
@pytest.mark.parametrize("kind", ["http_429", "http_500", "http_503", "timeout"])
async def test_an_error_kind_is_the_frameworks_own_provider_error(name, kind):
    world, _agent, result = await run(name, {"script": {1: kind}, "latency_ms": 250})
    assert not result.ok
    error = model_error(name, result.error)
    assert type(error).__name__ == ERRORS[name][kind]
    status = getattr(error, "status_code", None)
    assert status == {"http_429": 429, "http_500": 500, "http_503": 503}.get(kind)
    assert result.trace.summary() == ""  # the agent never reached a tool
    assert [(m.k, m.kind) for m in world.trace.model_calls] == [(1, kind)]
    assert world.trace.model_usage == []  # no answer, no usage
    waited = 30.0 if kind == "timeout" else 0.0
    assert (world.clock.now() - world.events[0].at).total_seconds() == pytest.approx(0.25 + waited)


@pytest.mark.parametrize("name", MODEL_FRAMEWORKS)
async def test_a_429_carries_its_retry_after(name):
    _, _, result = await run(name, {"script": {1: {"kind": "http_429", "retry_after_s": 7}}})
    if name == "openai_agents":
        assert result.error.response.headers["retry-after"] == "7"
    else:
        assert model_error(name, result.error).retry_after == 7


@pytest.mark.parametrize("name", MODEL_FRAMEWORKS)
@pytest.mark.parametrize("kind", ["stream_cut", "malformed_tool_call"])
async def test_a_broken_tool_call_reaches_the_agent_as_a_failed_call(name, kind):
    world, _agent, result = await run(name, {"script": {1: kind}})
    assert world.trace.model_calls[0].kind == kind
    assert result.ok
    if name in ("pydantic_ai", "openai_agents"):
        # Both answer a tool call whose arguments do not parse with an error the model reads
        # (Pydantic AI: a retry prompt; the Agents SDK: an error output), and neither calls
        # the tool: the world saw no call.
        assert result.output == "ok=False"
        assert result.trace.summary() == ""
        assert [m.kind for m in world.trace.model_calls] == [kind, None]
    elif name == "langgraph":
        # create_agent routes on `tool_calls`: an answer whose only call did not parse (an
        # `invalid_tool_calls` entry) has none, so the run ends there, "successfully", empty
        assert result.output == ""
        assert result.trace.summary() == ""
        assert [m.kind for m in world.trace.model_calls] == [kind]
        last = result.result["messages"][-1]
        assert last.tool_calls == []
        assert [c["name"] for c in last.invalid_tool_calls] == ["get_order"]
    else:
        # smolagents runs the call with arguments that are not an object and records an
        # error step the model reads: it asks again and the run goes on
        assert result.output == "ok=True"
        assert result.trace.summary() == "get_order"
        assert [m.kind for m in world.trace.model_calls] == [kind, None, None]
    assert len(world.trace.model_usage) == len(world.trace.model_calls)


@pytest.mark.parametrize("name", MODEL_FRAMEWORKS)
async def test_a_tool_call_missing_a_required_field_never_reaches_the_tool(name):
    # seed 4, run 0: the model's first call draws "missing_field"; seed 3 "invalid_json"
    world, agent, result = await run(name, {"script": {1: "malformed_tool_call"}}, seed=4)
    assert world.trace.model_calls[0].detail["how"] == "missing_field"
    assert result.ok
    if name == "smolagents":
        # smolagents checks the arguments against the tool's inputs itself: the call never
        # reaches the world; the model reads the error step, asks again, and the run goes on
        assert result.output == "ok=True"
        assert result.trace.summary() == "get_order"
        assert result.trace.calls[0].args == {"id": "1"}
        return
    assert result.output == "ok=False"
    # The other frameworks do not check an MCP tool's arguments against its schema: the call
    # reaches the world, whose own check refuses it
    assert result.trace.summary() == "get_order!invalid_arguments"
    assert result.trace.calls[0].args == {}  # the required id is gone
    assert not agent.seen[0].ok


@pytest.mark.parametrize("name", MODEL_FRAMEWORKS)
async def test_an_empty_completion(name):
    world, _agent, result = await run(name, {"script": {1: "empty_completion"}})
    if name in ("pydantic_ai", "smolagents"):
        # Pydantic AI asks the model again after an empty answer; smolagents records an error
        # step (no tool call to parse) and asks again: the run goes on
        assert result.ok
        assert result.output == "ok=True"
        assert result.trace.summary() == "get_order"
    else:
        # the Agents SDK and LangGraph take an empty answer as the final one: the run
        # "succeeds" with an empty output
        assert result.ok
        assert result.output == ""
        assert result.trace.summary() == ""
    assert world.trace.model_calls[0].kind == "empty_completion"


def framework_usage(name, result):
    """(input, output) tokens of a run, from the framework's own usage objects."""
    if name == "pydantic_ai":
        usage = result.result.usage
        return usage.input_tokens, usage.output_tokens
    if name == "openai_agents":
        usage = result.result.context_wrapper.usage
        return usage.input_tokens, usage.output_tokens
    if name == "langgraph":
        used = [m.usage_metadata for m in result.result["messages"] if m.type == "ai"]
        return sum(u["input_tokens"] for u in used), sum(u["output_tokens"] for u in used)
    usage = result.result.token_usage
    return usage.input_tokens, usage.output_tokens


@pytest.mark.parametrize("name", MODEL_FRAMEWORKS)
async def test_usage_is_logged_from_the_frameworks_usage_objects(name):
    world, _, result = await run(name, {"latency_ms": 100})
    used = world.trace.model_usage
    assert [u.k for u in used] == [1, 2]
    logged = sum(u.input_tokens for u in used), sum(u.output_tokens for u in used)
    assert logged == framework_usage(name, result)
    if name in ("langgraph", "smolagents"):
        assert logged[0] > 0  # their scripted models count words; the Agents SDK's report 0


@pytest.mark.parametrize("name", MODEL_FRAMEWORKS)
async def test_random_model_faults_replay_and_pin(name):
    rule = {"errors": {"stream_cut": 0.3, "malformed_tool_call": 0.3}, "latency_ms": [50, 500]}
    for seed in range(1, 30):
        world, _, first = await run(name, rule, seed)
        if any(m.kind for m in world.trace.model_calls):
            break
    kinds = [m.kind for m in world.trace.model_calls]
    # replay rebuilds the same world from the log
    assert replay(SHOP, world.events).state_hash() == world.state_hash()
    # the same seed and run meet the same faults, event for event
    again, _, second = await run(name, rule, seed)
    assert [m.kind for m in again.trace.model_calls] == kinds
    assert (first.ok, first.output) == (second.ok, second.output)
    # the pinned faults alone, under another seed, give the same run
    block = pin_block(faults_received(world.events), world.spec)
    pinned = faultbench.load_world(SHOP, seed=seed + 1000)
    pinned.set_faults(block)
    mod = framework(name)
    third = await mod.run_agent(mod.scripted_model(LooksUpOrder()), "go", mcp=build_server(pinned))
    assert [m.kind for m in pinned.trace.model_calls] == kinds
    assert (third.ok, third.output) == (first.ok, first.output)


@pytest.mark.parametrize("name", MODEL_FRAMEWORKS)
async def test_without_a_model_rule_the_model_is_not_wrapped(name):
    mod = framework(name)
    world = faultbench.load_world(SHOP, seed=3)
    result = await mod.run_agent(mod.scripted_model(LooksUpOrder()), "go", mcp=build_server(world))
    assert result.ok
    assert world.trace.model_calls == []
