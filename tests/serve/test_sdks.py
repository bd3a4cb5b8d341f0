"""The server under whichever MCP SDK is installed, 1.x or 2.x, through that SDK's own client
(tests/mcp_client.py), in-process, over stdio and over streamable HTTP. CI runs this file in
both environments (.ci/run); the other files of tests/serve also test what only 2.x has
(protocol 2026-07-28, `mode=`), and run in the main environment."""

from __future__ import annotations

import contextlib
import json
import sys
import urllib.request

import pytest

import faultbench
from faultbench.kernel import decode_events
from faultbench.serve import MCP_VERSION, build_server, serve_in_thread

from ..mcp_client import MCP_MAJOR, open_client
from .serve_helpers import SHOP

pytestmark = pytest.mark.anyio

TRANSPORTS = ["in_process", "stdio", "http"]


@pytest.fixture(params=TRANSPORTS)
def reach(request, tmp_path):
    """(what the client connects to, the world or None, the stdio events file or None)."""
    if request.param == "stdio":
        events = tmp_path / "events.jsonl"
        argv = [sys.executable, "-m", "faultbench.cli", "serve", str(SHOP), "--events", str(events)]
        argv.append("--debug-meta")  # the test reads the fault kinds it names
        yield argv, None, events
        return
    world = faultbench.load_world(SHOP)
    if request.param == "in_process":
        yield build_server(world, debug=True), world, None
        return
    with serve_in_thread(build_server(world, debug=True)) as url:
        yield url, world, None


def test_the_environment_is_the_one_ci_asked_for():
    assert MCP_VERSION.split(".")[0] == str(MCP_MAJOR)
    assert MCP_MAJOR in (1, 2)


async def test_tools_faults_and_results_reach_the_sdks_client(reach):
    target, world, events = reach
    async with open_client(target) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        spec = faultbench.load_world(SHOP, faults=False)
        assert list(listed) == [t.name for t in spec.tools]
        for tool in spec.tools:
            assert listed[tool.name].input_schema == tool.input_schema
            assert listed[tool.name].description == tool.description
        assert listed["get_order"].annotations.read_only_hint is True
        # output schemas on either SDK: the client checks every structured answer against it
        assert listed["get_order"].output_schema["required"][0] == "id"
        # a list's: the array itself at 2026-07-28, else wrapped as its answer is (`result`)
        listing = listed["list_orders"].output_schema
        assert listing["type"] == "array" or listing["properties"]["result"]["type"] == "array"
        assert listed["return_order"].output_schema is None  # custom: none declared
        assert listed["delete_order"].annotations.destructive_hint is True
        # a custom operation: MCP's conservative defaults said out loud; no tool is open-world
        custom = listed["return_order"].annotations
        assert (custom.read_only_hint, custom.destructive_hint) == (False, True)
        assert custom.idempotent_hint is False
        assert all(t.annotations.open_world_hint is False for t in listed.values())
        assert listed["get_order"].title == "Get order"
        assert all(t.title for t in listed.values())

        # The first issue_refund is scripted to time out after committing.
        timeout = await client.call_tool("issue_refund", {"order_id": "1", "amount": 3.0})
        assert timeout.is_error
        assert timeout.content[0].text.startswith("504 Gateway Timeout")
        assert timeout.meta["fault"] == "timeout"
        assert timeout.structured_content is None

        # The first get_order is scripted to answer 404 for a record that exists.
        missing = await client.call_tool("get_order", {"id": "1"})
        assert missing.is_error
        assert missing.meta["fault"] == "not_found"
        got = await client.call_tool("get_order", {"id": "1"})
        assert not got.is_error
        assert got.structured_content["id"] == "1"
        assert json.loads(got.content[0].text) == got.structured_content
        assert got.meta["call_id"].startswith("c")

        refunds = await client.call_tool("list_refunds", {})
        rows = refunds.structured_content
        # 2025 protocol (always on 1.x): a list arrives wrapped in an object
        rows = rows["result"] if isinstance(rows, dict) else rows
        assert [r["amount"] for r in rows] == [3.0]

        bad = await client.call_tool("get_order", {"id": ["1"]})
        assert bad.is_error
        assert bad.meta["error_kind"] == "invalid_arguments"
        unknown = await client.call_tool("nope", {})
        assert unknown.is_error
    if world is None:  # stdio: the server's log replays to the world it served
        world = faultbench.replay(SHOP, decode_events(events.read_bytes()))
    assert [r.amount for r in world.refunds.all()] == [3.0]
    assert world.trace.summary() == (
        "issue_refund!timeout → get_order!not_found → get_order!stale_read → list_refunds"
        " → get_order!invalid_arguments → nope!unknown_tool"
    )


@pytest.fixture
def served():
    """(url, world): the fault-free shop over HTTP from a thread (started outside the test's
    event loop, as the plugin's `mcp_url` is). `served.isolate`: one world per session."""
    world = faultbench.load_world(SHOP, faults=False)

    @contextlib.contextmanager
    def start(*, isolate: bool = False):
        with serve_in_thread(build_server(world, isolate=isolate)) as url:
            yield url

    return world, start


@pytest.fixture
def isolated(served):
    world, start = served
    with start(isolate=True) as url:
        yield url, world


@pytest.fixture
def shared(served):
    world, start = served
    with start() as url:
        yield url, world


async def test_isolated_sessions_get_their_own_world_over_http(isolated):
    url, world = isolated
    async with open_client(url) as first, open_client(url) as second:
        created = await first.call_tool("create_order", {"status": "placed", "total": 1.0})
        assert not created.is_error
        new_id = created.structured_content["id"]
        assert not (await first.call_tool("get_order", {"id": new_id})).is_error
        assert (await second.call_tool("get_order", {"id": new_id})).is_error
        with urllib.request.urlopen(url.removesuffix("/mcp") + "/faultbench/sessions") as r:
            assert len(json.load(r)["sessions"]) == 2
    assert world.orders.get(new_id) is None  # the shared world was never written


async def test_the_control_api_answers_beside_the_sdks_endpoint(shared):
    url, world = shared
    base = url.removesuffix("/mcp") + "/faultbench"
    async with open_client(url) as client:
        await client.call_tool("update_order", {"id": "2", "status": "returned"})
    with urllib.request.urlopen(base + "/state") as r:
        state = json.load(r)
    with urllib.request.urlopen(base + "/events?since=0") as r:
        events = decode_events(r.read())
    assert state["seq"] == world.events[-1].seq
    assert any(type(e).__name__ == "RecordUpdated" for e in events)
    assert world.orders.get("2").status == "returned"
