"""Effects that happen later, served: over HTTP the control API's clock moves the world's
virtual time, so a refund scheduled by one tool call succeeds, and the event feed's
`list_events` tool reports it, as it does in process."""

from __future__ import annotations

import mcp
import pytest

from faultbench.kernel import World
from faultbench.kernel.lowlevel import load_spec

from .test_http import control, running

pytestmark = pytest.mark.anyio

WORLD = """\
name: refunds
services:
  payments:
    records:
      refund: { id: str, amount: int, status: "enum[pending, succeeded, failed]" }
    operations:
      issue_refund:
        kind: create
        record: refund
        set: { status: pending }
        then: { after: [30s, 5m], set: { status: succeeded } }
      get_refund: { kind: get, record: refund }
events:
  refund.updated: { record: refund, on: [update] }
"""


@pytest.fixture
def anyio_backend():
    return "trio"


async def test_the_control_clock_fires_a_scheduled_effect_and_the_feed_shows_it():
    world = World.from_spec(load_spec("<refunds>", text=WORLD))
    async with (
        running(world) as server,
        mcp.Client(server.url, read_timeout_seconds=15) as client,
    ):
        tools = [t.name for t in (await client.list_tools()).tools]
        assert "list_events" in tools
        issued = await client.call_tool("issue_refund", {"amount": 5})
        rid = issued.structured_content["id"]
        assert issued.structured_content["status"] == "pending"
        empty = await client.call_tool("list_events", {})
        assert empty.structured_content["data"] == []

        moved = await control(server.base, "POST", "clock", json={"advance": "5m"})
        assert moved.status_code == 200

        got = await client.call_tool("get_refund", {"id": rid})
        assert got.structured_content["status"] == "succeeded"
        feed = await client.call_tool("list_events", {"limit": 5})
        [event] = feed.structured_content["data"]
        assert event["type"] == "refund.updated"
        assert event["data"]["previous_attributes"] == {"status": "pending"}
        assert feed.structured_content["has_more"] is False
