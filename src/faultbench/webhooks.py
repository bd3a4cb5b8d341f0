"""Webhook delivery: the shell that POSTs a world's due deliveries to a loopback endpoint.

The kernel decides what is due and when (`World.webhooks_due`, in virtual time) and signs
each body; this module only sends, to 127.0.0.1, localhost or [::1], and reports every
outcome back (`World.webhook_attempted`), so the log holds each attempt and a replay needs
no endpoint at all. It uses the standard library's `http.client`, blocking: from async code
run it in a worker thread (`await asyncio.to_thread(deliver, world, url)`,
`trio.to_thread.run_sync`). `Deliverer` sends off the caller's path: a background thread
that a server tells about each world whose calls may have made deliveries due
(`faultbench serve --webhook-url`), so a slow endpoint delays no call. `WebhookReceiver` is
the other end, for tests: a loopback endpoint that keeps what it got (the pytest fixture
`webhook_receiver` is one).

    attempts = deliver(world, "http://127.0.0.1:8787/hooks")             # what is due now
    attempts = deliver(world, "http://127.0.0.1:8787/hooks", within=600)  # and the next 10 min
    event = verify_webhook(body, headers["Faultbench-Signature"], "whsec_test")

    with WebhookReceiver() as receiver:                     # http://127.0.0.1:PORT/hooks
        deliver(world, receiver.url)
        events = receiver.events("whsec_test")              # each signature checked
"""

from __future__ import annotations

import atexit
import http.client
import logging
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit

from faultbench.kernel.lowlevel import (
    WEBHOOK_SIGNATURE_HEADER,
    WebhookDelivery,
    WebhookSignatureError,
    sign_webhook,
    verify_webhook,
    webhook_url_problem,
)

if TYPE_CHECKING:
    from faultbench.kernel import WebhookAttempted, World

log = logging.getLogger("faultbench.webhooks")

__all__ = [
    "WEBHOOK_SIGNATURE_HEADER",
    "Deliverer",
    "ReceivedWebhook",
    "WebhookDelivery",
    "WebhookReceiver",
    "WebhookSignatureError",
    "deliver",
    "deliver_due",
    "post",
    "sign_webhook",
    "verify_webhook",
]


def deliver(
    world: World, url: str | None = None, *, within: float | timedelta | None = None
) -> list[WebhookAttempted]:
    """POST every webhook delivery attempt due at the world's virtual time to `url` (default:
    the world file's `webhooks: url:`) and log how each went; returns those events.

    With `within` (seconds or a timedelta), go on through that much virtual time: the clock
    moves to each next due attempt (a retry after its backoff, a delayed event), delivers
    it, and ends `within` after it started, as `world.clock.advance(within)` would."""
    target = url if url is not None else (world.spec.webhooks.url if world.spec.webhooks else None)
    if target is None:
        raise ValueError(
            "no webhook url: pass deliver(world, url) or set 'url:' under webhooks: in the "
            "world file"
        )
    problem = webhook_url_problem(target)
    if problem is not None:
        raise ValueError(problem)
    end: datetime | None = None
    if within is not None:
        step = within if isinstance(within, timedelta) else timedelta(seconds=within)
        end = world.clock.now() + step
    out: list[WebhookAttempted] = []
    while True:
        for d in world.webhooks_due():
            status, error = post(target, d)
            out.append(world.webhook_attempted(d, status=status, error=error))
        if end is None:
            return out
        # the next stop: an attempt due, or an effect whose record change makes a new event
        now = world.clock.now()
        stops = [d.due for d in world.webhooks_pending()[:1]]
        stops += [e["due"] for e in world.scheduled[:1]]
        stop = min((t for t in stops if t > now), default=end)
        if stop >= end:
            if end > now:
                world.clock.set(end)
            end = None  # deliver what the last step made due, then stop
            continue
        world.clock.set(stop)


def deliver_due(world: World, url: str) -> list[WebhookAttempted]:
    """POST every attempt due at the world's virtual time, the earliest due first, one at a
    time (a retry that falls due before a later delivery goes before it), each logged at its
    own due time (`webhook_attempted(at=)`): the log is the same however long the endpoint
    takes or how far the clock has moved since. Returns the attempts logged."""
    out: list[WebhookAttempted] = []
    while due := world.webhooks_due():
        first = due[0]
        status, error = post(url, first)
        out.append(world.webhook_attempted(first, status=status, error=error, at=first.due))
    return out


class Deliverer:
    """Webhook deliveries off the caller's path: a background thread that, for each world it
    is told about (`kick`), POSTs what is due to `url` (`deliver_due`), the worlds in the order
    they were told about, one attempt at a time. `kick` returns at once; `wait` blocks until
    everything told about is sent; `close` stops the thread once it is. A failure other
    than the endpoint's (a journal that cannot write) is logged and ends that world's pass;
    the next `kick` tries again."""

    def __init__(self, url: str):
        self.url = url
        _DELIVERERS.add(self)  # drained at interpreter exit: a server's last calls are sent
        self._cond = threading.Condition()
        self._todo: dict[int, World] = {}
        self._busy = False
        self._closed = False
        self._thread: threading.Thread | None = None

    def kick(self, world: World) -> None:
        with self._cond:
            if self._closed:
                return
            self._todo.setdefault(id(world), world)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="faultbench-webhooks", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until every world told about has had its pass; False if `timeout` (seconds)
        ran out first."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._todo and not self._busy, timeout)

    def close(self, timeout: float | None = None) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._busy = False
                self._cond.notify_all()
                self._cond.wait_for(lambda: bool(self._todo) or self._closed)
                if not self._todo:
                    return  # closed, nothing left
                world = self._todo.pop(next(iter(self._todo)))
                self._busy = True
            try:
                deliver_due(world, self.url)
            except Exception:
                log.exception("webhook delivery to %s failed", self.url)


#: the deliverers alive, drained at interpreter exit (`atexit` runs while daemon threads do)
_DELIVERERS: weakref.WeakSet[Deliverer] = weakref.WeakSet()
#: how long the exit waits for each deliverer's last attempts
EXIT_DRAIN_S = 30.0


@atexit.register
def _drain_at_exit() -> None:
    for deliverer in list(_DELIVERERS):
        deliverer.close(EXIT_DRAIN_S)


def post(url: str, delivery: WebhookDelivery) -> tuple[int | None, str]:
    """POST one delivery; (status, "") if the endpoint answered, else (None, why not). The
    reasons are fixed texts (no port, no OS wording), so logs compare across machines."""
    parts = urlsplit(url)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    conn = http.client.HTTPConnection(
        parts.hostname or "127.0.0.1", parts.port, timeout=delivery.timeout_s
    )
    try:
        conn.request("POST", path, body=delivery.body, headers=delivery.headers)
        resp = conn.getresponse()
        resp.read()
        return resp.status, ""
    except TimeoutError:
        return None, f"timed out after {delivery.timeout_s:g}s"
    except ConnectionRefusedError:
        return None, "connection refused"
    except (OSError, http.client.HTTPException) as exc:
        return None, f"connection failed ({type(exc).__name__})"
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------------
# The receiving end, for tests
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReceivedWebhook:
    """One POST a `WebhookReceiver` got, as it was sent: the path, the headers (names in
    lower case) and the raw body, whose bytes the signature covers."""

    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def delivery(self) -> str:
        """`Faultbench-Delivery`: `dlv_<k>` (`dlv_<k>_2` for a `duplicate_delivery` copy)."""
        return self.headers.get("faultbench-delivery", "")

    @property
    def attempt(self) -> int:
        """`Faultbench-Attempt`: 1 for the first attempt, 2 for the first retry, ..."""
        return int(self.headers.get("faultbench-attempt", "0") or 0)

    @property
    def signature(self) -> str:
        """`Faultbench-Signature`: `t=<unix time>,v1=<hex HMAC-SHA256>`."""
        return self.headers.get(WEBHOOK_SIGNATURE_HEADER.lower(), "")

    def event(self, secret: str) -> dict[str, Any]:
        """The event this POST carried, its signature checked against `secret`; raises
        `WebhookSignatureError` if it does not match."""
        return verify_webhook(self.body, self.signature, secret)


class WebhookReceiver:
    """A webhook endpoint on 127.0.0.1 (a free port), served by a background thread, that
    keeps every POST it gets (`received`) and answers each with the next status of
    `statuses` (200 once they run out), so a test can make attempts fail and see the retries.

    `secret`, when set (the pytest fixture sets the served world's), is what `events()`
    checks the signatures with. A server in this process sends off its calls' path
    (`Deliverer`): `sent_by(server.wait_webhooks)` (the pytest fixture does it) makes
    `received` and `events()` wait until what it was asked to send is sent.
    """

    def __init__(self, *, statuses: list[int] | None = None, secret: str | None = None):
        self.statuses: list[int] = list(statuses or [])
        self.secret = secret
        self._received: list[ReceivedWebhook] = []
        self._senders: list[Callable[[float | None], bool]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT/hooks`, once started."""
        if self._server is None:
            raise RuntimeError("the receiver is not started: use it as a context manager")
        return f"http://127.0.0.1:{self._server.server_address[1]}/hooks"

    def sent_by(self, wait: Callable[[float | None], bool]) -> None:
        """Have `received` and `events()` first wait (`wait(timeout)`, up to 30 s) for a
        sender in this process, such as a server's `wait_webhooks`."""
        self._senders.append(wait)

    @property
    def received(self) -> list[ReceivedWebhook]:
        """Every POST so far, in arrival order (after the senders of `sent_by` are done)."""
        for wait in self._senders:
            wait(30.0)
        return self._received

    def events(self, secret: str | None = None) -> list[dict[str, Any]]:
        """The events received, in arrival order (a retried or duplicated event as often as
        it came), each signature checked against `secret` (default: `self.secret`)."""
        key = secret if secret is not None else self.secret
        if key is None:
            raise ValueError(
                "no secret to check the signatures with: pass events(secret) (the world "
                "file's webhooks: secret:), or serve the world through a fixture that sets it"
            )
        got = self.received
        with self._lock:
            received = list(got)
        return [r.event(key) for r in received]

    def _answer(self, path: str, headers: dict[str, str], body: bytes) -> int:
        with self._lock:
            self._received.append(ReceivedWebhook(path, headers, body))
            return self.statuses.pop(0) if self.statuses else 200

    def __enter__(self) -> Self:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                self.send_response(receiver._answer(self.path, headers, body))
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the deliveries are in the world's log already

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="faultbench-webhook-receiver", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(10)

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "not started"
        return f"<WebhookReceiver {where}: {len(self._received)} received>"
