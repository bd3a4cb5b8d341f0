"""Custom handlers of tests/worlds/faults.yaml."""

from __future__ import annotations


def issue_refund(world, clock, order_id: str, amount: float):
    """Refund an order: writes a refund (stamped with the virtual time) and marks the order."""
    order = world.orders.get(order_id)
    if order is None:
        raise LookupError(f"order {order_id!r} does not exist")
    refund = world.refunds.insert(order=order_id, amount=amount, created_at=clock.now())
    world.orders.update(order_id, status="refunded")
    return refund
