"""`faultbench serve WORLD --openenv`: OpenEnv's environment protocol over a WebSocket.

OpenEnv's clients (`openenv.core.GenericEnvClient`, `openenv.core.mcp_client.MCPToolClient`,
from the `openenv-core` package) open `/ws` and send JSON messages `{"type": "reset",
"data": {"seed": s, "episode_id": id}}`, `{"type": "step", "data": action}`,
`{"type": "state"}` and `{"type": "close"}`; the server answers `{"type": "observation",
"data": {"observation": {...}, "reward": r, "done": d}}`, `{"type": "state", "data": {...}}`
or `{"type": "error", "data": {"message": ..., "code": ...}}`.

Each connection is its own session: `reset` starts a fresh world of the spec at `seed`
(default: the file's) and run index `episode_id` (an integer, or any text, hashed to one), so
the same (seed, episode id) gives the same episode. Actions: `{"type": "list_tools"}`,
`{"type": "call_tool", "tool_name": ..., "arguments": {...}}` (MCP's tools, answered by
`WorldCalls.answer`, the MCP server's own call handler: faults, auth, logging) and
`{"reply": text}`, which ends the episode with the graded run as its reward
(`Grade.reward`, as `faultbench.env` computes it). A failed call is a `ToolError` in the
observation, which `MCPToolClient.call_tool` raises as an error.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from faultbench.kernel import World
from faultbench.serve import WorldCalls

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.types import ASGIApp

    from faultbench.kernel import WorldSpec

__all__ = ["openenv_app", "run_of"]

#: OpenEnv's `ToolErrorType` by faultbench's error kind (anything else: execution_error)
_ERROR_TYPES = {
    "timeout": "timeout",
    "invalid_arguments": "invalid_args",
    "unknown_tool": "tool_not_found",
}


def run_of(episode_id: Any) -> int:
    """The run index of an episode id: an integer as it is, any other text hashed (BLAKE2b,
    the same on every machine)."""
    if episode_id is None:
        return 0
    text = str(episode_id)
    if text.isdigit():
        return int(text)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=7).digest(), "big")


class _Session:
    def __init__(self, spec: WorldSpec, principal: str | None, max_steps: int):
        self.spec = spec
        self.principal = principal
        self.max_steps = max_steps
        self.world: World | None = None
        self.calls: WorldCalls | None = None
        self.episode_id: Any = None
        self.steps = 0
        self.done = False

    def reset(self, data: dict[str, Any]) -> dict[str, Any]:
        seed = data.get("seed")
        self.episode_id = data.get("episode_id")
        self.world = World.from_spec(
            self.spec,
            seed=self.spec.seed if seed is None else int(seed),
            run=run_of(self.episode_id),
        )
        self.calls = WorldCalls(self.world, principal=self.principal)
        self.steps = 0
        self.done = False
        return {
            "observation": {"tools": self.tools(), "metadata": self.meta()},
            "reward": None,
            "done": False,
        }

    def tools(self) -> list[dict[str, Any]]:
        assert self.calls is not None
        return [
            {"name": t["name"], "description": t["description"], "input_schema": t["inputSchema"]}
            for t in self.calls.tools_wire()
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

    async def step(self, action: dict[str, Any]) -> dict[str, Any]:
        if self.world is None or self.calls is None:
            raise ValueError("Expected a reset before the first step")
        if self.done:
            raise ValueError("Expected a reset: the episode ended")
        kind = action.get("type")
        if kind == "list_tools":
            return {"observation": {"tools": self.tools(), "metadata": self.meta()},
                    "reward": None, "done": False}  # fmt: skip
        self.steps += 1
        if kind == "call_tool":
            name = str(action.get("tool_name", ""))
            out, error_kind = await self.calls.answer_kind(
                self.world, name, action.get("arguments") or {}
            )
            observation = _observation(name, out, error_kind)
        elif set(action) == {"reply"}:
            return self._end({"reply": str(action["reply"])})
        else:
            raise ValueError(
                'Expected an action {"type": "call_tool", "tool_name": ..., "arguments": {...}}, '
                f'{{"type": "list_tools"}} or {{"reply": "<text>"}}. Instead, received: {action!r}'
            )
        if self.steps >= self.max_steps:
            return self._end(observation)
        observation["metadata"] = self.meta()
        return {"observation": observation, "reward": None, "done": False}

    def _end(self, observation: dict[str, Any]) -> dict[str, Any]:
        assert self.world is not None
        self.done = True
        checks = self.spec.checks
        graded = self.world.trace.grade(checks) if checks else None
        reward = 1.0 if graded is None else graded.reward
        observation["metadata"] = {
            **self.meta(),
            "passed": graded is None or graded.ok,
            "violations": [] if graded is None else [v.message for v in graded.violations],
        }
        return {"observation": observation, "reward": reward, "done": True}

    def state(self) -> dict[str, Any]:
        if self.world is None:
            return {"episode_id": None, "step_count": 0}
        return self.meta()


def _observation(name: str, out: dict[str, Any], error_kind: str | None) -> dict[str, Any]:
    """A wire answer as OpenEnv's `CallToolObservation`: a FastMCP-shaped result (its `data`
    what `MCPToolClient.call_tool` returns), and for a failed call a `ToolError` whose type
    is `error_kind` in OpenEnv's terms (a gateway timeout is a timeout, as a real one is)."""
    text = out["content"][0]["text"]
    failed = bool(out.get("isError"))
    try:
        data = None if failed else json.loads(text)
    except ValueError:
        data = text
    result = {
        "content": out["content"],
        "structured_content": out.get("structuredContent"),
        "meta": out.get("_meta"),
        "data": data,
        "is_error": failed,
    }
    error = None
    if failed:
        kind = error_kind or ""
        error = {"error_type": _ERROR_TYPES.get(kind, "execution_error"), "message": text}
    return {"tool_name": name, "result": result, "error": error}


def openenv_app(
    spec: WorldSpec,
    *,
    host: str = "127.0.0.1",
    token: str | None = None,
    principal: str | None = None,
    max_steps: int = 50,
) -> ASGIApp:
    """The ASGI app of `serve --openenv`: `/ws` (OpenEnv's session protocol) and `/health`,
    behind the Host/Origin and bearer-token rules of `--http` (a non-loopback `host` needs a
    `token`)."""
    from faultbench.serve._http import check_exposure

    check_exposure(host, token)

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "healthy"})

    async def ws(socket: WebSocket) -> None:
        await socket.accept()
        session = _Session(spec, principal, max_steps)
        try:
            while True:
                raw = await socket.receive_text()
                try:
                    message = json.loads(raw)
                    kind = message.get("type")
                    if kind == "reset":
                        answer = {
                            "type": "observation",
                            "data": session.reset(message.get("data") or {}),
                        }
                    elif kind == "step":
                        answer = {
                            "type": "observation",
                            "data": await session.step(message.get("data") or {}),
                        }
                    elif kind == "state":
                        answer = {"type": "state", "data": session.state()}
                    elif kind == "close":
                        # the client closes the socket next: closing it from here as well
                        # races Hypercorn's own close reply on the same stream
                        continue
                    else:
                        answer = {"type": "error", "data": {"message": f"Unknown message type: {kind}", "code": "UNKNOWN_TYPE"}}  # fmt: skip
                except (ValueError, TypeError, AttributeError) as exc:
                    answer = {"type": "error", "data": {"message": str(exc), "code": "EXECUTION_ERROR"}}  # fmt: skip
                await socket.send_text(json.dumps(answer, default=str))
        except WebSocketDisconnect:
            return

    app = Starlette(routes=[Route("/health", health), WebSocketRoute("/ws", ws)])
    return _guarded(app, host, token)


def _guarded(app: ASGIApp, host: str, token: str | None) -> ASGIApp:
    """The guard every HTTP server of faultbench has (`_guard.HttpGuard`: Host and Origin,
    header and body limits, the bearer token), and the same Host, Origin and token checks on
    a WebSocket handshake, which that guard passes through: the one place this module uses
    it."""
    import hmac

    from starlette.datastructures import Headers

    from faultbench.serve._guard import HostPolicy, HttpGuard

    policy = HostPolicy.for_bind(host)
    expected = f"Bearer {token}".encode() if token else None
    http = HttpGuard(app, policy=policy, token=token)

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await http(scope, receive, send)
            return
        headers = Headers(scope=scope)
        got = headers.get("authorization", "").encode()
        refused = expected is not None and not hmac.compare_digest(got, expected)
        if not refused:
            refused = not policy.host_ok(headers.get("host")) or not policy.origin_ok(
                headers.get("origin")
            )
        if refused:
            await send({"type": "websocket.close", "code": 1008})
            return
        await app(scope, receive, send)

    return guarded
