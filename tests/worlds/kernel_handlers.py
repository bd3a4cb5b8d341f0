"""Custom handlers of the kernel tests' shop world (kernel_shop.yaml)."""

from __future__ import annotations

from typing import Literal


def issue_refund(world, clock, order_id: str, amount: float):
    """Refund part of an order."""
    order = world.orders.get(order_id)
    if order is None:
        raise LookupError(f"order {order_id!r} does not exist")
    if amount <= 0 or amount > order.total:
        raise ValueError(f"amount must be between 0 and {order.total}")
    refund = world.refunds.insert(order=order_id, amount=amount, created_at=clock.now())
    world.orders.update(order_id, status="refunded")
    return refund


def flaky_refund(
    world, clock, order_id: str, mode: Literal["crash", "deny", "bad_return", "ok"] = "crash"
):
    """Writes, then fails: every write must vanish."""
    world.refunds.insert(order=order_id, amount=1.0, created_at=clock.now())
    world.orders.update(order_id, status="refunded")
    clock.advance(5)
    if mode == "crash":
        return 1 / 0
    if mode == "deny":
        raise PermissionError("refunds are frozen")
    if mode == "bad_return":
        return object()
    return {"refunded": order_id}


def stats(world, clock):
    """Counts per table; returns a Record and a datetime to test JSON conversion."""
    return {
        "orders": len(world.orders),
        "first": world.orders.pick(),
        "now": clock.now(),
    }
