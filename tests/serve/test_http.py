"""`faultbench serve --http` as a real process on a free port: MCP over streamable HTTP with
the official client, the control API, --isolate, --events after SIGKILL, token and Host
checks."""

from __future__ import annotations

import json
import signal
from contextlib import asynccontextmanager
from functools import partial
from types import SimpleNamespace
from typing import Any

import anyio
import httpx2
import mcp
import msgspec
import pytest
import trio
import yaml
from mcp.client.streamable_http import streamable_http_client

import faultbench
from faultbench.cli import main as cli_main
from faultbench.kernel import decode_events
from faultbench.serve import build_server
from faultbench.serve._control import Control
from faultbench.serve._http import SessionTracker, build_app, serve_http
from faultbench.serve._journal import Journals

from .serve_helpers import SHOP

pytestmark = pytest.mark.anyio

JSONRPC_HEADERS = {"accept": "application/json, text/event-stream"}


@asynccontextmanager
async def running(world, events=None, *, host="127.0.0.1", max_sessions=None, **kw):
    """`world` served over HTTP by Hypercorn on a free port, in this (trio) process, its
    events written to `events` as `--events` does."""
    server = build_server(world, **kw)
    journal = Journals(events, world).attach(server) if events else None
    app = build_app(server, host=host, journal=journal, max_sessions=max_sessions)
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        serve = partial(serve_http, app, host=host, port=0, shutdown=stop.wait)
        url = await nursery.start(serve)
        try:
            yield SimpleNamespace(url=url, base=url.removesuffix("/mcp"), server=server)
        finally:
            stop.set()


def rule_free_shop():
    """What `faultbench serve --no-faults` serves: no rules, but PUT faults can add some."""
    world = faultbench.load_world(SHOP)
    world.set_faults({})
    return world


@pytest.fixture
def anyio_backend():
    # The servers run in their own processes; one client event loop is enough here.
    return "trio"


async def control(base: str, method: str, path: str, **kw) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=10) as http:
        return await http.request(method, f"{base}/faultbench/{path}", **kw)


async def raw_session(http: httpx2.AsyncClient, url: str) -> dict:
    """A 2025-11-25 session opened by hand, for payloads the official client cannot send."""
    init = await http.post(
        url,
        headers=JSONRPC_HEADERS,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
    )
    assert init.status_code == 200
    headers = {
        **JSONRPC_HEADERS,
        "content-type": "application/json",
        "mcp-session-id": init.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    await http.post(
        url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
    )
    return headers


# --- MCP over HTTP ---------------------------------------------------------------------------


async def test_official_client_in_both_modes():
    async with running(rule_free_shop()) as server:
        for mode in ("auto", "legacy"):
            async with mcp.Client(server.url, mode=mode, read_timeout_seconds=15) as client:
                tools = (await client.list_tools()).tools
                assert "issue_refund" in [t.name for t in tools]
                got = await client.call_tool("get_order", {"id": "1"})
                assert not got.is_error
                assert got.structured_content["id"] == "1"
                listed = await client.call_tool("list_orders", {})
                rows = listed.structured_content
                rows = rows["result"] if mode == "legacy" else rows
                assert [r["id"] for r in rows] == ["1", "2", "3"]
                bad = await client.call_tool("get_order", {"id": 1})
                assert bad.is_error
                assert bad.content[0].text.startswith("invalid arguments for get_order")
                unknown = await client.call_tool("nope", {})
                assert unknown.is_error


async def test_payloads_no_client_should_send_are_refused_and_serving_goes_on():
    async with running(rule_free_shop()) as server:
        async with httpx2.AsyncClient(timeout=10) as http:
            before = (await control(server.base, "GET", "state")).json()["tables"]
            headers = await raw_session(http, server.url)

            def call(i: int, arguments: str) -> str:
                return (
                    f'{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":'
                    f'{{"name":"create_order","arguments":{arguments}}}}}'
                )

            deep = '{"a":' * 2000 + "{}" + "}" * 2000
            answer = await http.post(
                server.url,
                headers=headers,
                content=call(2, f'{{"status":"placed","total":1,"note":{deep}}}'),
            )
            # The SDK's JSON parser refuses it before any tool runs: a JSON-RPC parse error.
            assert answer.json()["error"]["code"] == -32700
            big = json.dumps({"status": "placed", "total": 1, "note": {"x": "y" * 1_000_000}})
            answer = await http.post(server.url, headers=headers, content=call(3, big))
            result = answer.json()["result"]
            assert result["isError"] is True
            assert len(result["content"][0]["text"]) < 2_000
            answer = await http.post(server.url, headers=headers, content=call(4, "[1, 2]"))
            assert answer.json()["error"]["code"] == -32602  # arguments must be an object
            answer = await http.post(server.url, headers=headers, content=b"\xff not json")
            assert answer.json()["error"]["code"] == -32700
            over_limit = await http.post(server.url, headers=headers, content=b" " * (5 << 20))
            assert over_limit.status_code == 413
            ok = await http.post(
                server.url,
                headers=headers,
                content='{"jsonrpc":"2.0","id":5,"method":"tools/call","params":'
                '{"name":"get_order","arguments":{"id":"1"}}}',
            )
            assert ok.json()["result"]["isError"] is False
            after = (await control(server.base, "GET", "state")).json()["tables"]
        assert after == before


# --- control API -----------------------------------------------------------------------------


async def test_control_api(tmp_path):
    events_file = tmp_path / "events.jsonl"
    async with running(rule_free_shop(), events=events_file) as server:
        base = server.base
        index = (await control(base, "GET", "")).json()
        assert index["world"] == "shop"
        assert "get_order" in index["tools"]
        seeded = (await control(base, "GET", "state")).json()
        assert [r["id"] for r in seeded["tables"]["order"]] == ["1", "2", "3"]
        assert seeded["now"] == "2025-01-01T00:00:00Z"

        async with mcp.Client(server.url, read_timeout_seconds=15) as client:
            created = await client.call_tool("create_order", {"status": "placed", "total": 9.5})
            new_id = created.structured_content["id"]

            state = (await control(base, "GET", "state")).json()
            assert state["hash"] != seeded["hash"]
            assert state["tables"]["order"][-1] == {
                "id": new_id,
                "status": "placed",
                "total": 9.5,
                "note": None,
            }
            events = decode_events(
                (await control(base, "GET", f"events?since={seeded['seq'] + 1}")).content
            )
            assert events[0].seq == seeded["seq"] + 1
            assert [type(e).__name__ for e in events] == [
                "CallStarted",
                "RecordCreated",
                "CallSucceeded",
            ]
            trace = (await control(base, "GET", "trace")).json()
            assert trace["summary"] == "create_order"
            assert (await control(base, "GET", "events?since=x")).status_code == 400

            # fork / restore
            snap = (await control(base, "POST", "fork")).json()
            await client.call_tool("delete_order", {"id": new_id})
            assert (await control(base, "GET", "state")).json()["hash"] != state["hash"]
            restored = await control(base, "POST", "restore", json={"snapshot": snap["snapshot"]})
            assert restored.status_code == 200
            assert restored.json()["hash"] == snap["hash"]
            got = await client.call_tool("get_order", {"id": new_id})
            assert not got.is_error
            missing = await control(base, "POST", "restore", json={"snapshot": "s999"})
            assert missing.status_code == 404
            assert "s999" in missing.json()["error"]

            # clock
            moved = await control(base, "POST", "clock", json={"advance": 90})
            assert moved.json()["now"] == "2025-01-01T00:01:30Z"
            moved = await control(base, "POST", "clock", json={"set": "2025-02-01T00:00:00Z"})
            assert moved.json()["now"] == "2025-02-01T00:00:00Z"
            assert (await control(base, "GET", "clock")).json()["now"] == "2025-02-01T00:00:00Z"
            bad = await control(base, "POST", "clock", json={"rewind": 1})
            assert bad.status_code == 400
            assert bad.json()["error"].startswith('Expected {"advance": SECONDS}')

            # faults at run time: YAML, then JSON
            put = await control(
                base,
                "PUT",
                "faults",
                content="orders.get_order: { errors: { http_503: 1.0 } }",
                headers={"content-type": "application/yaml"},
            )
            assert put.status_code == 200, put.text
            assert "orders.get_order" in put.json()["faults"]
            broken = await client.call_tool("get_order", {"id": "1"})
            assert broken.is_error
            assert broken.content[0].text.startswith("503 Service Unavailable")
            put = await control(base, "PUT", "faults", json={})
            assert put.json()["faults"] == {}
            wrong = await control(
                base, "PUT", "faults", json={"orders.nope": {"latency_ms": [1, 2]}}
            )
            assert wrong.status_code == 400

            # reset
            reset = await control(base, "POST", "reset")
            assert reset.json()["hash"] == seeded["hash"]
            assert (await client.call_tool("get_order", {"id": new_id})).is_error
            # reset and restore rewrite history: the events file follows
            logged = decode_events(events_file.read_bytes())
            assert [type(e).__name__ for e in logged[-2:]] == ["CallStarted", "CallFailed"]
            live = (await control(base, "GET", "state")).json()
            assert faultbench.replay(SHOP, logged).state_hash() == live["hash"]

        sessions = (await control(base, "GET", "sessions")).json()
        assert sessions == {"isolate": False, "sessions": []}
        assert (await control(base, "GET", "state?session=abc")).status_code == 400


async def test_no_faults_serves_no_rules_and_put_faults_still_adds_some(serve_http):
    """`--no-faults` starts a world with faults on and an empty rule set, not a world with
    faults off: rules set at run time then apply."""
    server = serve_http(str(SHOP), "--no-faults")
    assert (await control(server.base, "GET", "faults")).json() == {"faults": {}}
    assert (await control(server.base, "GET", "")).json()["faults"] is True
    put = await control(
        server.base, "PUT", "faults", json={"orders.get_order": {"errors": {"http_503": 1.0}}}
    )
    assert put.status_code == 200, put.text
    async with httpx2.AsyncClient(timeout=10) as http:
        transport = streamable_http_client(server.url, http_client=http)
        async with mcp.Client(transport, read_timeout_seconds=15) as client:
            broken = await client.call_tool("get_order", {"id": "1"})
    assert broken.is_error
    assert broken.content[0].text.startswith("503 Service Unavailable")


async def test_put_faults_on_a_world_created_without_faults_is_a_409():
    async with running(faultbench.load_world(SHOP, faults=False)) as server:
        put = await control(
            server.base, "PUT", "faults", json={"orders.get_order": {"errors": {"http_503": 1.0}}}
        )
        assert put.status_code == 409
        assert "(faults=False)" in put.json()["error"]
        assert "world.fork(faults=True)" in put.json()["error"]
        assert (await control(server.base, "PUT", "faults", json={})).status_code == 200


async def test_get_faults_edit_one_probability_and_put_it_back():
    """GET answers the block PUT takes: a client edits it and sends it back as it came."""
    world = faultbench.load_world(SHOP)
    world.set_faults(
        {
            **yaml.safe_load(SHOP.read_text())["faults"],
            "orders.create_order": {"latency_ms": [5, 20], "errors": {"http_503": 0.0}},
        }
    )

    def rules_as_written():  # where a rule was written (file, request) aside
        return {k: msgspec.structs.replace(r, loc=None) for k, r in world.fault_rules.items()}

    written = rules_as_written()
    async with running(world) as server, mcp.Client(server.url, read_timeout_seconds=15) as client:
        got = await control(server.base, "GET", "faults")
        assert got.status_code == 200
        block = got.json()["faults"]
        assert block["orders.create_order"] == {
            "latency_ms": [5, 20],
            "errors": {"http_503": 0},
        }
        assert block["payments.issue_refund"]["script"]["6"] == {
            "kind": "http_429",
            "retry_after_s": 12,
        }
        assert block["orders.list_orders"] == {"rate_limit": {"calls": 2, "per_seconds": 60}}
        created = await client.call_tool("create_order", {"status": "placed", "total": 1.0})
        assert not created.is_error

        # unchanged, it sets the same rules
        same = await control(server.base, "PUT", "faults", json=got.json())
        assert same.status_code == 200, same.text
        assert same.json() == got.json()
        assert rules_as_written() == written

        block["orders.create_order"]["errors"]["http_503"] = 1.0
        put = await control(server.base, "PUT", "faults", json={"faults": block})
        assert put.status_code == 200, put.text
        assert put.json()["faults"]["orders.create_order"]["errors"] == {"http_503": 1}
        assert (await control(server.base, "GET", "faults")).json() == put.json()
        failed = await client.call_tool("create_order", {"status": "placed", "total": 2.0})
        assert failed.is_error
        assert failed.content[0].text.startswith("503 Service Unavailable")
        # the rest of the rules came back untouched
        rules = rules_as_written()
        assert {k: r for k, r in rules.items() if k != "orders.create_order"} == {
            k: r for k, r in written.items() if k != "orders.create_order"
        }
        assert [e.p for e in rules["orders.create_order"].errors] == [1.0]


async def test_control_errors_quote_what_was_sent_short():
    async with running(rule_free_shop()) as server:
        huge = "x" * 100_000
        for method, path, kw in [
            ("POST", "clock", {"json": {"rewind": huge}}),
            ("POST", "clock", {"json": {"advance": huge}}),
            ("POST", "restore", {"json": {"snapshot": huge}}),
            ("GET", f"events?since={huge[:4000]}", {}),  # within the request-line limit
        ]:
            answer = await control(server.base, method, path, **kw)
            assert 400 <= answer.status_code < 500
            assert "xxx" in answer.json()["error"]
            assert len(answer.json()["error"]) < 400, (method, path)


async def test_a_refused_clock_change_points_to_the_http_fork_and_restore():
    async with running(rule_free_shop()) as server:
        now = (await control(server.base, "GET", "clock")).json()["now"]
        back = await control(server.base, "POST", "clock", json={"set": "2000-01-01T00:00:00Z"})
        assert back.status_code == 400
        assert back.json()["error"] == (
            f"Expected a time at or after the world's clock, {now}. Instead, received: "
            "2000-01-01T00:00:00Z. The virtual clock only moves forward; to go back, take a "
            'snapshot before moving it (POST /faultbench/fork -> {"snapshot": ID}) and restore '
            'it (POST /faultbench/restore {"snapshot": ID}).'
        )
        negative = await control(server.base, "POST", "clock", json={"advance": -30})
        assert negative.json()["error"].startswith(
            'Expected {"advance": SECONDS} with SECONDS >= 0. Instead, received: -30. '
            "The virtual clock only moves forward; to go back, take a snapshot"
        )
        assert "world.restore" not in negative.json()["error"]  # no Python API over HTTP
        assert (await control(server.base, "GET", "clock")).json()["now"] == now
        naive = await control(server.base, "POST", "clock", json={"set": "2099-01-01T00:00:00"})
        assert naive.json() == {"now": "2099-01-01T00:00:00Z"}  # no timezone: UTC


async def test_unknown_endpoints_and_methods_answer_json():
    async with running(rule_free_shop()) as server:
        missing = await control(server.base, "GET", "snapshots")
        assert missing.status_code == 404
        assert missing.json()["error"].startswith(
            "Expected one of the control API's endpoints: /faultbench/, /faultbench/state, "
        )
        assert missing.json()["error"].endswith("Instead, received: GET '/faultbench/snapshots'")
        wrong = await control(server.base, "DELETE", "state")
        assert wrong.status_code == 405
        assert wrong.json() == {
            "error": "Expected GET for /faultbench/state. Instead, received: DELETE"
        }
        wrong = await control(server.base, "GET", "reset")
        assert wrong.json()["error"].startswith("Expected POST for /faultbench/reset.")
        faults = await control(server.base, "POST", "faults")
        assert faults.json()["error"].startswith("Expected GET or PUT for /faultbench/faults.")
        index = (await control(server.base, "GET", "")).json()
        assert "/faultbench/{rest:path}" not in index["endpoints"]
        assert "/faultbench/clock" in index["endpoints"]


# --- --isolate -------------------------------------------------------------------------------


async def sessions_after_close(server) -> list[str]:
    """The open sessions, once the server has seen the last client's DELETE through (the
    session's connection closes just after its DELETE is answered)."""
    with anyio.fail_after(10):
        while True:
            sessions = (await control(server.base, "GET", "sessions")).json()["sessions"]
            if not sessions:
                return sessions
            await anyio.sleep(0.02)


async def test_isolated_sessions_never_see_each_others_writes(tmp_path):
    events_file = tmp_path / "events.jsonl"
    async with running(rule_free_shop(), events=events_file, isolate=True) as server:
        seen: dict[float, list] = {}
        later: dict[float, Any] = {}
        faults_set = anyio.Event()
        inspected = anyio.Event()  # the agents stay connected until their worlds are checked

        async def agent(total: float) -> None:
            async with mcp.Client(server.url, read_timeout_seconds=15) as client:
                for _ in range(5):
                    created = await client.call_tool(
                        "create_order", {"status": "placed", "total": total}
                    )
                    assert not created.is_error
                    await anyio.sleep(0)
                listed = await client.call_tool("list_orders", {})
                # --isolate needs sessions, so the client fell back to 2025-11-25: lists come
                # wrapped in an object there.
                assert client.protocol_version == "2025-11-25"
                rows = listed.structured_content["result"]
                seen[total] = [r for r in rows if int(r["id"]) > 3]
                await faults_set.wait()
                later[total] = await client.call_tool("get_order", {"id": "4"})
                await inspected.wait()

        async with anyio.create_task_group() as tg:
            tg.start_soon(agent, 1.0)
            tg.start_soon(agent, 2.0)
            with anyio.fail_after(15):
                while len(seen) < 2:
                    await anyio.sleep(0.01)
            # Each session created ids 4..8 in its own world and sees only its own orders.
            for total, rows in seen.items():
                assert [r["id"] for r in rows] == ["4", "5", "6", "7", "8"]
                assert {r["total"] for r in rows} == {total}

            sessions = (await control(server.base, "GET", "sessions")).json()["sessions"]
            assert len(sessions) == 2
            by_total = {}
            for session in sessions:
                tables = (await control(server.base, "GET", f"state?session={session}")).json()[
                    "tables"
                ]
                (total,) = {r["total"] for r in tables["order"][3:]}
                by_total[total] = session
                assert len(tables["order"]) == 8
            assert set(by_total) == {1.0, 2.0}
            # faults set for one session's world reach that session's agent only
            put = await control(
                server.base,
                "PUT",
                f"faults?session={by_total[1.0]}",
                json={"orders.get_order": {"errors": {"http_503": 1.0}}},
            )
            assert put.status_code == 200, put.text
            mine = await control(server.base, "GET", f"faults?session={by_total[1.0]}")
            assert mine.json() == {"faults": {"orders.get_order": {"errors": {"http_503": 1}}}}
            theirs = await control(server.base, "GET", f"faults?session={by_total[2.0]}")
            assert theirs.json() == {"faults": {}}
            faults_set.set()
            with anyio.fail_after(15):
                while len(later) < 2:
                    await anyio.sleep(0.01)
            assert later[1.0].content[0].text.startswith("503 Service Unavailable")
            assert not later[2.0].is_error
            assert (await control(server.base, "POST", f"fork?session={sessions[0]}")).is_success
            # an id the server never gave out gets no world of its own
            bogus = await control(server.base, "GET", "state?session=nope")
            assert bogus.status_code == 404
            assert "'nope'" in bogus.json()["error"]
            inspected.set()

        # The clients closed their sessions (DELETE): their worlds are freed...
        assert await sessions_after_close(server) == []
        assert not server.server.sessions
        for session in sessions:
            gone = await control(server.base, "GET", f"state?session={session}")
            assert gone.status_code == 404
            assert repr(session) in gone.json()["error"]
            assert "has ended" in gone.json()["error"]
            # ...and each one's events file, complete, replays on its own
            logged = decode_events((tmp_path / f"events.{session}.jsonl").read_bytes())
            orders = faultbench.replay(SHOP, logged).to_dict()["order"]
            assert len(orders) == 8
        shared = (await control(server.base, "GET", "state")).json()["tables"]
        assert len(shared["order"]) == 3  # the template new sessions fork from

        # A client that pins 2026-07-28 (no handshake, so no session) gets a tool error
        # instead of silently writing to the shared template.
        async with mcp.Client(server.url, mode="2026-07-28", read_timeout_seconds=15) as pinned:
            refused = await pinned.call_tool("create_order", {"status": "placed", "total": 3.0})
        assert refused.is_error
        assert "error_kind" not in (refused.meta or {})  # nothing but the text
        assert "Mcp-Session-Id" in refused.content[0].text
        assert (await control(server.base, "GET", "state")).json()["tables"] == shared


class FakeMcp:
    """Stands in for the SDK's ASGI app: answers `initialize` with a session id, a DELETE or
    a request for a session it gave out with 200, and any other session id with 404."""

    def __init__(self) -> None:
        self.given: set[str] = set()

    async def __call__(self, scope, receive, send) -> None:
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        session = headers.get("mcp-session-id")
        out = []
        if session is None:
            session = f"s-{len(self.given) + 1}"
            self.given.add(session)
            out.append((b"mcp-session-id", session.encode()))
            status = 200
        elif session not in self.given:
            status = 404
        else:
            status = 200
            if scope["method"] == "DELETE":
                self.given.discard(session)
        await send({"type": "http.response.start", "status": status, "headers": out})
        await send({"type": "http.response.body", "body": b""})


async def exchange(app, method: str, session: str | None = None, path: str = "/mcp") -> None:
    headers = [] if session is None else [(b"mcp-session-id", session.encode())]
    scope = {"type": "http", "method": method, "path": path, "headers": headers}

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        pass

    await app(scope, receive, send)


def tracked_server() -> tuple[Any, SessionTracker, list[float]]:
    server = build_server(rule_free_shop(), isolate=True)
    control = Control(server)
    server.open_sessions = control.live
    now = [0.0]
    return server, SessionTracker(FakeMcp(), control, idle_s=60, clock=lambda: now[0]), now


async def test_sessions_are_tracked_from_the_http_exchanges():
    server, tracker, _ = tracked_server()
    await exchange(tracker, "POST")  # initialize: the answer carries s-1
    await exchange(tracker, "POST")
    assert server.open_sessions == {"s-1", "s-2"}
    server.world_for("s-1"), server.world_for("s-2")
    await exchange(tracker, "DELETE", "s-1")  # the client ends it
    assert server.open_sessions == {"s-2"}
    assert list(server.sessions) == ["s-2"]
    await exchange(tracker, "POST", "nope")  # the SDK's 404 for an id it never gave out
    assert server.open_sessions == {"s-2"}
    tracker.app.given.clear()  # the SDK forgot s-2 (it idled out there)
    await exchange(tracker, "POST", "s-2")
    assert server.open_sessions == set()
    assert server.sessions == {}


async def test_an_idle_session_ends_when_the_next_request_arrives():
    server, tracker, now = tracked_server()
    await exchange(tracker, "POST")
    server.world_for("s-1")
    now[0] = 59.0
    await exchange(tracker, "GET", path="/faultbench/sessions")
    assert server.open_sessions == {"s-1"}
    await exchange(tracker, "POST", "s-1")  # a request: idle from now on
    now[0] = 59.0 + 61.0
    await exchange(tracker, "GET", path="/faultbench/sessions")
    assert server.open_sessions == set()
    assert server.sessions == {}


async def test_a_call_in_flight_as_its_session_closes_creates_no_world():
    """The session closes between a call's arrival and its handler picking a world: the call
    is a `no_session` tool error, and no fork is made that nothing would ever free."""
    server, tracker, _ = tracked_server()
    await exchange(tracker, "POST")  # initialize: s-1 opens
    handler = server.get_request_handler("tools/call")
    params = handler.params_type.model_validate(
        {"name": "create_order", "arguments": {"status": "placed", "total": 1.0}}
    )
    request = SimpleNamespace(headers={"mcp-session-id": "s-1"})
    ctx = SimpleNamespace(protocol_version="2025-11-25", request=request)
    assert (await handler.handler(ctx, params))["isError"] is False
    assert list(server.sessions) == ["s-1"]

    await exchange(tracker, "DELETE", "s-1")  # the session ends: its world is freed
    assert server.sessions == {}
    late = await handler.handler(ctx, params)
    assert late["isError"] is True
    assert "_meta" not in late  # no --debug-meta: the text alone says it
    assert "session has ended" in late["content"][0]["text"]
    assert server.sessions == {}
    assert len(server.world.orders.all()) == 3  # nor did it write to the shared template


# --- --events survives SIGKILL -------------------------------------------------------------------


async def test_events_file_replays_to_the_hash_reported_before_sigkill(serve_http, tmp_path):
    events_file = tmp_path / "events.jsonl"
    server = serve_http(
        str(SHOP), "--events", str(events_file), "--seed", "11", "--run", "2", "--debug-meta"
    )
    async with mcp.Client(server.url, read_timeout_seconds=15) as client:
        for i in range(12):  # runs through issue_refund's scripted faults
            try:
                answer = await client.call_tool(
                    "issue_refund", {"order_id": "1", "amount": float(i)}
                )
            except RuntimeError:  # malformed_json, empty_result: they break its outputSchema
                answer = None
            # on disk before the agent got its answer: the call's last event is the file's
            last = decode_events(events_file.read_bytes())[-1]
            assert type(last).__name__ in ("CallSucceeded", "CallFailed")
            if answer is not None:
                assert last.call_id == answer.meta["call_id"]
        await client.call_tool("update_order", {"id": "2", "status": "returned"})
        await client.call_tool("get_order", {"id": "404"})
        await control(server.base, "POST", "clock", json={"advance": "2h"})
        reported = (await control(server.base, "GET", "state")).json()
        server.stop(signal.SIGKILL)
    events = decode_events(events_file.read_bytes())
    assert events[-1].seq == reported["seq"]
    replayed = faultbench.replay(SHOP, events)
    assert replayed.state_hash() == reported["hash"]
    assert replayed.to_dict()["refund"] == reported["tables"]["refund"]
    # and the command verifies it
    assert (
        cli_main(
            ["replay", str(events_file), "--world", str(SHOP), "--expect-hash", reported["hash"]]
        )
        == 0
    )


# --- security --------------------------------------------------------------------------------


async def test_token_is_required_on_every_request(serve_http):
    server = serve_http(str(SHOP), "--no-faults", "--token", "s3cret")
    assert (await control(server.base, "GET", "state")).status_code == 401
    wrong = await control(server.base, "GET", "state", headers={"authorization": "Bearer nope"})
    assert wrong.status_code == 401
    async with httpx2.AsyncClient(timeout=10) as http:
        refused = await http.post(server.url, headers=JSONRPC_HEADERS, json={})
        assert refused.status_code == 401
    auth = {"authorization": "Bearer s3cret"}
    assert (await control(server.base, "GET", "state", headers=auth)).status_code == 200
    async with httpx2.AsyncClient(headers=auth, timeout=10) as http:
        transport = streamable_http_client(server.url, http_client=http)
        async with mcp.Client(transport, read_timeout_seconds=15) as client:
            assert not (await client.call_tool("get_order", {"id": "1"})).is_error
    # SIGTERM: a clean exit
    assert server.stop(signal.SIGTERM) == 0
    assert "Traceback" not in server.stderr


async def test_ctrl_c_while_a_client_is_connected_is_a_clean_exit(serve_http):
    server = serve_http(str(SHOP), "--no-faults", "-v")
    async with mcp.Client(server.url, mode="legacy", read_timeout_seconds=15) as client:
        assert not (await client.call_tool("get_order", {"id": "1"})).is_error
        assert server.stop(signal.SIGINT) == 0
    assert "Traceback" not in server.stderr
    assert "c1 get_order -> ok" in server.stderr
    assert "SIGINT: shutting down" in server.stderr


async def test_host_and_origin_checks():
    async with running(rule_free_shop()) as server:
        evil_host = {"host": "evil.example:80"}
        evil_origin = {"origin": "http://evil.example"}
        assert (await control(server.base, "GET", "state", headers=evil_host)).status_code == 421
        assert (await control(server.base, "GET", "state", headers=evil_origin)).status_code == 403
        async with httpx2.AsyncClient(timeout=10) as http:
            for headers in (evil_host, evil_origin):
                answer = await http.post(
                    server.url,
                    headers={**JSONRPC_HEADERS, **headers},
                    json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                )
                assert answer.status_code in (403, 421)
        local = {"host": "localhost:1234", "origin": "http://localhost:5173"}
        assert (await control(server.base, "GET", "state", headers=local)).status_code == 200


async def test_a_clock_set_past_9999_in_utc_is_a_400():
    async with running(rule_free_shop()) as server:
        now = (await control(server.base, "GET", "clock")).json()["now"]
        late = await control(
            server.base, "POST", "clock", json={"set": "9999-12-31T23:59:59-12:00"}
        )
        assert late.status_code == 400
        assert late.json()["error"] == (
            "time 9999-12-31T23:59:59-12:00 is outside the calendar in UTC; expected a time "
            "from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z in UTC"
        )
        assert (await control(server.base, "GET", "clock")).json()["now"] == now


async def test_a_faults_block_of_duplicate_keys_gets_a_bounded_answer():
    """1 MB of duplicate keys used to answer an 11 MB body: the loader's 100-problem cap
    holds for duplicate keys too."""
    block = "".join(f"orders.get_order: {{ latency_ms: {i} }}\n" for i in range(25_000))
    assert len(block) > 900_000
    async with running(rule_free_shop()) as server:
        # What is bounded here is the answer's size; the timeout is generous so that a loaded
        # machine parsing 1 MB of YAML does not decide the test.
        answer = await control(server.base, "PUT", "faults", content=block.encode(), timeout=120)
        assert answer.status_code == 400
        assert len(answer.content) < 64 * 1024
        lines = answer.json()["error"].splitlines()
        assert len(lines) == 101
        assert "duplicate key 'orders.get_order' (first written at" in lines[0]
        assert lines[-1].endswith(
            "stopped after 100 problems; expected fewer: fix these and check again"
        )
