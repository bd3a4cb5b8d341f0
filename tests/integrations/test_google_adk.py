"""Google ADK (`LlmAgent`) through its `McpToolset`, with a scripted `BaseLlm`: the tools it
builds, how a fault reaches the agent, and the world afterwards, over streamable HTTP and
stdio (`McpToolset` takes connection parameters, not a session, so there is no in-process
path). Runs in the mcp 1.x environment (google-adk takes either SDK, but its pin of
opentelemetry-api keeps it from the main one's fastmcp). The recipe in docs/INTEGRATIONS.md is the HTTP test."""

from __future__ import annotations

import sys

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.tools.mcp_tool import (
    McpToolset,
    StdioConnectionParams,
    StreamableHTTPConnectionParams,
)
from google.genai import types
from mcp import StdioServerParameters

import faultbench
from faultbench.kernel import decode_events
from faultbench.serve import serve_in_thread

from .conftest import SHOP

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _no_google_credentials(monkeypatch):
    """ADK probes Google credentials for mTLS on HTTP connections: off, so nothing leaves the
    machine (and no metadata server is asked)."""
    monkeypatch.setenv("GOOGLE_API_USE_CLIENT_CERTIFICATE", "false")
    monkeypatch.setenv("NO_GCE_CHECK", "true")


class RefundThenReport(BaseLlm):
    """A scripted model: refund order 1, then answer with what the tool said."""

    async def generate_content_async(self, llm_request, stream=False):
        answers = [
            p.function_response.response
            for c in llm_request.contents
            for p in c.parts or []
            if p.function_response
        ]
        if not answers:
            call = types.FunctionCall(name="issue_refund", args={"order_id": "1", "amount": 5.0})
            part = types.Part(function_call=call)
        else:
            last = answers[-1]
            part = types.Part(text=f"isError={last.get('isError')}: {last['content'][0]['text']}")
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


async def run(connection) -> tuple[str, list]:
    toolset = McpToolset(connection_params=connection)
    try:
        tools = await toolset.get_tools()
        agent = LlmAgent(name="support", model=RefundThenReport(model="scripted"), tools=[toolset])
        runner = InMemoryRunner(agent=agent, app_name="shop")
        session = await runner.session_service.create_session(app_name="shop", user_id="u")
        message = types.Content(role="user", parts=[types.Part(text="Refund 5.00 on order 1.")])
        texts = [
            part.text
            async for event in runner.run_async(
                user_id="u", session_id=session.id, new_message=message
            )
            for part in (event.content.parts if event.content else None) or []
            if part.text
        ]
    finally:
        await toolset.close()
    return texts[-1], tools


@pytest.fixture
def timing_out():
    world = faultbench.load_world(SHOP)
    world.set_faults({"payments.issue_refund": {"script": {1: "timeout"}}})
    return world


@pytest.fixture
def http_url(timing_out):
    with serve_in_thread(timing_out) as url:
        yield url


async def test_over_http_the_tools_carry_the_schemas_and_a_fault_arrives_flagged(
    http_url, timing_out
):
    output, tools = await run(StreamableHTTPConnectionParams(url=http_url))
    by_name = {t.name: t for t in tools}
    assert sorted(by_name) == sorted(t.name for t in timing_out.tools)
    for tool in timing_out.tools:
        declared = by_name[tool.name]._get_declaration()
        assert declared.parameters_json_schema == tool.input_schema
        assert declared.description == tool.description
    # the function response is the CallToolResult's dump: `isError` and the error's text
    assert (
        output
        == "isError=True: 504 Gateway Timeout: payments.issue_refund did not answer within 30s"
    )
    assert [r.amount for r in timing_out.refunds.where(order_id="1")] == [5.0]
    assert timing_out.trace.summary() == "issue_refund!timeout"


async def test_over_stdio(tmp_path):
    events = tmp_path / "events.jsonl"
    argv = ["-m", "faultbench", "serve", str(SHOP), "--run", "12", "--events", str(events)]
    params = StdioServerParameters(command=sys.executable, args=argv)
    output, _ = await run(StdioConnectionParams(server_params=params, timeout=30))
    world = faultbench.replay(SHOP, decode_events(events.read_bytes()))
    # run 12 of the shop's own faults: the first refund times out after it was written
    assert output.startswith("isError=True: 504 Gateway Timeout")
    assert world.trace.summary() == "issue_refund!timeout"
    assert [r.amount for r in world.refunds.where(order_id="1")] == [5.0]
