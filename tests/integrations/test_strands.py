"""Strands Agents through its `MCPClient`, with a scripted `Model`: the tool specs it builds,
how a fault reaches the agent, and the world afterwards; in-process (its `transport_callable`
may return any pair of streams: here the server runs on memory streams in the client's own
loop), over streamable HTTP and over stdio. Runs in the mcp 1.x environment (strands-agents
pins mcp<2.2). The recipe in docs/INTEGRATIONS.md is the in-process test."""

from __future__ import annotations

import contextlib
import json
import sys

import anyio
import pytest
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.memory import create_client_server_memory_streams
from strands import Agent
from strands.models.model import Model
from strands.tools.mcp import MCPClient

import faultbench
from faultbench.kernel import decode_events
from faultbench.serve import build_server, serve_in_thread

from .conftest import SHOP


class RefundThenReport(Model):
    """A scripted model: refund order 1, then say what the tool result said."""

    def update_config(self, **config):
        pass

    def get_config(self):
        return {}

    def structured_output(self, *args, **kwargs):
        raise NotImplementedError("a scripted model gives no structured output")

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs):
        results = [b["toolResult"] for m in messages for b in m["content"] if "toolResult" in b]
        yield {"messageStart": {"role": "assistant"}}
        if results:
            last = results[-1]
            text = f"{last['status']}: {last['content'][0]['text']}"
            yield {"contentBlockDelta": {"delta": {"text": text}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        use = {"toolUseId": "call_1", "name": "issue_refund"}
        yield {"contentBlockStart": {"start": {"toolUse": use}}}
        args = json.dumps({"order_id": "1", "amount": 5.0})
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": args}}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


def in_process(server):
    """A `transport_callable` for MCPClient: `server` on memory streams, in the client's loop."""

    @contextlib.asynccontextmanager
    async def transport():
        async with (
            create_client_server_memory_streams() as (client, served),
            anyio.create_task_group() as tasks,
        ):
            options = server.create_initialization_options()
            tasks.start_soon(server.run, served[0], served[1], options)
            yield client
            tasks.cancel_scope.cancel()

    return transport


def run(client: MCPClient) -> tuple[str, list]:
    with client:
        tools = client.list_tools_sync()
        agent = Agent(model=RefundThenReport(), tools=tools, callback_handler=None)
        return str(agent("Refund 5.00 on order 1.")).strip(), tools


@pytest.fixture
def timing_out():
    world = faultbench.load_world(SHOP)
    world.set_faults({"payments.issue_refund": {"script": {1: "timeout"}}})
    return world


def test_in_process_the_specs_carry_the_schemas_and_a_fault_arrives_as_an_error_result(
    timing_out,
):
    output, tools = run(MCPClient(in_process(build_server(timing_out))))
    specs = {t.tool_spec["name"]: t.tool_spec for t in tools}
    assert sorted(specs) == sorted(t.name for t in timing_out.tools)
    for tool in timing_out.tools:
        assert specs[tool.name]["inputSchema"]["json"] == tool.input_schema
        assert specs[tool.name]["description"] == tool.description
    # a tool result with status "error" and the error's text
    assert output == "error: 504 Gateway Timeout: payments.issue_refund did not answer within 30s"
    assert [r.amount for r in timing_out.refunds.where(order_id="1")] == [5.0]
    assert timing_out.trace.summary() == "issue_refund!timeout"


@pytest.fixture
def http_url(timing_out):
    with serve_in_thread(timing_out) as url:
        yield url


def test_over_http(http_url, timing_out):
    output, _ = run(MCPClient(url=http_url))
    assert output.startswith("error: 504 Gateway Timeout")
    assert [r.amount for r in timing_out.refunds.where(order_id="1")] == [5.0]


def test_over_stdio(tmp_path):
    events = tmp_path / "events.jsonl"
    argv = ["-m", "faultbench", "serve", str(SHOP), "--run", "12", "--events", str(events)]
    params = StdioServerParameters(command=sys.executable, args=argv)
    output, _ = run(MCPClient(lambda: stdio_client(params)))
    assert output.startswith("error: 504 Gateway Timeout")
    world = faultbench.replay(SHOP, decode_events(events.read_bytes()))
    assert [r.amount for r in world.refunds.where(order_id="1")] == [5.0]
