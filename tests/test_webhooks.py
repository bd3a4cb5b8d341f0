"""`faultbench.webhooks`: a world's deliveries POSTed to a real receiver on 127.0.0.1 (an
asyncio server), signatures checked there, retries in virtual time, faults reproducible from
the seed, and a log that replays without the receiver."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta

import pytest

from faultbench.kernel import World, decode_events, encode_events, replay
from faultbench.kernel.lowlevel import load_spec
from faultbench.webhooks import WEBHOOK_SIGNATURE_HEADER, deliver, verify_webhook

WORLD = """\
name: hooks
seed: 7
services:
  payments:
    records:
      refund: { id: str, amount: int, status: "enum[pending, succeeded, failed]" }
    operations:
      issue_refund:
        kind: create
        record: refund
        set: { status: pending }
        then: { after: 2m, set: { status: succeeded } }
events:
  refund.created: { record: refund, on: [create] }
  refund.updated: { record: refund, on: [update] }
webhooks: { secret: whsec_test, retries: 3, backoff: 30s, timeout: 3s }
"""


@dataclass
class Receiver:
    """An HTTP endpoint on 127.0.0.1 in its own thread and asyncio loop: answers each POST
    with the next of `statuses` (200 once they run out; "hang" waits past any timeout) and
    keeps what arrived."""

    statuses: list[int | str] = field(default_factory=list)
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")[1:]
        headers = {
            k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines if x)
        }
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.received.append((headers, body))
        status = self.statuses.pop(0) if self.statuses else 200
        if status == "hang":
            await asyncio.sleep(6)  # past the world's 3 s timeout, however loaded the machine
            status = 200
        writer.write(
            f"HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode()
        )
        await writer.drain()
        writer.close()

    def events(self) -> list[dict[str, object]]:
        return [
            verify_webhook(body, h[WEBHOOK_SIGNATURE_HEADER.lower()], "whsec_test")
            for h, body in self.received
        ]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stop: list[asyncio.Event] = []

    async def main() -> None:
        server = await asyncio.start_server(r.handle, "127.0.0.1", 0)
        r.port = server.sockets[0].getsockname()[1]
        stop.append(asyncio.Event())
        ready.set()
        async with server:
            await stop[0].wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    assert ready.wait(10)
    yield r
    loop.call_soon_threadsafe(stop[0].set)
    thread.join(10)
    loop.close()


def fresh(faults: str = "", seed: int | None = None) -> World:
    return World.from_spec(load_spec("<hooks>", text=WORLD + faults), seed=seed)


def test_a_receiver_gets_each_event_signed_as_list_events_shows_it(receiver: Receiver):
    w = fresh()
    w.call("issue_refund", {"amount": 500})
    w.call("issue_refund", {"amount": 700})
    attempts = deliver(w, receiver.url)
    assert [(a.delivery, a.outcome, a.status) for a in attempts] == [
        ("dlv_1", "succeeded", 200), ("dlv_2", "succeeded", 200),
    ]  # fmt: skip
    assert receiver.events() == w.call("list_events").value["data"]
    headers = receiver.received[0][0]
    assert (headers["faultbench-delivery"], headers["faultbench-attempt"]) == ("dlv_1", "1")
    assert headers["content-type"] == "application/json"
    assert deliver(w, receiver.url) == []  # nothing is sent twice


def test_failures_are_retried_after_their_backoff_in_virtual_time(receiver: Receiver):
    receiver.statuses = [500, "hang", 200]
    w = fresh()
    w.call("issue_refund", {"amount": 500})
    t0 = w.clock.now()
    attempts = deliver(w, receiver.url, within=60)
    assert [(a.attempt, a.outcome, a.status, a.error, a.at - t0) for a in attempts] == [
        (1, "failed", 500, "", timedelta(0)),
        (2, "failed", None, "timed out after 3s", timedelta(seconds=30)),
    ]  # fmt: skip
    assert w.clock.now() == t0 + timedelta(seconds=60)  # `within` ends where it says
    attempts = deliver(w, receiver.url, within=600)
    # the third attempt 60 s after the second; the refund's update at 2m, on time
    assert [(a.delivery, a.attempt, a.outcome, a.at - t0) for a in attempts] == [
        ("dlv_1", 3, "succeeded", timedelta(seconds=90)),
        ("dlv_2", 1, "succeeded", timedelta(seconds=120)),
    ]  # fmt: skip
    created, updated = (e["id"] for e in w.call("list_events").value["data"])
    assert [e["id"] for e in receiver.events()] == [created, created, created, updated]


def test_an_endpoint_that_refuses_connections_is_a_failed_attempt():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/hooks"
    w = fresh()
    w.call("issue_refund", {"amount": 500})
    [attempt] = deliver(w, url)
    assert (attempt.outcome, attempt.error) == ("failed", "connection refused")


def test_deliver_refuses_a_url_off_loopback_and_a_world_without_one():
    w = fresh()
    with pytest.raises(ValueError, match="is not on loopback"):
        deliver(w, "http://example.com/hooks")
    with pytest.raises(ValueError, match="no webhook url"):
        deliver(w)


FAULTS = (
    "faults:\n  payments.webhooks: { errors: { duplicate_delivery: 0.25, out_of_order: 0.2, "
    "dropped: 0.15, delayed: { p: 0.1, delay_s: 45s } } }\n"
)


def faulty_run(receiver: Receiver, seed: int) -> tuple[list[tuple[str, str]], bytes]:
    receiver.received.clear()
    receiver.statuses = [200, 500] * 4
    w = fresh(FAULTS, seed=seed)
    for amount in range(1, 7):
        w.call("issue_refund", {"amount": amount})
        deliver(w, receiver.url, within=20)
    deliver(w, receiver.url, within=900)
    arrived = [(str(e["id"]), str(e["type"])) for e in receiver.events()]
    return arrived, encode_events(w.events)


def test_delivery_faults_and_their_order_are_reproducible_from_the_seed(receiver: Receiver):
    arrived, log = faulty_run(receiver, 3)
    assert faulty_run(receiver, 3) == (arrived, log)  # same seed: same arrivals, same bytes
    # the seed decides: other seeds give other arrivals
    assert any(faulty_run(receiver, seed)[0] != arrived for seed in range(4, 9))
    spec = load_spec("<hooks>", text=WORLD + FAULTS)
    again = replay(spec, decode_events(log))  # no receiver needed
    assert encode_events(again.events) == log
    assert again.webhooks_pending() == []


def test_an_async_test_delivers_from_a_worker_thread(receiver: Receiver):
    async def main() -> list[str]:
        w = fresh()
        w.call("issue_refund", {"amount": 500})
        attempts = await asyncio.to_thread(deliver, w, receiver.url)
        return [a.outcome for a in attempts]

    assert asyncio.run(main()) == ["succeeded"]
