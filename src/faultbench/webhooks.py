"""Webhook delivery: the shell that POSTs a world's due deliveries to a loopback endpoint.

The kernel decides what is due and when (`World.webhooks_due`, in virtual time) and signs
each body; this module only sends, to 127.0.0.1, localhost or [::1], and reports every
outcome back (`World.webhook_attempted`), so the log holds each attempt and a replay needs
no endpoint at all. It uses the standard library's `http.client`, blocking: from async code
run it in a worker thread (`await asyncio.to_thread(deliver, world, url)`,
`trio.to_thread.run_sync`). `faultbench serve --webhook-url` calls it after each tool call.

    attempts = deliver(world, "http://127.0.0.1:8787/hooks")             # what is due now
    attempts = deliver(world, "http://127.0.0.1:8787/hooks", within=600)  # and the next 10 min
    event = verify_webhook(body, headers["Faultbench-Signature"], "whsec_test")
"""

from __future__ import annotations

import http.client
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
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
    "WebhookDelivery",
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
