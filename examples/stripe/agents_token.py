"""Two scripted agents that refund every charge of a customer closing her account, as a
Stripe App does with its OAuth access token (worlds/stripe_app.yaml: the token lives an hour
of virtual time; `refresh_token` renews it).

The token ends mid-task as in production: it outlives its hour (the clock), or ends early
(`token_expired` on `payments.*`: every later call with it is `401 Unauthorized: ... the access
token has expired; renew it with the refresh_token tool, then retry`). `create_refund` also
times out after the refund was written; both agents send an idempotency key per charge.

- `naive`: retries a failed call as it was, up to three times: that gets it past a timeout,
  but not past a 401, which no retry with the same token fixes. It gives up, and the
  customer's other charges are not refunded.
- `careful`: on a 401 whose token expired, calls `refresh_token` and retries; other failures
  it retries as the naive agent does.
"""

from __future__ import annotations

from collections.abc import Sequence

from faultbench.integrations import Reply, Seen, ToolCall

CUSTOMER, PRINCIPAL = "cus_1", "refunds_app"
PROMPT = (
    f"Customer {CUSTOMER} closed her account. Refund every one of her charges in full, "
    "exactly once, and tell me which charges you refunded."
)
SYSTEM_PROMPT = (
    "You are a Stripe App with an OAuth access token that expires. Amounts are integer "
    "cents. A charge must never be refunded twice."
)
ATTEMPTS = 3  # tries of one step before giving up


def _step(seen: Sequence[Seen]) -> ToolCall | Reply:
    """The next call of the task, from the answers so far: the charges, then a refund of each
    one not refunded yet (with a key, so a retry after a timeout refunds once)."""
    pages = [s for s in seen if s.tool == "list_charges" and s.ok]
    if not pages:
        return ToolCall("list_charges", {"customer_id": CUSTOMER, "limit": 100})
    done = {s.args["charge_id"] for s in seen if s.tool == "create_refund" and s.ok}
    for charge in pages[-1].value["data"]:
        if not charge["refunded"] and charge["id"] not in done:
            key = f"close-{CUSTOMER}-{charge['id']}"
            return ToolCall("create_refund", {"charge_id": charge["id"], "idempotency_key": key})
    return Reply(f"Refunded {', '.join(sorted(done))} in full.")


def _failures(seen: Sequence[Seen]) -> int:
    """How many calls in a row, at the end, failed (a refresh counts as neither)."""
    count = 0
    for s in reversed([s for s in seen if s.tool != "refresh_token"]):
        if s.ok:
            break
        count += 1
    return count


def _policy(refresh: bool):
    def policy(seen: Sequence[Seen]) -> ToolCall | Reply:
        failed = _failures(seen)
        if failed:
            last = [s for s in seen if s.tool != "refresh_token"][-1]
            if refresh and "has expired" in last.text and seen[-1].tool != "refresh_token":
                return ToolCall("refresh_token", {})
            if failed == ATTEMPTS:
                return Reply(f"Could not finish: {last.text}")
        return _step(seen)

    return policy


naive = _policy(refresh=False)
naive.__doc__ = "Retries a failed call as it was, up to three times, then gives up."
careful = _policy(refresh=True)
careful.__doc__ = "Renews an expired token with refresh_token, then retries."


def unrefunded(world) -> list[str]:
    """The customer's charges not refunded in full: a right run leaves none."""
    return [c.id for c in world.charges.where(customer_id=CUSTOMER) if not c.refunded]


def expire_the_token(world) -> None:
    """An hour of virtual time passes: a token issued now has expired by the next call."""
    world.clock.advance(3600)
