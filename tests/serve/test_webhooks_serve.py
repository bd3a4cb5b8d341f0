"""`build_server(world, webhook_url=...)` (`faultbench serve --webhook-url`): after each tool
call, each `--rest` request and each clock move through the control API the deliveries due
are POSTed to a real receiver on 127.0.0.1, from a background thread off the caller's path
(a slow receiver delays nobody), one attempt at a time in due order, and every attempt is in
the world's log at its own virtual time."""

from __future__ import annotations

import socket
from datetime import timedelta

import httpx2
import mcp
import pytest

from faultbench.kernel import WebhookAttempted, World, replay
from faultbench.kernel.lowlevel import load_spec
from faultbench.serve import WebhookUrlError, build_server, serve_in_thread

from ..test_webhooks import WORLD, Receiver, receiver  # noqa: F401 (a fixture)

pytestmark = pytest.mark.anyio


async def test_each_call_delivers_what_it_made_due(receiver: Receiver):  # noqa: F811
    receiver.statuses = [503]
    world = World.from_spec(load_spec("<hooks>", text=WORLD))
    server = build_server(world, webhook_url=receiver.url)
    async with mcp.Client(server) as client:
        await client.call_tool("issue_refund", {"amount": 5})
        await client.call_tool("issue_refund", {"amount": 6})
    assert server.wait_webhooks(15)
    attempts = [e for e in world.events if isinstance(e, WebhookAttempted)]
    # the first call's delivery failed; the second call's pass delivered its own (the retry
    # waits for its backoff, 30 s of virtual time the calls did not reach)
    assert [(a.delivery, a.attempt, a.outcome) for a in attempts] == [
        ("dlv_1", 1, "failed"),
        ("dlv_2", 1, "succeeded"),
    ]
    assert [e["type"] for e in receiver.events()] == ["refund.created", "refund.created"]


def test_a_webhook_url_needs_a_world_with_webhooks_on_loopback():
    world = World.from_spec(load_spec("<hooks>", text=WORLD))
    with pytest.raises(WebhookUrlError, match="is not on loopback"):
        build_server(world, webhook_url="http://10.0.0.1/hooks")
    plain = World.from_spec(load_spec("<plain>", text=WORLD.split("webhooks:")[0]))
    with pytest.raises(WebhookUrlError, match="has no webhooks: block"):
        build_server(plain, webhook_url="http://127.0.0.1:9/hooks")


def attempts(world: World) -> list[WebhookAttempted]:
    return [e for e in world.events if isinstance(e, WebhookAttempted)]


def test_a_rest_request_delivers_what_it_made_due(receiver: Receiver):  # noqa: F811
    rest = WORLD.replace(
        "        kind: create\n",
        "        kind: create\n        http: { method: POST, path: /v1/refunds }\n",
    )
    world = World.from_spec(load_spec("<hooks>", text=rest))
    server = build_server(world, webhook_url=receiver.url)
    with serve_in_thread(server, rest=True) as url:
        answer = httpx2.post(url.removesuffix("/mcp") + "/v1/refunds", json={"amount": 5})
        assert answer.status_code == 200, answer.text
        assert server.wait_webhooks(15)  # sent after the answer, off the request's path
        assert [e["type"] for e in receiver.events()] == ["refund.created"]
    assert [(a.delivery, a.outcome) for a in attempts(world)] == [("dlv_1", "succeeded")]
    assert replay(world.spec, world.events).state_hash() == world.state_hash()


def test_a_clock_move_through_the_control_api_delivers_on_the_way(receiver: Receiver):  # noqa: F811
    receiver.statuses = [500]  # the first attempt fails: its retry is due 30 s later
    world = World.from_spec(load_spec("<hooks>", text=WORLD))
    world.call("issue_refund", {"amount": 5})  # not through the server: nothing sent yet
    t0 = world.clock.now()
    server = build_server(world, webhook_url=receiver.url)
    with serve_in_thread(server) as url:
        clock = url.removesuffix("/mcp") + "/faultbench/clock"
        moved = httpx2.post(clock, json={"advance": 600})
        assert moved.status_code == 200, moved.text
        assert server.wait_webhooks(15)
        # the refund's `then:` fired at 2 m: its refund.updated went out, logged at 2 m
        assert [e["type"] for e in receiver.events()] == [
            "refund.created", "refund.created", "refund.updated",
        ]  # fmt: skip
        later = (t0 + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
        assert httpx2.post(clock, json={"set": later}).status_code == 200
    assert [(a.delivery, a.attempt, a.outcome, a.at - t0) for a in attempts(world)] == [
        ("dlv_1", 1, "failed", timedelta(0)),
        ("dlv_1", 2, "succeeded", timedelta(seconds=30)),
        ("dlv_2", 1, "succeeded", timedelta(minutes=2)),
    ]
    assert world.clock.now() == t0 + timedelta(hours=1)  # the moves end where they say
    assert replay(world.spec, world.events).state_hash() == world.state_hash()


def test_a_clock_move_with_a_scheduled_effect_and_no_receiver_logs_failed_attempts():
    world = World.from_spec(load_spec("<hooks>", text=WORLD))
    world.call("issue_refund", {"amount": 5})
    with socket.socket() as sock:  # a port nothing listens on any more
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/hooks"
    server = build_server(world, webhook_url=dead)
    with serve_in_thread(server) as url:
        clock = url.removesuffix("/mcp") + "/faultbench/clock"
        assert httpx2.post(clock, json={"advance": 60}).status_code == 200
        assert server.wait_webhooks(15)
    # refused twice (at once, then after the 30 s backoff): each attempt is in the log
    assert [(a.attempt, a.outcome, a.error) for a in attempts(world)] == [
        (1, "failed", "connection refused"),
        (2, "failed", "connection refused"),
    ]
