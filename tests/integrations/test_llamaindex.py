"""LlamaIndex (`FunctionAgent`) through llama-index-tools-mcp, with LlamaIndex's own
`MockFunctionCallingLLM` scripted: the tools it builds, how a fault reaches the agent, and
the world afterwards; in-process (`McpToolSpec` over `mcp.Client(server)`), over HTTP and
over stdio (`BasicMCPClient`). Runs in the main environment (llama-index-tools-mcp requires
mcp 2.x). The recipe in docs/INTEGRATIONS.md is this file's in-process test."""

from __future__ import annotations

import sys

import mcp
import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.tools.mcp import BasicMCPClient, McpToolSpec

import faultbench
from faultbench.serve import build_server, serve_in_thread

from .conftest import SHOP

pytestmark = pytest.mark.anyio


def refund_then_report(messages, **kwargs) -> ChatMessage:
    """The scripted model: refund order 1, then answer with what the tool said."""
    results = [m for m in messages if m.role == MessageRole.TOOL]
    if not results:
        call = ToolCallBlock(
            tool_call_id="call_1",
            tool_name="issue_refund",
            tool_kwargs={"order_id": "1", "amount": 5.0},
        )
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])
    return ChatMessage(role=MessageRole.ASSISTANT, content=f"tool said: {results[-1].content}")


async def run(tools) -> str:
    agent = FunctionAgent(
        tools=tools, llm=MockFunctionCallingLLM(response_generator=refund_then_report)
    )
    return str(await agent.run(user_msg="Refund 5.00 on order 1."))


@pytest.fixture
def timing_out():
    world = faultbench.load_world(SHOP)
    world.set_faults({"payments.issue_refund": {"script": {1: "timeout"}}})
    return world


async def test_the_tools_carry_the_worlds_schemas(shop):
    async with mcp.Client(build_server(shop)) as client:
        tools = await McpToolSpec(client=client).to_tool_list_async()
    by_name = {t.metadata.name: t for t in tools}
    assert list(by_name) == [t.name for t in shop.tools]
    for tool in shop.tools:
        built = by_name[tool.name].metadata
        schema = built.fn_schema.model_json_schema()  # rebuilt as a pydantic model
        assert set(schema.get("required", ())) == set(tool.input_schema.get("required", ()))
        assert set(schema["properties"]) == set(tool.input_schema["properties"])
        assert built.description == tool.description
    reason = by_name["create_return"].metadata.fn_schema.model_json_schema()["properties"]["reason"]
    # the tool schema's JSON-Schema `default` becomes the model field's default (not a nullable)
    assert reason["enum"] == ["damaged", "wrong_item", "not_needed", "other"]
    assert reason["default"] == "other"


async def test_in_process_a_fault_reaches_the_agent_flagged_is_error(timing_out):
    async with mcp.Client(build_server(timing_out)) as client:
        output = await run(await McpToolSpec(client=client).to_tool_list_async())
    # The tool's output is the SDK's CallToolResult, which the agent reads as its repr.
    assert "is_error=True" in output
    assert "504 Gateway Timeout: payments.issue_refund did not answer within 30s" in output
    assert [r.amount for r in timing_out.refunds.where(order_id="1")] == [5.0]
    assert timing_out.trace.summary() == "issue_refund!timeout"


@pytest.fixture
def http_url(timing_out):
    with serve_in_thread(timing_out) as url:
        yield url


async def test_over_http(http_url, timing_out):
    output = await run(await McpToolSpec(client=BasicMCPClient(http_url)).to_tool_list_async())
    assert "is_error=True" in output
    assert "504 Gateway Timeout" in output
    assert [r.amount for r in timing_out.refunds.where(order_id="1")] == [5.0]


async def test_over_stdio_every_call_is_a_new_server(tmp_path):
    # BasicMCPClient opens a new session for every call: over stdio, a new process, so each
    # call sees the world as the file seeds it. Use HTTP or in-process for stateful runs.
    client = BasicMCPClient(
        sys.executable, args=["-m", "faultbench", "serve", str(SHOP), "--no-faults"]
    )
    spec = McpToolSpec(client=client)
    tools = {t.metadata.name: t for t in await spec.to_tool_list_async()}
    first = await tools["issue_refund"].acall(order_id="1", amount=5.0)
    again = await tools["list_refunds"].acall(order_id="1")
    assert not first.raw_output.is_error
    assert again.raw_output.structured_content in ([], {"result": []})  # the refund is gone
