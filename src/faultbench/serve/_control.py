"""The control API: JSON endpoints under `/faultbench/` that let a test written in any
language look at and steer the world an agent is using over MCP.

    GET  /faultbench/            what this server serves (world, tools, endpoints)
    GET  /faultbench/state       all tables and the state hash
    GET  /faultbench/events      the event log as JSON Lines (?since=SEQ: events with seq >= SEQ)
    GET  /faultbench/trace       the calls so far (Trace.to_dict())
    POST /faultbench/reset       back to the seeded state
    POST /faultbench/fork        remember the current state; answers {"snapshot": ID}
    POST /faultbench/restore     {"snapshot": ID}: go back to it
    GET  /faultbench/clock       {"now": ISO}
    POST /faultbench/clock       {"advance": SECONDS} or {"set": ISO}
    GET  /faultbench/faults      the fault rules in force, as {"faults": BLOCK}: the `faults:`
                                 block PUT takes, so it can be edited and sent back as is
    PUT  /faultbench/faults      replace them (a `faults:` block as JSON or YAML, bare or
                                 under "faults"); answers like GET; 409 if the world was
                                 created with faults=False
    GET  /faultbench/sessions    with --isolate: the open MCP sessions (each has its own world)
    POST /faultbench/tokens      worlds with `auth:`: {"principal": NAME} issues an access token
                                 for NAME; answers {"token":, "principal":, "expires_at":}. MCP
                                 requests send it as `Authorization: Bearer TOKEN`

Any other path under the prefix answers a JSON 404, a known path with another method a 405.

With `--isolate`, `?session=MCP_SESSION_ID` picks that session's world (created on first use,
so faults can be set before the agent's first call); without it, the shared template world
new sessions fork from. A session's world lives as long as its MCP session: when the client
ends it (DELETE), it idles out or the server drops it, the world is freed and its id answers
404 (its --events file stays).

Everything here is a thin translation of HTTP to the kernel's World API; nothing computes
on the world itself.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from faultbench.kernel import FaultbenchError, FaultsDisabled, Snapshot, World, encode_events
from faultbench.kernel.lowlevel import (
    iso_time,
    parse_duration,
    parse_faults,
    render_faults,
    show_repr,
    to_utc,
    token_expiry,
)

from ._journal import JournalError

if TYPE_CHECKING:
    from ._journal import Journals
    from ._server import WorldServer

#: a control endpoint
Handler = Callable[[Request], Awaitable[Response]]

PREFIX = "/faultbench"

log = logging.getLogger("faultbench.serve")

_encoder = msgspec.json.Encoder(order="deterministic")
#: the faults block keeps its order: rule keys, error kinds and script steps as written
_in_order = msgspec.json.Encoder()

_ANY_METHOD = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


class ControlError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _json(obj: Any, status: int = 200, *, encoder: msgspec.json.Encoder = _encoder) -> Response:
    return Response(encoder.encode(obj) + b"\n", status, media_type="application/json")


#: control API request bodies are read up to this size (a faults block is a few KiB)
MAX_BODY = 1 << 20
#: snapshots kept per world (POST /fork); taking one more forgets the oldest
MAX_SNAPSHOTS = 1000


async def _read(request: Request) -> bytes:
    """The request body, refused with 413 past `MAX_BODY` without reading the rest."""
    too_big = ControlError(
        413,
        f"Expected a request body of at most {MAX_BODY // 1024} KiB. Instead, received a "
        "larger one. Send the fault rules (or the clock or snapshot) alone.",
    )
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise too_big
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


async def _body(request: Request, raw: bytes | None = None) -> Any:
    if raw is None:
        raw = await _read(request)
    if not raw.strip():
        return {}
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise ControlError(
            400, f"Expected a JSON request body. Instead, received: {raw[:80]!r} ({exc})"
        ) from None


class Control:
    """Control endpoints over one `WorldServer` (and its per-session worlds)."""

    def __init__(self, server: WorldServer, *, journal: Journals | None = None):
        self.server = server
        self.journal = journal
        self.snapshots: dict[str, tuple[World, Snapshot]] = {}  # id -> (world, snapshot)
        self._ids = itertools.count(1)
        #: MCP sessions open now (with --isolate), whether or not they have a world yet
        self.live: set[str] = set()

    # --- sessions ---------------------------------------------------------------------------

    # `_http.SessionTracker` tells when a session begins and ends, from the HTTP exchanges.

    def session_opened(self, session: str) -> None:
        """A session began. With --events, its journal file is opened now: raises
        `JournalError` if it cannot be (the session is then refused)."""
        if self.journal is not None and self.server.isolate:
            self.journal.reserve(session)
        self.live.add(session)

    def session_closed(self, session: str) -> None:
        """Free a session's world, the snapshots taken of it and its journal's file handle."""
        if session not in self.live:
            return
        self.live.discard(session)
        world = self.server.sessions.pop(session, None)
        if world is None:
            if self.journal is not None:
                self.journal.release(session)
            return
        self.snapshots = {k: v for k, v in self.snapshots.items() if v[0] is not world}
        if self.journal is not None:
            self.journal.drop(world)
        log.info("session %s ended: its world is freed", session)

    # --- plumbing ---------------------------------------------------------------------------

    def _world(self, request: Request) -> World:
        session = request.query_params.get("session")
        if session is not None and not self.server.isolate:
            raise ControlError(
                400,
                "This server shares one world between all MCP sessions; ?session= only "
                "applies with `faultbench serve --isolate`. Drop the parameter.",
            )
        if session is not None and session not in self.live:
            raise ControlError(
                404,
                f"Expected ?session= to name an open MCP session. Instead, received "
                f"{show_repr(session, 80)}, which has ended (its world was freed when the "
                "client closed the session or it idled out) or never began. Open sessions: "
                f"GET {PREFIX}/sessions.",
            )
        return self.server.world_for(session)

    def routes(self) -> list[Route]:
        def route(path: str, handler: Handler, methods: list[str]) -> Route:
            return Route(PREFIX + path, self._wrap(handler), methods=methods)

        return [
            route("/", self.index, ["GET"]),
            route("/state", self.state, ["GET"]),
            route("/events", self.events, ["GET"]),
            route("/trace", self.trace, ["GET"]),
            route("/reset", self.reset, ["POST"]),
            route("/fork", self.fork, ["POST"]),
            route("/restore", self.restore, ["POST"]),
            route("/clock", self.clock, ["GET", "POST"]),
            route("/faults", self.faults, ["GET", "PUT"]),
            route("/sessions", self.sessions, ["GET"]),
            route("/tokens", self.tokens, ["POST"]),
            # Last: anything else under the prefix gets a JSON answer too, not Starlette's
            # plain-text 404/405 (a route that matches the path only is passed over for it).
            route("/{rest:path}", self.unknown, _ANY_METHOD),
        ]

    @staticmethod
    def _wrap(handler: Handler) -> Handler:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except ControlError as exc:
                return _json({"error": str(exc)}, exc.status)
            except JournalError as exc:  # logged once by the journal; nothing was changed
                return _json({"error": str(exc)}, 503)
            except FaultsDisabled as exc:  # a well-formed request this world cannot take
                return _json({"error": str(exc)}, 409)
            except (FaultbenchError, ValueError, TypeError, LookupError) as exc:
                return _json({"error": str(exc)}, 400)
            except Exception as exc:
                log.exception("control API %s %s failed", request.method, request.url.path)
                return _json({"error": f"internal error: {type(exc).__name__}: {exc}"}, 500)

        return endpoint

    # --- endpoints --------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        world = self.server.world
        return _json(
            {
                "world": world.name,
                "seed": world.seed,
                "run": world.run,
                "faults": world.faults_enabled,
                "isolate": self.server.isolate,
                "tools": [t.name for t in world.tools],
                "mcp": "/mcp",
                "endpoints": list(self._endpoints()),
            }
        )

    async def state(self, request: Request) -> Response:
        world = self._world(request)
        return _json(
            {
                "world": world.name,
                "seq": _last_seq(world),
                "now": iso_time(world.clock.now()),
                "hash": world.state_hash(),
                "tables": world.to_dict(),
            }
        )

    async def events(self, request: Request) -> Response:
        world = self._world(request)
        raw = request.query_params.get("since", "0")
        try:
            since = int(raw)
        except ValueError:
            raise ControlError(
                400,
                "Expected ?since= to be an event seq (an integer). Instead, received: "
                + show_repr(raw, 80),
            ) from None
        events = world.events
        # a world that keeps a window (--keep-events) says where it begins
        headers = {"Faultbench-First-Seq": str(events.first)} if events.first else None
        return Response(
            encode_events(events[max(since, 0) :]),
            media_type="application/jsonl",
            headers=headers,
        )

    async def trace(self, request: Request) -> Response:
        world = self._world(request)
        trace = world.trace
        return _json({"summary": trace.summary(), **trace.to_dict()})

    async def reset(self, request: Request) -> Response:
        world = self._world(request)
        world.reset()
        return _json({"hash": world.state_hash(), "seq": _last_seq(world)})

    async def fork(self, request: Request) -> Response:
        world = self._world(request)
        snap_id = f"s{next(self._ids)}"
        mine = [k for k, (w, _) in self.snapshots.items() if w is world]
        for old in mine[: max(len(mine) - MAX_SNAPSHOTS + 1, 0)]:
            del self.snapshots[old]  # the oldest (dicts keep insertion order)
        self.snapshots[snap_id] = (world, world.snapshot())
        return _json({"snapshot": snap_id, "hash": world.state_hash(), "seq": _last_seq(world)})

    async def restore(self, request: Request) -> Response:
        world = self._world(request)
        body = await _body(request)
        snap_id = body.get("snapshot") if isinstance(body, dict) else None
        saved = self.snapshots.get(snap_id) if isinstance(snap_id, str) else None
        if saved is None or saved[0] is not world:
            known = [k for k, (w, _) in self.snapshots.items() if w is world]
            shown = known if len(known) <= 10 else [*known[:5], "...", *known[-5:]]
            raise ControlError(
                404,
                f'Expected {{"snapshot": ID}} with an ID from POST {PREFIX}/fork on this world '
                f"(known: {', '.join(shown) or 'none'}; a world keeps its last {MAX_SNAPSHOTS}). "
                f"Instead, received: {show_repr(body, 80)}",
            )
        world.restore(saved[1])
        return _json({"hash": world.state_hash(), "seq": _last_seq(world)})

    async def clock(self, request: Request) -> Response:
        world = self._world(request)
        if request.method == "POST":
            body = await _body(request)
            if isinstance(body, dict) and set(body) == {"advance"}:
                seconds = _seconds(body["advance"])
                if seconds < 0:
                    raise ControlError(
                        400,
                        'Expected {"advance": SECONDS} with SECONDS >= 0. Instead, received: '
                        f"{show_repr(body['advance'], 80)}. {_GO_BACK}",
                    )
                await self._move(world, seconds=seconds)
            elif isinstance(body, dict) and set(body) == {"set"}:
                to, now = _datetime(body["set"]), world.clock.now()
                to = to.replace(tzinfo=UTC) if to.tzinfo is None else to  # as clock.set reads it
                if to < now:
                    raise ControlError(
                        400,
                        f"Expected a time at or after the world's clock, {iso_time(now)}. "
                        f"Instead, received: {iso_time(to)}. {_GO_BACK}",
                    )
                await self._move(world, to=to)
            else:
                raise ControlError(
                    400,
                    'Expected {"advance": SECONDS} or {"set": "2025-01-01T00:00:00Z"}. '
                    f"Instead, received: {show_repr(body, 80)}",
                )
        return _json({"now": iso_time(world.clock.now())})

    async def _move(
        self, world: World, *, seconds: float | None = None, to: datetime | None = None
    ) -> None:
        """Move the clock by `seconds` or to `to`, at once; with a webhook URL
        (`--webhook-url`), what the move made due (the events of scheduled effects that
        fire, retries after their backoff) is sent after it, off this request's path, each
        attempt at its own virtual time (`WorldServer.deliver_webhooks`)."""
        if to is not None:
            world.clock.set(to)
        else:
            world.clock.advance(seconds or 0)
        await self.server.deliver_webhooks(world)

    async def faults(self, request: Request) -> Response:
        world = self._world(request)
        if request.method == "PUT":
            raw = await _read(request)
            ctype = request.headers.get("content-type", "")
            rules: Any
            if "json" in ctype:
                rules = await _body(request, raw)
            else:  # YAML, or JSON sent without a content type (JSON is YAML)
                rules = raw.decode("utf-8", errors="replace")
            # Parsed in a worker thread: a big block (up to MAX_BODY) takes a while to
            # validate, and the server keeps answering MCP and the control API meanwhile.
            parsed = await anyio.to_thread.run_sync(parse_faults, rules, world.spec)
            world.set_faults(parsed)
        # The block form PUT takes, so a client can GET, edit and PUT the answer back as is.
        return _json({"faults": render_faults(world.fault_rules)}, encoder=_in_order)

    def _endpoints(self) -> dict[str, list[str]]:
        """path -> its methods, for every endpoint (HEAD, which Starlette adds, left out)."""
        return {
            r.path: sorted((r.methods or set()) - {"HEAD"})
            for r in self.routes()
            if not r.path.endswith("{rest:path}")
        }

    async def unknown(self, request: Request) -> Response:
        path, endpoints = request.url.path, self._endpoints()
        if path in endpoints:
            raise ControlError(
                405,
                f"Expected {' or '.join(endpoints[path])} for {path}. Instead, received: "
                f"{request.method[:20]}",
            )
        raise ControlError(
            404,
            f"Expected one of the control API's endpoints: {', '.join(endpoints)}. Instead, "
            f"received: {request.method[:20]} {show_repr(path, 80)}",
        )

    async def tokens(self, request: Request) -> Response:
        world = self._world(request)
        body = await _body(request)
        if not isinstance(body, dict) or set(body) != {"principal"}:
            raise ControlError(
                400,
                'Expected {"principal": NAME}, NAME a principal of the world\'s auth: block. '
                f"Instead, received: {show_repr(body, 80)}",
            )
        # ValueError -> 400, with the fix; the journal watches the world, so the minting event
        # is written (or refused with a 503) before this answers
        token = world.issue_token(body["principal"])
        return _json(
            {
                "token": token,
                "principal": body["principal"],
                "expires_at": iso_time(token_expiry(world, token)),
            }
        )

    async def sessions(self, request: Request) -> Response:
        return _json({"isolate": self.server.isolate, "sessions": sorted(self.live)})


def _last_seq(world: World) -> int:
    events = world.events
    return events[-1].seq if len(events) else -1


#: how an HTTP client goes back in time: the Python API's way (world.snapshot/restore) is not
#: its to take
_GO_BACK = (
    "The virtual clock only moves forward; to go back, take a snapshot before moving it "
    '(POST /faultbench/fork -> {"snapshot": ID}) and restore it '
    '(POST /faultbench/restore {"snapshot": ID}).'
)


def _seconds(value: Any) -> float:
    wrong = ControlError(
        400,
        "Expected seconds as a number or a duration like '30s'. Instead, received: "
        + show_repr(value, 80),
    )
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise wrong
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ValueError:  # its message quotes the whole text back
            raise wrong from None
    return float(value)


def _datetime(value: Any) -> datetime:
    try:
        return to_utc(msgspec.convert(value, datetime))
    except msgspec.ValidationError:
        raise ControlError(
            400,
            "Expected an ISO 8601 time with a timezone, like '2025-01-01T00:00:00Z'. "
            f"Instead, received: {show_repr(value, 80)}",
        ) from None
    except ValueError as exc:  # in its own offset, but past 9999 (or before 1) in UTC
        raise ControlError(400, str(exc)) from None
