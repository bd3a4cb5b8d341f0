"""A world's operations as tools, and the one handler of their calls, without MCP.

`WorldCalls` is what every face of a world shares: the tools in wire form, a call's answer
(the world's call, the principal's token, the error texts, the after-call hooks, the webhook
deliveries due after it), rendered as MCP's `tools/call` would answer it. `WorldServer`
(`_server.py`) is a `WorldCalls` that is also the SDK's `mcp.server.Server`; the integrations'
direct path takes either, so a Pydantic AI run on a bare `World` never imports mcp (about
1 s of each process's start-up on this project's CI machine: docs/BENCHMARKS.md, "Sixth
round").

This module imports neither mcp nor anyio at import time (the import-linter contract
"WorldCalls needs no MCP SDK" in pyproject.toml).
"""

from __future__ import annotations

import base64
import contextlib
import logging
from collections.abc import Awaitable, Callable, Container
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from faultbench.kernel import CallResult, ToolCallError, World
from faultbench.kernel.lowlevel import PROTOCOL_KINDS, SURFACE_KINDS, iso_time, token_expiry

from ._journal import JournalError, StateFile, StateFileError

if TYPE_CHECKING:
    from faultbench.kernel import Tool
    from faultbench.webhooks import Deliverer

__all__ = [
    "AfterCall",
    "CallFailure",
    "WebhookUrlError",
    "WorldCalls",
    "debug_meta",
    "error_result",
    "failure_result",
    "render_result",
    "token_of",
    "tool_wire",
]

log = logging.getLogger("faultbench.serve")

AfterCall = Callable[[World, CallResult], None]
#: how an MCP face enacts a protocol fault on the answer of a call (`WorldServer`)
Enact = Callable[[World, CallResult], Awaitable[None]]


# ---------------------------------------------------------------------------------------------
# Tools and results in wire form
# ---------------------------------------------------------------------------------------------


def tool_wire(
    tool: Tool, protocol_version: str | None = None, modern: Container[str] = frozenset()
) -> dict[str, Any]:
    """One kernel tool as MCP lists it, in wire form, at `protocol_version` (`modern`: as for
    `render_result`). The schemas, title and annotations are the kernel's
    (`_spec/_tooldoc.py`), inline, unchanged; but before 2026-07-28 an output schema must be
    an object's, so one that is not (a list's) is listed as `render_result` wraps the value:
    `{"result": ...}`."""
    out: dict[str, Any] = {
        "name": tool.name,
        "title": tool.title or tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema,
    }
    output = tool.output_schema
    if output is not None:
        if output.get("type") != "object" and protocol_version not in modern:
            output = {
                "type": "object",
                "properties": {"result": output},
                "required": ["result"],
                "additionalProperties": False,
            }
        out["outputSchema"] = output
    if tool.annotations is not None:
        out["annotations"] = dict(tool.annotations)
    return out


def render_result(
    result: CallResult,
    protocol_version: str | None = None,
    modern: Container[str] = frozenset(),
    *,
    debug: bool = False,
) -> dict[str, Any]:
    """A kernel `CallResult` as an MCP `CallToolResult`, in wire form, at `protocol_version`
    (`modern`: the versions at which `structuredContent` may be any JSON value, the installed
    SDK's `_sdk.MODERN_PROTOCOL_VERSIONS`; before them it must be an object).

    The text is the kernel's, verbatim. `structuredContent` is the call's value, which the
    kernel guarantees is what a successful text encodes (`CallResult.text` is the JSON of
    `CallResult.value`); it is left out for errors and for a `malformed_json` fault, where
    the agent must not get a clean copy on the side. An `invalid_structured_content` fault
    sends the kernel's broken copy instead (`CallResult.structured`), beside the true text.

    Nothing in it tells a faulted answer from the real failure it stands for: no fault
    kind, error kind, call id or virtual time. With `debug` (`faultbench serve
    --debug-meta`), `_meta` carries them (`debug_meta`).

    A dict rather than a pydantic model: the SDK validates the result against the protocol
    version's schema either way, and building the model first costs ~5 us a call, most of
    what separates us from a bare server in-process.
    """
    out: dict[str, Any] = {
        "content": [{"type": "text", "text": result.text}],
        "isError": not result.ok,
        "resultType": "complete",
    }
    if debug:
        out["_meta"] = debug_meta(result)
    if result.ok:
        value = result.structured if result.structured is not None else result.value
        if value is not None and result.fault != "malformed_json":
            if not isinstance(value, dict) and protocol_version not in modern:
                value = {"result": value}  # before 2026-07-28 it must be an object
            out["structuredContent"] = value
    return out


def debug_meta(result: CallResult) -> dict[str, Any]:
    """What `--debug-meta` adds to an answer's `_meta`: the call id, its virtual start and
    end, the injected fault's kind and the error kind. Keys whose value is None are left
    out: 2026-07-28 serialization drops them anyway, and one shape for both protocol eras is
    easier on clients."""
    meta: dict[str, Any] = {"call_id": result.call_id}
    if result.started_at is not None:
        meta["started_at"] = iso_time(result.started_at)
        meta["finished_at"] = iso_time(result.finished_at)
    if result.fault is not None:
        meta["fault"] = result.fault
    if not result.ok:
        meta["error_kind"] = result.error_kind
    return meta


def error_result(message: str, *, kind: str, debug: bool = False) -> dict[str, Any]:
    """A call that did not run, as an MCP error result; its `kind` in `_meta` with `debug`
    only."""
    out: dict[str, Any] = {
        "content": [{"type": "text", "text": message}],
        "isError": True,
        "resultType": "complete",
    }
    if debug:
        out["_meta"] = {"error_kind": kind}
    return out


@dataclass(frozen=True, slots=True)
class CallFailure:
    """A call that did not run to a result: `kind` `journal_error` (503: the `--events`
    journal cannot write, the call was undone), `internal_error` (500: a bug in faultbench),
    or the kind of a `ToolCallError` a kernel raised. `message` is what the caller reads."""

    message: str
    kind: str

    def wire(self, debug: bool = False) -> dict[str, Any]:
        """As MCP's `tools/call` answers it: an error result (`debug`: its kind in
        `_meta`)."""
        return error_result(self.message, kind=self.kind, debug=debug)


def failure_result(name: str, exc: Exception) -> CallFailure:
    """What the caller reads when calling tool `name` raised `exc` instead of answering: a
    journal that cannot write (logged once by the journal; the call was undone), or a bug in
    faultbench or a world's handler (logged here)."""
    if isinstance(exc, StateFileError):  # said once in the server's log, each time to the caller
        log.error("%s", exc)
        return CallFailure(
            f"503 Service Unavailable: faultbench did not run {name[:100]!r}: {exc} "
            "Not the agent's fault.",
            "journal_error",
        )
    if isinstance(exc, JournalError):
        return CallFailure(
            f"503 Service Unavailable: faultbench did not run {name[:100]!r}: {exc} "
            "Not the agent's fault; the server keeps serving.",
            "journal_error",
        )
    log.exception("internal error while calling tool %r", name)
    detail = f"{type(exc).__name__}: {exc}"
    detail = detail if len(detail) <= 300 else detail[:297] + "..."
    return CallFailure(
        f"500 Internal Server Error: faultbench failed while running {name[:100]!r} "
        f"({detail}). This is a bug in faultbench or the world's handlers, not in the "
        "agent; the server keeps serving.",
        "internal_error",
    )


def token_of(authorization: str) -> str | None:
    """The access token an HTTP `Authorization` header carries, the one parser of every HTTP
    face (MCP, `--rest`): `Bearer TOKEN`, or HTTP basic with the token as the user name (how
    Stripe's API keys travel; the password is not read). Anything else, a basic credential
    that is not base64 of UTF-8 text included, is no token: the kernel answers 401."""
    scheme, _, value = authorization.strip().partition(" ")
    scheme = scheme.lower()
    if scheme == "bearer":
        return value.strip() or None
    if scheme != "basic":
        return None
    raw = value.strip()
    if not raw.isascii():  # base64 is ASCII; b64decode raises a bare ValueError otherwise
        return None
    try:
        user = base64.b64decode(raw).decode("utf-8").partition(":")[0]
    except (ValueError, UnicodeDecodeError):  # binascii.Error is a ValueError
        return None
    return user or None


class WebhookUrlError(ValueError):
    """`webhook_url` given for a world without `webhooks:`, or not on loopback."""


# ---------------------------------------------------------------------------------------------
# WorldCalls: the one handler of every call, whatever face it came through
# ---------------------------------------------------------------------------------------------


class WorldCalls:
    """A world's operations as tools, and the handler every call to them goes through.

    `tools_wire()` lists the tools as MCP's `tools/list` does; `call_direct(name, args)`
    answers as `tools/call` does (a dict in wire form), through `World.acall`, so faults,
    virtual time and the event log are the kernel's. `principal` (a world with `auth:`):
    who the calls act as; a token is issued for it now (`token`). `webhook_url` (a world with
    `webhooks:`): the loopback endpoint the deliveries due after each call are POSTed to.

    No MCP: `run_agent(..., mcp=world)` of the Pydantic AI integration calls one of these
    directly. `WorldServer` is one too, and the SDK's `Server` besides.
    """

    #: the protocol versions at which a result's `structuredContent` may be any JSON value
    #: (`render_result`): none without an SDK (a direct call speaks no version, or a
    #: handshake-era one), the SDK's modern ones for a `WorldServer`
    modern_versions: Container[str] = frozenset()

    def __init__(
        self,
        world: World,
        *,
        principal: str | None = None,
        webhook_url: str | None = None,
        debug: bool = False,
    ):
        self.world = world
        #: `--debug-meta`: every answer's `_meta` names its call id, virtual times, fault
        #: and error kind (`debug_meta`); off, an answer carries nothing of faultbench's
        self.debug = debug
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
        self._deliverer: Deliverer | None = None  # made by the first delivery
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
        self.after_call: list[AfterCall] = []
        #: `serve --state FILE`: the file this world is shared through with other servers;
        #: each call takes its turn at it (`StateFile.turn`)
        self.state_file: StateFile | None = None

    def turn(self) -> contextlib.AbstractAsyncContextManager[object]:
        """Hold the world for one call or listing: with a `state_file`, its turn (what other
        servers wrote folded in first); else nothing to hold."""
        if self.state_file is None:
            return contextlib.nullcontext()
        return self.state_file.turn()

    # --- tools ------------------------------------------------------------------------------

    def tools_wire(
        self, world: World | None = None, protocol_version: str | None = None
    ) -> list[dict[str, Any]]:
        """The tools `world` (default: the shared one) shows now, in wire form, as
        `tools/list` answers them at `protocol_version`: its operations, as the run's
        tool-surface faults have changed them so far."""
        modern = self.modern_versions
        return [tool_wire(t, protocol_version, modern) for t in (world or self.world).tools]

    def check_output(
        self, name: str, out: dict[str, Any], protocol_version: str | None = None
    ) -> None:
        """Raise what the MCP SDK's client raises (`ClientSession.validate_tool_result`) for
        a successful answer that breaks its tool's `outputSchema`, in its words: for the
        direct paths, which have no client session to check it (an `empty_result`,
        `malformed_json` or `invalid_structured_content` answer of a CRUD tool)."""
        if out.get("isError"):
            return
        tool = next((t for t in self.world.tools if t.name == name), None)
        wire = tool_wire(tool, protocol_version, self.modern_versions) if tool else {}
        schema = wire.get("outputSchema")
        if schema is None:
            return
        if "structuredContent" not in out:
            raise RuntimeError(
                f"Tool {name} has an output schema but did not return structured content"
            )
        # a dependency of both SDKs; only a direct call of a tool with a schema imports it
        import jsonschema  # type: ignore[import-untyped]

        error = jsonschema.exceptions.best_match(
            jsonschema.validators.validator_for(schema)(schema).iter_errors(
                out["structuredContent"]
            )
        )
        if error is not None:
            raise RuntimeError(f"Invalid structured content returned by tool {name}: {error}")

    # --- calls ------------------------------------------------------------------------------

    def request_token(self, request: Any, world: World) -> str | None:
        """The access token a call comes with (worlds with `auth:`): an HTTP request's
        (`request`: anything with `headers`; `request_token_of`), else (`request` None:
        in-process or stdio) the one issued for `principal`, issued again after a reset or a
        restore to before it (tokens derive from the seed and their number, so it is the same
        token)."""
        if self.world.spec.auth is None:
            return None
        if request is None:
            if self.principal is not None and token_expiry(world, self.token or "") is None:
                self.token = world.issue_token(self.principal)
            return self.token
        return token_of(request.headers.get("authorization", ""))

    async def call_direct(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        protocol_version: str | None = None,
    ) -> dict[str, Any]:
        """One tool call from this process, answered in wire form as `tools/call` answers it,
        without a session, JSON-RPC framing or model validation: the integrations' direct
        path (docs/INTEGRATIONS.md, "The direct in-process path"). `protocol_version` is the
        one a client would have negotiated (None: before 2026-07-28, where a list result is
        wrapped in `result`); the versions where it is not wrapped are the installed SDK's
        (`modern_versions`), so a bare `WorldCalls`, which knows no SDK, always wraps it, as
        the SDK's client at a handshake-era version sees it. A `WorldServer` also sends the change notification of a
        tool-surface fault and stamps its identity in `_meta` at a modern version, as its
        SDK's handler path does (`_direct_notice`, `_direct_stamp`)."""
        out = await self.answer(
            self.world,
            name,
            arguments,
            protocol_version=protocol_version,
            tools_changed=self._direct_notice(protocol_version),
        )
        self._direct_stamp(out, protocol_version)
        return out

    def _direct_notice(self, protocol_version: str | None) -> Callable[[], Awaitable[None]] | None:
        return None  # no server: nobody to tell that the tool list changed

    def _direct_stamp(self, out: dict[str, Any], protocol_version: str | None) -> None:
        pass  # no server: no identity to stamp

    async def answer(
        self,
        world: World,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        request: Any = None,
        protocol_version: str | None = None,
        tools_changed: Callable[[], Awaitable[None]] | None = None,
        enact: Enact | None = None,
    ) -> dict[str, Any]:
        """A call of tool `name` on `world` (the shared one or a session's fork), answered in
        wire form as MCP's `tools/call` answers it: `settle`, then `render_result` (or
        `CallFailure.wire` for a call that did not run)."""
        outcome = await self.settle(
            world, name, arguments, request=request, tools_changed=tools_changed, enact=enact
        )
        if isinstance(outcome, CallFailure):
            return outcome.wire(self.debug)
        try:
            return render_result(outcome, protocol_version, self.modern_versions, debug=self.debug)
        except Exception as exc:
            return failure_result(name, exc).wire(self.debug)

    async def settle(
        self,
        world: World,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        request: Any = None,
        tools_changed: Callable[[], Awaitable[None]] | None = None,
        enact: Enact | None = None,
    ) -> CallResult | CallFailure:
        """The one handler of a call, whatever face it came through (MCP in-process, stdio or
        HTTP, the direct path, `--rest`): the caller's token (`request`: the HTTP request, for
        its `Authorization`; `token_of`), the world's call, its log line, the after-call
        hooks and the webhook deliveries it made due. A handler's bug or a journal that
        cannot write is a `CallFailure` the face answers in its own form (MCP: an error
        result; REST: 500 or 503), not an exception. What follows the call (a failing hook or
        notification is logged) is not answered as a call that did not run. `tools_changed`:
        how to tell clients that a tool-surface fault changed the tool list (an MCP
        notification; nothing without one). `enact`: how an MCP face enacts a fault in the
        protocol itself (`lowlevel.PROTOCOL_KINDS`) on the answer, once the call is settled
        (without one, such a call answers as usual)."""
        try:
            async with self.turn():
                token = self.request_token(request, world)
                args = arguments or {}
                # Worlds without auth: the call exactly as before (no token to pass)
                result = await (
                    world.acall(name, args)
                    if token is None
                    else world.acall(name, args, token=token)
                )
        except ToolCallError as exc:  # a kernel that raises instead of returning
            return CallFailure(exc.message, exc.kind)
        except Exception as exc:
            return failure_result(name, exc)
        _log_call(result)
        if result.fault in SURFACE_KINDS and tools_changed is not None:
            # the call changed the tool list: say so, as a server whose tools changed does
            try:
                await tools_changed()
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
        if enact is not None and result.fault in PROTOCOL_KINDS:
            await enact(world, result)  # held, or cancelled by the client while held
        return result

    def answer_now(
        self,
        world: World,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        protocol_version: str | None = None,
    ) -> tuple[dict[str, Any], CallResult | CallFailure]:
        """`answer` without an event loop, for callers that step a world one call at a time
        (`faultbench.env`): the same call (`World.call`, the principal's token), the same
        wire answer, log line and after-call hooks, and beside it the kernel's `CallResult`,
        or the `CallFailure` of a call that did not run (its `kind` is what the answer does
        not say without `debug`). Nobody is told of a changed tool list, and no webhook is
        delivered: a `WorldCalls` with a `webhook_url` refuses (ValueError)."""
        if self.webhook_url is not None:
            raise ValueError(
                "answer_now() delivers no webhooks; expected a WorldCalls without webhook_url"
            )
        try:
            try:
                token = self.request_token(None, world)
                args = arguments or {}
                result = (
                    world.call(name, args) if token is None else world.call(name, args, token=token)
                )
            except ToolCallError as exc:
                failure = CallFailure(exc.message, exc.kind)
                return failure.wire(self.debug), failure
            out = render_result(result, protocol_version, self.modern_versions, debug=self.debug)
        except Exception as exc:
            failure = failure_result(name, exc)
            return failure.wire(self.debug), failure
        _log_call(result)
        for hook in self.after_call:
            try:
                hook(world, result)
            except Exception:
                log.exception("after-call hook %r failed", hook)
        return out, result

    async def answer_kind(
        self, world: World, name: str, arguments: dict[str, Any] | None
    ) -> tuple[dict[str, Any], str | None]:
        """`answer` (at no protocol version), and beside it the call's error kind (None: it
        succeeded), which the answer itself does not say without `debug`: for shells that
        classify a failure in their own terms (OpenEnv's error types)."""
        outcome = await self.settle(world, name, arguments)
        if isinstance(outcome, CallFailure):
            return outcome.wire(self.debug), outcome.kind
        try:
            out = render_result(outcome, None, self.modern_versions, debug=self.debug)
        except Exception as exc:
            failure = failure_result(name, exc)
            return failure.wire(self.debug), failure.kind
        return out, None if outcome.ok else outcome.error_kind

    async def deliver_webhooks(
        self, world: World, *, within: float | timedelta | None = None
    ) -> None:
        """Have `world`'s webhook deliveries due now POSTed to `webhook_url` (nothing without
        one), off the caller's path: a background thread (`faultbench.webhooks.Deliverer`)
        sends them, one attempt at a time in due order, each logged at its own virtual time,
        so a slow endpoint delays no call, no other request and no clock move. With `within`
        (seconds or a timedelta), the clock first moves that far (at once: effects due on the
        way fire in order), and what fell due on the way goes out after, each attempt at its
        own due time as if the clock had stopped there. Every path that calls the world or
        moves its clock ends here: an MCP tool call, a `--rest` request, the control API's
        `POST /faultbench/clock`. `wait_webhooks` waits for the sending."""
        if within is not None:
            world.clock.advance(within)
        url = self.webhook_url
        if url is None:
            return
        deliverer = self._deliverer
        if deliverer is None:
            # imported here, not at the top: a server out of file descriptors cannot open a
            # module file, and a call without webhooks must not need to
            # (tests/soak/test_journal_soak.py)
            from faultbench.webhooks import Deliverer

            deliverer = self._deliverer = Deliverer(url)
        deliverer.kick(world)

    def share_webhooks(self, other: WorldCalls) -> None:
        """Send this one's webhook deliveries through `other`'s sender, so that waiting on
        either (`wait_webhooks`) waits for both: a `WorldServer` made for a `WorldCalls`."""
        url = other.webhook_url
        if url is None:
            return
        if other._deliverer is None:
            from faultbench.webhooks import Deliverer

            other._deliverer = Deliverer(url)
        self._deliverer = other._deliverer

    def wait_webhooks(self, timeout: float | None = None) -> bool:
        """Block until the webhook deliveries asked for so far are sent and logged (at once
        without `webhook_url`); False if `timeout` (seconds) ran out first."""
        return self._deliverer is None or self._deliverer.wait(timeout)


def _log_call(result: CallResult) -> None:
    if result.traceback is not None:
        # A bug in a handler (or in faultbench): the agent read "internal error"; the
        # person running the server gets where it is, with or without -v.
        log.error("%s\n%s", _call_line(result), result.traceback)
    elif log.isEnabledFor(logging.INFO):
        log.info("%s", _call_line(result))


def _call_line(result: CallResult) -> str:
    outcome = "ok" if result.ok else (result.error_kind or "error")
    fault = f" [{result.fault}]" if result.fault else ""
    return f"{result.call_id} {result.tool} -> {outcome}{fault} ({result.latency_s:g}s virtual)"
