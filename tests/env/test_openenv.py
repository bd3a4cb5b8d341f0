"""The OpenEnv protocol (`openenv_app`, `faultbench serve --openenv`), driven by OpenEnv's own
clients from the `openenv-core` package: `MCPToolClient` and `GenericEnvClient`."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
import trio

from faultbench.env import openenv_app
from faultbench.kernel.lowlevel import load_spec
from faultbench.serve import serve_http

pytest.importorskip("openenv.core")
from openenv.core import GenericEnvClient
from openenv.core.mcp_client import MCPToolClient

SHOP = Path(__file__).parents[2] / "examples" / "shop" / "worlds" / "shop.yaml"


@pytest.fixture(scope="module")
def url():
    spec = load_spec(SHOP)
    app = openenv_app(spec)
    started: list[str] = []
    stop = threading.Event()

    async def main():
        async def shutdown():
            while not stop.is_set():
                await trio.sleep(0.05)

        async with trio.open_nursery() as nursery:
            mcp = await nursery.start(
                lambda task_status: serve_http(
                    app, host="127.0.0.1", port=0, shutdown=shutdown, task_status=task_status
                )
            )
            started.append(mcp.removesuffix("/mcp"))

    thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
    thread.start()
    while not started:
        threading.Event().wait(0.02)
    yield started[0]
    stop.set()
    thread.join(10)


def timeout_run() -> int:
    """A run of seed 42 whose first refund times out after its commit (the plugin's run)."""
    import faultbench

    for run in range(500):
        world = faultbench.load_world(SHOP, seed=42, run=run)
        world.call("get_order", {"id": "1"})
        world.call("create_return", {"order_id": "1", "reason": "damaged"})
        if world.call("issue_refund", {"order_id": "1", "amount": 25.0}).error_kind == "timeout":
            return run
    raise AssertionError("no run with a timeout")


def test_mcp_tool_client_resets_lists_calls_and_sees_a_timeout_as_an_error(url):
    run = timeout_run()

    async def drive():
        async with MCPToolClient(base_url=url) as env:
            await env.reset(seed=42, episode_id=str(run))
            tools = await env.list_tools()
            assert "issue_refund" in [t.name for t in tools]
            order = await env.call_tool("get_order", id="1")
            assert order["id"] == "1"
            await env.call_tool("create_return", order_id="1", reason="damaged")
            # run 7 of seed 42 is one whose first refund times out after its commit
            with pytest.raises(RuntimeError, match="timeout"):
                await env.call_tool("issue_refund", order_id="1", amount=25.0)
            refunds = await env.call_tool("list_refunds", order_id="1")
            state = await env.state()
            return refunds, state

    refunds, state = asyncio.run(drive())
    assert [r["amount"] for r in refunds] == [25.0]
    assert state.episode_id == str(run)
    assert state.step_count == 4


def test_same_seed_and_episode_give_the_same_episode_and_sessions_are_apart(url):
    async def episode(seed, episode_id):
        async with GenericEnvClient(base_url=url) as env:
            await env.reset(seed=seed, episode_id=episode_id)
            out = []
            for _ in range(3):
                step = await env.step(
                    {
                        "type": "call_tool",
                        "tool_name": "issue_refund",
                        "arguments": {"order_id": "1", "amount": 25.0},
                    }
                )
                out.append(step.observation)
            end = await env.step({"reply": "done"})
            return out, end.reward, end.done

    async def both():
        return await asyncio.gather(episode(42, "3"), episode(42, "3"), episode(42, "8"))

    a, b, c = asyncio.run(both())
    assert a == b
    assert a != c
    assert a[2] is True  # done
    assert a[1] == 1.0  # the shop file has no checks: a finished run is worth 1


def test_the_http_servers_rules_hold_for_the_websocket(url):
    from websockets.asyncio.client import connect

    with pytest.raises(ValueError, match="--token"):
        openenv_app(load_spec(SHOP), host="0.0.0.0")

    async def evil():
        ws_url = url.replace("http://", "ws://") + "/ws"
        async with connect(ws_url, origin="http://evil.example") as ws:
            await ws.send('{"type": "state"}')
            await ws.recv()

    with pytest.raises(Exception, match=r"1008|rejected|403|closed"):
        asyncio.run(evil())


def test_faultbench_serve_openenv_serves_mcp_tool_client():
    import re
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "faultbench", "serve", str(SHOP), "--openenv", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        found = re.search(r"ws://127\.0\.0\.1:(\d+)/ws", line)
        assert found, line
        base = f"http://127.0.0.1:{found.group(1)}"

        async def drive():
            async with MCPToolClient(base_url=base) as env:
                await env.reset(seed=42, episode_id="1")
                return await env.call_tool("get_order", id="1"), await env.state()

        order, state = asyncio.run(drive())
        assert order["id"] == "1"
        assert state.step_count == 1
    finally:
        proc.terminate()
        proc.wait(10)
