"""Webhook deliveries (top-level `webhooks:`): what to send, when, and how it went.

The kernel decides and the shell sends. `World.webhooks_due()` answers which attempts are
due at the virtual clock's time, each with its body and signed headers; a shell
(`faultbench.webhooks.deliver`, `serve --webhook-url`) POSTs them to the loopback endpoint
and reports each outcome with `World.webhook_attempted(...)`, a `WebhookAttempted` event.
Nothing here does I/O or reads a real clock.

What is pending is derived from the log, as the feed is (`_calls/_feed.py`): the feed's
events of the delivered types, numbered k = 1, 2, ... in feed order, and the
`WebhookAttempted` events so far. So a replay, a fork or a restore has the same deliveries
pending as the live world had at that point, and worlds without `webhooks:` log nothing new.

    delivery k (id dlv_<k>)   due at its event's time; attempt n+1 due at attempt n's time
                              + backoff * 2**(n-1) after a failure, until `retries` are spent

The feed's fault kinds happen to deliveries too, decided by the fault plan for the k-th
delivery under the rule keyed `<service>.webhooks` (the same draw whenever it is asked):

    duplicate_delivery   a second copy, dlv_<k>_2, sent right after the first
    out_of_order         held until delivery k+1 goes, and sent after it
    delayed              due `delay_s` after its event
    dropped              never sent: logged as an attempt with outcome "dropped"

A delivery's fault is logged (`FaultInjected`, call id `webhooks#<k>`, tool `webhooks`) with
its first attempt, so shrinking pins it as `script:` entries of that key.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import msgspec

from .._calls._feed import Feed, FeedEvent
from .._errors import WebhookSignatureError
from .._faults._kinds import FEED_KINDS
from .._faults._plan import FaultDecision, FaultPlan, FaultTarget
from .._spec._types import WebhookSpec, WorldSpec
from .._store._book import Book, Draft
from .._store._events import Event, FaultInjected, WebhookAttempted

__all__ = [
    "SIGNATURE_HEADER",
    "Delivery",
    "Webhooks",
    "sign_webhook",
    "verify_webhook",
]

#: the header that carries `t=<unix time>,v1=<hex HMAC-SHA256 of "<t>." + body>`
SIGNATURE_HEADER = "Faultbench-Signature"
#: the pseudo-operation deliveries are keyed by in `faults:` and in `FaultInjected`
TARGET = "webhooks"
_encode = msgspec.json.Encoder(order="deterministic").encode


# ---------------------------------------------------------------------------------------------
# Signatures (Stripe's scheme: an HMAC over the timestamp and the body)
# ---------------------------------------------------------------------------------------------


def sign_webhook(body: bytes, secret: str, timestamp: int) -> str:
    """The signature header's value for `body` sent at unix time `timestamp`."""
    mac = hmac.new(secret.encode(), b"%d." % timestamp + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify_webhook(body: bytes, header: str, secret: str) -> dict[str, Any]:
    """The event a delivery carries, after checking its signature header (the value of
    `Faultbench-Signature`) against `body` and `secret`. Raises `WebhookSignatureError` (a
    `ValueError`) when the header is malformed or no `v1` signature matches.

    The timestamp is the world's virtual time at the attempt, so no tolerance against the
    real clock is checked; compare `t` with the event's `created` yourself if you need one."""
    parts: dict[str, list[str]] = {}
    for item in header.split(","):
        key, eq, value = item.strip().partition("=")
        if eq:
            parts.setdefault(key, []).append(value)
    stamps = parts.get("t", [])
    if len(stamps) != 1 or not stamps[0].isascii() or not stamps[0].isdigit():
        raise WebhookSignatureError(
            f"malformed {SIGNATURE_HEADER} header {header!r}; expected t=<unix time>,v1=<hex>"
        )
    expected = sign_webhook(body, secret, int(stamps[0])).rpartition("=")[2]
    if not any(hmac.compare_digest(expected, v) for v in parts.get("v1", [])):
        raise WebhookSignatureError(
            f"no v1 signature in the {SIGNATURE_HEADER} header matches the body under this "
            "secret: the body was changed, or the secret is not the world's webhooks: secret"
        )
    event: dict[str, Any] = msgspec.json.decode(body)
    return event


# ---------------------------------------------------------------------------------------------
# What is due
# ---------------------------------------------------------------------------------------------


class Delivery(msgspec.Struct, frozen=True):
    """One attempt to make: POST `body` with `headers` to the endpoint, then report how it
    went with `World.webhook_attempted(delivery, status=..., error=...)`."""

    id: str  # dlv_<k>, or dlv_<k>_2 for a duplicate's copy
    k: int
    event: str  # evt_<seq>
    type: str
    attempt: int
    due: datetime
    body: bytes
    headers: dict[str, str]
    timeout_s: float
    fault: str | None = None  # the fault kind on delivery k, if any


class _Slot(msgspec.Struct, frozen=True):
    """Delivery k's plan: its event, its fault, when its first attempt is due and where it
    sorts among the others."""

    k: int
    event: FeedEvent
    decision: FaultDecision | None
    release: datetime | None  # None: an out_of_order delivery still waiting for k+1
    order: tuple[int, ...]


class Webhooks:
    """The deliveries of one world (one per `World`; forks make their own)."""

    __slots__ = ("_attempts", "_feed", "_last", "_lock", "_n", "_target", "spec")

    def __init__(self, spec: WorldSpec, hooks: WebhookSpec):
        self.spec = hooks
        self._feed = Feed(spec)
        self._target = FaultTarget(hooks.service, TARGET, TARGET)
        self._lock = threading.Lock()
        #: the last attempt of each delivery in the log read so far, up to `_n` events, the
        #: last of them `_last` (by identity: a restore puts another object there)
        self._attempts: dict[str, WebhookAttempted] = {}
        self._n = 0
        self._last: Event | None = None

    def _last_attempts(self, log: Sequence[Event]) -> dict[str, WebhookAttempted]:
        """Each delivery's last attempt in `log`, read on from where the last look stopped."""
        n = len(log)
        if self._n > n or (self._n and log[self._n - 1] is not self._last):
            self._attempts, self._n = {}, 0
        attempts = self._attempts
        for i in range(self._n, n):
            ev = log[i]
            if type(ev) is WebhookAttempted:
                attempts[ev.delivery] = ev
        self._n, self._last = n, (log[n - 1] if n else None)
        return attempts

    def _slots(self, log: Sequence[Event], plan: FaultPlan) -> list[_Slot]:
        with self._lock:
            feed = self._feed.read(log, ())
        types = self.spec.types
        events = [e for e in feed if not types or e.type in types]
        decisions: list[FaultDecision | None] = []
        for k, e in enumerate(events, 1):
            d = plan.decide(self._target, k, now=e.at) if plan.may_fault(self._target) else None
            decisions.append(d if d is not None and d.kind in FEED_KINDS else None)
        slots: list[_Slot] = []
        nxt: _Slot | None = None
        for k in range(len(events), 0, -1):  # from the last: out_of_order waits for k+1
            e, d = events[k - 1], decisions[k - 1]
            kind = d.kind if d is not None else None
            release: datetime | None = e.at
            order: tuple[int, ...] = (k,)
            if kind == "delayed":
                assert d is not None
                release = e.at + timedelta(seconds=d.delay_s or 0.0)
            elif kind == "out_of_order":
                release = None if nxt is None else nxt.release
                order = (k + 1, 1) if nxt is None else (*nxt.order, 1)
            slot = _Slot(k, e, d, release, order)
            slots.append(slot)
            nxt = slot
        slots.reverse()
        return slots

    def pending(self, log: Sequence[Event], plan: FaultPlan, now: datetime) -> list[Delivery]:
        """Every attempt still to make, due or not, in the order they go out."""
        with self._lock:
            last = dict(self._last_attempts(log))
        out: list[tuple[tuple[Any, ...], Delivery]] = []
        for slot in self._slots(log, plan):
            kind = slot.decision.kind if slot.decision is not None else None
            copies = [f"dlv_{slot.k}"]
            if kind == "duplicate_delivery":
                copies.append(f"dlv_{slot.k}_2")
            body = _encode(slot.event.to_json())
            for copy, did in enumerate(copies):
                prev = last.get(did)
                if prev is None:
                    if slot.release is None:
                        continue
                    attempt, due = 1, slot.release
                elif prev.retry_at is not None:
                    attempt, due = prev.attempt + 1, prev.retry_at
                else:
                    continue  # succeeded, dropped, or given up
                stamp = int(now.timestamp())
                headers = {
                    "Content-Type": "application/json",
                    SIGNATURE_HEADER: sign_webhook(body, self.spec.secret, stamp),
                    "Faultbench-Delivery": did,
                    "Faultbench-Attempt": str(attempt),
                }
                delivery = Delivery(
                    did, slot.k, slot.event.id, slot.event.type, attempt, due, body, headers,
                    self.spec.timeout_s, kind,
                )  # fmt: skip
                out.append(((due, slot.order, copy), delivery))
        out.sort(key=lambda pair: pair[0])
        return [d for _, d in out]

    def attempted(
        self,
        book: Book,
        plan: FaultPlan,
        delivery: Delivery,
        status: int | None,
        error: str,
        outcome: str | None = None,
    ) -> WebhookAttempted:
        """Log one attempt (and, with delivery k's first, its fault)."""
        with book.lock:
            d = Draft(book.state)
            if delivery.attempt == 1 and delivery.fault is not None and delivery.id.count("_") == 1:
                self._log_fault(d, plan, delivery)
            if outcome is None:
                ok = status is not None and 200 <= status < 300
                outcome = "succeeded" if ok else "failed"
            s = d.state
            retry_at = None
            if outcome == "failed" and delivery.attempt <= self.spec.retries:
                retry_at = s.clock + timedelta(
                    seconds=self.spec.backoff_s * 2 ** (delivery.attempt - 1)
                )
            ev = WebhookAttempted(
                seq=s.seq, at=s.clock, delivery=delivery.id, event=delivery.event,
                attempt=delivery.attempt, outcome=outcome, status=status, error=error,
                retry_at=retry_at,
            )  # fmt: skip
            d.emit(ev)
            book.commit(d)
        return ev

    def _log_fault(self, d: Draft, plan: FaultPlan, delivery: Delivery) -> None:
        decision = plan.decide(self._target, delivery.k, now=d.state.clock)
        assert decision is not None
        assert delivery.fault is not None
        detail = decision.detail()
        detail["events"] = [delivery.event]
        s = d.state
        d.emit(
            FaultInjected(
                seq=s.seq, at=s.clock, call_id=f"{TARGET}#{delivery.k}", tool=TARGET,
                kind=delivery.fault, detail=detail,
            )
        )  # fmt: skip
