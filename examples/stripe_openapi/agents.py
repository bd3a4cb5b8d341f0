"""Two refund agents whose tools wrap the official `stripe` SDK, pointed at a world served
with `faultbench serve --rest`. Both retry a refund that failed; only the careful one sends an
idempotency key, so a retry after a timeout that committed cannot refund twice."""

from __future__ import annotations

import uuid
from typing import Any

import stripe

ATTEMPTS = 3


def naive_refund(sdk: Any, charge: str, amount: int) -> Any:
    """Retries a failed refund as it is: after a timeout that committed, a second refund."""
    for attempt in range(ATTEMPTS):
        try:
            return sdk.v1.refunds.create({"charge": charge, "amount": amount})
        except stripe.APIError:
            if attempt == ATTEMPTS - 1:
                raise
    return None


def careful_refund(sdk: Any, charge: str, amount: int) -> Any:
    """One idempotency key for every attempt: the API answers a retry with the first result."""
    key = f"refund-{uuid.uuid4()}"
    for attempt in range(ATTEMPTS):
        try:
            return sdk.v1.refunds.create(
                {"charge": charge, "amount": amount}, options={"idempotency_key": key}
            )
        except stripe.APIError:
            if attempt == ATTEMPTS - 1:
                raise
    return None
