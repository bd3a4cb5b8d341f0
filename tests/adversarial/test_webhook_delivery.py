"""`serve --webhook-url` with a slow receiver (it answers after the world's 3 s timeout): the
call that made a delivery due, an unrelated request and a clock move through the control API
are answered at once, and the attempts still go out one at a time in due order, each logged
at its own virtual time, the same in every run. Issue 41's review, item 7 (a 3 s receiver
delayed the call, an unrelated GET by 2.5 s and a clock move by 15 s)."""

from __future__ import annotations

import time
from datetime import timedelta

import httpx

from faultbench.kernel import WebhookAttempted, World, replay
from faultbench.kernel.lowlevel import load_spec
from faultbench.serve import build_server, serve_in_thread

from ..test_webhooks import WORLD, Receiver, receiver  # noqa: F401 (a fixture)

REST = WORLD.replace(
    "        kind: create\n",
    "        kind: create\n        http: { method: POST, path: /v1/refunds }\n",
)


def run(receiver: Receiver) -> tuple[World, list[float]]:  # noqa: F811
    """A create over REST, an unrelated GET, a 10-minute clock move: the wall time of each."""
    receiver.statuses = ["hang", "hang"]  # the first two attempts time out
    world = World.from_spec(load_spec("<hooks>", text=REST))
    server = build_server(world, webhook_url=receiver.url)
    took = []
    with serve_in_thread(server, rest=True) as url, httpx.Client() as http:
        base = url.removesuffix("/mcp")
        for method, path, body in [
            ("POST", "/v1/refunds", {"amount": 5}),
            ("GET", "/faultbench/state", None),
            ("POST", "/faultbench/clock", {"advance": 600}),
        ]:
            t0 = time.perf_counter()
            answer = http.request(method, base + path, json=body)
            took.append(time.perf_counter() - t0)
            assert answer.status_code == 200, answer.text
        assert server.wait_webhooks(60)
    return world, took


def attempts(world: World) -> list[tuple[str, int, str, str, timedelta]]:
    t0 = world.events[0].at
    return [
        (e.delivery, e.attempt, e.outcome, e.error, e.at - t0)
        for e in world.events
        if isinstance(e, WebhookAttempted)
    ]


def test_a_slow_receiver_delays_no_call_no_request_and_no_clock_move(receiver: Receiver):  # noqa: F811
    world, took = run(receiver)
    print(f"\ncreate, GET, clock move with a receiver that hangs: {[round(t, 3) for t in took]} s")
    assert max(took) < 1.0  # each hang costs the sender 3 s; nobody waits for it
    expected = [
        ("dlv_1", 1, "failed", "timed out after 3s", timedelta(0)),
        ("dlv_1", 2, "failed", "timed out after 3s", timedelta(seconds=30)),
        ("dlv_1", 3, "succeeded", "", timedelta(seconds=90)),  # backoff 30 s, then 60 s
        ("dlv_2", 1, "succeeded", "", timedelta(minutes=2)),  # the `then:` at 2 m
    ]
    assert attempts(world) == expected
    assert replay(world.spec, world.events).state_hash() == world.state_hash()
    # the same in another run
    receiver.received.clear()
    again, _ = run(receiver)
    assert attempts(again) == expected
    assert again.state_hash() == world.state_hash()
