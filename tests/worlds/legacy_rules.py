"""Handlers of legacy.yaml, written the faultbench 0.1 way."""


def create_return(world, clock, order_id: str) -> dict:
    """Mark a delivered order as returned.

    Second paragraph: not part of the tool description.
    """
    order = world.orders.get(order_id)
    if order is None:
        raise LookupError(f"order {order_id} not found")
    if order["status"] != "delivered":
        raise ValueError(f"order {order_id} is {order['status']}, not delivered")
    world.orders.update(order_id, status="returned")
    return {"order_id": order_id, "status": "returned"}
