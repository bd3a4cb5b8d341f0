"""The official MCP client of whichever SDK is installed (mcp 1.x or 2.x), one way.

On 2.x this is `mcp.Client` itself. On 1.x (which has no `Client`) it is a `ClientSession`
over the SDK's own transports, its results read through the same snake_case names 2.x uses
(`is_error`, `structured_content`, `input_schema`, `annotations.read_only_hint`), so a test
written against it runs under both. Targets: a `WorldServer` (in-process), an http(s) URL
(streamable HTTP), or a stdio command (argv list).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import mcp

from faultbench.serve import MCP_VERSION

MCP_MAJOR = int(MCP_VERSION.split(".", 1)[0])

__all__ = ["MCP_MAJOR", "notification_method", "open_client", "snake"]


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _snaked(value: Any) -> Any:
    """A 1.x model (or wire dict) as nested namespaces with 2.x's snake_case field names;
    JSON payloads (`structured_content`, `input_schema`, `_meta`) are kept as they are."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(by_alias=True, mode="json", exclude_none=True)
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = "meta" if key == "_meta" else snake(key)
        keep = name in ("structured_content", "input_schema", "output_schema", "meta")
        if isinstance(item, list) and not keep:
            out[name] = [_snaked(i) for i in item]
        else:
            out[name] = item if keep else _snaked(item)
    out.setdefault("annotations", None)
    out.setdefault("structured_content", None)
    out.setdefault("output_schema", None)
    return SimpleNamespace(**out)


class _Client1:
    """A 1.x `ClientSession`, answering like 2.x's `mcp.Client`."""

    def __init__(self, session: Any):
        self.session = session

    async def list_tools(self) -> Any:
        listed = await self.session.list_tools()
        return SimpleNamespace(tools=[_snaked(t) for t in listed.tools])

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: Any = None,
    ) -> Any:
        wait = None if read_timeout_seconds is None else timedelta(seconds=read_timeout_seconds)
        result = await self.session.call_tool(
            name, arguments or {}, read_timeout_seconds=wait, progress_callback=progress_callback
        )
        out = _snaked(result)
        out.is_error = bool(getattr(out, "is_error", False))
        return out


def notification_method(message: Any) -> str | None:
    """The method of a message a client's `message_handler` gets, if it is a notification
    (1.x wraps it in a `ServerNotification` root model; 2.x hands it over as it is)."""
    return getattr(getattr(message, "root", message), "method", None)


@contextlib.asynccontextmanager
async def _open1(target: Any, timeout: float, handler: Any = None) -> AsyncIterator[_Client1]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.memory import create_connected_server_and_client_session

    wait = timedelta(seconds=timeout)
    if isinstance(target, str):
        async with (
            streamable_http_client(target) as (read, write, _),
            ClientSession(
                read, write, read_timeout_seconds=wait, message_handler=handler
            ) as session,
        ):
            await session.initialize()
            yield _Client1(session)
    elif isinstance(target, Sequence):
        command, *args = target
        params = StdioServerParameters(command=command, args=list(args))
        async with (
            stdio_client(params) as (read, write),
            ClientSession(
                read, write, read_timeout_seconds=wait, message_handler=handler
            ) as session,
        ):
            await session.initialize()
            yield _Client1(session)
    else:
        async with create_connected_server_and_client_session(
            target, read_timeout_seconds=wait, message_handler=handler
        ) as session:
            yield _Client1(session)


@contextlib.asynccontextmanager
async def open_client(
    target: Any, *, timeout: float = 15, message_handler: Any = None, legacy: bool = False
) -> AsyncIterator[Any]:
    """`message_handler`: the SDK's hook for what the server sends unasked (notifications);
    `legacy`: on 2.x, the 2025 handshake even in-process (1.x always does it)."""
    if MCP_MAJOR >= 2:
        if isinstance(target, list):
            from mcp.client.stdio import StdioServerParameters, stdio_client

            command, *args = target
            # the transport itself: 2.0's Client takes no StdioServerParameters
            target = stdio_client(StdioServerParameters(command=command, args=args))
        async with mcp.Client(
            target,
            read_timeout_seconds=timeout,
            message_handler=message_handler,
            mode="legacy" if legacy else "auto",
        ) as client:
            yield client
    else:
        async with _open1(target, timeout, message_handler) as client:
            yield client
