"""faultbench.integrations.pydantic_ai: what Pydantic AI's own behaviour turns into."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.mcp import MCPToolset

from faultbench.integrations import Reply, ToolCall
from faultbench.integrations.pydantic_ai import (
    WorldToolset,
    WorldTransport,
    run_agent,
    scripted_model,
    toolset,
)
from faultbench.serve import build_server

from .conftest import FailsThenFinds, cancel_first_placed

pytestmark = pytest.mark.anyio


async def test_a_spent_retry_budget_is_a_failed_run_not_an_exception(shop):
    # The agent insists on an order that does not exist: every call is a tool error, which
    # Pydantic AI turns into a retry prompt until the tool's retry budget is spent.
    def stubborn(seen):
        return ToolCall("get_order", {"id": "nope"})

    run = await run_agent(scripted_model(stubborn), "go", mcp=build_server(shop), retries=2)
    assert not run.ok
    assert isinstance(run.error, UnexpectedModelBehavior)
    assert run.output is None
    assert run.result is None
    assert run.trace.summary() == "get_order!not_found → get_order!not_found → get_order!not_found"
    assert len(run.trace.failures()) == 3


async def test_the_policy_sees_tool_errors_as_failed_results(shop):
    agent = FailsThenFinds()
    run = await run_agent(scripted_model(agent), "go", mcp=build_server(shop))
    assert run.ok
    assert run.output == "ok"
    failed, found = agent.seen
    assert (failed.tool, failed.args, failed.ok, failed.value) == (
        "get_order",
        {"id": "nope"},
        False,
        None,
    )
    assert failed.text.startswith("404 Not Found")
    assert found.ok
    assert found.value["id"] == "1"


async def test_system_prompt_and_agent_kwargs_reach_the_agent(shop):
    prompts = []

    def agent(seen):
        return Reply("done")

    model = scripted_model(agent)
    run = await run_agent(
        model, "go", mcp=build_server(shop), system_prompt="You are careful.", name="careful"
    )
    assert run.ok
    prompts = [
        p.content
        for m in run.result.all_messages()
        for p in m.parts
        if p.part_kind == "system-prompt"
    ]
    assert prompts == ["You are careful."]


@pytest.mark.parametrize("transport", ["direct", "mcp"])
async def test_toolset_plugs_the_world_into_your_own_agent(shop, transport):
    placed = shop.orders.pick(status="placed")
    tools = toolset(build_server(shop), transport=transport)
    # the default skips the MCP session (tests/integrations/test_direct.py)
    assert isinstance(tools, WorldToolset if transport == "direct" else MCPToolset)
    agent = Agent(scripted_model(cancel_first_placed), toolsets=[tools])
    result = await agent.run("Cancel an order.")
    assert result.output == f"cancelled order {placed.id}: cancelled"
    assert shop.orders.get(placed.id).status == "cancelled"
    assert repr(WorldTransport(build_server(shop))) == "<WorldTransport(world='shop')>"


async def test_expect_reads_an_agent_run_its_calls_tokens_and_failure(shop):
    from faultbench.testing import expect

    run = await run_agent(scripted_model(FailsThenFinds()), "go", mcp=build_server(shop))
    (
        expect(run)
        .output_contains("ok")
        .tools_called("get_order")
        .tools_not_called("issue_refund")
        .tokens_under(10_000)
    )
    with pytest.raises(AssertionError, match=r"Expected tokens under 1\. Instead, received: \d+"):
        expect(run).tokens_under(1)

    def stubborn(seen):
        return ToolCall("get_order", {"id": "nope"})

    failed = await run_agent(scripted_model(stubborn), "go", mcp=build_server(shop), retries=1)
    from faultbench.testing import AgentResult

    result = AgentResult.of(failed)
    assert not result.passed
    assert isinstance(result.error, UnexpectedModelBehavior)
    assert result.tools == ["get_order", "get_order"]
