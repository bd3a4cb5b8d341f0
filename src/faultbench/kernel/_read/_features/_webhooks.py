"""The loader's pass for top-level `webhooks:`: the event feed delivered by HTTP POST.

    webhooks:
      url: http://127.0.0.1:8787/hooks   # optional: a test or `serve --webhook-url` may give it
      secret: whsec_test                 # the key of the signature's HMAC
      types: [refund.updated]            # optional: every type of `events:` by default
      retries: 3                         # attempts after a failed first one
      backoff: 30s                       # the first retry's delay, doubling after each
      timeout: 10s                       # how long one attempt waits for an answer

Deliveries go to loopback only (127.0.0.1, localhost, [::1]): faultbench never sends a
request to another host, so a URL elsewhere is a mistake of the file, reported here.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from ..._spec import FeedSpec, WebhookSpec
from ..._text import did_you_mean, one_of, short_repr
from .._base import _LoaderBase
from ._writes import positive_duration

WEBHOOK_KEYS = ("url", "secret", "types", "retries", "backoff", "timeout")
#: the pseudo-operation a `faults:` key names for deliveries: `<feed service>.webhooks`
WEBHOOKS_TARGET = "webhooks"
MAX_RETRIES = 20
MAX_TIMEOUT_S = 600.0
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
_EXAMPLE = "webhooks: {url: http://127.0.0.1:8787/hooks, secret: whsec_test}"


def webhook_url_problem(url: Any) -> str | None:
    """Why `url` is not a webhook endpoint faultbench may post to, or None when it is one:
    an http:// URL on a loopback host."""
    if not isinstance(url, str):
        return f"a webhook url must be text, not {short_repr(url)}"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError as exc:
        return f"invalid webhook url {short_repr(url)} ({exc})"
    if parts.scheme != "http" or parts.hostname not in LOOPBACK_HOSTS:
        return (
            f"webhook url {short_repr(url)} is not on loopback; expected http:// and a host of "
            f"{one_of(LOOPBACK_HOSTS)} (faultbench sends to no other host), e.g. "
            "http://127.0.0.1:8787/hooks"
        )
    return None


class _WebhooksLoader(_LoaderBase):
    def webhooks(self, top: dict[Any, Any], feeds: dict[str, FeedSpec]) -> WebhookSpec | None:
        if "webhooks" not in top:
            return None
        body = self.mapping(top, "webhooks", "webhooks", _EXAMPLE)
        if body is None:
            return None
        before = len(self.doc.problems)
        self.unknown_keys(body, WEBHOOK_KEYS, "webhooks")
        if "events" not in top:
            self.at_key(
                top, "webhooks",
                "webhooks deliver the event feed, but the world declares no events:; add e.g. "
                "'events: {refund.updated: {record: refund, on: [update]}}'",
            )  # fmt: skip
        secret = self.text(body, "secret", "the webhook secret")
        if "secret" not in body or secret == "":
            where = self.doc.value_at(body, "secret") if "secret" in body else self.doc.at(body)
            self.doc.problem(
                where,
                "webhooks has no secret; expected e.g. 'secret: whsec_test' (the key of the "
                "HMAC in each delivery's signature header)",
            )
        url = body.get("url")
        if url is not None and (problem := webhook_url_problem(url)) is not None:
            self.at_value(body, "url", problem)
        types = self.webhook_types(body, feeds)
        retries = body.get("retries", 3)
        if (
            isinstance(retries, bool)
            or not isinstance(retries, int)
            or not 0 <= retries <= MAX_RETRIES
        ):
            self.at_value(
                body, "retries",
                f"retries must be a whole number from 0 to {MAX_RETRIES}, not "
                f"{short_repr(retries)}; e.g. retries: 3",
            )  # fmt: skip
        backoff = positive_duration(self, body, "backoff", "backoff", "would retry at once", 30.0)
        timeout = positive_duration(self, body, "timeout", "timeout", "would never wait", 10.0)
        if timeout is not None and timeout > MAX_TIMEOUT_S:
            self.at_value(
                body, "timeout",
                f"timeout {short_repr(body['timeout'])} is over {MAX_TIMEOUT_S:g}s; expected a "
                "duration such as 10s (an attempt also waits that long in real time)",
            )  # fmt: skip
        if len(self.doc.problems) > before or not feeds or secret is None:
            return None
        assert backoff is not None
        assert timeout is not None
        svc = self.records[next(iter(feeds.values())).record].service
        return WebhookSpec(
            secret=secret, service=svc, url=url, types=types, retries=retries,
            backoff_s=backoff, timeout_s=timeout, loc=self.loc(top, "webhooks"),
        )  # fmt: skip

    def webhook_types(self, body: dict[Any, Any], feeds: dict[str, FeedSpec]) -> tuple[str, ...]:
        if "types" not in body:
            return ()
        value = body["types"]
        if not isinstance(value, list) or not value:
            self.at_value(
                body, "types",
                f"types must be a list of event types of events:, not {short_repr(value)}; "
                "e.g. types: [refund.updated]",
            )  # fmt: skip
            return ()
        out: list[str] = []
        for i, t in enumerate(value):
            if t in feeds:
                out.append(t)
                continue
            hint = did_you_mean(t, feeds) if isinstance(t, str) else ""
            expected = f"one of {one_of(feeds)}" if feeds else "an event type of events:"
            self.at_value(
                value,
                i,
                f"unknown event type {short_repr(t)} in webhooks; expected {expected}{hint}",
            )
        return tuple(dict.fromkeys(out))
