"""Both frameworks reach a world through every transport: in-process, stdio and HTTP."""

from __future__ import annotations

import importlib
import json
import urllib.request
from pathlib import Path

import pytest

from faultbench.integrations import Reply, ServedUrl, ToolCall
from faultbench.serve import build_server

from .conftest import FRAMEWORKS, cancel_first_placed, stdio_command

pytestmark = pytest.mark.anyio


def framework(name):
    return importlib.import_module(f"faultbench.integrations.{name}")


@pytest.mark.parametrize("bare", [False, True], ids=["server", "world"])
@pytest.mark.parametrize("name", FRAMEWORKS)
async def test_in_process(name, shop, bare):
    # every framework takes a bare World too (LangGraph and smolagents through a WorldServer
    # made for it: they need an MCP session or a URL)
    placed = shop.orders.pick(status="placed")
    fw = framework(name)
    run = await fw.run_agent(
        fw.scripted_model(cancel_first_placed),
        "Cancel an order.",
        mcp=shop if bare else build_server(shop),
    )
    assert run.ok, run.error
    assert run.output == f"cancelled order {placed.id}: cancelled"
    assert shop.orders.get(placed.id).status == "cancelled"
    assert run.world is shop
    assert run.trace.summary() == "list_orders → cancel_order → get_order"
    assert run.trace.calls_to("cancel_order")[0].value["status"] == "cancelled"


@pytest.mark.parametrize("name", FRAMEWORKS)
async def test_in_process_trace_holds_this_run_only(name, shop):
    shop.call("get_customer", {"id": "1"})
    fw = framework(name)
    server = build_server(shop)
    first = await fw.run_agent(fw.scripted_model(cancel_first_placed), "go", mcp=server)
    second = await fw.run_agent(fw.scripted_model(cancel_first_placed), "go", mcp=server)
    assert first.trace.count() == 3
    assert second.trace.count() == 3
    assert shop.trace.count() == 7
    # the second run found the next placed order: the first one's write is in the world
    assert first.output != second.output


@pytest.mark.parametrize("name", FRAMEWORKS)
async def test_stdio(name, shop):
    placed = shop.orders.pick(status="placed")
    fw = framework(name)
    command = stdio_command("--no-faults")
    for _ in range(2):  # a new server per run: the second run starts from the seeded world
        run = await fw.run_agent(fw.scripted_model(cancel_first_placed), "go", mcp=command)
        assert run.ok, run.error
        assert run.output == f"cancelled order {placed.id}: cancelled"
        assert run.trace.summary() == "list_orders → cancel_order → get_order"
        # the world rebuilt from the server's event log
        assert run.world.orders.get(placed.id).status == "cancelled"
        assert run.world.trace.count() == 3


@pytest.mark.parametrize("name", FRAMEWORKS)
async def test_stdio_command_as_one_string_with_its_own_events_file(name, shop, tmp_path):
    events = tmp_path / "run.jsonl"
    fw = framework(name)
    command = " ".join([*stdio_command("--no-faults"), "--events", str(events)])
    run = await fw.run_agent(fw.scripted_model(cancel_first_placed), "go", mcp=command)
    assert run.ok, run.error
    assert events.exists()
    assert run.trace.summary() == "list_orders → cancel_order → get_order"


@pytest.mark.parametrize("name", FRAMEWORKS)
async def test_http(name, shop, http_server):
    placed = shop.orders.pick(status="placed")
    server = http_server("--no-faults")
    fw = framework(name)
    run = await fw.run_agent(fw.scripted_model(cancel_first_placed), "go", mcp=server.url)
    assert run.ok, run.error
    assert run.output == f"cancelled order {placed.id}: cancelled"
    assert run.trace.summary() == "list_orders → cancel_order → get_order"
    assert run.world is None
    with urllib.request.urlopen(server.base + "/faultbench/state", timeout=10) as response:
        state = json.loads(response.read())
    status = {o["id"]: o["status"] for o in state["tables"]["order"]}
    assert status[placed.id] == "cancelled"
    # a second run on the same server: its trace has its own calls only
    again = await fw.run_agent(fw.scripted_model(cancel_first_placed), "go", mcp=server.url)
    assert again.trace.count() == 3
    assert again.output != run.output


@pytest.mark.parametrize("name", FRAMEWORKS)
async def test_a_stdio_server_that_is_not_faultbench_has_no_trace(name, tmp_path):
    # The same server, started through a script: run_agent cannot know where its events go.
    script = tmp_path / "serve_shop.py"
    script.write_text(
        "import sys\nfrom faultbench.cli import main\n"
        f"sys.exit(main(['serve', {str(stdio_command()[4])!r}, '--no-faults']))\n"
    )
    fw = framework(name)
    run = await fw.run_agent(
        fw.scripted_model(cancel_first_placed), "go", mcp=[stdio_command()[0], str(script)]
    )
    assert run.ok, run.error
    assert run.trace is None
    assert run.world is None


@pytest.mark.parametrize("name", FRAMEWORKS)
async def test_mcp_must_be_a_world_a_server_a_url_or_a_command(name):
    fw = framework(name)
    with pytest.raises(TypeError, match=r"Expected mcp to be a faultbench World .*, a WorldServer"):
        await fw.run_agent(fw.scripted_model(cancel_first_placed), "go", mcp=42)


AUTH_DESK = Path(__file__).parents[1] / "serve" / "worlds" / "auth_desk.yaml"


def solve_ticket(seen):
    if not seen:
        return ToolCall("update_ticket", {"id": "T-1", "status": "solved"})
    return Reply(seen[-1].text)


@pytest.mark.parametrize("name", FRAMEWORKS)
async def test_http_with_a_bearer_token(name, http_server):
    """A `ServedUrl`'s headers go with every MCP request: a world with `auth:` answers the
    principal the token was issued to, and a plain URL gets 401."""
    server = http_server("--no-faults", world=AUTH_DESK)
    request = urllib.request.Request(
        server.base + "/faultbench/tokens",
        data=json.dumps({"principal": "support_agent"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        token = json.loads(response.read())["token"]
    fw = framework(name)
    bare = await fw.run_agent(fw.scripted_model(solve_ticket), "go", mcp=server.url)
    assert "401 Unauthorized" in bare.output
    url = ServedUrl(server.url, headers={"Authorization": f"Bearer {token}"})
    run = await fw.run_agent(fw.scripted_model(solve_ticket), "go", mcp=url)
    assert run.ok, run.error
    assert run.trace.count("update_ticket", ok=True) == 1
    with urllib.request.urlopen(server.base + "/faultbench/state", timeout=10) as response:
        state = json.loads(response.read())
    assert state["tables"]["ticket"][0]["status"] == "solved"
