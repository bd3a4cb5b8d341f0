"""LangChain / LangGraph (`create_agent`) through langchain-mcp-adapters: the tools it builds,
how a fault reaches the agent, and the world afterwards. Runs in the mcp 1.x environment
(langchain-mcp-adapters requires mcp<2). Transports: tests/integrations/test_transports.py."""

from __future__ import annotations

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
