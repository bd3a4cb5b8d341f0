"""The `webhook_receiver` fixture: a loopback endpoint per test that the run's served world
(`mcp_server`, `mcp_url`, `mcp_command`) delivers its webhooks to, keeping every POST (body,
headers, signature) for the test to assert on."""

from __future__ import annotations

import pytest

from ..test_webhooks import WORLD  # the refund world: created and updated events

PLAIN = """
name: plain
services:
  payments:
    records:
      refund: { id: str, amount: int }
    operations:
      issue_refund: { kind: create, record: refund }
"""

TESTS = """
import sys

import httpx2
import mcp
import pytest
from mcp import StdioServerParameters

hooks = pytest.mark.world("hooks.yaml")


@pytest.fixture
def anyio_backend():
    return "asyncio"


@hooks
@pytest.mark.runs(2)
@pytest.mark.anyio
async def test_in_process(world, mcp_server, webhook_receiver):
    webhook_receiver.statuses = [500]  # the first attempt fails; its retry is 30 s away
    async with mcp.Client(mcp_server) as client:
        await client.call_tool("issue_refund", {"amount": 5})
        await client.call_tool("issue_refund", {"amount": 6})
    got = webhook_receiver.received
    assert [(r.delivery, r.attempt, r.path) for r in got] == [("dlv_1", 1, "/hooks"), ("dlv_2", 1, "/hooks")]
    assert got[0].signature.startswith("t=") and ",v1=" in got[0].signature
    assert got[0].headers["content-type"] == "application/json"
    events = webhook_receiver.events()  # checked with the world's secret
    assert [e["data"]["object"]["amount"] for e in events] == [5, 6]
    assert events == world.call("list_events").value["data"]
    outcomes = [e.outcome for e in world.events if type(e).__name__ == "WebhookAttempted"]
    assert outcomes == ["failed", "succeeded"]


@hooks
@pytest.mark.anyio
async def test_over_http_a_clock_move_delivers(world, mcp_url, webhook_receiver):
    async with mcp.Client(mcp_url) as client:
        await client.call_tool("issue_refund", {"amount": 5})
    base = mcp_url.removesuffix("/mcp")
    async with httpx2.AsyncClient(timeout=10) as http:
        moved = await http.post(f"{base}/faultbench/clock", json={"advance": 600})
    assert moved.status_code == 200
    types = [e["type"] for e in webhook_receiver.events()]
    assert types == ["refund.created", "refund.updated"]  # the update fired at 2 m


@hooks
@pytest.mark.anyio
async def test_over_stdio(mcp_command, webhook_receiver):
    assert mcp_command[mcp_command.index("--webhook-url") + 1] == webhook_receiver.url
    params = StdioServerParameters(command=mcp_command[0], args=mcp_command[1:])
    async with mcp.Client(params, read_timeout_seconds=30) as client:
        await client.call_tool("issue_refund", {"amount": 7})
    [event] = webhook_receiver.events()
    assert event["data"]["object"]["amount"] == 7
    served = mcp_command.world()
    assert [e.outcome for e in served.events if type(e).__name__ == "WebhookAttempted"] == ["succeeded"]


@pytest.mark.world("plain.yaml")
def test_a_world_without_webhooks(mcp_server, webhook_receiver):
    pass


def test_outside_a_run(webhook_receiver):
    from faultbench import load_world
    from faultbench.webhooks import deliver

    world = load_world("hooks.yaml")
    world.call("issue_refund", {"amount": 3})
    deliver(world, webhook_receiver.url)
    with pytest.raises(ValueError, match="no secret"):
        webhook_receiver.events()
    assert [e["type"] for e in webhook_receiver.events("whsec_test")] == ["refund.created"]
"""


def test_the_served_world_delivers_to_the_webhook_receiver(pytester: pytest.Pytester):
    pytester.makefile(".yaml", hooks=WORLD, plain=PLAIN)
    pytester.makepyfile(test_hooks=TESTS)
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\naddopts = -p no:cacheprovider\n"
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:randomly")
    result.assert_outcomes(passed=5, errors=1)  # a set-up problem, not an agent failure
    result.stdout.fnmatch_lines(
        ["*test_a_world_without_webhooks*takes webhook_receiver, but the world 'plain' has no "
         "webhooks: block*"]
    )  # fmt: skip
