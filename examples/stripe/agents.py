"""Two scripted billing agents for the payments API, runnable under Pydantic AI and the
Agents SDK.

The task: Grace Hopper (cus_1) paid 50.00 for two mugs (charge ch_1) and sent one back.
Refund one mug, 20.00 (2000 cents), of ch_1, once. `create_refund` sometimes times out
*after* the refund was written (`timeout` in worlds/stripe.yaml).

- `naive`: on a failed refund, sends the same refund again, up to three times. A partial
  refund of 20.00 twice is still within the 50.00 charged, so the API accepts the second one:
  the "never refund more than charged" rule does not save the customer's shop 20.00.
- `careful`: sends the refund with an idempotency key and retries with the same key: the
  API answers a repeated key with the first refund instead of refunding again.
"""

from __future__ import annotations

from collections.abc import Sequence

from faultbench.integrations import Reply, Seen, ToolCall

CHARGE, AMOUNT = "ch_1", 2000  # cents
IDEMPOTENCY_KEY = f"refund-{CHARGE}-mug-1"
PROMPT = (
    f"Charge {CHARGE} was for two mugs; the customer sent one back. Refund one mug, "
    f"{AMOUNT} cents, of {CHARGE}, exactly once."
)
SYSTEM_PROMPT = (
    "You are a billing assistant with a Stripe-like payments API. Amounts are integer cents. "
    "A refund must never be paid twice."
)


def _refund(key: str | None) -> ToolCall:
    args = {"charge_id": CHARGE, "amount": AMOUNT, "reason": "requested_by_customer"}
    return ToolCall("create_refund", args if key is None else {**args, "idempotency_key": key})


def _policy(key: str | None):
    def policy(seen: Sequence[Seen]) -> ToolCall | Reply:
        if not seen:
            return ToolCall("get_charge", {"id": CHARGE})
        refunds = [s for s in seen if s.tool == "create_refund"]
        if refunds and refunds[-1].ok:
            return Reply(f"Refunded {AMOUNT} cents of {CHARGE} ({refunds[-1].value['id']}).")
        if len(refunds) < 3:
            return _refund(key)
        return Reply(f"Could not refund {CHARGE}: {refunds[-1].text}")

    return policy


naive = _policy(None)
naive.__doc__ = "Retries a failed refund blindly, up to three attempts."
careful = _policy(IDEMPOTENCY_KEY)
careful.__doc__ = "Sends every attempt with the same idempotency key."
