"""Webhook delivery: the shell that POSTs a world's due deliveries to a loopback endpoint.

The kernel decides what is due and when (`World.webhooks_due`, in virtual time) and signs
each body; this module only sends, to 127.0.0.1, localhost or [::1], and reports every
outcome back (`World.webhook_attempted`), so the log holds each attempt and a replay needs
no endpoint at all. It uses the standard library's `http.client`, blocking: from async code
run it in a worker thread (`await asyncio.to_thread(deliver, world, url)`,
`trio.to_thread.run_sync`). `faultbench serve --webhook-url` calls it after each tool call.
`WebhookReceiver` is the other end, for tests: a loopback endpoint that keeps what it got
(the pytest fixture `webhook_receiver` is one).

    attempts = deliver(world, "http://127.0.0.1:8787/hooks")             # what is due now
    attempts = deliver(world, "http://127.0.0.1:8787/hooks", within=600)  # and the next 10 min
    event = verify_webhook(body, headers["Faultbench-Signature"], "whsec_test")

    with WebhookReceiver() as receiver:                     # http://127.0.0.1:PORT/hooks
        deliver(world, receiver.url)
        events = receiver.events("whsec_test")              # each signature checked
"""

from __future__ import annotations

import http.client
import threading
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

__all__ = [
    "WEBHOOK_SIGNATURE_HEADER",
    "ReceivedWebhook",
    "WebhookDelivery",
    "WebhookReceiver",
    "WebhookSignatureError",
    "deliver",
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
    checks the signatures with.
    """

    def __init__(self, *, statuses: list[int] | None = None, secret: str | None = None):
        self.statuses: list[int] = list(statuses or [])
        self.secret = secret
        self.received: list[ReceivedWebhook] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT/hooks`, once started."""
        if self._server is None:
            raise RuntimeError("the receiver is not started: use it as a context manager")
        return f"http://127.0.0.1:{self._server.server_address[1]}/hooks"

    def events(self, secret: str | None = None) -> list[dict[str, Any]]:
        """The events received, in arrival order (a retried or duplicated event as often as
        it came), each signature checked against `secret` (default: `self.secret`)."""
        key = secret if secret is not None else self.secret
        if key is None:
            raise ValueError(
                "no secret to check the signatures with: pass events(secret) (the world "
                "file's webhooks: secret:), or serve the world through a fixture that sets it"
            )
        with self._lock:
            received = list(self.received)
        return [r.event(key) for r in received]

    def _answer(self, path: str, headers: dict[str, str], body: bytes) -> int:
        with self._lock:
            self.received.append(ReceivedWebhook(path, headers, body))
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
        return f"<WebhookReceiver {where}: {len(self.received)} received>"
