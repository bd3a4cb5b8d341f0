"""Two scripted agents that keep a copy of each charge's refunded total from the event feed,
as a Stripe webhook consumer that mirrors objects does: each `charge.refunded` event carries
the charge as it was after the refund (`data.object.amount_refunded`).

The feed promises no order (`payments.list_events` in worlds/stripe.yaml: `out_of_order`
puts an event before the one it follows). Charge ch_1 is refunded twice in a row, so the
first two events of the feed are both ch_1's: 15.00 refunded, then 25.00.

- `naive`: applies the events in the order they arrive, each one's charge overwriting the
  copy: when the two ch_1 events come swapped, the older state (15.00) overwrites the newer
  one and the copy is wrong. A duplicated event does no harm here (the same state twice).
- `careful`: applies them in the order they happened: by `created`, and within one second
  (Stripe's `created` has whole seconds) by the event id's sequence (`evt_<seq>`, which
  grows with time, docs/WORLDS.md "The event feed").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from faultbench.integrations import Reply, Seen, ToolCall

from .agents_feed import read_feed

PROMPT = (
    "Read the charge.refunded events of the event feed and tell me, for each charge, how many "
    "cents have been refunded of it in all."
)
SYSTEM_PROMPT = (
    "You are a bookkeeping assistant mirroring a Stripe-like event feed. Amounts are integer "
    "cents. Report each charge's current refunded total."
)
REFUNDS = [("ch_1", 1500), ("ch_1", 1000), ("2", 700)]  # made in this order before the run


def answer(totals: dict[str, int]) -> str:
    """The reply both agents give, so a gate can compare it with the truth."""
    return "; ".join(f"{charge}: {cents}" for charge, cents in sorted(totals.items()))


def _happened(event: dict[str, Any]) -> tuple[str, int]:
    """When an event happened: its `created`, then its place in the log."""
    return event["created"], int(event["id"].removeprefix("evt_"))


def _policy(in_order: bool):
    def policy(seen: Sequence[Seen]) -> ToolCall | Reply:
        events = read_feed(seen)  # as the booking agents read it
        if not isinstance(events, list):
            return events
        if in_order:
            events = sorted(events, key=_happened)
        totals: dict[str, int] = {}
        for event in events:  # each event's charge replaces the copy
            charge = event["data"]["object"]
            totals[charge["id"]] = charge["amount_refunded"]
        return Reply(answer(totals))

    return policy


naive = _policy(in_order=False)
naive.__doc__ = "Applies the events in the order the page has them."
careful = _policy(in_order=True)
careful.__doc__ = "Applies the events in the order they happened (created, then sequence)."


def refund_some(world) -> None:
    """The refunds the feed reports, made through the API before the agent reads it."""
    for i, (charge, amount) in enumerate(REFUNDS):
        args = {"charge_id": charge, "amount": amount, "idempotency_key": f"order-{i}"}
        world.call("create_refund", args)


def expected(world) -> str:
    """What a right answer says: each refunded charge's total as the world has it now."""
    return answer({c.id: c.amount_refunded for c in world.charges.all() if c.amount_refunded})
