"""The OpenEnv server's HTTP side, its session limits, its event logs and its spans: checked
with the `openenv-core` package's own validator (`openenv validate --url`), its wire models
and its `MCPToolClient`, not with a client of our own."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import trio

from faultbench.env import openenv_app
from faultbench.kernel.lowlevel import load_spec
from faultbench.serve import serve_http

pytest.importorskip("openenv.core")
from openenv.core import GenericEnvClient
from openenv.core.env_server.mcp_types import CallToolObservation, ListToolsAction
from openenv.core.env_server.types import (
    ResetResponse,
    SchemaResponse,
    State,
    StepResponse,
)
from openenv.core.mcp_client import MCPToolClient

SHOP = Path(__file__).parents[2] / "examples" / "shop" / "worlds" / "shop.yaml"
#: the first refund times out after its commit, in every episode
TIMEOUT = {"payments.issue_refund": {"script": {1: "timeout"}}}


@contextmanager
def served(app):
    """`app` served over HTTP from a thread; yields its base URL."""
    started: list[str] = []
    stop = threading.Event()

    async def main():
        async def shutdown():
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
    while not started:
        time.sleep(0.02)
    try:
        yield started[0]
    finally:
        stop.set()
        thread.join(10)


@pytest.fixture(scope="module")
def url():
    with served(openenv_app(load_spec(SHOP), faults=TIMEOUT)) as base:
        yield base


def test_openenvs_own_validator_passes_the_running_server(url):
    out = subprocess.run(
        [sys.executable, "-m", "openenv.cli", "validate", "--url", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(out.stdout)
    failed = [c for c in report["criteria"] if not c["passed"]]
    assert report["passed"], failed
    assert report["mode"] == "simulation"  # /reset, /step and /state are served
    assert {c["id"] for c in report["criteria"]} >= {
        "health_endpoint",
        "metadata_endpoint",
        "schema_endpoint",
        "mcp_endpoint",
        "mode_endpoint_consistency",
    }


def test_http_reset_step_state_schema_in_openenvs_wire_models(url):
    with httpx.Client(base_url=url) as http:
        first = ResetResponse.model_validate(
            http.post("/reset", json={"seed": 42, "episode_id": "7"}).json()
        )
        again = ResetResponse.model_validate(
            http.post("/reset", json={"seed": 42, "episode_id": "7"}).json()
        )
        other = ResetResponse.model_validate(http.post("/reset", json={"seed": 1}).json())
        assert "issue_refund" in [t["name"] for t in first.observation["tools"]]
        meta = first.observation["metadata"]
        assert (meta["seed"], meta["run"], meta["step_count"]) == (42, 7, 0)
        assert meta["state_hash"] == again.observation["metadata"]["state_hash"]
        assert meta["state_hash"] != other.observation["metadata"]["state_hash"]

        # stateless, as OpenEnv's HTTP is: each /step plays a fresh episode of its seed and id
        call = {"type": "call_tool", "tool_name": "issue_refund",
                "arguments": {"order_id": "1", "amount": 25.0}}  # fmt: skip
        answer = http.post("/step", json={"action": call, "seed": 42, "episode_id": "7"})
        step = StepResponse.model_validate(answer.json())
        observation = CallToolObservation.model_validate(
            {k: v for k, v in step.observation.items() if k != "metadata"}
        )
        assert observation.error is not None
        assert observation.error.error_type.value == "timeout"
        assert step.done is False
        assert step.reward is None
        got = http.post("/step", json={"action": {"reply": "done"}}).json()
        assert StepResponse.model_validate(got).done is True
        assert got["reward"] == 1.0

        assert State.model_validate(http.get("/state").json()).step_count == 0
        schema = SchemaResponse.model_validate(http.get("/schema").json())
        assert {"call_tool", "list_tools"} <= {
            s["properties"].get("type", {}).get("const") for s in schema.action["oneOf"]
        }
        assert http.get("/metadata").json()["name"] == "shop"

        bad = http.post("/reset", json={"seed": "forty-two"})
        assert bad.status_code == 422
        assert "Expected seed to be an integer" in bad.json()["detail"][0]["msg"]
        bad = http.post("/step", json={"action": {"type": "dance"}})
        assert bad.status_code == 422
        assert "Expected an action" in bad.json()["detail"][0]["msg"]


def test_mcp_tool_client_over_http_mcp_sessions(url):
    """`MCPToolClient`'s production mode: JSON-RPC on POST /mcp, an OpenEnv session kept
    between requests."""

    async def drive():
        async with MCPToolClient(base_url=url) as env:
            env.use_production_mode = True
            tools = await env.list_tools()
            order = await env.call_tool("get_order", id="1")
            with pytest.raises(RuntimeError, match="did not answer within 30s"):
                await env.call_tool("issue_refund", order_id="1", amount=25.0)
            refunds = await env.call_tool("list_refunds", order_id="1")
            return tools, order, refunds

    tools, order, refunds = asyncio.run(drive())
    assert "get_order" in [t.name for t in tools]
    assert order["id"] == "1"
    assert [r["amount"] for r in refunds] == [25.0]  # the timeout came after the commit
    with httpx.Client(base_url=url) as http:
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "get_order", "arguments": {}, "session_id": "nope"}}  # fmt: skip
        error = http.post("/mcp", json=rpc).json()["error"]
        assert error["code"] == -32602
        assert "Unknown session_id: nope" in error["message"]


def ws_url(base: str) -> str:
    return base.replace("http://", "ws://") + "/ws"


def test_max_sessions_refuses_the_next_with_capacity_reached_until_one_closes():
    from websockets.asyncio.client import connect

    async def drive(base):
        first = GenericEnvClient(base_url=base)
        await first.connect()
        await first.reset(seed=42)
        async with connect(ws_url(base)) as second:  # refused as it opens, then closed
            refused = json.loads(await asyncio.wait_for(second.recv(), 10))
        await first.close()
        # the server sees the close a moment later (a busy machine: longer): until then a
        # new session is refused as the second was, after it one is accepted
        deadline = asyncio.get_running_loop().time() + 10
        while True:
            async with connect(ws_url(base)) as third:
                await third.send(json.dumps({"type": "reset", "data": {"seed": 42}}))
                answer = json.loads(await asyncio.wait_for(third.recv(), 10))
            if answer["type"] != "error" or asyncio.get_running_loop().time() > deadline:
                return refused, answer
            assert answer["data"]["code"] == "CAPACITY_REACHED"
            await asyncio.sleep(0.05)

    with served(openenv_app(load_spec(SHOP), max_sessions=1)) as base:
        refused, third = asyncio.run(drive(base))
    assert refused["type"] == "error"
    assert refused["data"]["code"] == "CAPACITY_REACHED"
    assert "at most 1 sessions open at once (--max-sessions)" in refused["data"]["message"]
    assert (refused["data"]["active_sessions"], refused["data"]["max_sessions"]) == (1, 1)
    assert third["type"] == "observation", third
    assert third["data"]["done"] is False


def test_an_idle_session_is_closed_with_a_reason_and_the_step_cap_ends_an_episode():
    from websockets.asyncio.client import connect

    async def idle(base):
        async with connect(ws_url(base)) as ws:
            await ws.send(json.dumps({"type": "reset", "data": {"seed": 42}}))
            await ws.recv()
            return json.loads(await asyncio.wait_for(ws.recv(), 10))

    async def capped(base):
        call = {"type": "call_tool", "tool_name": "get_order", "arguments": {"id": "1"}}
        async with GenericEnvClient(base_url=base) as env:
            await env.reset(seed=42)
            first = await env.step(call)
            second = await env.step(call)
            with pytest.raises(RuntimeError, match=r"step cap of 2 \(--max-steps\)"):
                await env.step(call)
            return first, second

    with served(openenv_app(load_spec(SHOP), idle_timeout=0.3, max_steps=2)) as base:
        closed = asyncio.run(idle(base))
        first, second = asyncio.run(capped(base))
        with httpx.Client(base_url=base) as http:
            created = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"})  # fmt: skip
            session = created.json()["result"]["session_id"]
            time.sleep(0.5)
            rpc = {"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                   "params": {"session_id": session}}  # fmt: skip
            gone = http.post("/mcp", json=rpc).json()["error"]["message"]
    assert closed["type"] == "error"
    assert closed["data"]["code"] == "SESSION_ERROR"
    assert "no message for 0.3 s" in closed["data"]["message"]
    assert first.done is False
    assert second.done is True
    assert second.observation["metadata"]["truncated"] is True
    assert "silent for more than 0.3 s" in gone


def test_serve_openenv_events_writes_each_episode_which_replay_reads(tmp_path):
    events = tmp_path / "run.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "faultbench",
            "serve",
            str(SHOP),
            "--openenv",
            "--port",
            "0",
            "--events",
            str(events),
            "--max-steps",
            "5",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        found = re.search(r"ws://127\.0\.0\.1:(\d+)/ws", line)
        assert found, line
        base = f"http://127.0.0.1:{found.group(1)}"

        async def drive():
            async def state_hash(env):  # `MCPToolClient.state()` keeps only id and count
                return (await env.step(ListToolsAction())).observation.metadata["state_hash"]

            async with MCPToolClient(base_url=base) as env:
                await env.reset(seed=42, episode_id="5")
                await env.call_tool("get_order", id="1")
                await env.call_tool("create_return", order_id="1", reason="damaged")
                first = await state_hash(env)
                await env.reset(seed=42, episode_id="6")
                await env.call_tool("get_order", id="2")
                return first, await state_hash(env)

        first, second = asyncio.run(drive())
    finally:
        proc.terminate()
        proc.wait(10)
    files = sorted(tmp_path.glob("run.*-*.jsonl"), key=lambda p: p.name[-7:])
    assert len(files) == 2, sorted(p.name for p in tmp_path.iterdir())
    by_episode = {p.name.rsplit("-", 1)[1]: p for p in files}
    for n, state in (("1.jsonl", first), ("2.jsonl", second)):
        replay = subprocess.run(
            [
                sys.executable,
                "-m",
                "faultbench",
                "replay",
                str(by_episode[n]),
                "--world",
                str(SHOP),
                "--expect-hash",
                state,
            ],
            capture_output=True,
            text=True,
        )
        assert replay.returncode == 0, replay.stdout + replay.stderr


def test_serve_refuses_flags_that_do_not_apply_with_openenv():
    def serve(*flags):
        return subprocess.run(
            [sys.executable, "-m", "faultbench", "serve", str(SHOP), *flags],
            capture_output=True,
            text=True,
        )

    out = serve("--openenv", "--isolate")
    assert out.returncode == 2
    assert "--isolate does not apply with --openenv" in out.stderr
    out = serve("--http", "--max-steps", "3")
    assert out.returncode == 2
    assert "--max-steps only applies with --openenv" in out.stderr
    out = serve("--openenv", "--session-timeout", "0")
    assert "Expected --session-timeout above 0" in out.stderr


def test_mcp_messages_on_the_websocket_call_the_sessions_episode(url):
    from websockets.asyncio.client import connect

    async def drive():
        async with connect(ws_url(url)) as ws:

            async def ask(message):
                await ws.send(json.dumps(message))
                return json.loads(await ws.recv())

            await ask({"type": "reset", "data": {"seed": 42, "episode_id": "2"}})
            call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                    "params": {"name": "issue_refund",
                               "arguments": {"order_id": "1", "amount": 25.0}}}  # fmt: skip
            failed = await ask({"type": "mcp", "data": call})
            listed = await ask({"type": "mcp", "data": {**call, "params": {"name": "list_refunds", "arguments": {"order_id": "1"}}}})  # fmt: skip
            state = await ask({"type": "state"})
            junk = await ask({"type": "dance"})
            return failed, listed, state, junk

    failed, listed, state, junk = asyncio.run(drive())
    assert failed["type"] == "mcp"
    assert failed["data"]["id"] == 7
    assert failed["data"]["error"]["data"] == {"error_type": "timeout"}
    assert [r["amount"] for r in listed["data"]["result"]["data"]] == [25.0]
    assert state["data"]["step_count"] == 2  # the session's own episode
    assert junk["data"]["code"] == "UNKNOWN_TYPE"
