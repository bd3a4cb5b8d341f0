"""LangChain / LangGraph (`create_agent`) through langchain-mcp-adapters: the tools it builds,
how a fault reaches the agent, and the world afterwards. Runs in the mcp 1.x environment
(langchain-mcp-adapters requires mcp<2). Transports: tests/integrations/test_transports.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from langchain_core.messages import ToolMessage

import faultbench
from faultbench.integrations import Reply, ToolCall
from faultbench.integrations.langgraph import load_tools, run_agent, scripted_model
from faultbench.serve import build_server

from .conftest import SHOP

pytestmark = pytest.mark.anyio


@pytest.fixture
def timing_out():
    """The shop whose first refund times out after it was written."""
    world = faultbench.load_world(SHOP)
    world.set_faults({"payments.issue_refund": {"script": {1: "timeout"}}})
    return world


def refund_once(seen):
    if not seen:
        return ToolCall("issue_refund", {"order_id": "1", "amount": 5.0})
    return Reply(f"refund answered ok={seen[-1].ok}: {seen[-1].text[:40]}")


async def test_the_tools_carry_the_worlds_schemas(shop):
    async with load_tools(build_server(shop)) as tools:
        by_name = {t.name: t for t in tools}
    assert list(by_name) == [t.name for t in shop.tools]
    for tool in shop.tools:
        built = by_name[tool.name]
        assert built.args_schema == tool.input_schema  # required fields, enums, types as listed
        assert built.description == tool.description
    refund = by_name["issue_refund"].args_schema
    assert set(refund["required"]) == {"order_id", "amount"}
    assert by_name["get_order"].metadata["readOnlyHint"] is True


async def test_a_fault_reaches_the_agent_as_an_error_tool_message(timing_out):
    shop = timing_out
    run = await run_agent(scripted_model(refund_once), "refund", mcp=build_server(shop))
    assert run.ok, run.error
    (answer,) = [m for m in run.result["messages"] if isinstance(m, ToolMessage)]
    assert answer.status == "error"
    assert answer.content[0]["text"].startswith("504 Gateway Timeout: payments.issue_refund")
    assert run.output == "refund answered ok=False: 504 Gateway Timeout: payments.issue_refu"
    # the timeout fired after the write: the refund is in the world all the same
    assert [r.amount for r in shop.refunds.where(order_id="1")] == [5.0]
    assert run.trace.summary() == "issue_refund!timeout"


async def test_a_success_carries_the_text_and_the_structured_content(shop):
    run = await run_agent(scripted_model(refund_once), "refund", mcp=build_server(shop))
    (answer,) = [m for m in run.result["messages"] if isinstance(m, ToolMessage)]
    assert answer.status == "success"
    assert answer.artifact["structured_content"]["amount"] == 5.0
    assert run.output.startswith("refund answered ok=True")


async def test_running_out_of_steps_is_a_failed_run_not_an_exception(shop):
    forever = scripted_model(lambda seen: ToolCall("get_order", {"id": "1"}))
    run = await run_agent(forever, "loop", mcp=build_server(shop), recursion_limit=6)
    assert not run.ok
    assert type(run.error).__name__ == "GraphRecursionError"
    assert run.output is None
    assert run.trace.summary() == "get_order → get_order → get_order"


# --- model faults (the kinds under every framework: tests/integrations/test_model_faults.py) --


def looks_up_order(seen):
    if not seen:
        return ToolCall("get_order", {"id": "1"})
    return Reply(f"ok={seen[-1].ok}")


async def test_model_retry_middleware_retries_the_retryable_model_faults():
    from langchain.agents.middleware import ModelRetryMiddleware

    world = faultbench.load_world(SHOP, seed=3)
    world.set_faults({"model": {"script": {1: "http_429", 2: "http_503"}}})
    retry = ModelRetryMiddleware(max_retries=2, initial_delay=0, jitter=False)
    run = await run_agent(
        scripted_model(looks_up_order), "go", mcp=build_server(world), middleware=[retry]
    )
    assert run.ok
    assert run.output == "ok=True"
    assert [m.kind for m in world.trace.model_calls] == ["http_429", "http_503", None, None]
    assert run.trace.summary() == "get_order"


async def test_spent_model_retries_end_in_the_middlewares_failure_message():
    from langchain.agents.middleware import ModelRetryMiddleware
    from langchain_core.exceptions import ModelAPIError

    world = faultbench.load_world(SHOP, seed=3)
    world.set_faults({"model": {"script": {1: "http_500", 2: "http_500", 3: "timeout"}}})
    retry = ModelRetryMiddleware(max_retries=2, initial_delay=0, jitter=False)
    run = await run_agent(
        scripted_model(looks_up_order), "go", mcp=build_server(world), middleware=[retry]
    )
    # on_failure="continue" (its default): the error's text becomes the agent's answer
    assert run.ok
    assert run.output.startswith("Model call failed after 3 attempts with ModelTimeoutError")
    assert [m.kind for m in world.trace.model_calls] == ["http_500", "http_500", "timeout"]
    # without the middleware, nothing retries: the first error ends the run
    world = faultbench.load_world(SHOP, seed=3)
    world.set_faults({"model": {"script": {1: "http_500"}}})
    run = await run_agent(scripted_model(looks_up_order), "go", mcp=build_server(world))
    assert isinstance(run.error, ModelAPIError)
    assert run.error.is_retryable


async def test_your_own_agent_wraps_its_model():
    from langchain.agents import create_agent

    from faultbench.integrations.langgraph import FaultyChatModel

    world = faultbench.load_world(SHOP, seed=3)
    world.set_faults({"model": {"latency_ms": 200, "script": {1: "stream_cut"}}})
    model = FaultyChatModel.around(scripted_model(looks_up_order), world)
    async with load_tools(build_server(world)) as tools:
        agent = create_agent(model, tools)
        result = await agent.ainvoke({"messages": [{"role": "user", "content": "go"}]})
    last = result["messages"][-1]
    assert last.response_metadata["finish_reason"] == "length"
    # the cut call's arguments, half of them: not JSON
    assert last.invalid_tool_calls[0]["args"] == '{"id"'
    assert [(m.kind, m.model) for m in world.trace.model_calls] == [
        ("stream_cut", "ScriptedChatModel")
    ]
    assert world.clock.now() - world.events[0].at == timedelta(milliseconds=200)


def test_the_wrapper_answers_a_synchronous_call_too():
    from langchain_core.exceptions import ModelAPIError

    from faultbench.integrations.langgraph import FaultyChatModel

    world = faultbench.load_world(SHOP, seed=3)
    world.set_faults({"model": {"script": {1: "http_503", 2: "empty_completion"}}})
    model = FaultyChatModel.around(scripted_model(looks_up_order), world)
    with pytest.raises(ModelAPIError) as raised:
        model.invoke("go")
    assert raised.value.status_code == 503
    answer = model.invoke("go")  # the scripted model's tool call, emptied
    assert (answer.content, answer.tool_calls) == ("", [])
    assert model.invoke("go").tool_calls[0]["name"] == "get_order"
    assert [m.kind for m in world.trace.model_calls] == ["http_503", "empty_completion", None]
    assert [u.k for u in world.trace.model_usage] == [2, 3]
