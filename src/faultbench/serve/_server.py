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
- A handler exception becomes a JSON-RPC error, not a tool result; hence the catch-alls in
  `WorldCalls.answer` and `_on_call_tool` (`failure_result`). Only `Exception` is caught:
  cancellation must propagate.
- A handler may return the result as a plain dict in wire form (camelCase keys plus
  `"resultType": "complete"`, which 2026-07-28 requires); the runner validates it either way.
- Tool arguments are not validated against `inputSchema` by the SDK; the kernel does it.
- On the 2026-07-28 HTTP path, `Mcp-Param-*` header validation needs a tool's input schema
  and runs the whole `tools/list` handler per call unless `get_tool_input_schema` is set.
- A client validates `structuredContent` against a tool's `outputSchema`, which every CRUD
  tool declares (`_spec/_tooldoc.py`): a result that breaks it is refused by the SDK's
  client (`invalid_structured_content` makes one on purpose). A 1.x handler that returns a
  `CallToolResult` is not validated by the SDK's server.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from faultbench.kernel import CallResult, World
from faultbench.kernel.lowlevel import protocol_fault

from . import _sdk
from ._calls import WorldCalls, error_result, failure_result, tool_wire
from ._sdk import MODERN_PROTOCOL_VERSIONS, Server

if TYPE_CHECKING:
    from faultbench.kernel import Tool

__all__ = ["WorldServer", "build_server", "mcp_tool"]

#: MCP session id header (lower case: ASGI header names are lower case).
SESSION_HEADER = "mcp-session-id"


def mcp_tool(tool: Tool, protocol_version: str | None = None) -> Any:
    """One kernel tool as the installed SDK's `Tool` model, at `protocol_version`."""
    return _sdk.tool_model(tool_wire(tool, protocol_version, MODERN_PROTOCOL_VERSIONS))


class WorldServer(Server, WorldCalls):
    """An MCP server whose tools are a world's operations.

    Use it in-process with `mcp.Client(server)`, or serve it over stdio / streamable HTTP
    (`faultbench serve`). Every tool call goes through `World.acall`, so faults, virtual
    time and the event log are the kernel's. With `isolate=True`, every MCP session
    (identified by its `Mcp-Session-Id` on HTTP) gets its own fork of `world`.

    The tools and the handler of their calls are `WorldCalls`' (`_calls.py`): this class
    adds the SDK's server, sessions and their worlds, and change notifications.
    """

    modern_versions = MODERN_PROTOCOL_VERSIONS

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
        debug: bool = False,
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
        WorldCalls.__init__(self, world, principal=principal, webhook_url=webhook_url, debug=debug)
        self.isolate = isolate
        self.sessions: dict[str, World] = {}  # MCP session id -> that session's fork
        #: The MCP sessions open now, when something tracks them (the HTTP app does, see
        #: `_http.SessionTracker`); None: not tracked, any session id is served.
        self.open_sessions: set[str] | None = None
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

    def tool_list(
        self, world: World | None = None, protocol_version: str | None = None
    ) -> list[Any]:
        """The tools `world` (default: the shared one) shows now at `protocol_version`: its
        operations, as the run's tool-surface faults have changed them so far."""
        return [mcp_tool(t, protocol_version) for t in (world or self.world).tools]

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
        version = ctx.protocol_version if ctx is not None else None
        async with self.turn():  # --state: the tools of the world as the other servers left it
            return _sdk.list_tools_result(self.tool_list(world, version))

    # --- calls from this process (`WorldCalls.call_direct`), as the SDK's handler answers ------

    def _direct_notice(self, protocol_version: str | None) -> Callable[[], Awaitable[None]]:
        ctx = _sdk.Request(request=None, protocol_version=protocol_version)
        return lambda: _sdk.notify_tools_changed(self, ctx)

    def _direct_stamp(self, out: dict[str, Any], protocol_version: str | None) -> None:
        _sdk.stamp_server_info(self, out, protocol_version)

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
            world = self._request_world(ctx)
        except _NoSession:
            return error_result(
                "This faultbench server gives each MCP session its own world (--isolate), "
                "and this request belongs to no session: connect with the initialize "
                "handshake (mcp.Client(url) does so by itself) and send its Mcp-Session-Id.",
                kind="no_session",
                debug=self.debug,
            )
        except SessionEnded:
            return error_result(
                "This MCP session has ended (the client closed it, or it idled out), and "
                "with it the world this server gave it (--isolate). Open a new session "
                "to go on.",
                kind="no_session",
                debug=self.debug,
            )
        except Exception as exc:  # opening a session's world (its --events journal, say)
            return failure_result(name, exc).wire(self.debug)
        # What fails once the call has happened (a hook, a delivery) is not answered as if
        # it had not: `answer` guards the call itself and no more.
        return await self.answer(
            world,
            name,
            params.arguments,
            request=ctx.request,
            protocol_version=ctx.protocol_version,
            tools_changed=lambda: _sdk.notify_tools_changed(self, ctx),
            enact=lambda world, result: self._enact(ctx, world, result),
        )

    async def _enact(self, ctx: Any, world: World, result: CallResult) -> None:
        """A fault in the MCP protocol itself, on the answer of a call that has happened:
        what the kernel decided (`lowlevel.protocol_fault`), done on the wire. Progress
        notifications and `tools/list_changed` first, then the answer held (a client's
        `notifications/cancelled` ignored meanwhile), or held until the client cancels: the
        SDK then cancels this handler and, as MCP requires, sends no answer."""
        import anyio

        plan = protocol_fault(world.events, result.call_id)
        if plan is None:
            return
        if plan.progress:
            for i in range(1, plan.progress + 1):
                await _sdk.send_progress(ctx, i, plan.total)
        for _ in range(plan.list_changed):
            await _sdk.notify_tools_changed(self, ctx)
        if plan.hold_s:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(plan.hold_s)
        if plan.until_cancelled:
            await anyio.sleep_forever()


class _NoSession(Exception):
    pass


class SessionEnded(LookupError):
    """`WorldServer.world_for` of a session that is not open (any more, or yet)."""

    def __init__(self, session: str):
        super().__init__(f"MCP session {session!r} is not open")
        self.session = session


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
    debug: bool = False,
) -> WorldServer:
    """An MCP server (a low-level `mcp.server.Server`) serving `world`'s operations as tools.

    `principal`: in a world with `auth:`, the principal its in-process and stdio calls act
    as (a token is issued for it now, `server.token`); HTTP requests send their own token
    as `Authorization: Bearer`.

    `webhook_url`: in a world with `webhooks:`, the loopback endpoint the deliveries due
    after each tool call are POSTed to (`faultbench.webhooks.deliver`, in a worker thread).

    `debug`: every answer's `_meta` carries its call id, virtual times, fault and error kind
    (`faultbench serve --debug-meta`); by default a faulted answer looks exactly like the
    failure it stands for.

    >>> async with mcp.Client(build_server(world)) as client:  # doctest: +SKIP
    ...     result = await client.call_tool("get_order", {"id": "1"})
    """
    return WorldServer(
        world,
        name=name,
        isolate=isolate,
        principal=principal,
        webhook_url=webhook_url,
        debug=debug,
    )
