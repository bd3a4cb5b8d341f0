"""Streamable HTTP: the MCP endpoint at `/mcp` plus the control API under `/faultbench/`,
one ASGI app, served by Hypercorn's trio worker.

Facts about mcp 2.3.0 this module relies on (on 1.x, `_sdk.streamable_http_app` builds the
same app from the SDK's session manager, and every request uses sessions):
- `Server.streamable_http_app(...)` returns a Starlette app whose lifespan runs the session
  manager (so the ASGI server must run lifespan: Hypercorn does). `custom_starlette_routes`
  are appended to its routes, but *not* behind the SDK's Host/Origin checks, which only
  guard `/mcp`; `_guard.HttpGuard` checks every route (control API and `--rest` included).
- Requests carrying `MCP-Protocol-Version: 2026-07-28` are self-contained (no
  `Mcp-Session-Id`); older versions use sessions created by `initialize`.
- `json_response=True` answers each POST with one JSON body instead of an SSE stream: we
  never send server-to-client messages mid-call, and it is cheaper.
- Bodies over 4 MiB get 413 before parsing (the SDK's default limit; `_guard.HttpGuard`, in
  front of every route, refuses them before the SDK sees them).
- A stateful session begins when the answer to a POST without `Mcp-Session-Id` carries one,
  and ends on the client's DELETE, after `session_idle_timeout` with no request in flight, or
  when the server stops. No public API says when (a middleware's `ServerRequestContext` has
  no `connection`), so `SessionTracker` reads it off the HTTP exchanges; after a session ends
  the SDK answers its id with 404.
"""

from __future__ import annotations

import errno
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._control import MAX_BODY as CONTROL_MAX_BODY
from ._control import PREFIX, Control
from ._guard import MAX_BODY, HostPolicy, HttpGuard, is_loopback
from ._http_calls import ModernCalls
from ._journal import JournalError
from ._rest import rest_routes
from ._sdk import TransportSecuritySettings, streamable_http_app
from ._server import SESSION_HEADER, WorldServer

if TYPE_CHECKING:
    from ._journal import Journals

log = logging.getLogger("faultbench.serve")


def security_settings(host: str) -> TransportSecuritySettings:
    """The SDK's own Host/Origin checks of `/mcp` (DNS-rebinding protection) for a server
    bound to `host`: the same `HostPolicy` the guard of every route applies (`_guard.py`)."""
    policy = HostPolicy.for_bind(host)
    if not policy.enabled:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(policy.hosts),
        allowed_origins=list(policy.origins),
    )


def body_limit(path: str) -> int:
    """The most body bytes a request to `path` may send: the control API's `MAX_BODY`
    (1 MiB) under `/faultbench/`, else the guard's (4 MiB: MCP, as the SDK's own limit, and
    `--rest`)."""
    if path == PREFIX or path.startswith(PREFIX + "/"):
        return CONTROL_MAX_BODY
    return MAX_BODY


def refusal_body(path: str, kind: str, message: str) -> Any:
    """The guard's refusals in each route family's error form: the control API's and MCP's
    `{"error": TEXT}`, `--rest`'s `{"error": {"type", "message"}}`."""
    if path.startswith(PREFIX) or path.rstrip("/") == "/mcp":
        return {"error": message}
    return {"error": {"type": kind, "message": message}}


def check_exposure(host: str, token: str | None) -> None:
    """Refuse a non-loopback `host` without a `token` (`build_app`'s first check)."""
    if not is_loopback(host) and not token:
        raise ValueError(
            f"Expected a --token to serve on the non-loopback address {host!r}. Instead, "
            "received none. Anyone who can reach the port could call the world's tools and "
            "its control API; pass --token SECRET (clients send 'Authorization: Bearer "
            "SECRET'), or bind 127.0.0.1."
        )


def build_app(
    server: WorldServer,
    *,
    host: str = "127.0.0.1",
    token: str | None = None,
    journal: Journals | None = None,
    max_sessions: int | None = None,
    rest: bool = False,
) -> ASGIApp:
    """The ASGI app: MCP streamable HTTP at `/mcp`, control API under `/faultbench/`, and
    with `rest` the world's operations at their `http:` method and path (`_rest.py`).

    At most `max_sessions` MCP sessions are open at once (default `MAX_SESSIONS`).
    Refuses a non-loopback `host` without a `token`: a world file runs Python, and its tools
    would be open to anyone who can reach the port.
    """
    check_exposure(host, token)
    security = security_settings(host)
    control = Control(server, journal=journal)
    app = streamable_http_app(
        server,
        path="/mcp",
        session_idle_timeout=SESSION_IDLE_S,
        security=security,
        host=host,
        routes=[*control.routes(), *(rest_routes(server) if rest else [])],
    )
    # Open sessions are counted (and capped at `max_sessions`) with or without --isolate:
    # each holds memory in the SDK until it ends or idles out. With --isolate, a session's
    # world is freed when it ends.
    server.open_sessions = control.live if server.isolate else None
    app = ModernCalls(app, server, path="/mcp", security=security)
    app = SessionTracker(app, control, max_sessions=max_sessions or MAX_SESSIONS)
    # With a world's own `auth:`, MCP and REST requests carry the world's tokens, checked
    # per call by the kernel: the server token (`--token`) guards the control API only.
    world_auth = server.world.spec.auth is not None
    return HttpGuard(
        app,
        policy=HostPolicy.for_bind(host),
        token=token,
        needs_token=(lambda path: path.startswith(PREFIX)) if world_auth else None,
        body_limit=body_limit,
        shape=refusal_body,
    )


#: The SDK idles a session out after this long with no request in flight; we pass it the value
#: so that `SessionTracker` uses the same one.
SESSION_IDLE_S = 30 * 60
#: ...and free a session's world this much later, when the SDK has surely forgotten it: a
#: request in between gets the SDK's 404, which ends the session here too.
_IDLE_MARGIN_S = 60


#: open MCP sessions a server holds by default (`serve --max-sessions`; with --isolate each has
#: its own world); a new one past this is refused with 503 until one ends
MAX_SESSIONS = 1000


async def _full(scope: Scope, receive: Receive, send: Send, limit: int) -> None:
    message = (
        f"This faultbench server holds {limit} open MCP sessions, its limit (--max-sessions). "
        "Expected clients to end their sessions (DELETE /mcp, which mcp.Client does on "
        "close); sessions with no request for 30 minutes end by themselves."
    )
    await _unavailable(scope, receive, send, message, retry_after=60)


async def _unavailable(
    scope: Scope, receive: Receive, send: Send, message: str, *, retry_after: int
) -> None:
    """A 503 whose body is a JSON-RPC error an MCP client shows as it is."""
    response = JSONResponse(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}},
        status_code=503,
        headers={"Retry-After": str(retry_after)},
    )
    await response(scope, receive, send)


_SESSION_KEY = SESSION_HEADER.encode()
_BODY_HEADERS = {b"content-length", b"content-type", b"transfer-encoding", _SESSION_KEY}


async def _unjournaled(scope: Scope, receive: Receive, send: Send, exc: JournalError) -> None:
    message = (
        f"This faultbench server (--isolate --events) cannot give this MCP session a world: "
        f"{exc.cause}, opening {exc.path.name}. Try again once sessions have ended or space "
        "was freed."
    )
    await _unavailable(scope, receive, send, message, retry_after=10)


class SessionTracker:
    """ASGI middleware (with --isolate): keeps `Control.live`, the MCP sessions open now,
    from the HTTP exchanges at the MCP endpoint, and frees a session's world when it ends.

    A session opens when a POST without `Mcp-Session-Id` is answered 2xx with one (the
    initialize handshake). It ends when a DELETE of it is answered 2xx, when a request for it
    is answered 404 (the SDK no longer knows it), or when it has had no request in flight for
    longer than the SDK's idle timeout (checked whenever a request arrives, on any path, so
    `GET /faultbench/sessions` never lists one that idled out).
    """

    def __init__(
        self,
        app: ASGIApp,
        control: Control,
        *,
        path: str = "/mcp",
        idle_s: float = SESSION_IDLE_S + _IDLE_MARGIN_S,
        clock: Callable[[], float] = time.monotonic,
        max_sessions: int = MAX_SESSIONS,
    ):
        self.app = app
        self.max_sessions = max_sessions
        self.control = control
        self.path = path
        self.idle_s = idle_s
        self.clock = clock
        self.in_flight: dict[str, int] = {}  # session -> its requests being answered now
        self.opening = 0  # requests without a session being answered now (each may open one)
        self.idle_since: dict[str, float] = {}  # session -> when its last request ended

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.sweep()
        if scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        session = Headers(scope=scope).get(SESSION_HEADER)
        status = 0
        refused: str | None = None  # a new session whose journal could not be opened

        async def watch(message: Message) -> None:
            nonlocal status, refused
            if refused is not None:
                return  # the SDK's answer is replaced by the 503 already sent
            if message["type"] == "http.response.start":
                status = message["status"]
                given = Headers(raw=message.get("headers") or []).get(SESSION_HEADER)
                if session is None and given is not None and 200 <= status < 300:
                    try:
                        self.opened(given)
                    except JournalError as exc:
                        refused = given
                        await _unjournaled(scope, receive, send, exc)
                        return
            await send(message)

        if session is None:
            # Requests that may open a session are counted while the SDK answers them, so
            # that concurrent ones cannot take the server past its limit.
            if len(self.control.live) + self.opening >= self.max_sessions:
                await _full(scope, receive, send, self.max_sessions)
                return
            self.opening += 1
            try:
                await self.app(scope, receive, watch)
            finally:
                self.opening -= 1
            if refused is not None:
                await self._end_in_sdk(scope, refused)
            return
        if session not in self.control.live:
            await self.app(scope, receive, watch)
            if status == 404:
                self.closed(session)
            return
        self.in_flight[session] = self.in_flight.get(session, 0) + 1
        self.idle_since.pop(session, None)
        try:
            await self.app(scope, receive, watch)
        finally:
            left = self.in_flight.pop(session, 1) - 1
            if left:
                self.in_flight[session] = left
            elif session in self.control.live:
                self.idle_since[session] = self.clock()
        if status == 404 or (scope["method"] == "DELETE" and 200 <= status < 300):
            self.closed(session)

    async def _end_in_sdk(self, scope: Scope, session: str) -> None:
        """End a session the SDK opened and we refused (a DELETE of it, as a client would
        send), so the SDK does not keep it until it idles out."""
        headers = [(k, v) for k, v in scope["headers"] if k not in _BODY_HEADERS]
        delete = {
            **scope,
            "method": "DELETE",
            "headers": [*headers, (_SESSION_KEY, session.encode())],
        }

        async def nothing() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: Message) -> None:
            pass

        try:
            await self.app(delete, nothing, discard)
        except Exception:  # best effort: the SDK idles it out anyway
            log.warning("could not end the refused MCP session %s", session, exc_info=True)

    def opened(self, session: str) -> None:
        self.control.session_opened(session)
        self.idle_since[session] = self.clock()

    def closed(self, session: str) -> None:
        self.idle_since.pop(session, None)
        self.control.session_closed(session)

    def sweep(self) -> None:
        """End the sessions that have been idle for longer than the SDK keeps them."""
        if not self.idle_since:
            return
        limit = self.clock() - self.idle_s
        for session in [s for s, t in self.idle_since.items() if t < limit]:
            self.closed(session)


class ListenError(OSError):
    """The HTTP server cannot bind its address (port in use, address not of this machine)."""


def listen_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to `host:port`, bound the way Hypercorn binds.

    Binding before the server starts turns a port in use into one clear `ListenError`
    (instead of a traceback from inside Hypercorn's nurseries), before anything else
    happens: no --events file is truncated for a server that never runs.
    """
    bare = host.strip("[]")
    sock = socket.socket(socket.AF_INET6 if ":" in bare else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((bare, port))
    except OSError as exc:
        sock.close()
        where = f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}"
        if exc.errno == errno.EADDRINUSE:
            raise ListenError(
                exc.errno,
                f"cannot listen on {where}: the port is in use (another server, perhaps "
                "another faultbench serve). Expected a free port: pick another with --port "
                "PORT, or --port 0 for a free one.",
            ) from None
        reason = exc.strerror or str(exc)
        raise ListenError(
            exc.errno,
            f"cannot listen on {where}: {reason}. Expected --host to be an address of this "
            "machine (default 127.0.0.1).",
        ) from None
    return sock


async def serve_http(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    sock: socket.socket | None = None,
    shutdown: Callable[[], Awaitable[Any]] | None = None,
    task_status: Any = None,
) -> None:
    """Serve `app` with Hypercorn's trio worker until `shutdown()` returns.

    `sock` is a socket from `listen_socket` (default: one bound to `host:port` here); the
    server owns it from then on. `task_status.started(url)` reports the MCP URL once the
    server listens (so port 0 works).
    """
    import trio
    from hypercorn.config import Config
    from hypercorn.trio import serve

    config = Config()
    if sock is None:
        sock = listen_socket(host, port)
    # Hypercorn's documented `fd://` bind: it listens on the socket we bound.
    config.bind = [f"fd://{sock.detach()}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("faultbench.http")
    config.graceful_timeout = 2.0
    if task_status is None:
        task_status = trio.TASK_STATUS_IGNORED

    async with trio.open_nursery() as nursery:
        binds = await nursery.start(partial(serve, app, config, shutdown_trigger=shutdown))
        task_status.started(f"{binds[0]}/mcp")
