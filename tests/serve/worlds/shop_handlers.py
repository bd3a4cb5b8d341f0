"""Custom operations of tests/serve/worlds/shop.yaml."""

import sys


def return_order(world, clock, id: str, reason: str = "") -> dict:
    """Mark a delivered order as returned. Fails for orders that were not delivered."""
    order = world.orders.get(id)
    if order is None:
        raise LookupError(f"no order with id {id!r}")
    if order.status != "delivered":
        raise ValueError(f"order {id} is {order.status}; only delivered orders can be returned")
    # A stray print must never reach the MCP stdout stream.
    print(f"returning order {id}: {reason}")
    sys.stdout.flush()
    return world.orders.update(id, status="returned", note=reason or None).to_dict()
