"""Limits and hostile requests of the HTTP server (issue 14): bodies, snapshots, sessions,
Host without a port, an alias bomb sent as fault rules, and the append-only --events file."""

from __future__ import annotations

import time

import httpx2
import pytest
import trio

import faultbench
from faultbench.kernel import decode_events, encode_events
from faultbench.serve import build_server
from faultbench.serve._control import MAX_BODY, MAX_SNAPSHOTS, Control
from faultbench.serve._http import SessionTracker
from faultbench.serve._journal import Journal

from .serve_helpers import SHOP
from .test_http import FakeMcp, control, exchange, rule_free_shop, running

pytestmark = pytest.mark.anyio

BOMB = "a: &a [1,1,1,1,1,1,1,1,1]\n" + "".join(
    f"{n}: &{n} [{','.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi")
)


@pytest.fixture
def anyio_backend():
    return "trio"


async def test_a_host_header_without_a_port_is_accepted():
    async with running(rule_free_shop()) as server:
        for host in ("localhost", "127.0.0.1", "[::1]"):
            answer = await control(server.base, "GET", "clock", headers={"host": host})
            assert answer.status_code == 200, host
        evil = await control(server.base, "GET", "clock", headers={"host": "evil.example"})
        assert evil.status_code == 421


async def test_a_body_over_the_limit_is_refused_with_413():
    async with running(rule_free_shop()) as server:
        big = b"{" + b" " * MAX_BODY + b"}"
        answer = await control(server.base, "PUT", "faults", content=big)
        assert answer.status_code == 413
        assert "at most 1024 KiB" in answer.json()["error"]

        # streamed without a length: refused once the limit is passed
        async def chunks():
            for _ in range(64):
                yield b" " * (64 * 1024)

        answer = await control(server.base, "POST", "clock", content=chunks())
        assert answer.status_code == 413
        assert (await control(server.base, "GET", "clock")).status_code == 200


async def test_an_alias_bomb_in_fault_rules_is_refused_and_the_server_keeps_answering():
    async with running(rule_free_shop()) as server:
        body = BOMB + "payments.*: {latency_ms: *i}\n"
        started = time.monotonic()
        async with trio.open_nursery() as nursery:
            answers = {}

            async def put():
                answers["put"] = await control(
                    server.base,
                    "PUT",
                    "faults",
                    content=body,
                    headers={"content-type": "application/yaml"},
                )

            nursery.start_soon(put)
            answers["state"] = await control(server.base, "GET", "state")
        assert time.monotonic() - started < 5
        assert answers["state"].status_code == 200
        refused = answers["put"]
        assert refused.status_code == 400
        assert "aliases (*name) expand to more than 100_000 values" in refused.json()["error"]
        assert len(refused.text) < 1000


def test_snapshots_per_world_are_limited_and_the_oldest_forgotten():
    server = build_server(rule_free_shop())
    ctl = Control(server)

    async def main():
        class Req:
            query_params: dict = {}  # noqa: RUF012

        for _ in range(MAX_SNAPSHOTS + 5):
            await ctl.fork(Req())

    trio.run(main)
    assert len(ctl.snapshots) == MAX_SNAPSHOTS
    assert "s1" not in ctl.snapshots
    assert f"s{MAX_SNAPSHOTS + 5}" in ctl.snapshots


async def test_open_sessions_are_limited():
    server = build_server(rule_free_shop(), isolate=True)
    ctl = Control(server)
    server.open_sessions = ctl.live
    mcp = FakeMcp()
    tracker = SessionTracker(mcp, ctl, max_sessions=3)
    for _ in range(5):
        await exchange(tracker, "POST")
    assert server.open_sessions == {"s-1", "s-2", "s-3"}
    assert mcp.given == {"s-1", "s-2", "s-3"}  # the two refused never reached the SDK
    await exchange(tracker, "DELETE", "s-3")  # one ends: room for one more
    await exchange(tracker, "POST")
    assert server.open_sessions == {"s-1", "s-2", "s-3"}


async def test_the_session_limit_answers_503_over_http():
    async with running(rule_free_shop(), isolate=True) as server:
        ctl_live = server.server.open_sessions
        ctl_live.update(f"fake-{i}" for i in range(1000))
        async with httpx2.AsyncClient(timeout=10) as http:
            answer = await http.post(
                server.url,
                headers={"accept": "application/json, text/event-stream"},
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            )
        assert answer.status_code == 503
        assert "1000 open MCP sessions" in answer.json()["error"]["message"]


def test_the_journal_only_grows_and_replays_resets_and_restores(tmp_path):
    world = faultbench.load_world(SHOP)
    path = tmp_path / "run.jsonl"
    Journal(path, world)  # watches the world from here on
    sizes = []

    def step():
        size = path.stat().st_size
        assert not sizes or size >= sizes[-1]  # never rewritten
        sizes.append(size)
        assert encode_events(decode_events(path.read_bytes())) == encode_events(world.events)

    world.call("get_order", {"id": "1"})
    step()
    first = world.snapshot()
    world.call("update_order", {"id": "1", "status": "shipped"})
    step()
    second = world.snapshot()
    world.restore(first)
    step()
    world.call("delete_order", {"id": "2"})
    step()
    world.restore(second)  # forward again, onto a branch the file wrote earlier
    step()
    world.reset()
    step()
    world.call("get_order", {"id": "3"})
    step()
    assert path.read_text().count('"type":"LogRewound"') == 3
    replayed = faultbench.replay(SHOP, path)
    assert replayed.state_hash() == world.state_hash()


# --- issue 25: caps that hold under concurrency, with or without --isolate ---------------------


class SlowMcp(FakeMcp):
    """The SDK answering `initialize` after a few scheduler passes, as a real one does: many
    requests are in flight before any of them is answered."""

    async def __call__(self, scope, receive, send) -> None:
        for _ in range(5):
            await trio.sleep(0)
        await super().__call__(scope, receive, send)


@pytest.mark.parametrize("isolate", [True, False])
async def test_the_session_cap_is_exact_with_30_clients_racing(isolate):
    server = build_server(rule_free_shop(), isolate=isolate)
    ctl = Control(server)
    tracker = SessionTracker(SlowMcp(), ctl, max_sessions=10)
    async with trio.open_nursery() as nursery:
        for _ in range(30):
            nursery.start_soon(exchange, tracker, "POST")
    assert len(ctl.live) == 10  # not one more, however the 30 interleave
    assert tracker.opening == 0


async def test_the_cap_holds_over_http_without_isolate(tmp_path):
    import faultbench.serve._http as http_module

    async with running(rule_free_shop(), max_sessions=5) as server:
        statuses = []

        async def open_one(http):
            answer = await http.post(
                server.url,
                headers={"accept": "application/json, text/event-stream"},
                json={"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "race", "version": "0"}}},
            )  # fmt: skip
            statuses.append(answer.status_code)
            if answer.status_code == 503:
                assert "5 open MCP sessions" in answer.json()["error"]["message"]

        async with httpx2.AsyncClient(timeout=30) as http, trio.open_nursery() as nursery:
            for _ in range(30):
                nursery.start_soon(open_one, http)
        assert sorted(statuses) == [200] * 5 + [503] * 25
        listed = (await control(server.base, "GET", "sessions")).json()
        assert listed == {"isolate": False, "sessions": listed["sessions"]}
        assert len(listed["sessions"]) == 5
    assert http_module.MAX_SESSIONS == 1000  # the documented default


async def test_any_loopback_address_bound_is_accepted_as_host():
    async with running(rule_free_shop(), host="127.0.0.2") as server:
        assert "127.0.0.2" in server.url
        for host in ("127.0.0.2", server.base.removeprefix("http://"), "localhost"):
            answer = await control(server.base, "GET", "clock", headers={"host": host})
            assert answer.status_code == 200, host
        evil = await control(server.base, "GET", "clock", headers={"host": "127.0.0.3"})
        assert evil.status_code == 421
