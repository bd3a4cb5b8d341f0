"""A scripted agent for the plugin's tests and for benchmarks/bench_suite.py: it refunds and
returns an order through the official MCP client, ~5 tool calls a run.

`careful=False` retries a failed refund blindly, the way many agents do: a timeout that fired
after the refund was written refunds the customer twice. `careful=True` looks for the refund
before retrying. `target` is a WorldServer or an HTTP URL. The client is the installed SDK's:
`mcp.Client` on mcp 2.x, a `ClientSession` on 1.x (this file is copied into pytester folders and
benchmark folders, so it stands alone instead of importing tests/mcp_client.py).
"""

from __future__ import annotations

import contextlib

import mcp


@contextlib.asynccontextmanager
async def _client(target):
    if hasattr(mcp, "Client"):  # mcp 2.x
        async with mcp.Client(target) as client:
            yield client
    elif isinstance(target, str):  # mcp 1.x, streamable HTTP
        from mcp.client.streamable_http import streamable_http_client

        async with (
            streamable_http_client(target) as (read, write, _),
            mcp.ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session
    else:  # mcp 1.x, in-process
        from mcp.shared.memory import create_connected_server_and_client_session

        async with create_connected_server_and_client_session(target) as session:
            yield session


def _failed(result) -> bool:
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", False))


def _structured(result):
    if hasattr(result, "structured_content"):
        return result.structured_content
    return result.structuredContent


async def refund_order(target, order_id: str, *, careful: bool = False, attempts: int = 3) -> None:
    async with _client(target) as client:
        order = await client.call_tool("get_order", {"id": order_id})
        total = _structured(order)["total"]
        for _ in range(attempts):
            if careful:
                found = await client.call_tool("list_refunds", {"order_id": order_id})
                if not _failed(found) and _rows(_structured(found)):
                    break
            result = await client.call_tool("issue_refund", {"order_id": order_id, "amount": total})
            if not _failed(result):
                break
        await client.call_tool("update_order", {"id": order_id, "status": "returned"})
        await client.call_tool("get_order", {"id": order_id})


def _rows(content) -> list:
    # A list result reaches modern clients bare, and legacy ones as {"result": [...]}.
    return content["result"] if isinstance(content, dict) else content
