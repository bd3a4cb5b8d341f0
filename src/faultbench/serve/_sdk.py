"""The one place that knows which MCP Python SDK is installed: mcp 1.x (>= 1.24) or 2.x.

faultbench's server (`_server.py`), its HTTP app (`_http.py`) and the CLI's `tools` listing
speak to this module, never to an SDK-specific name. Everything here is public API of the
SDK in question.

What differs, and how it is bridged:

- Types. 2.x ships them as the `mcp_types` package with snake_case fields; 1.x as `mcp.types`
  with camelCase ones. Both validate the wire form (camelCase keys), so tools and results are
  built from wire-form dicts (`tool_model`, `call_result`) and read back through `dump`.
- Handlers. 2.x's low-level `Server(name, on_list_tools=, on_call_tool=,
  get_tool_input_schema=)` calls `handler(ctx, params)` with `ctx.request` (the Starlette
  request on HTTP) and `ctx.protocol_version`. 1.x registers decorated `list_tools()` and
  `call_tool()` functions and keeps the request in `server.request_context`; `init_server`
  turns the latter into the former's (ctx, params), so `WorldServer` has one handler per
  request. 1.x validates tool arguments against `inputSchema` unless told not to: the kernel
  does it (with better messages), so the SDK is told not to.
- Results. A 2.x handler may return the wire dict (plus `resultType`, which 2026-07-28
  needs); a 1.x handler returns a `CallToolResult` model, built from the same dict.
- HTTP. 2.x's `Server.streamable_http_app(...)`; 1.x's low-level server has none, so
  `streamable_http_app` assembles the same Starlette app from 1.x's public
  `StreamableHTTPSessionManager`: one route at the MCP path plus the custom routes, with the
  manager's `run()` as the lifespan.
- Calls. On 2.x, `tools/call` skips the parts of the SDK's per-request pipeline that
  re-check what faultbench made itself (`fast_tool_calls`, below); 1.x has no middleware.
- Protocol versions. Only 2.x speaks 2026-07-28 (self-contained requests, any JSON value as
  `structuredContent`, `server/discover`); on 1.x every client does the 2025 handshake, so
  `MODERN_PROTOCOL_VERSIONS` is empty and per-session isolation needs no opt-out of discovery.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from mcp.server import NotificationOptions
from mcp.server import Server as Server
from mcp.server.stdio import stdio_server as stdio_server
from mcp.server.transport_security import (
    TransportSecurityMiddleware as TransportSecurityMiddleware,
)
from mcp.server.transport_security import TransportSecuritySettings as TransportSecuritySettings

__all__ = [
    "MCP_MAJOR",
    "MCP_VERSION",
    "MODERN_PROTOCOL_VERSIONS",
    "Server",
    "TransportSecurityMiddleware",
    "TransportSecuritySettings",
    "connect",
    "connect_in_process",
    "dump",
    "init_server",
    "notify_tools_changed",
    "stdio_server",
    "streamable_http_app",
    "tool_list_options",
    "tool_model",
    "types",
]


def _installed() -> str:
    try:
        return version("mcp")
    except PackageNotFoundError:  # an unpacked checkout of the SDK on sys.path
        import mcp

        return "2" if hasattr(mcp, "Client") else "1"


MCP_VERSION = _installed()
MCP_MAJOR = int(MCP_VERSION.split(".", 1)[0])

if MCP_MAJOR >= 2:
    import mcp_types as types
    import opentelemetry.trace as _otel_trace  # a dependency of mcp 2.x, imported by it
    from mcp_types import methods as _methods
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS as _MODERN

    MODERN_PROTOCOL_VERSIONS: frozenset[str] = frozenset(_MODERN)
    #: the SDK's `Server` takes `get_tool_input_schema=` (mcp >= 2.3)
    _TAKES_INPUT_SCHEMA = "get_tool_input_schema" in inspect.signature(Server.__init__).parameters
else:
    import mcp.types as types  # type: ignore[no-redef]  # the 1.x home of the same models

    MODERN_PROTOCOL_VERSIONS = frozenset()


@dataclass(frozen=True)
class Request:
    """What a tool call handler gets to know about its request, on either SDK."""

    #: the Starlette request on HTTP; None in-process and on stdio
    request: Any
    #: the negotiated protocol version (None: unknown)
    protocol_version: str | None
    #: the SDK's `ServerSession` of the request (None: none), for notifications
    session: Any = None
    #: the request's `_meta` as the SDK parsed it (its progress token), and its id
    meta: Any = None
    request_id: Any = None


@dataclass(frozen=True)
class CallParams:
    name: str
    arguments: dict[str, Any] | None


ListTools = Callable[[Any, Any], Awaitable[Any]]
CallTool = Callable[[Any, Any], Awaitable[Any]]


def tool_model(wire: Mapping[str, Any]) -> Any:
    """The SDK's `Tool` from its wire form (`name`, `description`, `inputSchema`, ...)."""
    return types.Tool.model_validate(dict(wire))


def dump(model: Any) -> dict[str, Any]:
    """An SDK model in wire form (camelCase keys, None left out)."""
    out: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return out


def list_tools_result(tools: list[Any]) -> Any:
    return types.ListToolsResult(tools=tools)


# ---------------------------------------------------------------------------------------------
# Calls without a session (the integrations' direct in-process path)
# ---------------------------------------------------------------------------------------------

#: the protocol version the SDK's own in-process client speaks (`connect_in_process`): 2.x
#: dispatches at the modern version, 1.x does the handshake (None: a handshake-era version)
IN_PROCESS_PROTOCOL: str | None = (
    max(MODERN_PROTOCOL_VERSIONS) if MODERN_PROTOCOL_VERSIONS else None
)


def stamp_server_info(server: Any, result: dict[str, Any], protocol_version: str | None) -> None:
    """What the 2.x server runner adds to a result at a modern protocol version: the server's
    identity in `_meta` (`mcp_types.SERVER_INFO_META_KEY`, `Server.server_info_stamp`)."""
    if protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return
    meta = result.get("_meta")
    if meta is None or (isinstance(meta, dict) and meta.get(types.SERVER_INFO_META_KEY) is None):
        result["_meta"] = {**(meta or {}), types.SERVER_INFO_META_KEY: server.server_info_stamp}


def call_result(wire: Mapping[str, Any]) -> Any:
    """The SDK's `CallToolResult` from its wire form (1.x knows no `resultType`)."""
    out = dict(wire)
    if MCP_MAJOR < 2:
        out.pop("resultType", None)
    return types.CallToolResult.model_validate(out)


# ---------------------------------------------------------------------------------------------
# The server's handlers
# ---------------------------------------------------------------------------------------------


def init_server(
    server: Any,
    *,
    name: str,
    version: str,
    instructions: str,
    list_tools: ListTools,
    call_tool: CallTool,
    input_schema: Callable[[str], dict[str, Any] | None],
) -> None:
    """Run the SDK's `Server.__init__` on `server` (a `Server` subclass) with these handlers.

    `list_tools(ctx, params)` returns a `ListToolsResult`; `call_tool(ctx, params)` the
    result's wire dict, `ctx` having `request` and `protocol_version`, `params` `name` and
    `arguments`.
    """
    if MCP_MAJOR >= 2:
        from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

        # At 2026-07-28 a change notification reaches only the clients listening for it
        # (`subscriptions/listen`); the bus is how `notify_tools_changed` reaches them.
        bus = InMemorySubscriptionBus()
        extra: dict[str, Any] = {}
        # `get_tool_input_schema` came in mcp 2.3; before it the SDK reads a tool's input
        # schema (for `Mcp-Param-*` header checks) from the `tools/list` handler.
        if _TAKES_INPUT_SCHEMA:
            extra["get_tool_input_schema"] = input_schema
        Server.__init__(
            server,
            name,
            version=version,
            instructions=instructions,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_subscriptions_listen=ListenHandler(bus),
            **extra,
        )
        server.subscription_bus = bus
        # Outermost, before the SDK's OpenTelemetry middleware: see `fast_tool_calls`.
        server.middleware.insert(0, FastToolCalls(server, call_tool))
        return
    Server.__init__(server, name, version=version, instructions=instructions)
    server.subscription_bus = None  # 1.x: change notifications go on the session

    def request() -> Request:
        ctx = server.request_context
        session = ctx.session
        params = session.client_params if session is not None else None
        return Request(
            request=ctx.request,
            protocol_version=params.protocolVersion if params is not None else None,
            session=session,
            meta=ctx.meta,
            request_id=ctx.request_id,
        )

    async def listed() -> list[Any]:
        return list((await list_tools(request(), None)).tools)

    async def called(tool: str, arguments: dict[str, Any]) -> Any:
        out = await call_tool(request(), CallParams(tool, arguments))
        out.pop("resultType", None)  # a 2026-07-28 field, which 1.x does not know
        return types.CallToolResult.model_validate(out)

    server.list_tools()(listed)
    server.call_tool(validate_input=False)(called)


class FastToolCalls:
    """2.x server middleware (`Server.middleware`, public): a `tools/call` answered by the
    handler directly, in the wire form the SDK's pipeline would give it, without the parts of
    that pipeline that re-check what faultbench made itself.

    The SDK's `ServerRunner` runs each request through its middleware (OpenTelemetry first),
    validates the params against the protocol version's schema and then again as the method's
    params model, calls the handler, validates its result against that version's result
    schema and dumps it in that schema's shape (fields of other versions left out), and at
    2026-07-28 stamps the server's identity into `_meta`. Here:

    - the params are validated once, with the SDK's own per-version check
      (`mcp_types.methods.validate_client_request`, public API); anything it refuses, a
      handshake-era session not yet initialized, or a server with cache hints goes the SDK's
      way, which answers it as it always has;
    - the handler's result (`render_result` or `error_result`: always the same few keys,
      values already JSON) is put in the shape the SDK's dump gives it (`shape_result`; a
      test holds the two equal, key order included, for every kind of answer);
    - no OpenTelemetry span unless tracing is on (a tracer provider set: then the call goes
      the SDK's way, spans and all).

    It saves the params model (~1 us), the result's validation and dump (~5-6 us, measured
    alone) and the span; the rest of the SDK's per-request pipeline stays.
    """

    def __init__(self, server: Any, call_tool: CallTool):
        self.server = server
        self.call_tool = call_tool

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method != "tools/call" or _tracing() or self.server.cache_hints:
            return await call_next(ctx)
        version = ctx.protocol_version
        params = ctx.params
        modern = version in MODERN_PROTOCOL_VERSIONS
        if not modern and ctx.session.client_params is None:
            return await call_next(ctx)  # before `initialize`: the SDK refuses it
        try:
            _methods.validate_client_request("tools/call", version, params)
        except Exception:  # the SDK's error answer, as it would give it
            return await call_next(ctx)
        arguments = params.get("arguments")
        out = await self.call_tool(ctx, CallParams(params["name"], arguments))
        return shape_result(out, version, self.server.server_info_stamp if modern else None)


def shape_result(out: dict[str, Any], version: str | None, stamp: Any = None) -> dict[str, Any]:
    """A tool call's wire result (`render_result`, `error_result`: text content only) as 2.x's
    server runner sends it at `version`: its schema's fields in its order (`resultType` only from 2026-07-28),
    and `stamp` (the server's identity, 2026-07-28) in `_meta`."""
    meta = out.get("_meta")
    content = [{"text": item["text"], "type": item["type"]} for item in out["content"]]
    # a result's own `_meta` leads; a stamp on a result without one is added last
    shaped: dict[str, Any] = {} if meta is None else {"_meta": meta}
    shaped["content"] = content
    shaped["isError"] = out["isError"]
    if version in MODERN_PROTOCOL_VERSIONS:
        shaped["resultType"] = out["resultType"]
    if "structuredContent" in out:
        shaped["structuredContent"] = out["structuredContent"]
    if stamp is not None:
        shaped["_meta"] = {**(meta or {}), types.SERVER_INFO_META_KEY: stamp}
    return shaped


def modern_tool_call(
    message: Any, headers: Mapping[str, str] | None = None
) -> tuple[str, CallParams] | None:
    """(protocol version, params) of a JSON-RPC message that is a `tools/call` request at
    2026-07-28 (self-contained: its version in `params._meta`) which the SDK would accept:
    the envelope the SDK's modern ladder requires (`mcp.shared.inbound`), then the
    per-version params schema (`mcp_types.methods`). None for anything else, and on 1.x."""
    if MCP_MAJOR < 2 or not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    if message.keys() != _REQUEST_KEYS or message["jsonrpc"] != "2.0":
        return None
    if type(message["id"]) not in (int, str):  # JSON-RPC ids; a bool is not one
        return None
    params = message["params"]
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(types.PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
    if not isinstance(version, str) or version not in MODERN_PROTOCOL_VERSIONS:
        return None
    from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request

    if isinstance(classify_inbound_request(message, headers=headers), InboundLadderRejection):
        return None
    try:
        _methods.validate_client_request("tools/call", version, params)
    except Exception:  # the SDK answers it, as it always has
        return None
    return version, CallParams(params["name"], params.get("arguments"))


_REQUEST_KEYS = {"jsonrpc", "id", "method", "params"}


def modern_http_call(
    body: bytes, headers: Any, input_schema: Callable[[str], dict[str, Any] | None]
) -> tuple[int | str, str, CallParams] | None:
    """(id, protocol version, params) of an HTTP POST body that is a 2026-07-28 `tools/call`
    which 2.x's modern HTTP entry (`mcp.server._streamable_http_modern.handle_modern_request`)
    would hand to the server's handler, after the caller's security and Accept checks: a JSON
    body, no routing header twice, a request the SDK accepts with headers that agree with it
    (`modern_tool_call`, one `classify_inbound_request` with the headers), and `Mcp-Param-*`
    headers that agree with the arguments, against the tool's input schema (`input_schema`,
    the server's `get_tool_input_schema`). Any of them failing is a refusal, which the SDK
    gives itself, so their order here does not change an answer. None for anything else;
    always None on 1.x."""
    if MCP_MAJOR < 2:
        return None
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):
        return None
    from mcp.shared.inbound import (
        MCP_PARAM_HEADER_PREFIX,
        find_duplicated_routing_header,
        validate_mcp_param_headers,
    )

    if find_duplicated_routing_header(headers.items()) is not None:
        return None
    call = modern_tool_call(decoded, dict(headers))  # the envelope and headers: one ladder
    if call is None:
        return None
    version, params = call
    arguments = params.arguments or {}
    prefix = MCP_PARAM_HEADER_PREFIX.lower()
    if arguments or any(header.startswith(prefix) for header in headers):
        schema = input_schema(params.name)
        if (
            schema is not None
            and validate_mcp_param_headers(schema, arguments, headers) is not None
        ):
            return None
    return decoded["id"], version, params


def jsonrpc_result_text(ident: int | str, result: dict[str, Any]) -> str:
    """A JSON-RPC response as 2.x's modern HTTP entry writes it (`_write`: the message model
    dumped without None, then `json.dumps` with compact separators)."""
    message = types.JSONRPCResponse(jsonrpc="2.0", id=ident, result=result)
    body = message.model_dump(mode="json", by_alias=True, exclude_none=True)
    return json.dumps(body, separators=(",", ":"))


def jsonrpc_error(ident: int | str, exc: Exception) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON-RPC error message) that 2.x's modern entry answers for a handler
    that raised `exc` (`_to_jsonrpc_response`: `modern_error_data`, the status from
    `ERROR_CODE_HTTP_STATUS`); the stdio loop sends the same message."""
    from mcp.server.runner import modern_error_data
    from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS

    error = modern_error_data(exc)
    message = types.JSONRPCError(jsonrpc="2.0", id=ident, error=error)
    body: dict[str, Any] = message.model_dump(mode="json", by_alias=True, exclude_none=True)
    return ERROR_CODE_HTTP_STATUS.get(error.code, 200), body


def jsonrpc_error_text(ident: int | str, exc: Exception) -> tuple[int, str]:
    """(HTTP status, body) of 2.x's modern HTTP entry for a handler that raised `exc`."""
    status, body = jsonrpc_error(ident, exc)
    return status, json.dumps(body, separators=(",", ":"))


def http_call_checks() -> tuple[int, Callable[[Any], tuple[bool, bool]]] | None:
    """(the request body limit, `check_accept_headers`) of 2.x's streamable HTTP entry; None
    on 1.x, which has no modern entry."""
    if MCP_MAJOR < 2:
        return None
    from mcp.server.streamable_http import check_accept_headers

    try:
        from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
    except ImportError:  # mcp 2.0 keeps it beside the session manager
        from mcp.server.streamable_http_manager import (  # type: ignore[attr-defined,no-redef,unused-ignore]
            DEFAULT_MAX_REQUEST_BODY_SIZE,
        )

    return DEFAULT_MAX_REQUEST_BODY_SIZE, check_accept_headers


def tracing() -> bool:
    """An OpenTelemetry tracer provider is set: a call goes the SDK's way, spans and all."""
    return MCP_MAJOR >= 2 and _tracing()


def opens_modern(message: Any) -> bool | None:
    """Whether a stdio connection whose first request is `message` is served at 2026-07-28
    (2.x's rule: a request other than `initialize` whose `params._meta` has the protocol
    version key); None if `message` is no request (it decides nothing)."""
    if not isinstance(message, dict) or "id" not in message or "method" not in message:
        return None
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return (
        MCP_MAJOR >= 2
        and message["method"] != "initialize"
        and isinstance(meta, dict)
        and types.PROTOCOL_VERSION_META_KEY in meta
    )


def _tracing() -> bool:
    """An OpenTelemetry tracer provider is set (the API's default is a proxy to none)."""
    return not isinstance(_otel_trace.get_tracer_provider(), _otel_trace.ProxyTracerProvider)


def tool_list_options(options: Any) -> Any:
    """The notification options a server's `create_initialization_options` passes on: the
    caller's, else ones that advertise `tools.listChanged` (a world's tool list can change
    during a run, see `notify_tools_changed`). The same class and method on both SDKs."""
    return options if options is not None else NotificationOptions(tools_changed=True)


async def notify_tools_changed(server: Any, ctx: Any) -> None:
    """Tell the clients of `server` that its tool list changed, as the request `ctx` (2.x's
    request context, or the `Request` that `init_server` makes on 1.x) allows: at protocol
    2026-07-28 (2.x only) a `ToolsListChanged` event on the server's bus, which its
    `subscriptions/listen` streams deliver; in the 2025 handshake protocol
    `notifications/tools/list_changed` on the request's session."""
    if getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS:
        from mcp.server.subscriptions import ToolsListChanged

        bus = server.subscription_bus
        if bus is not None:
            await bus.publish(ToolsListChanged())
        return
    session = getattr(ctx, "session", None)
    if session is not None:
        await session.send_tool_list_changed()


def progress_token(ctx: Any) -> str | int | None:
    """The progress token the client sent with the request `ctx` (2.x's request context, or
    the `Request` that `init_server` makes on 1.x), if any: 2.x parses `_meta` into a dict
    (`progress_token`), 1.x into a model (`progressToken`); a context built before parsing
    still has the raw params."""
    meta = getattr(ctx, "meta", None)
    if isinstance(meta, Mapping):
        token = meta.get("progress_token", meta.get("progressToken"))
    else:
        token = getattr(meta, "progressToken", None)
    if token is None:
        params = getattr(ctx, "params", None)
        raw = params.get("_meta") if isinstance(params, Mapping) else None
        token = raw.get("progressToken") if isinstance(raw, Mapping) else None
    return token if isinstance(token, str | int) and not isinstance(token, bool) else None


async def send_progress(ctx: Any, progress: float, total: float | None) -> bool:
    """`notifications/progress` for the request `ctx`, on its session (the same method on
    both SDKs); False when the client sent no progress token or there is no session."""
    token = progress_token(ctx)
    session = getattr(ctx, "session", None)
    if token is None or session is None:
        return False
    await session.send_progress_notification(
        token, progress, total, related_request_id=getattr(ctx, "request_id", None)
    )
    return True


def refuse_discovery(server: Any, message: str) -> None:
    """Answer `server/discover` with METHOD_NOT_FOUND, so that a 2.x client in `mode="auto"`
    falls back to the handshake (and gets a session). 1.x has no discovery: nothing to do."""
    if MCP_MAJOR < 2:
        return
    from mcp.shared.exceptions import MCPError

    async def refuse(ctx: Any, params: Any) -> Any:
        raise MCPError(code=types.METHOD_NOT_FOUND, message=message)

    server.add_request_handler("server/discover", types.RequestParams, refuse)


# ---------------------------------------------------------------------------------------------
# Streamable HTTP
# ---------------------------------------------------------------------------------------------


def streamable_http_app(
    server: Any,
    *,
    path: str,
    session_idle_timeout: float,
    security: TransportSecuritySettings,
    host: str,
    routes: list[Any],
) -> Any:
    """The SDK's Starlette app serving `server` at `path` (JSON responses, stateful
    sessions) with `routes` beside it; its lifespan runs the session manager."""
    if MCP_MAJOR >= 2:
        extra: dict[str, Any] = {}
        # Idle sessions end on their own from mcp 2.2 (2.0 and 2.1 keep them until the
        # client ends them or the server stops), as from 1.x's release that added it.
        if "session_idle_timeout" in inspect.signature(server.streamable_http_app).parameters:
            extra["session_idle_timeout"] = session_idle_timeout
        return server.streamable_http_app(
            streamable_http_path=path,
            json_response=True,
            transport_security=security,
            host=host,
            custom_starlette_routes=routes,
            **extra,
        )
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Route

    # The manager makes its anyio locks when it is created, and an anyio lock made outside
    # any event loop belongs to asyncio: it is made in the lifespan, on the server's loop
    # (trio under `faultbench serve`).
    box: dict[str, StreamableHTTPSessionManager] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> Any:
        options: dict[str, Any] = {"json_response": True, "security_settings": security}
        # Idle sessions end on their own from the release that added the option (mcp 1.24
        # keeps them until the client ends them or the server stops).
        if "session_idle_timeout" in inspect.signature(StreamableHTTPSessionManager).parameters:
            options["session_idle_timeout"] = session_idle_timeout
        manager = StreamableHTTPSessionManager(app=server, **options)
        async with manager.run():
            box["manager"] = manager
            try:
                yield
            finally:
                del box["manager"]

    class _Endpoint:
        # A class instance (not a function) so that Starlette routes the raw ASGI call to it.
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await box["manager"].handle_request(scope, receive, send)

    return Starlette(routes=[Route(path, endpoint=_Endpoint()), *routes], lifespan=lifespan)


# ---------------------------------------------------------------------------------------------
# A client in this process
# ---------------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def connect_in_process(server: Any) -> AsyncIterator[Any]:
    """The SDK's own client connected to `server` in this process: 2.x's `mcp.Client(server)`,
    1.x's `ClientSession` over memory streams (initialized). Both answer `list_tools()` and
    `call_tool(name, arguments, meta=...)` with the SDK's result models."""
    if MCP_MAJOR >= 2:
        import mcp

        async with mcp.Client(server) as client:
            yield client
        return
    # 1.x only (2.x's own module has no such function), hence looked up, not imported by name
    memory: Any = importlib.import_module("mcp.shared.memory")
    async with memory.create_connected_server_and_client_session(server) as session:
        yield session


def _errlog() -> Any:
    """Where a stdio server's stderr goes: today's `sys.stderr` (the SDK's default is the one
    of the moment it was imported, maybe closed since), or the process's own when today's has
    no file descriptor (a notebook, pytest's capsys)."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None and not stream.closed:
                stream.fileno()
                return stream
        except (OSError, ValueError, AttributeError):
            continue
    return subprocess.DEVNULL


@contextlib.asynccontextmanager
async def connect(target: str | list[str], *, timeout: float = 30) -> AsyncIterator[Any]:
    """The SDK's own client connected to a server elsewhere: a stdio command (argv list,
    started as a child process) or a streamable HTTP URL. 2.x's `mcp.Client`, 1.x's
    initialized `ClientSession` over the SDK's transports; both answer `list_tools()` and
    `call_tool(name, arguments)` with the SDK's result models (read them with `dump`)."""
    from mcp.client.stdio import StdioServerParameters

    if MCP_MAJOR >= 2:
        import mcp
        from mcp.client.stdio import stdio_client

        where: Any = target
        if isinstance(target, list):
            # The stdio transport itself: 2.0's `Client` takes no `StdioServerParameters`
            # (2.1 added it, and opens this same transport for one).
            params = StdioServerParameters(command=target[0], args=target[1:])
            where = stdio_client(params, errlog=_errlog())
        async with mcp.Client(where, read_timeout_seconds=timeout) as client:
            yield client
        return
    from datetime import timedelta

    from mcp import ClientSession

    wait: Any = timedelta(seconds=timeout)  # 1.x takes a timedelta (2.x's stubs say float)
    async with contextlib.AsyncExitStack() as stack:
        if isinstance(target, list):
            from mcp.client.stdio import stdio_client

            params = StdioServerParameters(command=target[0], args=target[1:])
            read, write = await stack.enter_async_context(stdio_client(params, errlog=_errlog()))
        else:
            http: Any = importlib.import_module("mcp.client.streamable_http")
            read, write, _ = await stack.enter_async_context(http.streamable_http_client(target))
        session = await stack.enter_async_context(
            ClientSession(read, write, read_timeout_seconds=wait)
        )
        await session.initialize()
        yield session
