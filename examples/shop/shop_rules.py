"""Business rules of the example shop: the custom operations of worlds/shop.yaml.

Each handler takes `world` and `clock`, then the tool's arguments by name. It reads and writes
through the world's tables, reads time from `clock` only, and refuses a call by raising
`LookupError` (no such thing), `ValueError` (not allowed in this state) or `PermissionError`;
the agent sees the message.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

#: How long after it was placed an order can be sent back.
RETURN_WINDOW = timedelta(days=30)

Reason = Literal["damaged", "wrong_item", "not_needed", "other"]


def _order(world, order_id: str):
    order = world.orders.get(order_id)
    if order is None:
        raise LookupError(f"order {order_id} not found")
    return order


def create_return(world, clock, order_id: str, reason: Reason = "other") -> dict:
    """Open a return for a delivered order, within 30 days of when it was placed.

    Refused when the order does not exist, was not delivered, is older than 30 days, or
    already has a return.

    Args:
        order_id: id of the delivered order to send back.
        reason: why the customer returns it.
    """
    order = _order(world, order_id)
    if order.status != "delivered":
        raise ValueError(
            f"order {order_id} is {order.status}; only delivered orders can be returned"
        )
    age = clock.now() - order.placed_at
    if age > RETURN_WINDOW:
        raise ValueError(
            f"order {order_id} was placed {age.days} days ago; returns close after "
            f"{RETURN_WINDOW.days} days"
        )
    if world.return_requests.where(order_id=order_id):
        raise ValueError(f"order {order_id} already has a return")
    request = world.return_requests.insert(
        order_id=order_id, reason=reason, status="requested", created_at=clock.now()
    )
    world.orders.update(order_id, status="returned")
    return request.to_dict()


def issue_refund(world, clock, order_id: str, amount: float, currency: str | None = None) -> dict:
    """Refund part or all of an order's total to the customer.

    The amounts refunded for one order can never exceed its total.

    Args:
        order_id: id of the order to refund.
        amount: how much to refund, in the order's currency; more than zero and at most what
            is left of the order's total after earlier refunds.
        currency: the refund's currency (USD or EUR); leave it out to use the order's.
    """
    order = _order(world, order_id)
    if amount <= 0:
        raise ValueError(f"amount must be positive, got {amount}")
    refunded = sum(r.amount for r in world.refunds.where(order_id=order_id))
    left = round(order.total - refunded, 2)
    if amount > left + 1e-9:
        raise ValueError(
            f"a refund of {amount:.2f} exceeds the {left:.2f} left on order {order_id}"
        )
    refund = world.refunds.insert(
        order_id=order_id,
        amount=round(amount, 2),
        currency=currency or order.currency,
        status="succeeded",
        created_at=clock.now(),
    )
    return refund.to_dict()


def cancel_order(world, clock, order_id: str) -> dict:
    """Cancel an order that has not shipped yet.

    Args:
        order_id: id of the order to cancel; its status must still be placed.
    """
    order = _order(world, order_id)
    if order.status != "placed":
        raise ValueError(f"order {order_id} is {order.status}; only placed orders can be cancelled")
    return world.orders.update(order_id, status="cancelled").to_dict()
