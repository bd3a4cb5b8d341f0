"""Two scripted agents that book refunds in the ledger from the event feed, as a Stripe
webhook consumer or `/v1/events` poller does: one `book_refund` per `charge.refunded` event,
for the amount that event refunded.

The feed delivers at least once, in no promised order (`payments.list_events` in
worlds/stripe.yaml: `duplicate_delivery` repeats an event on its page, `out_of_order` swaps
two).

- `naive`: books every event it reads: a duplicated event is booked twice.
- `careful`: books each event id once. The amount comes from the event itself
  (`amount_refunded` now minus before), so the order of the page does not matter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from faultbench.integrations import Reply, Seen, ToolCall

PROMPT = (
    "Read the charge.refunded events of the event feed and book each refund in the ledger "
    "with book_refund: the charge, the amount the event refunded, and the event's id."
)
SYSTEM_PROMPT = (
    "You are a bookkeeping assistant reading a Stripe-like event feed. Amounts are integer "
    "cents. Every refund must be booked exactly once."
)


def _booking(event: dict[str, Any]) -> ToolCall:
    charge = event["data"]["object"]
    before = event["data"]["previous_attributes"]["amount_refunded"]
    return ToolCall(
        "book_refund",
        {
            "charge_id": charge["id"],
            "amount": charge["amount_refunded"] - before,
            "event_id": event["id"],
        },
    )


def read_feed(seen: Sequence[Seen]) -> list[dict[str, Any]] | ToolCall | Reply:
    """The `charge.refunded` events of the last page read, or the call that reads it (up to
    three tries), or the reply that gives up."""
    feeds = [s for s in seen if s.tool == "list_events"]
    if feeds and feeds[-1].ok:
        return list(feeds[-1].value["data"])
    if len(feeds) == 3:
        return Reply(f"Could not read the feed: {feeds[-1].text}")
    return ToolCall("list_events", {"type": "charge.refunded", "limit": 100})


def _policy(once: bool):
    def policy(seen: Sequence[Seen]) -> ToolCall | Reply:
        events = read_feed(seen)
        if not isinstance(events, list):
            return events
        booked = [s for s in seen if s.tool == "book_refund" and s.ok]
        if once:
            done = {s.args["event_id"] for s in booked}
            todo = [e for e in events if e["id"] not in done]
        else:
            todo = events[len(booked) :]
        if todo:
            return _booking(todo[0])
        return Reply(f"Booked {len(booked)} refunds.")

    return policy


naive = _policy(once=False)
naive.__doc__ = "Books every event of the page, as often as it comes."
careful = _policy(once=True)
careful.__doc__ = "Books each event id once."


REFUNDS = {"ch_1": 1500, "2": 700, "3": 900}  # charge -> cents, refunded before the agent runs


def refund_some(world) -> None:
    """The refunds the feed reports: made through the API before the agent reads it (with
    keys: a refund that times out after commit is there all the same)."""
    for charge, amount in REFUNDS.items():
        args = {"charge_id": charge, "amount": amount, "idempotency_key": f"feed-{charge}"}
        world.call("create_refund", args)


def booked(world) -> dict[str, int]:
    """Cents booked in the ledger per charge: a right run books REFUNDS exactly."""
    totals: dict[str, int] = {}
    for entry in world.ledger_entries.all():
        totals[entry.charge_id] = totals.get(entry.charge_id, 0) + entry.amount
    return totals
