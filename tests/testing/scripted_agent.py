"""A scripted agent for the plugin's tests and for benchmarks/bench_suite.py: it refunds and
returns an order through the official MCP client, ~5 tool calls a run.

`careful=False` retries a failed refund blindly, the way many agents do: a timeout that fired
after the refund was written refunds the customer twice. `careful=True` looks for the refund
before retrying. `target` is anything `mcp.Client` takes: a WorldServer or an HTTP URL.
"""

from __future__ import annotations

import mcp


async def refund_order(target, order_id: str, *, careful: bool = False, attempts: int = 3) -> None:
    async with mcp.Client(target) as client:
        order = await client.call_tool("get_order", {"id": order_id})
        total = order.structured_content["total"]
        for _ in range(attempts):
            if careful:
                found = await client.call_tool("list_refunds", {"order_id": order_id})
                if not found.is_error and _rows(found.structured_content):
                    break
            result = await client.call_tool("issue_refund", {"order_id": order_id, "amount": total})
            if not result.is_error:
                break
        await client.call_tool("update_order", {"id": order_id, "status": "returned"})
        await client.call_tool("get_order", {"id": order_id})


def _rows(content) -> list:
    # A list result reaches modern clients bare, and legacy ones as {"result": [...]}.
    return content["result"] if isinstance(content, dict) else content
