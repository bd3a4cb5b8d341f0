"""The HTTP guard in front of every route of every faultbench server: MCP at `/mcp`, the
control API under `/faultbench/`, the world's REST paths (`serve --rest`), and any other ASGI
app a faultbench server mounts (an environment server wraps its app in one too).

One ASGI middleware, `HttpGuard`, checks each HTTP request before the app sees it (and each
WebSocket handshake, with the checks that come before a body: refused with a close, 1008):

- headers: at most `MAX_HEADERS` of them, `MAX_HEADER_BYTES` in all (else 431);
- Host and Origin (DNS rebinding, a cross-site form POST): the Host must be a name of the
  address bound (`HostPolicy.for_bind`), an Origin, when a browser sends one, the same
  (else 421 for the Host, 403 for the Origin); off for a wildcard bind, where a token is
  required instead (`_http.check_exposure`);
- the server's bearer token (`--token`), on the paths that need it;
- the body: at most the route family's limit (`body_limit(path)`), refused with 413 on the
  declared `Content-Length` before a byte is read, or as soon as a chunked body goes past it;
  the body is never read whole by the guard, only counted as the app reads it;
- redirects: a `Location` the app answers is made relative (path and query), so no redirect
  leaves the origin the client asked, whatever Host it sent.

Nothing here knows MCP: `_http.security_settings` hands the same `HostPolicy` to the SDK's own
checks of `/mcp`.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import msgspec
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "MAX_BODY",
    "MAX_HEADERS",
    "MAX_HEADER_BYTES",
    "HostPolicy",
    "HttpGuard",
    "is_loopback",
]

#: request headers one request may carry, and their size in all (names and values, bytes)
MAX_HEADERS = 100
MAX_HEADER_BYTES = 16 * 1024
#: request bodies past this are refused with 413 (the MCP SDK's own limit; `--rest` too)
MAX_BODY = 4 * 1024 * 1024

_encode = msgspec.json.Encoder().encode


def is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class HostPolicy:
    """Which `Host` and `Origin` headers a server accepts (`name:*`: any port of `name`).
    `enabled` False: any (a wildcard bind, where the name clients use is not known)."""

    enabled: bool
    hosts: tuple[str, ...] = ()
    origins: tuple[str, ...] = ()

    @classmethod
    def for_bind(cls, host: str) -> HostPolicy:
        """The policy of a server bound to `host`: the loopback names (127.0.0.1, localhost,
        [::1]) and the address bound (say 127.0.0.2, or a specific non-loopback address), with
        or without a port; nothing checked for a wildcard bind (0.0.0.0, ::)."""
        bare = host.strip("[]")
        if bare in ("0.0.0.0", "::"):
            return cls(enabled=False)
        # Bare names too: a client of `--port 80` sends `Host: localhost`, without a port.
        hosts = ["127.0.0.1", "localhost", "[::1]", "127.0.0.1:*", "localhost:*", "[::1]:*"]
        origins = ["http://127.0.0.1", "http://localhost", "http://[::1]"]
        origins += ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
        name = f"[{bare}]" if ":" in bare else bare
        if name not in hosts:  # the address bound, loopback (127.0.0.2) or not, is a Host too
            hosts += [name, f"{name}:*"]
            origins += [
                f"http://{name}", f"http://{name}:*", f"https://{name}", f"https://{name}:*",
            ]  # fmt: skip
        return cls(enabled=True, hosts=tuple(hosts), origins=tuple(origins))

    def host_ok(self, host: str | None) -> bool:
        return not self.enabled or (host is not None and _matches(host.lower(), self.hosts))

    def origin_ok(self, origin: str | None) -> bool:
        """No Origin (a client that is not a browser) is fine; a browser's must be ours."""
        return not self.enabled or origin is None or _matches(origin.lower(), self.origins)


def _matches(value: str, allowed: tuple[str, ...]) -> bool:
    for pattern in allowed:
        if pattern.endswith(":*"):
            head = pattern[:-1]
            if value.startswith(head) and value[len(head) :].isdigit():
                return True
        elif value == pattern:
            return True
    return False


class HttpGuard:
    """ASGI middleware: the checks of the module's doc on every HTTP request.

    `token`: the bearer token clients must send (`--token`), on the paths `needs_token(path)`
    says (default: all). `body_limit`: the most body bytes a request to `path` may send (an
    int for every path). `shape(path, kind, message)`: a refusal's JSON body in the route
    family's error form (default `{"error": {"type": kind, "message": message}}`)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        policy: HostPolicy,
        token: str | None = None,
        needs_token: Callable[[str], bool] | None = None,
        body_limit: int | Callable[[str], int] = MAX_BODY,
        shape: Callable[[str, str, str], Any] | None = None,
    ):
        self.app = app
        self.policy = policy
        self.expected = f"Bearer {token}".encode() if token else None
        self.needs_token = needs_token
        self.body_limit = body_limit
        self.shape = shape or _error_object

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        shape = self.shape
        refusal, headers = self.refusal(scope)
        if scope["type"] == "websocket":
            # a WebSocket handshake: the same checks, refused as RFC 6455 lets a server
            # refuse one before accepting it (a close: policy violation)
            if refusal is not None:
                await send({"type": "websocket.close", "code": 1008})
            else:
                await self.app(scope, receive, send)
            return

        async def refuse(status: int, kind: str, message: str, *extra: tuple[bytes, bytes]) -> None:
            await _send_json(send, status, shape(path, kind, message), extra)

        if refusal is not None:
            await refuse(*refusal)
            return
        limit = self.body_limit if isinstance(self.body_limit, int) else self.body_limit(path)
        declared = headers.get(b"content-length")
        if declared is not None:
            if not declared.isdigit() or len(declared) > 18:
                await refuse(400, "bad_request", "Expected a numeric Content-Length.")
                return
            if int(declared) > limit:
                await refuse(413, "body_too_large", _too_large(limit), _CLOSE)
                return
        await self._guarded(scope, receive, send, limit, refuse)

    def refusal(self, scope: Scope) -> tuple[tuple[Any, ...] | None, dict[bytes, bytes]]:
        """Why a request (or a WebSocket handshake) is refused, before its body: (status,
        kind, message, extra headers...), or None; and its headers (the first of a repeated
        one). Checked: the headers' number and size, Host, Origin, the token."""
        path: str = scope["path"]
        raw: list[tuple[bytes, bytes]] = scope["headers"]
        headers: dict[bytes, bytes] = {}
        if len(raw) > MAX_HEADERS or sum(len(k) + len(v) for k, v in raw) > MAX_HEADER_BYTES:
            return (
                431, "headers_too_large",
                f"Expected at most {MAX_HEADERS} request headers of {MAX_HEADER_BYTES // 1024} "
                f"KiB in all. Instead, received {len(raw)} headers.",
            ), headers  # fmt: skip
        for k, v in raw:
            headers.setdefault(k, v)
        host = _text(headers.get(b"host"))
        if not self.policy.host_ok(host):
            return (
                421, "invalid_host",
                f"Expected a Host header naming this server (127.0.0.1, localhost or the address "
                f"it was started on). Instead, received {host!r}: a DNS-rebinding guard.",
            ), headers  # fmt: skip
        origin = _text(headers.get(b"origin"))
        if not self.policy.origin_ok(origin):
            return (
                403, "invalid_origin",
                f"Expected no Origin header, or this server's own (http://127.0.0.1:PORT). "
                f"Instead, received {origin!r}: a page of another site may not call this server.",
            ), headers  # fmt: skip
        expected = self.expected
        guarded = expected is not None and (self.needs_token is None or self.needs_token(path))
        got = headers.get(b"authorization", b"")
        if guarded and expected is not None and not hmac.compare_digest(got, expected):
            return (
                401, "unauthorized",
                "Expected an 'Authorization: Bearer <token>' header with the token this server "
                "was started with (faultbench serve --token). Instead, received none or "
                "another token.",
                (b"www-authenticate", b"Bearer"),
            ), headers  # fmt: skip
        return None, headers

    async def _guarded(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        limit: int,
        refuse: Callable[..., Awaitable[None]],
    ) -> None:
        """The app, with its body counted as it reads it and its redirects kept here."""
        received = 0
        refused = False  # the body went past `limit`: 413 sent, the app's answer dropped

        async def counted() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    refused = True
                    if not started:
                        await refuse(413, "body_too_large", _too_large(limit), _CLOSE)
                    return {"type": "http.disconnect"}  # the app stops reading here
            return message

        started = False

        async def kept(message: Message) -> None:
            nonlocal started
            if refused:
                return
            if message["type"] == "http.response.start":
                started = True
                message = _relative_location(message)
            await send(message)

        try:
            await self.app(scope, counted, kept)
        except Exception:
            if not refused:
                raise
            # the app's complaint about the body it no longer gets: the 413 is the answer


def _relative_location(message: Message) -> Message:
    headers = message.get("headers") or []
    if not any(k.lower() == b"location" for k, _ in headers):
        return message
    out: list[tuple[bytes, bytes]] = []
    for k, v in headers:
        if k.lower() == b"location":
            parts = urlsplit(v.decode("latin-1"))
            if parts.scheme or parts.netloc:  # absolute: only its path, on this origin
                path = "/" + (parts.path or "/").lstrip("/")  # never `//host`
                v = (path + (f"?{parts.query}" if parts.query else "")).encode("latin-1")
        out.append((k, v))
    return {**message, "headers": out}


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("latin-1")


_CLOSE = (b"connection", b"close")


def _too_large(limit: int) -> str:
    return (
        f"Expected a request body of at most {limit // 1024} KiB. Instead, received a larger "
        "one; it was not read."
    )


def _error_object(path: str, kind: str, message: str) -> Any:
    return {"error": {"type": kind, "message": message}}


async def _send_json(
    send: Send, status: int, body: Any, extra: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    data = _encode(body)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
