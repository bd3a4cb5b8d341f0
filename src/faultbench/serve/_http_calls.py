"""2026-07-28 tool calls over streamable HTTP, answered in front of the SDK's app.

A 2026-07-28 POST is self-contained (no session), and a `tools/call` is most of what an agent
sends. The SDK's modern entry (`mcp.server._streamable_http_modern`) reads it, validates it
into its message models, classifies it, builds a connection and a dispatch context, runs the
server runner around the handler and dumps the reply through the models again. `ModernCalls`
runs the same checks and the same handler, and writes what the SDK would
write; everything else goes to the SDK. Facts about mcp 2.3.0 it relies on are in
`_sdk.modern_http_call`; on 1.x (no modern entry) it passes every request on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._sdk import (
    MODERN_PROTOCOL_VERSIONS,
    TransportSecurityMiddleware,
    TransportSecuritySettings,
    http_call_checks,
    jsonrpc_error_text,
    jsonrpc_result_text,
    modern_http_call,
    tracing,
)

if TYPE_CHECKING:
    from ._server import WorldServer

__all__ = ["ModernCalls"]


class ModernCalls:
    """ASGI middleware in front of the SDK's app: a 2026-07-28 `tools/call` POST is answered
    here, as the SDK would answer it, and everything else goes to the SDK unchanged.

    A modern POST is self-contained (no session), so the SDK's modern entry reads the body,
    validates it into its message models, classifies it, builds a connection and a dispatch
    context, runs the server runner around the handler and dumps the reply through the
    models again. Here the same checks run (`_sdk.modern_http_call`; the
    body limit, the Host/Origin/Content-Type checks and the Accept header first) and the
    same handler answers (`WorldServer.answer_modern`, with the request for its bearer
    token), written as the SDK writes it (`_sdk.jsonrpc_result_text`, a Starlette
    `Response`). A request any check would refuse, one past the body limit or without a
    `Content-Length`, any other method, and every call while OpenTelemetry tracing is on or
    the server has cache hints, goes to the SDK with its body replayed: the SDK answers it
    as it always has. `tests/serve/test_http_direct.py` compares the raw responses of both
    ways and the event logs they leave."""

    def __init__(
        self, app: ASGIApp, server: WorldServer, *, path: str, security: TransportSecuritySettings
    ):
        self.app = app
        self.server = server
        self.path = path
        self.security = TransportSecurityMiddleware(security)
        self.checks = http_call_checks()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.checks is None
            or scope["type"] != "http"
            or scope["method"] != "POST"
            or scope["path"] != self.path
            or scope.get("root_path")
            or self.server.cache_hints
            or tracing()
        ):
            await self.app(scope, receive, send)
            return
        limit, check_accept = self.checks
        headers = Headers(scope=scope)
        length = headers.get("content-length", "")
        if (
            headers.get(PROTOCOL_HEADER) not in MODERN_PROTOCOL_VERSIONS
            or not (length.isascii() and length.isdigit())
            or int(length) > limit
        ):
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        if await self.security.validate_request(request, is_post=True) is not None:
            await self.app(scope, receive, send)
            return
        if not check_accept(request)[0]:
            await self.app(scope, receive, send)
            return
        body = await request.body()
        schema = self.server.tool_input_schema  # the SDK's `get_tool_input_schema`
        call = None if len(body) > limit else modern_http_call(body, request.headers, schema)
        if call is None:
            await self.app(scope, _replay(body, receive), send)
            return
        ident, version, params = call
        try:
            result = await self.server.answer_modern(version, params, request)
        except Exception as exc:  # the SDK's `_to_jsonrpc_response` + `_write`
            status, text = jsonrpc_error_text(ident, exc)
            response = Response(text, status_code=status, media_type="application/json")
        else:
            response = Response(jsonrpc_result_text(ident, result), media_type="application/json")
        await response(scope, receive, send)


def _replay(body: bytes, receive: Receive) -> Receive:
    """`receive` for an app after the body was read here: the body once, then the client's."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


#: `MCP-Protocol-Version`, as ASGI gives header names (lower case)
PROTOCOL_HEADER = "mcp-protocol-version"
