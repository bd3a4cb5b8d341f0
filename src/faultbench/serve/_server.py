"""The MCP face of a world: its operations as tools, every call through `World.acall`.

It runs on mcp 1.x (>= 1.24) and 2.x: what differs between the two SDKs is bridged in
`_sdk.py`, and only there. On 1.x every client uses the 2025 handshake protocol, so what is
said below of 2026-07-28 applies to 2.x alone.

Facts about mcp 2.3.0 this module relies on (checked against the installed source):

- The low-level `mcp.server.Server` takes `on_list_tools(ctx, params)` and
  `on_call_tool(ctx, params)`; `ctx.protocol_version` is the negotiated version and
  `ctx.request` the Starlette request on HTTP (None in-process and on stdio).
- `mcp.Client(server)` requires an instance of `Server` (an `isinstance` check), so
  `WorldServer` subclasses it. `mode="auto"` in-process dispatches directly at protocol
  2026-07-28 (no JSON-RPC framing); `mode="legacy"` runs the 2025-11-25 handshake over
  memory streams.
- Results are validated per protocol version before they leave the server
  (`mcp.server.runner.ServerRunner._serialize`): at 2025-11-25 `structuredContent` must be a
  JSON object (a list is an INTERNAL_ERROR protocol error), at 2026-07-28 any JSON value.
  So lists are sent bare to modern clients and as `{"result": [...]}` to legacy ones.
- A handler exception becomes a JSON-RPC error, not a tool result; hence the catch-all in
  `_on_call_tool`. Only `Exception` is caught: cancellation must propagate.
- A handler may return the result as a plain dict in wire form (camelCase keys plus
  `"resultType": "complete"`, which 2026-07-28 requires); the runner validates it either way.
- Tool arguments are not validated against `inputSchema` by the SDK; the kernel does it.
- On the 2026-07-28 HTTP path, `Mcp-Param-*` header validation needs a tool's input schema
  and runs the whole `tools/list` handler per call unless `get_tool_input_schema` is set.
- A client validates `structuredContent` only against an `outputSchema`; we declare none,
  so no per-call JSON Schema validation happens on the client either.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from faultbench.kernel import CallResult, ToolCallError, World
from faultbench.kernel.lowlevel import SURFACE_KINDS, iso_time, token_expiry

from . import _sdk
from ._journal import JournalError
from ._sdk import MODERN_PROTOCOL_VERSIONS, Server

if TYPE_CHECKING:
    from faultbench.kernel import Tool

__all__ = ["WebhookUrlError", "WorldServer", "build_server"]

log = logging.getLogger("faultbench.serve")

#: MCP session id header (lower case: ASGI header names are lower case).
SESSION_HEADER = "mcp-session-id"

# MCP tool annotations per operation kind. They are hints for the model and the client
# (e.g. a client may skip confirmation for read-only tools); custom handlers get none
# because nothing is known about what they do.
# (Wire form: the same on both SDKs.)
_ANNOTATIONS: dict[str, dict[str, bool]] = {
    "get": {"readOnlyHint": True, "idempotentHint": True},
    "list": {"readOnlyHint": True, "idempotentHint": True},
    "create": {"readOnlyHint": False, "destructiveHint": False},
    "update": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True},
    "delete": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True},
}

AfterCall = Callable[[World, CallResult], None]


def tool_wire(tool: Tool) -> dict[str, Any]:
    """One kernel tool as MCP lists it, in wire form. The schema is the kernel's, inline,
    unchanged."""
    out: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema,
    }
    annotations = _ANNOTATIONS.get(tool.kind)
    if annotations is not None:
        out["annotations"] = dict(annotations)
    return out


def mcp_tool(tool: Tool) -> Any:
    """One kernel tool as the installed SDK's `Tool` model."""
    return _sdk.tool_model(tool_wire(tool))


def render_result(result: CallResult, protocol_version: str | None = None) -> dict[str, Any]:
    """A kernel `CallResult` as an MCP `CallToolResult`, in wire form.

    The text is the kernel's, verbatim. `structuredContent` is the call's value, which the
    kernel guarantees is what a successful text encodes (`CallResult.text` is the JSON of
    `CallResult.value`); it is left out for errors and for a `malformed_json` fault, where
    the agent must not get a clean copy on the side.

    A dict rather than a pydantic model: the SDK validates the result against the protocol
    version's schema either way, and building the model first costs ~5 us a call, most of
    what separates us from a bare server in-process.
    """
    # Keys whose value is None are left out: 2026-07-28 serialization drops them anyway,
    # and one shape for both protocol eras is easier on clients.
    meta: dict[str, Any] = {"call_id": result.call_id}
    if result.started_at is not None:
        meta["started_at"] = iso_time(result.started_at)
        meta["finished_at"] = iso_time(result.finished_at)
    if result.fault is not None:
        meta["fault"] = result.fault
    out: dict[str, Any] = {
        "content": [{"type": "text", "text": result.text}],
        "isError": not result.ok,
        "resultType": "complete",
        "_meta": meta,
    }
    if result.ok:
        value = result.value
        if value is not None and result.fault != "malformed_json":
            if not isinstance(value, dict) and protocol_version not in MODERN_PROTOCOL_VERSIONS:
                value = {"result": value}  # before 2026-07-28 it must be an object
            out["structuredContent"] = value
    else:
        meta["error_kind"] = result.error_kind
    return out


def error_result(message: str, *, kind: str) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": message}],
        "isError": True,
        "resultType": "complete",
        "_meta": {"error_kind": kind},
    }


class WorldServer(Server):
    """An MCP server whose tools are a world's operations.

    Use it in-process with `mcp.Client(server)`, or serve it over stdio / streamable HTTP
    (`faultbench serve`). Every tool call goes through `World.acall`, so faults, virtual
    time and the event log are the kernel's. With `isolate=True`, every MCP session
    (identified by its `Mcp-Session-Id` on HTTP) gets its own fork of `world`.
    """

    #: 2.x: where `notifications/tools/list_changed` goes for 2026-07-28 clients (their
    #: `subscriptions/listen` streams); None on 1.x (set by `_sdk.init_server`)
    subscription_bus: Any

    def __init__(
        self,
        world: World,
        *,
        name: str | None = None,
        isolate: bool = False,
        principal: str | None = None,
        webhook_url: str | None = None,
    ):
        _sdk.init_server(
            self,
            name=name or f"faultbench-{world.name}",
            version=_version(),
            instructions=f"Tools of the faultbench world {world.name!r}.",
            list_tools=self._on_list_tools,
            call_tool=self._on_call_tool,
            input_schema=self.tool_input_schema,
        )
        self.world = world
        self.isolate = isolate
        #: worlds with `webhooks:`: where the deliveries due after each call are POSTed
        self.webhook_url = webhook_url
        if webhook_url is not None:
            if world.spec.webhooks is None:
                raise WebhookUrlError(
                    f"webhook_url={webhook_url!r}, but the world {world.name!r} has no webhooks: "
                    "block; expected a world file with 'webhooks: {secret: ...}' and events:"
                )
            from faultbench.kernel.lowlevel import webhook_url_problem

            problem = webhook_url_problem(webhook_url)
            if problem is not None:
                raise WebhookUrlError(problem)
        self._delivering: anyio.Lock | None = None
        #: worlds with `auth:`: the principal in-process and stdio calls act as, and the
        #: token issued for it (HTTP requests bring their own, `Authorization: Bearer`)
        self.principal = principal
        self.token: str | None = None
        if principal is not None:
            if world.spec.auth is None:
                raise ValueError(
                    f"principal={principal!r}, but the world {world.name!r} has no auth: block; "
                    "expected a world file with 'auth: {principals: {...}}', or no principal"
                )
            self.token = world.issue_token(principal)  # ValueError for an unknown one
        self.sessions: dict[str, World] = {}  # MCP session id -> that session's fork
        #: The MCP sessions open now, when something tracks them (the HTTP app does, see
        #: `_http.SessionTracker`); None: not tracked, any session id is served.
        self.open_sessions: set[str] | None = None
        self.after_call: list[AfterCall] = []
        self.on_new_world: list[Callable[[str, World], None]] = []
        if isolate:
            # Sessions only exist in the 2025 handshake protocol: 2026-07-28 requests are
            # self-contained. Refusing `server/discover` makes `mode="auto"` clients fall
            # back to the handshake, so each of them gets a session (and a fork).
            _sdk.refuse_discovery(
                self,
                "server/discover is off: this faultbench server isolates MCP sessions "
                "(--isolate), which needs the initialize handshake",
            )

    # --- worlds -----------------------------------------------------------------------------

    def world_for(self, session: str | None) -> World:
        """The world a request acts on: the shared one, or its session's fork.

        Raises `SessionEnded` for a tracked session that is not open: a call still in
        flight as its session closes must not create a fork that nothing would free.
        """
        if not self.isolate or session is None:
            return self.world
        world = self.sessions.get(session)
        if world is None:
            if self.open_sessions is not None and session not in self.open_sessions:
                raise SessionEnded(session)
            world = self.world.fork()
            # Hooks first (the --events journal opens the session's file): a session whose
            # journal cannot be opened gets no world, rather than one nothing records.
            for hook in self.on_new_world:
                hook(session, world)
            self.sessions[session] = world
        return world

    def _request_token(self, ctx: Any, world: World) -> str | None:
        """The access token a call comes with (worlds with `auth:`): an HTTP request's
        bearer token, else the one issued for `principal` (issued again after a reset or a
        restore to before it: tokens derive from the seed and their number, so it is the
        same token)."""
        if self.world.spec.auth is None:
            return None
        request = ctx.request
        if request is None:  # in-process or stdio: the server's principal
            if self.principal is not None and token_expiry(world, self.token or "") is None:
                self.token = world.issue_token(self.principal)
            return self.token
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        return token.strip() or None if scheme.lower() == "bearer" else None

    def _request_world(self, ctx: Any) -> World:
        if not self.isolate:
            return self.world
        request = ctx.request
        if request is None:  # in-process or stdio: one client, no sessions to tell apart
            return self.world
        session = request.headers.get(SESSION_HEADER)
        if session is None:
            raise _NoSession()
        return self.world_for(session)

    # --- tools ------------------------------------------------------------------------------

    def tool_list(self, world: World | None = None) -> list[Any]:
        """The tools `world` (default: the shared one) shows now: its operations, as the
        run's tool-surface faults have changed them so far."""
        return [mcp_tool(t) for t in (world or self.world).tools]

    def create_initialization_options(self, notification_options: Any = None, *args: Any) -> Any:
        # A world's tool list can change during a run (`rug_pull`, `tool_removed`, ...), so
        # the server says it will send `notifications/tools/list_changed`.
        options = _sdk.tool_list_options(notification_options)
        return super().create_initialization_options(options, *args)

    def tool_input_schema(self, name: str) -> dict[str, Any] | None:
        """The input schema of the shared world's tool `name` (None: no such tool): the
        SDK's `get_tool_input_schema`, for `Mcp-Param-*` header checks."""
        try:
            return self.world.tool(name).input_schema
        except LookupError:
            return None

    async def _on_list_tools(self, ctx: Any, params: Any) -> Any:
        try:
            world = self._request_world(ctx) if ctx is not None else self.world
        except (_NoSession, SessionEnded):
            world = self.world  # the tools every new session starts with
        return _sdk.list_tools_result(self.tool_list(world))

    # --- calls from this process, without an MCP session --------------------------------------

    def tools_wire(self) -> list[dict[str, Any]]:
        """The tools `tools/list` answers, in wire form (what a client reads off the wire)."""
        return [tool_wire(t) for t in self.world.tools]

    async def call_direct(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        protocol_version: str | None = None,
    ) -> dict[str, Any]:
        """One tool call from this process, answered in wire form as `tools/call` answers it.

        The same handler as an MCP session's (the world's call, the principal's token, the
        error texts, the after-call hooks), without a session, JSON-RPC framing or model
        validation: the in-process fast path of the integrations (docs/INTEGRATIONS.md, "The
        direct in-process path"). `protocol_version` is the one a client would have
        negotiated (None: before 2026-07-28, where a list result is wrapped in `result`).
        """
        ctx = _sdk.Request(request=None, protocol_version=protocol_version)
        out: dict[str, Any] = await self._on_call_tool(ctx, _sdk.CallParams(name, arguments))
        _sdk.stamp_server_info(self, out, protocol_version)
        return out

    async def answer_modern(self, version: str, params: Any, request: Any = None) -> dict[str, Any]:
        """The result of a 2026-07-28 `tools/call` (self-contained: no session), exactly as
        the SDK's server runner would send it (`_sdk.shape_result`): what the stdio loop and
        the HTTP app answer themselves (`_stdio.py`, "Tool calls at 2026-07-28";
        `_http_calls.ModernCalls`). `request`: the Starlette request on HTTP (its bearer
        token)."""
        ctx = _sdk.Request(request=request, protocol_version=version)
        out = await self._on_call_tool(ctx, params)
        return _sdk.shape_result(out, version, self.server_info_stamp)

    async def _on_call_tool(self, ctx: Any, params: Any) -> Any:
        name = params.name
        try:
            try:
                world = self._request_world(ctx)
            except _NoSession:
                return error_result(
                    "This faultbench server gives each MCP session its own world (--isolate), "
                    "and this request belongs to no session: connect with the initialize "
                    "handshake (mcp.Client(url) does so by itself) and send its Mcp-Session-Id.",
                    kind="no_session",
                )
            except SessionEnded:
                return error_result(
                    "This MCP session has ended (the client closed it, or it idled out), and "
                    "with it the world this server gave it (--isolate). Open a new session "
                    "to go on.",
                    kind="no_session",
                )
            try:
                token = self._request_token(ctx, world)
                args = params.arguments or {}
                # Worlds without auth: the call exactly as before (no token to pass)
                result = await (
                    world.acall(name, args)
                    if token is None
                    else world.acall(name, args, token=token)
                )
            except ToolCallError as exc:  # a kernel that raises instead of returning
                return error_result(exc.message, kind=exc.kind)
            out = render_result(result, ctx.protocol_version)
        except JournalError as exc:  # logged once by the journal; the call was undone
            return error_result(
                f"503 Service Unavailable: faultbench did not run {name[:100]!r}: {exc} "
                "Not the agent's fault; the server keeps serving.",
                kind="journal_error",
            )
        except Exception as exc:
            log.exception("internal error while calling tool %r", name)
            detail = f"{type(exc).__name__}: {exc}"
            detail = detail if len(detail) <= 300 else detail[:297] + "..."
            return error_result(
                f"500 Internal Server Error: faultbench failed while running {name[:100]!r} "
                f"({detail}). This is a bug in faultbench or the world's handlers, not in the "
                "agent; the server keeps serving.",
                kind="internal_error",
            )
        if result.traceback is not None:
            # A bug in a handler (or in faultbench): the agent read "internal error"; the
            # person running the server gets where it is, with or without -v.
            log.error("%s\n%s", _call_line(result), result.traceback)
        elif log.isEnabledFor(logging.INFO):
            log.info("%s", _call_line(result))
        if result.fault in SURFACE_KINDS:
            # the call changed the tool list: say so, as a server whose tools changed does
            try:
                await _sdk.notify_tools_changed(self, ctx)
            except Exception:  # a client gone away must not turn the call into an error
                log.warning("could not send tools/list_changed after %s", result.call_id)
        for hook in self.after_call:
            # The call happened (and is in the --events journal, if any: a call the journal
            # cannot take never happens, see `_journal.py`): a failing observer is logged,
            # and the agent still gets its answer.
            try:
                hook(world, result)
            except Exception:
                log.exception("after-call hook %r failed", hook)
        await self.deliver_webhooks(world)
        return out

    async def deliver_webhooks(
        self, world: World, *, within: float | timedelta | None = None
    ) -> None:
        """POST `world`'s webhook deliveries due now to `webhook_url` (nothing without one),
        in a worker thread (the endpoint may be served by this very loop), one pass at a time
        so no attempt is sent twice. With `within` (seconds or a timedelta), also move the clock that far,
        each attempt sent at its own virtual time on the way (`faultbench.webhooks.deliver`);
        the clock moves all the same if the pass fails. Every path that calls the world or moves
        its clock ends here: an MCP tool call, a `--rest` request, the control API's
        `POST /faultbench/clock`. A failing endpoint is a failed attempt in the log; anything
        else is logged here and the caller still gets its answer."""
        url = self.webhook_url
        if url is None:
            # before any import: a server out of file descriptors cannot open a module file,
            # and its first tool call must not need to (tests/soak/test_journal_soak.py)
            return
        from faultbench.webhooks import deliver

        if self._delivering is None:
            self._delivering = anyio.Lock()
        async with self._delivering:
            step = within if isinstance(within, timedelta) else timedelta(seconds=within or 0)
            end = world.clock.now() + step
            try:
                await anyio.to_thread.run_sync(lambda: deliver(world, url, within=within))
            except Exception:
                log.exception("webhook delivery to %s failed", url)
            if world.clock.now() < end:  # a pass that failed half-way still moves the clock
                world.clock.set(end)


class WebhookUrlError(ValueError):
    """`webhook_url` given for a world without `webhooks:`, or not on loopback."""


class _NoSession(Exception):
    pass


class SessionEnded(LookupError):
    """`WorldServer.world_for` of a session that is not open (any more, or yet)."""

    def __init__(self, session: str):
        super().__init__(f"MCP session {session!r} is not open")
        self.session = session


def _call_line(result: CallResult) -> str:
    outcome = "ok" if result.ok else (result.error_kind or "error")
    fault = f" [{result.fault}]" if result.fault else ""
    return f"{result.call_id} {result.tool} -> {outcome}{fault} ({result.latency_s:g}s virtual)"


@functools.cache
def _version() -> str:
    """faultbench's installed version (read once: reading a distribution's metadata costs
    ~0.3 ms, and the plugin builds a server per run)."""
    try:
        from importlib.metadata import version

        return version("faultbench")
    except Exception:  # not installed (a source checkout on sys.path)
        return "0"


def build_server(
    world: World,
    *,
    name: str | None = None,
    isolate: bool = False,
    principal: str | None = None,
    webhook_url: str | None = None,
) -> WorldServer:
    """An MCP server (a low-level `mcp.server.Server`) serving `world`'s operations as tools.

    `principal`: in a world with `auth:`, the principal its in-process and stdio calls act
    as (a token is issued for it now, `server.token`); HTTP requests send their own token
    as `Authorization: Bearer`.

    `webhook_url`: in a world with `webhooks:`, the loopback endpoint the deliveries due
    after each tool call are POSTed to (`faultbench.webhooks.deliver`, in a worker thread).

    >>> async with mcp.Client(build_server(world)) as client:  # doctest: +SKIP
    ...     result = await client.call_tool("get_order", {"id": "1"})
    """
    return WorldServer(
        world, name=name, isolate=isolate, principal=principal, webhook_url=webhook_url
    )
