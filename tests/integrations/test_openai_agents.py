"""faultbench.integrations.openai_agents: what the Agents SDK's own behaviour turns into."""

from __future__ import annotations

import pytest
from agents import Agent, Runner
from agents.exceptions import MaxTurnsExceeded
from agents.testing.model import UnexpectedModelCall

from faultbench.integrations import Reply, ToolCall
from faultbench.integrations.openai_agents import (
    WorldDirectServer,
    WorldMCPServer,
    mcp_server,
    run_agent,
    scripted_model,
)
from faultbench.serve import build_server

from .conftest import FailsThenFinds, cancel_first_placed

pytestmark = pytest.mark.anyio


async def test_running_out_of_turns_is_a_failed_run_not_an_exception(shop):
    def stubborn(seen):
        return ToolCall("get_order", {"id": "nope"})

    run = await run_agent(scripted_model(stubborn), "go", mcp=build_server(shop), max_turns=3)
    assert not run.ok
    assert isinstance(run.error, MaxTurnsExceeded)
    assert run.output is None
    assert run.result is None
    assert run.trace.count("get_order", ok=False) == 3


async def test_a_scripted_model_plays_at_most_its_max_turns(shop):
    # its steps are made one turn ahead (not all up front): it still stops at max_turns
    def stubborn(seen):
        return ToolCall("get_order", {"id": "nope"})

    model = scripted_model(stubborn, max_turns=4)
    assert model.remaining_steps == 1
    with pytest.raises(UnexpectedModelCall, match="#5: no scripted steps remain"):
        await run_agent(model, "go", mcp=build_server(shop), max_turns=10)
    assert shop.trace.count("get_order", ok=False) == 4


async def test_the_policy_sees_error_text_as_a_failed_result(shop):
    agent = FailsThenFinds()
    run = await run_agent(scripted_model(agent), "go", mcp=build_server(shop))
    assert run.ok
    assert run.output == "ok"
    failed, found = agent.seen
    assert (failed.tool, failed.ok, failed.value) == ("get_order", False, None)
    assert failed.text.startswith("404 Not Found")
    assert found.ok
    assert found.value["id"] == "1"


async def test_system_prompt_becomes_the_agents_instructions(shop):
    model = scripted_model(lambda seen: Reply("done"))
    run = await run_agent(model, "go", mcp=build_server(shop), system_prompt="Be careful.")
    assert run.ok
    assert model.first_call.system_instructions == "Be careful."
    assert {t.name for t in model.first_call.tools} >= {"issue_refund", "cancel_order"}


@pytest.mark.parametrize("transport", ["direct", "mcp"])
async def test_mcp_server_plugs_the_world_into_your_own_agent(shop, transport):
    placed = shop.orders.pick(status="placed")
    server = mcp_server(build_server(shop), transport=transport)
    assert isinstance(server, WorldMCPServer)
    # the default skips the MCP session (tests/integrations/test_direct.py)
    assert isinstance(server, WorldDirectServer) == (transport == "direct")
    async with server:
        agent = Agent(name="a", model=scripted_model(cancel_first_placed), mcp_servers=[server])
        result = await Runner.run(agent, "Cancel an order.")
    assert result.final_output == f"cancelled order {placed.id}: cancelled"
    assert shop.orders.get(placed.id).status == "cancelled"
    with pytest.raises(RuntimeError, match="not connected"):
        await server.list_tools()
