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

from .._calls import Feed, FeedEvent
from .._errors import WebhookSignatureError
from .._faults import FEED_KINDS, FaultDecision, FaultPlan, FaultTarget
from .._spec import WebhookSpec, WorldSpec
from .._store import Book, Draft, Event, FaultInjected, WebhookAttempted

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


def _slot(k: int, event: FeedEvent, decision: FaultDecision | None, nxt: _Slot | None) -> _Slot:
    """Delivery k's slot; `nxt` the slot of delivery k+1, if there is one yet (an out_of_order
    delivery waits for it, and goes right after it)."""
    kind = decision.kind if decision is not None else None
    release: datetime | None = event.at
    order: tuple[int, ...] = (k,)
    if kind == "delayed":
        assert decision is not None
        release = event.at + timedelta(seconds=decision.delay_s or 0.0)
    elif kind == "out_of_order":
        release = None if nxt is None else nxt.release
        order = (k + 1, 1) if nxt is None else (*nxt.order, 1)
    return _Slot(k, event, decision, release, order)


def _copies(slot: _Slot) -> tuple[str, ...]:
    if slot.decision is not None and slot.decision.kind == "duplicate_delivery":
        return (f"dlv_{slot.k}", f"dlv_{slot.k}_2")
    return (f"dlv_{slot.k}",)


def _finished(last: WebhookAttempted | None) -> bool:
    return last is not None and last.retry_at is None


class Webhooks:
    """The deliveries of one world (one per `World`; forks make their own).

    Kept as the log grows, so what a look costs follows what is open, not the history: the
    slots of deliveries not yet finished (succeeded, dropped or given up on every copy), made
    from the feed events that are new since the last look, with the last attempt of each
    delivery read from the log events that are new. A log that is not the one read last
    (a restore, a reset) or another fault plan starts the reading over, once."""

    __slots__ = (
        "_attempts", "_fed", "_feed", "_feed_list", "_k", "_last", "_lock", "_n", "_open",
        "_plan", "_target", "_waiting", "spec",
    )  # fmt: skip

    def __init__(self, spec: WorldSpec, hooks: WebhookSpec):
        self.spec = hooks
        self._feed = Feed(spec)
        self._target = FaultTarget(hooks.service, TARGET, TARGET)
        self._lock = threading.Lock()
        self._start_over(None, None)

    def _start_over(self, plan: FaultPlan | None, feed: list[FeedEvent] | None) -> None:
        #: the last attempt of each open delivery in the log read so far, up to `_n` events,
        #: the last of them `_last` (by identity: a restore puts another object there)
        self._attempts: dict[str, WebhookAttempted] = {}
        self._n = 0
        self._last: Event | None = None
        self._plan = plan
        #: the feed's list read (by identity: the feed starts a new one when it starts over),
        #: how many of its events were read, and how many of them are delivered (k)
        self._feed_list = feed
        self._fed = 0
        self._k = 0
        #: k -> the slot of each delivery not yet finished
        self._open: dict[int, _Slot] = {}
        #: the out_of_order slots at the end, still waiting for the delivery after them
        self._waiting: list[int] = []

    def _sync(self, log: Sequence[Event], plan: FaultPlan) -> None:
        """Read what is new in `log` (called with the lock held)."""
        n = len(log)
        feed = self._feed.read(log, ())
        stale = self._n > n or (self._n and log[self._n - 1] is not self._last)
        if stale or plan is not self._plan or feed is not self._feed_list or self._fed > len(feed):
            self._start_over(plan, feed)
        attempts = self._attempts
        for i in range(self._n, n):
            ev = log[i]
            if type(ev) is WebhookAttempted:
                attempts[ev.delivery] = ev
        self._n, self._last = n, (log[n - 1] if n else None)
        types = self.spec.types
        may_fault = plan.may_fault(self._target)
        for e in feed[self._fed :]:
            if types and e.type not in types:
                continue
            self._k += 1
            k = self._k
            d = plan.decide(self._target, k, now=e.at) if may_fault else None
            decision = d if d is not None and d.kind in FEED_KINDS else None
            self._add(_slot(k, e, decision, None))
        self._fed = len(feed)
        for k, slot in list(self._open.items()):  # what the new attempts finished
            if all(_finished(attempts.get(did)) for did in _copies(slot)):
                del self._open[k]
                for did in _copies(slot):
                    attempts.pop(did, None)

    def _add(self, slot: _Slot) -> None:
        """Open `slot`, and settle the out_of_order slots before it that waited for it."""
        self._open[slot.k] = slot
        nxt = slot
        for j in reversed(self._waiting):
            nxt = self._open[j] = _slot(j, self._open[j].event, self._open[j].decision, nxt)
        if slot.decision is not None and slot.decision.kind == "out_of_order":
            self._waiting.append(slot.k)
        else:
            self._waiting = []

    def pending(
        self, log: Sequence[Event], plan: FaultPlan, now: datetime, *, due_only: bool = False
    ) -> list[Delivery]:
        """Every attempt still to make, due or not (`due_only`: due at `now`), in the order
        they go out."""
        with self._lock:
            self._sync(log, plan)
            last = self._attempts
            keyed: list[tuple[tuple[Any, ...], _Slot, str, int]] = []
            for slot in self._open.values():
                for copy, did in enumerate(_copies(slot)):
                    prev = last.get(did)
                    if prev is None:
                        if slot.release is None:
                            continue
                        attempt, due = 1, slot.release
                    elif prev.retry_at is not None:
                        attempt, due = prev.attempt + 1, prev.retry_at
                    else:
                        continue  # succeeded, dropped, or given up
                    if due_only and due > now:
                        continue
                    keyed.append(((due, slot.order, copy), slot, did, attempt))
        keyed.sort(key=lambda item: item[0])
        stamp = int(now.timestamp())
        out: list[Delivery] = []
        for (due, _, _), slot, did, attempt in keyed:
            body = _encode(slot.event.to_json())
            headers = {
                "Content-Type": "application/json",
                SIGNATURE_HEADER: sign_webhook(body, self.spec.secret, stamp),
                "Faultbench-Delivery": did,
                "Faultbench-Attempt": str(attempt),
            }
            kind = slot.decision.kind if slot.decision is not None else None
            delivery = Delivery(
                did, slot.k, slot.event.id, slot.event.type, attempt, due, body, headers,
                self.spec.timeout_s, kind,
            )  # fmt: skip
            out.append(delivery)
        return out

    def attempted(
        self,
        book: Book,
        plan: FaultPlan,
        delivery: Delivery,
        status: int | None,
        error: str,
        outcome: str | None = None,
        at: datetime | None = None,
    ) -> WebhookAttempted:
        """Log one attempt (and, with delivery k's first, its fault), made at the virtual
        time `at` (default: the clock's; a retry is due `backoff` after it)."""
        with book.lock:
            d = Draft(book.state)
            when = d.state.clock if at is None else at
            if delivery.attempt == 1 and delivery.fault is not None and delivery.id.count("_") == 1:
                self._log_fault(d, plan, delivery, when)
            if outcome is None:
                ok = status is not None and 200 <= status < 300
                outcome = "succeeded" if ok else "failed"
            s = d.state
            retry_at = None
            if outcome == "failed" and delivery.attempt <= self.spec.retries:
                retry_at = when + timedelta(
                    seconds=self.spec.backoff_s * 2 ** (delivery.attempt - 1)
                )
            ev = WebhookAttempted(
                seq=s.seq, at=when, delivery=delivery.id, event=delivery.event,
                attempt=delivery.attempt, outcome=outcome, status=status, error=error,
                retry_at=retry_at,
            )  # fmt: skip
            d.emit(ev)
            book.commit(d)
        return ev

    def _log_fault(self, d: Draft, plan: FaultPlan, delivery: Delivery, when: datetime) -> None:
        decision = plan.decide(self._target, delivery.k, now=when)
        assert decision is not None
        assert delivery.fault is not None
        detail = decision.detail()
        detail["events"] = [delivery.event]
        s = d.state
        d.emit(
            FaultInjected(
                seq=s.seq, at=when, call_id=f"{TARGET}#{delivery.k}", tool=TARGET,
                kind=delivery.fault, detail=detail,
            )
        )  # fmt: skip
