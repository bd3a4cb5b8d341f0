"""`faultbench serve WORLD --openenv`: OpenEnv's environment protocol, over a WebSocket and HTTP.

The wire format is the one of OpenEnv's own server (`openenv.core.env_server`, the
`openenv-core` package), so its clients drive a world unchanged:

- `/ws`, one session per connection (`GenericEnvClient`, `MCPToolClient`): JSON messages
  `{"type": "reset", "data": {"seed": s, "episode_id": id}}`, `{"type": "step", "data":
  action}`, `{"type": "state"}`, `{"type": "mcp", "data": <JSON-RPC request>}` and
  `{"type": "close"}`, answered `{"type": "observation", "data": {"observation": {...},
  "reward": r, "done": d}}`, `{"type": "state", "data": {...}}`, `{"type": "mcp", "data":
  <JSON-RPC response>}` or `{"type": "error", "data": {"message": ..., "code": ...}}`;
- HTTP, stateless as OpenEnv's is (each request plays a fresh episode and drops it):
  `POST /reset` (`{"seed", "episode_id"}`), `POST /step` (`{"action": {...}}`, and `seed`,
  `episode_id` for the episode it steps), `GET /state`, `GET /schema`, `GET /metadata`,
  `GET /health`, `GET /openapi.json`;
- `POST /mcp`, JSON-RPC (`MCPToolClient` with `use_production_mode`): `tools/list`,
  `tools/call` and OpenEnv's `openenv/session/create` / `openenv/session/close`, a session
  being an episode kept between requests (`params.session_id`).

`reset` starts a fresh world of the spec at `seed` (default: the file's) and run index
`episode_id` (an integer, or any text, hashed to one), so the same (seed, episode id) gives
the same episode. Actions: `{"type": "list_tools"}`, `{"type": "call_tool", "tool_name":
..., "arguments": {...}}` (MCP's tools, answered by `WorldCalls.answer`, the MCP server's own
call handler: faults, auth, logging, the `after_call` hooks) and `{"reply": text}`, which
ends the episode with the graded run as its reward (`Grade.reward`, as `faultbench.env`
computes it). A failed call is a `ToolError` in the observation, which
`MCPToolClient.call_tool` raises as an error.

Limits: at most `max_sessions` sessions (WebSocket connections and `/mcp` sessions) at once,
a new one past it refused with OpenEnv's `CAPACITY_REACHED` error; a session with no message
for `idle_timeout` seconds is closed (a WebSocket gets a `SESSION_ERROR` saying so first);
an episode ends after `max_steps` steps (`truncated` in its metadata), and a step after its
end is an error asking for a reset.

Each episode's world can be journaled (`journals`, `serve --events FILE`: one file per
episode next to FILE, which `faultbench replay` reads) and exported as OpenTelemetry spans
when it ends or its session leaves it (`otel`, `faultbench.otel.export_run`).
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from faultbench.kernel import World
from faultbench.serve import WorldCalls

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.types import ASGIApp

    from faultbench.kernel import CallResult, WorldSpec
    from faultbench.serve import Journals

    #: a hook run after each call (`WorldCalls.after_call`)
    AfterCall = Callable[[World, CallResult], None]

__all__ = ["OpenEnvServer", "openenv_app", "run_of"]

#: OpenEnv's `ToolErrorType` by faultbench's error kind (anything else: execution_error)
_ERROR_TYPES = {
    "timeout": "timeout",
    "invalid_arguments": "invalid_args",
    "unknown_tool": "tool_not_found",
}

#: sessions open at once, and how long one may stay silent, by default (as MCP sessions)
MAX_SESSIONS = 1000
IDLE_TIMEOUT_S = 30 * 60.0

#: JSON-RPC error codes (OpenEnv's `JsonRpcErrorCode`)
_INVALID_REQUEST, _METHOD_NOT_FOUND, _INVALID_PARAMS = -32600, -32601, -32602
_INTERNAL_ERROR, _SERVER_ERROR = -32603, -32000


# ---------------------------------------------------------------------------------------------
# Episode ids, and the errors the protocol answers
# ---------------------------------------------------------------------------------------------


def run_of(episode_id: Any) -> int:
    """The run index of an episode id: an integer as it is, any other text hashed (BLAKE2b,
    the same on every machine)."""
    if episode_id is None:
        return 0
    text = str(episode_id)
    if text.isdigit():
        return int(text)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=7).digest(), "big")


class ProtocolError(ValueError):
    """A message the protocol refuses; `code` is OpenEnv's error code for it."""

    def __init__(self, message: str, code: str = "EXECUTION_ERROR"):
        super().__init__(message)
        self.code = code


class CapacityError(ProtocolError):
    def __init__(self, active: int, limit: int):
        super().__init__(
            f"Expected at most {limit} sessions open at once (--max-sessions); {active} are "
            "open. Close one (or let one idle out, --session-timeout) and connect again.",
            "CAPACITY_REACHED",
        )
        self.active, self.limit = active, limit


def _seed_of(data: dict[str, Any], default: int) -> int:
    seed = data.get("seed")
    if seed is None:
        return default
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ProtocolError(
            f"Expected seed to be an integer >= 0 (or null: the world file's). Instead, "
            f"received: {seed!r}",
            "VALIDATION_ERROR",
        )
    return seed


# ---------------------------------------------------------------------------------------------
# One session: the episode it plays
# ---------------------------------------------------------------------------------------------


class _Session:
    """One OpenEnv session: the episode it plays now (a fresh world per `reset`)."""

    def __init__(self, server: OpenEnvServer, key: str):
        self.server = server
        self.key = key
        self.world: World | None = None
        self.calls: WorldCalls | None = None
        self.episode_id: Any = None
        self.episodes = 0
        self.steps = 0
        self.done = False
        self.truncated = False
        #: the episode's journal and spans are still to be closed and exported
        self.live = False
        self.last_active = time.monotonic()

    def reset(self, data: dict[str, Any]) -> dict[str, Any]:
        spec = self.server.spec
        seed = _seed_of(data, self.server.seed)
        self.leave()
        self.episode_id = data.get("episode_id")
        world = World.from_spec(spec, seed=seed, run=run_of(self.episode_id))
        if self.server.faults is not None:
            world.set_faults(self.server.faults)
        self.episodes += 1
        self.server.started(self, world)  # journaled from its first event
        self.world, self.live = world, True
        self.calls = self.server.calls_for(world)
        self.steps = 0
        self.done = self.truncated = False
        return {
            "observation": {"tools": self.tools(), "metadata": self.meta()},
            "reward": None,
            "done": False,
        }

    def leave(self) -> None:
        """The session is done with its episode (a reset, the session's end)."""
        if self.world is not None:
            self.server.left(self, self.world)

    def tools(self) -> list[dict[str, Any]]:
        assert self.calls is not None
        return [
            {"name": t["name"], "description": t["description"], "input_schema": t["inputSchema"]}
            for t in self.calls.tools_wire(self.world)
        ]

    def meta(self) -> dict[str, Any]:
        assert self.world is not None
        return {
            "episode_id": self.episode_id,
            "step_count": self.steps,
            "seed": self.world.seed,
            "run": self.world.run,
            "state_hash": self.world.state_hash(),
        }

    def _live_episode(self) -> tuple[World, WorldCalls]:
        if self.world is None or self.calls is None:
            raise ProtocolError("Expected a reset before the first step")
        if self.done:
            why = (
                f"it reached the step cap of {self.server.max_steps} (--max-steps)"
                if self.truncated
                else "it was replied to"
            )
            raise ProtocolError(f"Expected a reset: the episode ended ({why})")
        return self.world, self.calls

    async def call(
        self, name: str, arguments: dict[str, Any] | None
    ) -> tuple[dict[str, Any], str | None]:
        """One tool call in wire form (MCP's `tools/call` answer) and its error kind (None:
        it succeeded), which the answer does not carry; counts as a step."""
        world, calls = self._live_episode()
        self.steps += 1
        out, error_kind = await calls.answer_kind(world, name, arguments or {})
        if self.steps >= self.server.max_steps:
            self._end(truncated=True)
        return out, error_kind

    async def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self._live_episode()
        kind = action.get("type")
        if kind == "list_tools":
            return {"observation": {"tools": self.tools(), "metadata": self.meta()},
                    "reward": None, "done": False}  # fmt: skip
        if kind == "call_tool":
            name = str(action.get("tool_name", ""))
            arguments = action.get("arguments") or {}
            if not isinstance(arguments, dict):
                raise ProtocolError(
                    f"Expected arguments to be an object. Instead, received: {arguments!r}",
                    "VALIDATION_ERROR",
                )
            out, error_kind = await self.call(name, arguments)
            observation = _observation(name, out, error_kind)
            if self.done:  # the step cap
                return self._answer(observation)
            observation["metadata"] = self.meta()
            return {"observation": observation, "reward": None, "done": False}
        if set(action) == {"reply"}:
            self.steps += 1
            self._end(truncated=False)
            return self._answer({"reply": str(action["reply"])})
        raise ProtocolError(
            'Expected an action {"type": "call_tool", "tool_name": ..., "arguments": {...}}, '
            f'{{"type": "list_tools"}} or {{"reply": "<text>"}}. Instead, received: {action!r}',
            "VALIDATION_ERROR",
        )

    def _end(self, *, truncated: bool) -> None:
        self.done, self.truncated = True, truncated

    def _answer(self, observation: dict[str, Any]) -> dict[str, Any]:
        """The observation of the step that ended the episode, with its graded reward."""
        assert self.world is not None
        checks = self.server.spec.checks
        graded = self.world.trace.grade(checks) if checks else None
        reward = 1.0 if graded is None else graded.reward
        observation["metadata"] = {
            **self.meta(),
            "truncated": self.truncated,
            "passed": graded is None or graded.ok,
            "violations": [] if graded is None else [v.message for v in graded.violations],
        }
        self.server.left(self, self.world, reward=reward)
        return {"observation": observation, "reward": reward, "done": True}

    def state(self) -> dict[str, Any]:
        if self.world is None:
            return {"episode_id": None, "step_count": 0}
        return self.meta()


def _observation(name: str, out: dict[str, Any], error_kind: str | None) -> dict[str, Any]:
    """A wire answer as OpenEnv's `CallToolObservation`: a FastMCP-shaped result (its `data`
    what `MCPToolClient.call_tool` returns), and for a failed call a `ToolError` whose type
    is `error_kind` in OpenEnv's terms (a gateway timeout is a timeout, as a real one is)."""
    result = _result(out)
    error = None
    if result["is_error"]:
        error = {"error_type": _error_type(error_kind), "message": out["content"][0]["text"]}
    return {"tool_name": name, "result": result, "error": error}


def _result(out: dict[str, Any]) -> dict[str, Any]:
    text = out["content"][0]["text"]
    failed = bool(out.get("isError"))
    try:
        data = None if failed else json.loads(text)
    except ValueError:
        data = text
    return {
        "content": out["content"],
        "structured_content": out.get("structuredContent"),
        "meta": out.get("_meta"),
        "data": data,
        "is_error": failed,
    }


def _error_type(error_kind: str | None) -> str:
    return _ERROR_TYPES.get(error_kind or "", "execution_error")


# ---------------------------------------------------------------------------------------------
# The server: sessions, limits, and the three ways in (WebSocket, JSON-RPC, HTTP)
# ---------------------------------------------------------------------------------------------


class OpenEnvServer:
    """The sessions of one `serve --openenv` server, their limits, journals and spans."""

    def __init__(
        self,
        spec: WorldSpec,
        *,
        principal: str | None = None,
        seed: int | None = None,
        faults: Mapping[str, Any] | None = None,
        max_steps: int = 50,
        max_sessions: int | None = None,
        idle_timeout: float | None = None,
        journals: Journals | None = None,
        otel: Any = None,
        after_call: Sequence[AfterCall] = (),
    ):
        """`seed`: the world seed of a reset that names none (default: the file's);
        `faults`: a faults: block set on each episode's world in place of the file's ({}:
        none); the rest as `openenv_app` says."""
        if max_steps < 1:
            raise ValueError(f"Expected max_steps >= 1. Instead, received: {max_steps!r}")
        if max_sessions is not None and max_sessions < 1:
            raise ValueError(f"Expected max_sessions >= 1. Instead, received: {max_sessions!r}")
        if idle_timeout is not None and idle_timeout <= 0:
            raise ValueError(f"Expected idle_timeout > 0. Instead, received: {idle_timeout!r}")
        self.spec = spec
        self.seed = spec.seed if seed is None else seed
        self.faults = None if faults is None else dict(faults)
        self.principal = principal
        if principal is not None:  # an unknown principal, a world without auth: now
            WorldCalls(World.from_spec(spec), principal=principal)
        self.max_steps = max_steps
        self.max_sessions = max_sessions or MAX_SESSIONS
        self.idle_timeout = idle_timeout or IDLE_TIMEOUT_S
        self.journals = journals
        self.otel = otel
        #: the sessions open now, by id (WebSocket connections and /mcp sessions)
        self.sessions: dict[str, _Session] = {}
        #: every new episode's `WorldCalls` goes to these (tests hook `after_call` here)
        self.on_calls: list[Callable[[WorldCalls], None]] = []
        #: hooks `(world, result)` every episode's calls run after each call
        self.after_call = list(after_call)

    # --- episodes ----------------------------------------------------------------------------

    def calls_for(self, world: World) -> WorldCalls:
        calls = WorldCalls(world, principal=self.principal)
        calls.after_call.extend(self.after_call)
        for hook in self.on_calls:
            hook(calls)
        return calls

    def started(self, session: _Session, world: World) -> None:
        if self.journals is not None:
            from faultbench.serve import JournalError

            try:
                self.journals.add_session(f"{session.key}-{session.episodes}", world)
            except JournalError as exc:
                raise ProtocolError(str(exc)) from None

    def left(self, session: _Session, world: World, *, reward: float | None = None) -> None:
        """An episode is over for its session (it ended, or the session reset or closed): its
        journal is closed and its spans exported, once."""
        if not session.live:
            return
        session.live = False
        if self.journals is not None:
            self.journals.drop(world)
        if self.otel:
            from faultbench.otel import export_run

            attrs: dict[str, Any] = {
                "faultbench.episode_id": str(session.episode_id),
                "faultbench.steps": session.steps,
            }
            if reward is not None:
                attrs["faultbench.reward"] = reward
            export_run(world, None if self.otel is True else self.otel, attributes=attrs)

    # --- sessions ----------------------------------------------------------------------------

    def open(self) -> _Session:
        self.reap()
        if len(self.sessions) >= self.max_sessions:
            raise CapacityError(len(self.sessions), self.max_sessions)
        key = uuid.uuid4().hex[:16]
        session = self.sessions[key] = _Session(self, key)
        return session

    def close(self, session: _Session) -> None:
        self.sessions.pop(session.key, None)
        session.leave()

    def reap(self) -> None:
        """Close the sessions silent for longer than `idle_timeout`."""
        now = time.monotonic()
        for session in list(self.sessions.values()):
            if now - session.last_active > self.idle_timeout:
                self.close(session)

    def lookup(self, key: Any) -> _Session:
        self.reap()
        session = self.sessions.get(str(key))
        if session is None:
            raise ProtocolError(
                f"Unknown session_id: {key} (sessions silent for more than "
                f"{self.idle_timeout:g} s are closed)",
                "SESSION_ERROR",
            )
        session.last_active = time.monotonic()
        return session

    # --- the WebSocket -----------------------------------------------------------------------

    async def ws(self, socket: WebSocket) -> None:
        import anyio

        await socket.accept()
        try:
            session = self.open()
        except CapacityError as exc:
            await _send(socket, _error(exc, active_sessions=exc.active, max_sessions=exc.limit))
            await _close_after_client(socket)
            return
        try:
            while True:
                with anyio.move_on_after(self.idle_timeout) as idle:
                    raw = await socket.receive_text()
                if idle.cancelled_caught:
                    message = (
                        f"Session closed: no message for {self.idle_timeout:g} s "
                        "(--session-timeout). Connect again and reset."
                    )
                    await _send(socket, {"type": "error", "data": {"message": message, "code": "SESSION_ERROR"}})  # fmt: skip
                    await _close_after_client(socket)
                    return
                session.last_active = time.monotonic()
                answer = await self._message(session, raw)
                if answer is None:  # "close": the client closes the socket next
                    continue
                await _send(socket, answer)
        except WebSocketDisconnect:
            return
        finally:
            self.close(session)

    async def _message(self, session: _Session, raw: str) -> dict[str, Any] | None:
        try:
            message = json.loads(raw)
        except ValueError as exc:
            return _error(ProtocolError(f"Invalid JSON: {exc}", "INVALID_JSON"))
        if not isinstance(message, dict):
            return _error(ProtocolError(f"Expected a JSON object. Instead, received: {raw[:200]}", "VALIDATION_ERROR"))  # fmt: skip
        kind = message.get("type")
        data = message.get("data")
        try:
            if kind in ("reset", "step", "mcp") and not isinstance(data or {}, dict):
                raise ProtocolError(f"Expected data to be an object. Instead, received: {data!r}", "VALIDATION_ERROR")  # fmt: skip
            if kind == "reset":
                return {"type": "observation", "data": session.reset(data or {})}
            if kind == "step":
                return {"type": "observation", "data": await session.step(data or {})}
            if kind == "state":
                return {"type": "state", "data": session.state()}
            if kind == "mcp":
                return {"type": "mcp", "data": await self.rpc(data or {}, session)}
            if kind == "close":
                return None
            raise ProtocolError(f"Unknown message type: {kind}", "UNKNOWN_TYPE")
        except ProtocolError as exc:
            return _error(exc)
        except (ValueError, TypeError) as exc:
            return _error(ProtocolError(str(exc)))

    # --- JSON-RPC (/mcp, and "mcp" messages on /ws) ------------------------------------------

    async def rpc(self, request: Any, session: _Session | None = None) -> dict[str, Any]:
        """A JSON-RPC request answered as OpenEnv's `/mcp` answers it. `session`: the
        WebSocket's own (an "mcp" message)."""
        rid = request.get("id") if isinstance(request, dict) else None
        if (
            not isinstance(request, dict)
            or request.get("jsonrpc") != "2.0"
            or not isinstance(request.get("method"), str)
        ):
            return _rpc_error(rid, _INVALID_REQUEST, 'Invalid request: expected {"jsonrpc": "2.0", "method": ..., "params": {...}, "id": ...}')  # fmt: skip
        method, params = request["method"], request.get("params", {})
        if not isinstance(params, dict):
            return _rpc_error(rid, _INVALID_PARAMS, "Params must be an object")
        try:
            if method == "openenv/session/create":
                if session is not None:
                    return _rpc_result(rid, {"session_id": session.key})
                created = self.open()
                created.reset(params)
                return _rpc_result(rid, {"session_id": created.key})
            if method == "openenv/session/close":
                key = params.get("session_id")
                if not key:
                    return _rpc_error(rid, _INVALID_PARAMS, "Invalid params - 'session_id' is required")  # fmt: skip
                if session is not None and key == session.key:
                    return _rpc_error(rid, _INVALID_REQUEST, "Cannot close active WebSocket-managed session via MCP method")  # fmt: skip
                self.close(self.lookup(key))
                return _rpc_result(rid, {"session_id": key, "closed": True})
            if method not in ("tools/list", "tools/call"):
                return _rpc_error(rid, _METHOD_NOT_FOUND, f"Method not found: {method}")
            own = session
            if own is None and params.get("session_id"):
                own = self.lookup(params["session_id"])
            if own is None:  # stateless: a fresh episode, dropped after the request
                out: dict[str, Any] = await self._stateless(lambda s: self._tool_rpc(rid, method, params, s), params)  # fmt: skip
                return out
            if own.world is None:
                own.reset({})
            return await self._tool_rpc(rid, method, params, own)
        except CapacityError as exc:
            return _rpc_error(rid, _SERVER_ERROR, str(exc), {"active_sessions": exc.active, "max_sessions": exc.limit})  # fmt: skip
        except ProtocolError as exc:
            code = _INVALID_PARAMS if exc.code in ("SESSION_ERROR", "VALIDATION_ERROR") else _INTERNAL_ERROR  # fmt: skip
            return _rpc_error(rid, code, str(exc))

    async def _tool_rpc(self, rid: Any, method: str, params: dict[str, Any], session: _Session) -> dict[str, Any]:  # fmt: skip
        if method == "tools/list":
            return _rpc_result(rid, {"tools": session.tools()})
        name = params.get("name")
        if not name:
            return _rpc_error(rid, _INVALID_PARAMS, "Missing 'name' in params")
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict):
            return _rpc_error(rid, _INVALID_PARAMS, f"Expected arguments to be an object. Instead, received: {arguments!r}")  # fmt: skip
        out, error_kind = await session.call(str(name), arguments)
        if out.get("isError"):  # as FastMCP's client raises it, and OpenEnv answers it
            text = out["content"][0]["text"]
            return _rpc_error(rid, _INTERNAL_ERROR, text, {"error_type": _error_type(error_kind)})
        return _rpc_result(rid, _result(out))

    async def _stateless(self, act: Callable[[_Session], Any], data: dict[str, Any]) -> Any:
        """`act` on a session of its own at `data`'s seed and episode id, closed after."""
        session = _Session(self, "http-" + uuid.uuid4().hex[:12])
        try:
            session.reset(data)
            return await act(session)
        finally:
            session.leave()

    # --- HTTP --------------------------------------------------------------------------------

    async def http_reset(self, request: Request) -> JSONResponse:
        data = await _body(request)
        if isinstance(data, JSONResponse):
            return data
        try:
            session = _Session(self, "http-" + uuid.uuid4().hex[:12])
            try:
                return JSONResponse(session.reset(data))
            finally:
                session.leave()
        except ProtocolError as exc:
            return _unprocessable(["body", "seed"], str(exc))

    async def http_step(self, request: Request) -> JSONResponse:
        data = await _body(request)
        if isinstance(data, JSONResponse):
            return data
        action = data.get("action")
        if not isinstance(action, dict):
            return _unprocessable(["body", "action"], f"Expected action to be an object. Instead, received: {action!r}")  # fmt: skip
        try:
            stepped = await self._stateless(lambda s: s.step(action), data)
        except ProtocolError as exc:
            return _unprocessable(["body", "action"], str(exc))
        return JSONResponse(stepped)

    async def http_mcp(self, request: Request) -> JSONResponse:
        try:
            payload = json.loads(await request.body())
        except ValueError:
            return JSONResponse(_rpc_error(None, -32700, "Parse error"))
        return JSONResponse(await self.rpc(payload))

    def app(self, *, host: str = "127.0.0.1", token: str | None = None) -> ASGIApp:
        """The ASGI app: OpenEnv's routes, behind the Host/Origin and bearer-token rules of
        `--http` (a non-loopback `host` needs a `token`)."""
        from faultbench.serve._http import check_exposure

        check_exposure(host, token)
        fresh = {"episode_id": None, "step_count": 0}
        version = _version()
        spec = self.spec
        metadata = {
            "name": spec.name,
            "description": f"faultbench world {spec.name!r}: its operations as MCP tools, "
            "with faults under a virtual clock; reward: the graded run",
            "version": version,
            "readme_content": None,
            "author": None,
            "documentation_url": None,
        }

        async def get(request: Request) -> JSONResponse:
            path = request.url.path
            if path == "/health":
                return JSONResponse({"status": "healthy"})
            if path == "/state":  # stateless, as OpenEnv's: a fresh environment's
                return JSONResponse(fresh)
            if path == "/metadata":
                return JSONResponse(metadata)
            if path == "/schema":
                return JSONResponse(SCHEMAS)
            return JSONResponse(_openapi(version))

        routes: list[BaseRoute] = [
            Route(p, get, methods=["GET"])
            for p in ("/health", "/state", "/metadata", "/schema", "/openapi.json")
        ]
        routes += [
            Route("/reset", self.http_reset, methods=["POST"]),
            Route("/step", self.http_step, methods=["POST"]),
            Route("/mcp", self.http_mcp, methods=["POST"]),
            WebSocketRoute("/ws", self.ws),
        ]
        return _guarded(Starlette(routes=routes), host, token)


# ---------------------------------------------------------------------------------------------
# Wire forms
# ---------------------------------------------------------------------------------------------


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("faultbench")
    except PackageNotFoundError:  # a source tree run without installing
        return "0"


async def _close_after_client(socket: WebSocket, grace: float = 5.0) -> None:
    """End a WebSocket the server gave up on (after the error saying why): the client, told,
    closes it; only one that stays `grace` seconds more is closed from here. Closing at once
    races the client's own close, and Hypercorn's trio worker then sends on one stream from
    two tasks (`trio.BusyResourceError`), which takes the whole server down."""
    import anyio

    with anyio.move_on_after(grace):
        while True:  # whatever it still sends goes unanswered
            if (await socket.receive())["type"] == "websocket.disconnect":
                return
    await socket.close()


async def _send(socket: WebSocket, answer: dict[str, Any]) -> None:
    await socket.send_text(json.dumps(answer, default=str))


def _error(exc: ProtocolError, **extra: Any) -> dict[str, Any]:
    return {"type": "error", "data": {"message": str(exc), "code": exc.code, **extra}}


def _rpc_result(rid: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def _rpc_error(rid: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": error}


async def _body(request: Request) -> dict[str, Any] | JSONResponse:
    raw = await request.body()
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        return _unprocessable(["body"], f"Expected a JSON body. Instead: {exc}")
    if not isinstance(data, dict):
        return _unprocessable(["body"], f"Expected a JSON object. Instead, received: {data!r}")
    return data


def _unprocessable(loc: list[str], message: str) -> JSONResponse:
    """422 as OpenEnv's FastAPI server answers a request it cannot validate."""
    return JSONResponse(
        {"detail": [{"type": "value_error", "loc": loc, "msg": message}]}, status_code=422
    )


_TOOL_ERROR = {
    "type": ["object", "null"],
    "properties": {
        "error_type": {
            "enum": [
                "execution_error",
                "invalid_args",
                "transport_error",
                "tool_not_found",
                "timeout",
            ]
        },
        "message": {"type": "string"},
    },
}
#: `GET /schema`: the actions taken, the observations answered, the state reported
SCHEMAS: dict[str, Any] = {
    "action": {
        "title": "WorldAction",
        "oneOf": [
            {
                "type": "object",
                "properties": {
                    "type": {"const": "call_tool"},
                    "tool_name": {"type": "string"},
                    "arguments": {"type": "object"},
                },
                "required": ["type", "tool_name"],
            },
            {
                "type": "object",
                "properties": {"type": {"const": "list_tools"}},
                "required": ["type"],
            },
            {
                "type": "object",
                "properties": {"reply": {"type": "string"}},
                "required": ["reply"],
                "additionalProperties": False,
            },
        ],
    },
    "observation": {
        "title": "WorldObservation",
        "type": "object",
        "properties": {
            "tools": {"type": "array", "items": {"type": "object"}},
            "tool_name": {"type": "string"},
            "result": {"type": ["object", "null"]},
            "error": _TOOL_ERROR,
            "reply": {"type": "string"},
            "metadata": {"type": "object"},
        },
    },
    "state": {
        "title": "WorldState",
        "type": "object",
        "properties": {
            "episode_id": {"type": ["string", "integer", "null"]},
            "step_count": {"type": "integer", "minimum": 0},
            "seed": {"type": "integer"},
            "run": {"type": "integer"},
            "state_hash": {"type": "string"},
        },
        "required": ["episode_id", "step_count"],
    },
}


def _openapi(version: str) -> dict[str, Any]:
    """`GET /openapi.json`: the routes, as OpenEnv's validator (`openenv validate --url`)
    reads them (a simulation-mode server: `/reset`, `/step` and `/state` present)."""

    def op(summary: str, body: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"summary": summary, "responses": {"200": {"description": "OK"}}}
        if body:
            out["requestBody"] = {"content": {"application/json": {"schema": {"type": "object"}}}}
            out["responses"]["422"] = {"description": "Validation error"}
        return out

    return {
        "openapi": "3.1.0",
        "info": {"title": "faultbench OpenEnv server", "version": version},
        "paths": {
            "/reset": {"post": op("Reset the environment", body=True)},
            "/step": {"post": op("Execute an action in the environment", body=True)},
            "/state": {"get": op("Get current environment state")},
            "/schema": {"get": op("Get all JSON schemas")},
            "/metadata": {"get": op("Get environment metadata")},
            "/health": {"get": op("Health check")},
            "/mcp": {"post": op("MCP JSON-RPC (tools/list, tools/call)", body=True)},
        },
    }


# ---------------------------------------------------------------------------------------------
# The app and its guard
# ---------------------------------------------------------------------------------------------


def openenv_app(
    spec: WorldSpec,
    *,
    host: str = "127.0.0.1",
    token: str | None = None,
    principal: str | None = None,
    seed: int | None = None,
    faults: Mapping[str, Any] | None = None,
    max_steps: int = 50,
    max_sessions: int | None = None,
    idle_timeout: float | None = None,
    journals: Journals | None = None,
    otel: Any = None,
    after_call: Sequence[AfterCall] = (),
) -> ASGIApp:
    """The ASGI app of `serve --openenv` (`OpenEnvServer(...).app(host=, token=)`): OpenEnv's
    `/ws`, `/reset`, `/step`, `/state`, `/schema`, `/metadata`, `/health`, `/mcp`, behind the
    Host/Origin and bearer-token rules of `--http` (a non-loopback `host` needs a `token`).

    `seed`: of a reset that names none (default: the file's); `faults`: a faults: block for
    every episode in place of the file's; `max_steps`: an episode's step cap;
    `max_sessions` (default 1000) and `idle_timeout` (seconds, default 1800): the session
    limits; `journals`: each episode's event log written next to its path (`serve
    --events`); `otel`: a TracerProvider each episode is exported through when it ends
    (True: the global one); `after_call`: hooks `(world, result)` every episode's calls run
    after each call, as `WorldCalls.after_call` (the episode's own world is the `world`
    they get)."""
    server = OpenEnvServer(
        spec,
        principal=principal,
        seed=seed,
        faults=faults,
        max_steps=max_steps,
        max_sessions=max_sessions,
        idle_timeout=idle_timeout,
        journals=journals,
        otel=otel,
        after_call=after_call,
    )
    return server.app(host=host, token=token)


def _guarded(app: ASGIApp, host: str, token: str | None) -> ASGIApp:
    """The guard every HTTP server of faultbench has (`_guard.HttpGuard`: Host and Origin,
    header and body limits, the bearer token), which holds a WebSocket handshake to the same
    Host, Origin and token rules."""
    from faultbench.serve._guard import HostPolicy, HttpGuard

    return HttpGuard(app, policy=HostPolicy.for_bind(host), token=token)
