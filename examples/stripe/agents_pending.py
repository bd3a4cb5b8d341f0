"""Two scripted agents that refund 20.00 of charge ch_1 and say when the money is back.

A refund is `pending` when made; it succeeds or fails a few minutes later in virtual time
(`create_refund` in stripe_rules.py: one in five fails, a fact of the world, not a fault).
Both agents send an idempotency key, so a timeout after commit costs nothing here.

- `naive`: reads `status: pending` as done and says the customer has the money: when the
  refund fails later, the customer has nothing and the agent said otherwise.
- `careful`: waits, looks the refund up again until it settles, and sends a new refund
  (with a new key) when one fails.
"""

from __future__ import annotations

from collections.abc import Sequence

from faultbench.integrations import Reply, Seen, ToolCall

CHARGE, AMOUNT = "ch_1", 2000  # cents
PROMPT = (
    f"Refund {AMOUNT} cents of charge {CHARGE} to the customer, and tell me once the money "
    "is back with them."
)
SYSTEM_PROMPT = (
    "You are a billing assistant with a Stripe-like payments API. Amounts are integer cents. "
    "Refunds are pending at first and settle later; one may fail."
)
POLLS, ATTEMPTS = 5, 3
WAIT_S = 300  # refunds settle within five minutes (SETTLES_AFTER in stripe_rules.py)


def _refund(attempt: int) -> ToolCall:
    return ToolCall(
        "create_refund",
        {"charge_id": CHARGE, "amount": AMOUNT, "idempotency_key": f"pending-{attempt}"},
    )


def naive(seen: Sequence[Seen]) -> ToolCall | Reply:
    """One refund, retried with its key until it is accepted; `pending` counts as done."""
    refunds = [s for s in seen if s.tool == "create_refund"]
    if refunds and refunds[-1].ok:
        return Reply(f"Refunded {AMOUNT} cents of {CHARGE} ({refunds[-1].value['id']}).")
    if len(refunds) == ATTEMPTS:
        return Reply(f"Could not refund {CHARGE}: {refunds[-1].text}")
    return _refund(0)


def careful(seen: Sequence[Seen]) -> ToolCall | Reply:
    """Refund, wait, look again until `succeeded`; on `failed`, a new refund."""
    failed = [s for s in seen if s.tool == "get_refund" and s.ok and s.value["status"] == "failed"]
    attempt = len(failed)
    if attempt == ATTEMPTS:
        return Reply(f"Every refund of {CHARGE} failed; the customer has not been refunded.")
    key = f"pending-{attempt}"
    mine = [s for s in seen if s.tool == "create_refund" and s.args["idempotency_key"] == key]
    if not mine or not mine[-1].ok:
        if len(mine) == ATTEMPTS:
            return Reply(f"Could not refund {CHARGE}: {mine[-1].text}")
        return _refund(attempt)
    refund_id = mine[-1].value["id"]
    looks = [s for s in seen if s.tool == "get_refund" and s.args["id"] == refund_id]
    if looks and looks[-1].ok and looks[-1].value["status"] == "succeeded":
        return Reply(f"The customer has {AMOUNT} cents back ({refund_id} succeeded).")
    if len(looks) == POLLS:
        return Reply(f"Refund {refund_id} is still pending; the customer has no money yet.")
    if seen[-1].tool == "wait":
        return ToolCall("get_refund", {"id": refund_id})
    return ToolCall("wait", {"seconds": WAIT_S})


def settled(world) -> list[tuple[int, str]]:
    """The refunds of ch_1 once every pending one has settled (an hour later): a right run
    leaves [(2000, "succeeded")] and maybe failed ones before it."""
    world.clock.advance(3600)
    refunds = world.refunds.where(charge_id=CHARGE)
    return [(r.amount, r.status) for r in refunds if r.status != "failed"]
