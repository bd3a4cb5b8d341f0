"""Worlds with `auth:` behind the MCP shells: `build_server(world, principal=)` in-process,
HTTP bearer tokens from the control API (`POST /faultbench/tokens`) next to `--token`, and
`faultbench serve --principal`."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import httpx2
import mcp
import pytest
from mcp import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

import faultbench
from faultbench.kernel import decode_events
from faultbench.serve import build_server

from .test_http import JSONRPC_HEADERS, control, running

pytestmark = pytest.mark.anyio

DESK = Path(__file__).parent / "worlds" / "auth_desk.yaml"


@pytest.fixture
def anyio_backend():
    return "trio"


async def test_in_process_calls_act_as_the_servers_principal():
    world = faultbench.load_world(DESK)
    async with mcp.Client(build_server(world, principal="readonly_bot")) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert names == ["get_ticket", "update_ticket", "refresh_token"]
        assert not (await client.call_tool("get_ticket", {"id": "T-1"})).is_error
        refused = await client.call_tool("update_ticket", {"id": "T-1", "status": "solved"})
        assert refused.is_error
        assert "403 Forbidden: insufficient_scope" in refused.content[0].text
        assert "'tickets:write'" in refused.content[0].text
    assert world.tickets.get("T-1").status == "open"


async def test_without_a_principal_every_call_is_a_401():
    world = faultbench.load_world(DESK)
    async with mcp.Client(build_server(world)) as client:
        result = await client.call_tool("get_ticket", {"id": "T-1"})
        assert result.is_error
        assert result.content[0].text.startswith("401 Unauthorized: desk.get_ticket")


def test_a_principal_the_world_does_not_have_is_refused():
    with pytest.raises(ValueError, match="unknown principal 'support'"):
        build_server(faultbench.load_world(DESK), principal="support")
    shop = faultbench.load_world(Path(__file__).parent / "worlds" / "shop.yaml")
    with pytest.raises(ValueError, match="has no auth: block"):
        build_server(shop, principal="anyone")


async def test_http_clients_send_tokens_the_control_api_issues():
    world = faultbench.load_world(DESK)
    async with running(world) as served:
        issued = await control(served.base, "POST", "tokens", json={"principal": "support_agent"})
        assert issued.status_code == 200
        body = issued.json()
        assert body["principal"] == "support_agent"
        assert body["expires_at"] == "2025-06-01T00:15:00Z"
        bad = await control(served.base, "POST", "tokens", json={"principal": "nobody"})
        assert bad.status_code == 400
        assert "unknown principal 'nobody'" in bad.json()["error"]
        auth = {"authorization": f"Bearer {body['token']}"}
        async with httpx2.AsyncClient(headers=auth, timeout=10) as http:
            transport = streamable_http_client(served.url, http_client=http)
            async with mcp.Client(transport, read_timeout_seconds=15) as client:
                ok = await client.call_tool("update_ticket", {"id": "T-1", "status": "solved"})
                assert not ok.is_error
        async with mcp.Client(served.url, read_timeout_seconds=15) as client:  # no token
            refused = await client.call_tool("get_ticket", {"id": "T-1"})
            assert refused.content[0].text.startswith("401 Unauthorized")
    assert world.tickets.get("T-1").status == "solved"
    outcomes = [e.outcome for e in world.events if type(e).__name__ == "AuthChecked"]
    assert outcomes == ["allowed", "missing_token"]


async def test_serve_principal_prints_a_token_and_token_still_guards_the_control_api(serve_http):
    server = serve_http(str(DESK), "--principal", "support_agent", "--token", "s3cret")
    with anyio.fail_after(20):  # printed right after the URL line, read by a thread
        while "access token for principal" not in server.stderr:
            await anyio.sleep(0.05)
    line = next(x for x in server.stderr.splitlines() if "access token for principal" in x)
    token = line.rsplit(": ", 1)[1].strip()
    # the control API wants the server token, the MCP endpoint the world's
    assert (await control(server.base, "GET", "state")).status_code == 401
    wrong = await control(server.base, "GET", "state", headers={"authorization": f"Bearer {token}"})
    assert wrong.status_code == 401
    async with httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=10) as http:
        transport = streamable_http_client(server.url, http_client=http)
        async with mcp.Client(transport, read_timeout_seconds=15) as client:
            result = await client.call_tool("get_ticket", {"id": "T-1"})
            assert not result.is_error
    async with httpx2.AsyncClient(timeout=10) as http:
        assert (await http.post(server.url, headers=JSONRPC_HEADERS, json={})).status_code != 401


async def test_serve_principal_over_stdio_acts_as_it_and_logs_the_token(tmp_path):
    events = tmp_path / "events.jsonl"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "faultbench.cli", "serve", str(DESK), "--principal", "readonly_bot",
              "--events", str(events)],
    )  # fmt: skip
    async with mcp.Client(params, read_timeout_seconds=15) as client:
        assert not (await client.call_tool("get_ticket", {"id": "T-1"})).is_error
        refused = await client.call_tool("update_ticket", {"id": "T-1", "status": "solved"})
        assert "403 Forbidden: insufficient_scope" in refused.content[0].text
    world = faultbench.replay(DESK, decode_events(events.read_bytes()))
    issued = [e for e in world.events if type(e).__name__ == "TokenIssued"]
    assert [e.principal for e in issued] == ["readonly_bot"]


def test_serve_principal_mistakes_are_usage_errors(capsys):
    from faultbench.cli import main

    assert main(["serve", str(DESK), "--principal", "nobody"]) == 2
    assert "--principal: unknown principal 'nobody'" in capsys.readouterr().err
    shop = Path(__file__).parent / "worlds" / "shop.yaml"
    assert main(["serve", str(shop), "--principal", "x"]) == 2
    assert "has no auth: block" in capsys.readouterr().err
