"""`serve_in_thread`: a world served over HTTP from a background thread, whatever the caller's
own event loop."""

from __future__ import annotations

import asyncio
import threading

import pytest
import trio

import faultbench
from faultbench.serve import serve_in_thread

from ..mcp_client import open_client
from .serve_helpers import SHOP


def _servers() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "faultbench-http"]


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
def test_a_caller_in_an_event_loop_gets_a_working_server_and_stops_it(loop: str) -> None:
    # asyncio: the SDK's app makes anyio primitives when it is built; built in an asyncio
    # loop's thread they belonged to asyncio, and the server's trio thread failed at its first
    # request (mcp 2.x). trio: stopping the server from a trio thread raised, and the server
    # kept serving.
    world = faultbench.load_world(SHOP)

    async def main() -> dict[str, object]:
        with serve_in_thread(world) as url:
            async with open_client(url) as client:
                result = await client.call_tool(
                    "create_order", {"id": "9", "status": "placed", "total": 5.0}
                )
        assert not result.is_error, result
        return result.structured_content

    answer = asyncio.run(main()) if loop == "asyncio" else trio.run(main)
    assert answer["id"] == "9"
    assert [call.tool for call in world.trace] == ["create_order"]
    assert world.orders.get("9").total == 5.0  # the call landed in the caller's world
    assert _servers() == []


def test_a_refused_address_raises_in_the_caller_before_anything_binds():
    threads = threading.active_count()
    refused = pytest.raises(ValueError, match="Expected a --token to serve on the non-loopback")
    with refused, serve_in_thread(faultbench.load_world(SHOP), host="192.0.2.1"):
        pass  # pragma: no cover
    assert threading.active_count() == threads
    assert _servers() == []
