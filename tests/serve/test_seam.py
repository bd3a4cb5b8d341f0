"""One seam for calls: whatever face a call comes through (in-process MCP, the direct path of
`run_agent(mcp=world)`, stdio, streamable HTTP at either protocol era, `--rest`, the OpenEnv
server's WebSocket), it goes through `WorldCalls.settle`, so an `after_call` hook sees every
one of them, with the result the caller got."""

from __future__ import annotations

import json
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import mcp
import pytest
from mcp import StdioServerParameters

from faultbench.kernel import CallResult, World
from faultbench.kernel.lowlevel import load_spec
from faultbench.serve import WorldCalls, build_server, serve_http, serve_in_thread
from tests.adversarial.worlds import CRM

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "trio"


def crm() -> World:
    return World.from_spec(load_spec("<crm>", text=CRM))


def seen_by_hook(calls: WorldCalls) -> list[tuple[str, str, bool]]:
    seen: list[tuple[str, str, bool]] = []

    def hook(world: World, result: CallResult) -> None:
        seen.append((result.call_id, result.tool, result.ok))

    calls.after_call.append(hook)
    return seen


CREATE = {"name": "Bo", "email": "bo@example.com"}
EXPECTED = [("c1", "create_customer", True), ("c2", "get_customer", False)]


async def test_in_process_mcp():
    server = build_server(crm())
    seen = seen_by_hook(server)
    async with mcp.Client(server) as client:
        await client.call_tool("create_customer", CREATE)
        await client.call_tool("get_customer", {"id": "nope"})
    assert seen == EXPECTED


async def test_the_direct_path():
    calls = WorldCalls(crm())  # what run_agent(..., mcp=world) calls, without MCP
    seen = seen_by_hook(calls)
    await calls.call_direct("create_customer", CREATE)
    await calls.call_direct("get_customer", {"id": "nope"})
    assert seen == EXPECTED


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_stdio(tmp_path: Path, mode: str):
    world_file, seen_file = tmp_path / "crm.yaml", tmp_path / "seen.txt"
    world_file.write_text(CRM)
    script = tmp_path / "serve_with_hook.py"
    script.write_text(
        textwrap.dedent(
            """\
            import sys
            import anyio
            from faultbench import load_world
            from faultbench.serve import build_server, serve_stdio

            server = build_server(load_world(sys.argv[1]))
            seen = open(sys.argv[2], "a")

            def hook(world, result):
                seen.write(f"{result.call_id} {result.tool} {result.ok}\\n")
                seen.flush()

            server.after_call.append(hook)
            anyio.run(serve_stdio, server, backend="trio")
            """
        )
    )
    params = StdioServerParameters(
        command=sys.executable, args=[str(script), str(world_file), str(seen_file)]
    )
    async with mcp.Client(params, mode=mode, read_timeout_seconds=15) as client:
        await client.call_tool("create_customer", CREATE)
        await client.call_tool("get_customer", {"id": "nope"})
    lines = [tuple(line.split()) for line in seen_file.read_text().splitlines()]
    assert lines == [(c, t, str(ok)) for c, t, ok in EXPECTED]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_streamable_http(mode: str):
    server = build_server(crm())
    seen = seen_by_hook(server)
    with serve_in_thread(server) as url:
        async with mcp.Client(url, mode=mode) as client:
            await client.call_tool("create_customer", CREATE)
            await client.call_tool("get_customer", {"id": "nope"})
    assert seen == EXPECTED


def test_rest():
    server = build_server(crm())
    seen = seen_by_hook(server)
    with serve_in_thread(server, rest=True) as url:
        base = url.removesuffix("/mcp")
        assert httpx.post(base + "/v1/customers", json=CREATE).status_code == 200
        assert httpx.get(base + "/v1/customers/nope").status_code == 404
        assert httpx.head(base + "/v1/customers").status_code == 200
    assert seen == [*EXPECTED, ("c3", "list_customers", True)]


def test_openenv():
    # `serve --openenv`: each WebSocket session steps its own world, through the same handler
    pytest.importorskip("websockets")
    from websockets.sync.client import connect

    from faultbench.env import openenv_app
    from faultbench.kernel.lowlevel import load_spec

    seen: list[tuple[str, str, bool]] = []

    def hook(world: World, result: CallResult) -> None:
        seen.append((result.call_id, result.tool, result.ok))

    app = openenv_app(load_spec("<crm>", text=CRM), after_call=[hook])
    with serve_app_in_thread(app) as base, connect(base.replace("http", "ws") + "/ws") as ws:

        def send(kind: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
            ws.send(json.dumps({"type": kind, "data": data or {}}))
            return json.loads(ws.recv(timeout=15))

        send("reset", {"seed": 1})
        step = {"type": "call_tool", "tool_name": "create_customer", "arguments": CREATE}
        assert send("step", step)["data"]["observation"]["error"] is None
        step = {"type": "call_tool", "tool_name": "get_customer", "arguments": {"id": "nope"}}
        assert send("step", step)["data"]["observation"]["error"] is not None
    assert seen == EXPECTED


@contextmanager
def serve_app_in_thread(app: Any) -> Iterator[str]:
    """An ASGI app served by faultbench's HTTP server in a thread: its base URL."""
    import trio

    started: list[str] = []
    stop = threading.Event()

    async def main() -> None:
        async def shutdown() -> None:
            while not stop.is_set():
                await trio.sleep(0.05)

        async with trio.open_nursery() as nursery:
            url = await nursery.start(
                lambda task_status: serve_http(
                    app, host="127.0.0.1", port=0, shutdown=shutdown, task_status=task_status
                )
            )
            started.append(url.removesuffix("/mcp"))

    thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
    thread.start()
    while not started and thread.is_alive():
        threading.Event().wait(0.02)
    try:
        yield started[0]
    finally:
        stop.set()
        thread.join(10)
