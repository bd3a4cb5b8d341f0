"""The MCP-session side of `faultbench.integrations.pydantic_ai`: `WorldTransport` and the
`MCPToolset`s of `transport="mcp"`, a URL and a stdio command. Imported only when a run needs
an MCP session, so that the direct path (the default in-process) does not import fastmcp."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import Any, Unpack

import anyio
from fastmcp.client.transports import ClientTransport, StdioTransport
from fastmcp.client.transports.base import SessionKwargs, TransportOptions
from mcp import ClientSession
from mcp.shared.memory import create_client_server_memory_streams
from pydantic_ai.mcp import MCPToolset

from faultbench.serve import WorldServer

from ._run import STDIO_START_TIMEOUT, Http, InProcess, Target

__all__ = ["WorldTransport", "mcp_toolset"]


class WorldTransport(ClientTransport):
    """A fastmcp transport to a `WorldServer` in this process: no subprocess, no socket.

    Each connection runs the server over a fresh pair of memory streams in a task of the
    caller's task group and ends it when the connection closes.
    """

    def __init__(self, server: WorldServer):
        self.server = server

    @contextlib.asynccontextmanager
    async def connect_session(
        self,
        *,
        transport_options: TransportOptions | None = None,
        **session_kwargs: Unpack[SessionKwargs],
    ) -> AsyncGenerator[ClientSession, None]:
        options = transport_options or TransportOptions()
        server = self.server
        async with (
            create_client_server_memory_streams() as (client_streams, server_streams),
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(
                lambda: server.run(*server_streams, server.create_initialization_options())
            )
            try:
                async with options.session_class(
                    read_stream=client_streams[0],
                    write_stream=client_streams[1],
                    **session_kwargs,
                ) as session:
                    yield session
            finally:
                tg.cancel_scope.cancel()

    def __repr__(self) -> str:
        return f"<WorldTransport(world={self.server.world.name!r})>"


def mcp_toolset(where: Target, **kwargs: Any) -> MCPToolset:
    """An `MCPToolset` on `where`: an in-process server through `WorldTransport`, a URL, or a
    stdio command started for each connection and stopped after it (`keep_alive=False`)."""
    if isinstance(where, InProcess):
        return MCPToolset(WorldTransport(where.server()), **kwargs)
    if isinstance(where, Http):
        if where.headers:
            kwargs.setdefault("headers", where.headers)
        return MCPToolset(where.url, **kwargs)
    command, *args = where.argv
    kwargs.setdefault("init_timeout", STDIO_START_TIMEOUT)
    return MCPToolset(StdioTransport(command, args, keep_alive=False), **kwargs)
