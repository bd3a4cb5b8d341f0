"""`faultbench serve WORLD`: the world's operations as MCP tools, over stdio (default) or
streamable HTTP (`--http`), with the control API under `/faultbench/` on HTTP."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import socket

    import trio

    from faultbench.kernel import World
    from faultbench.serve import Journals, WorldServer

HELP = "serve a world's operations as MCP tools (stdio, or streamable HTTP with --http)"

log = logging.getLogger("faultbench.serve")


# ---------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("world", metavar="WORLD", help="the world file (YAML)")
    parser.add_argument(
        "--http",
        action="store_true",
        help="serve streamable HTTP at http://HOST:PORT/mcp (plus the control API under "
        "/faultbench/) instead of stdio",
    )
    parser.add_argument(
        "--openenv",
        action="store_true",
        help="serve OpenEnv's environment protocol (ws://HOST:PORT/ws, and HTTP /reset, /step, "
        "/state, /schema, /mcp) instead of MCP (implies --http; each connection its own "
        "episodes, each a fresh world; --seed, --faults, --no-faults apply to each; "
        "docs/ENVIRONMENTS.md)",
    )
    parser.add_argument(
        "--max-steps",
        type=int,
        metavar="N",
        default=None,
        help="with --openenv: an episode ends after N steps (default: 50); a step after that "
        "is an error asking for a reset",
    )
    parser.add_argument(
        "--session-timeout",
        type=float,
        metavar="SECONDS",
        default=None,
        help="with --openenv: close a session with no message for SECONDS (default: 1800)",
    )
    parser.add_argument(
        "--otel",
        action="store_true",
        help="with --openenv: export each episode as OpenTelemetry spans (GenAI conventions, "
        "virtual time) through the global TracerProvider when it ends (the otel extra; set "
        "the provider up with opentelemetry-instrument or the SDK's environment variables)",
    )
    parser.add_argument(
        "--rest",
        action="store_true",
        help="also answer each operation's http: method and path (a world imported from an "
        "OpenAPI document), on the --http server (implies --http); docs/IMPORT.md",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind with --http (default: 127.0.0.1); a non-loopback address "
        "requires --token",
    )
    parser.add_argument(
        "--port",
        type=int,
        metavar="PORT",
        default=8000,
        help="port to bind with --http (default: 8000; 0 picks a free one). The URL served "
        "is printed to stderr on start",
    )
    parser.add_argument(
        "--seed", type=int, default=None, metavar="N", help="world seed (default: the file's)"
    )
    parser.add_argument(
        "--run",
        type=int,
        default=0,
        metavar="K",
        help="run index: picks the fault draws (default: 0)",
    )
    parser.add_argument(
        "--no-faults",
        action="store_true",
        help="start without the world file's faults: block: faults stay on with no rules, so "
        "rules set at run time with PUT /faultbench/faults apply",
    )
    parser.add_argument(
        "--faults",
        metavar="JSON",
        default=None,
        help="replace the world file's faults: block with this one (JSON, e.g. "
        '\'{"payments.issue_refund": {"errors": {"timeout": 0.1}}}\'), set as a logged '
        "FaultsChanged event, as the pytest plugin sets a faults marker's rules",
    )
    parser.add_argument(
        "--events",
        metavar="FILE",
        help="write every event to FILE as JSON Lines, flushed before each call is answered "
        "(replay it with `faultbench replay FILE`); the file is truncated on start. With "
        "--isolate, each session's world goes to its own file (run.jsonl -> run.SESSION.jsonl); "
        "with --openenv, each episode (run.jsonl -> run.SESSION-N.jsonl). "
        "A call or control action the file cannot take (disk full, too many open files) "
        "is not made and is answered with a server error",
    )
    parser.add_argument(
        "--state",
        metavar="FILE",
        help="stdio: keep the world in FILE, an event log like --events', shared by every "
        "server started with it: the world is resumed from FILE if it exists and each call "
        "is appended to it, under a lock (FILE.lock), so clients that start a server per "
        "call, or several at once, see one world, its seed and fault plan running on as if "
        "one process served every call. Start every server of FILE with the same world file "
        "and options. Replay it with `faultbench replay FILE`",
    )
    parser.add_argument(
        "--fsync",
        action="store_true",
        help="with --events: fsync the file before each answer, so acknowledged calls "
        "survive a power loss too (slower: see benchmarks/bench_journal.py)",
    )
    parser.add_argument(
        "--keep-events",
        type=int,
        metavar="N",
        default=None,
        help="with --events: keep only the latest N to 2N events of each world in memory, so "
        "a long session's memory stays bounded; the file keeps every event (replay it). "
        "GET /faultbench/events and /trace then cover that window",
    )
    parser.add_argument(
        "--isolate",
        action="store_true",
        help="with --http: give each MCP session its own fork of the world, freed when the "
        "session ends (the control API then takes ?session=MCP_SESSION_ID)",
    )
    parser.add_argument(
        "--max-sessions",
        type=int,
        metavar="N",
        default=None,
        help="with --http: MCP sessions open at once (default: 1000); a new one past it gets "
        "HTTP 503 until one ends (sessions with no request for 30 minutes end by themselves). "
        "With --openenv: OpenEnv sessions (a new one gets a CAPACITY_REACHED error)",
    )
    parser.add_argument(
        "--token",
        default=None,
        help="with --http: require 'Authorization: Bearer TOKEN' on every request "
        "(default: $FAULTBENCH_TOKEN). Required for a non-loopback --host",
    )
    parser.add_argument(
        "--principal",
        metavar="NAME",
        default=None,
        help="worlds with auth: act as principal NAME: over stdio every call does; with "
        "--http an access token for NAME is printed to stderr on start, for clients to send as "
        "'Authorization: Bearer TOKEN' (POST /faultbench/tokens issues more). Not --token, "
        "which guards the whole server",
    )
    parser.add_argument(
        "--webhook-url",
        metavar="URL",
        default=None,
        help="worlds with webhooks: POST the deliveries due after each MCP tool call or --rest "
        "request, and those due on the way of a control API clock move, to URL "
        "(loopback only: http://127.0.0.1:PORT/PATH) from a background thread, off the "
        "request's path, signed, each attempt logged at its virtual time; "
        "default: the world file's webhooks: url:",
    )
    parser.add_argument(
        "--debug-meta",
        action="store_true",
        help="name each answer's call id, virtual times, injected fault and error kind (MCP: "
        "in the result's _meta; --rest: X-Faultbench-* headers and a fault in faultbench's "
        "error body). Off by default: a faulted answer then looks exactly like the failure "
        "it stands for, and the trace, the report and the control API still name the fault",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log one line per call to stderr"
    )


# ---------------------------------------------------------------------------------------------
# Running it: the checks, the world, the server
# ---------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    args.http = args.http or args.rest or args.openenv
    if not args.openenv:
        for flag, value in (
            ("--max-steps", args.max_steps is not None),
            ("--session-timeout", args.session_timeout is not None),
            ("--otel", args.otel),
        ):
            if value:
                return _usage(f"{flag} only applies with --openenv.")
    else:
        for flag, value in (
            ("--isolate", args.isolate),
            ("--rest", args.rest),
            ("--run", args.run != 0),
            ("--keep-events", args.keep_events is not None),
            ("--webhook-url", args.webhook_url is not None),
        ):
            if value:
                return _usage(
                    f"{flag} does not apply with --openenv (each episode is a fresh world at "
                    "the seed and episode id its reset names)."
                )
        if args.max_steps is not None and args.max_steps < 1:
            return _usage(f"Expected --max-steps of 1 or more. Instead, received: {args.max_steps}")
        if args.session_timeout is not None and not args.session_timeout > 0:
            return _usage(
                f"Expected --session-timeout above 0. Instead, received: {args.session_timeout}"
            )
    if not args.http:
        for flag, value in (
            ("--isolate", args.isolate),
            ("--port", args.port != 8000),
            ("--token", args.token is not None),
            ("--max-sessions", args.max_sessions is not None),
        ):
            if value:
                return _usage(f"{flag} only applies with --http.")
        if args.host != "127.0.0.1":
            return _usage("--host only applies with --http.")
    if args.token is None:  # the environment's token applies to --http only, silently
        args.token = os.environ.get("FAULTBENCH_TOKEN") if args.http else None
    if args.http:
        from faultbench.serve import is_loopback

        if not is_loopback(args.host) and not args.token:
            return _usage(
                f"Expected --token with the non-loopback --host {args.host!r}. Instead, "
                "received none. Anyone who can reach the port could call the world's tools "
                "and its control API (and a world file runs Python). Pass --token SECRET or "
                "set FAULTBENCH_TOKEN; clients then send 'Authorization: Bearer SECRET'."
            )
    if args.state is not None:
        for flag, value in (
            ("--http", args.http),
            ("--events", args.events is not None),
            ("--keep-events", args.keep_events is not None),
            ("--webhook-url", args.webhook_url is not None),
        ):
            if value:
                return _usage(
                    f"--state and {flag} exclude each other: --state shares one world between "
                    "stdio servers started one per call (or several at once); one --http "
                    "server already serves every client one world (write it with --events)."
                )
    if args.fsync and not (args.events or args.state):
        return _usage("--fsync only applies with --events FILE or --state FILE.")
    if args.keep_events is not None:
        if not args.events:
            return _usage(
                "--keep-events needs --events FILE: the events dropped from memory are kept "
                "only there."
            )
        if args.keep_events < 1:
            return _usage(
                f"Expected --keep-events of 1 or more. Instead, received: {args.keep_events}"
            )
    if args.faults is not None and args.no_faults:
        return _usage("--faults and --no-faults exclude each other.")
    if args.max_sessions is not None and args.max_sessions < 1:
        return _usage(
            f"Expected --max-sessions of 1 or more. Instead, received: {args.max_sessions}"
        )
    if not 0 <= args.port <= 65535:
        return _usage(f"Expected --port between 0 and 65535. Instead, received: {args.port}")

    _configure_logging(args.verbose)

    from faultbench.commands.check import load_or_report
    from faultbench.kernel import World

    spec = load_or_report(args.world)
    if spec is None:
        return 2
    if args.keep_events is not None and spec.feeds:
        return _usage(
            "--keep-events: this world has an events: feed, which list_events derives from "
            "the whole log, so it cannot keep only its latest events in memory."
        )
    world = World.from_spec(spec, seed=args.seed, run=args.run)
    if args.no_faults:
        # No rules rather than a fault-free world, so PUT /faultbench/faults still works.
        world.set_faults({})
    elif args.faults is not None:
        problem = _set_faults(world, args.faults)
        if problem is not None:
            return _usage(problem)

    import trio

    from faultbench.serve import JournalError, Journals, WebhookUrlError, build_server

    hooks = world.spec.webhooks
    webhook_url = args.webhook_url or (hooks.url if hooks is not None else None)
    state = None
    if args.state is not None:
        if webhook_url is not None:
            return _usage(
                "--state: this world sends webhooks (webhooks: url:), whose deliveries are "
                "logged off the calls' turns; --state cannot share such a world yet."
            )
        from faultbench.serve import StateFile, StateFileError

        if args.principal is not None:
            return _usage(
                "--state and --principal exclude each other for now: each server would issue "
                "its principal a token of its own, a write outside the calls' turns."
            )
        fresh = world
        try:
            state = StateFile.open(args.state, lambda: fresh)
        except StateFileError as exc:
            print(f"faultbench serve: {exc}", file=sys.stderr)
            return 2
        world = state.world
        state.journal.fsync = args.fsync
    try:
        server = build_server(
            world,
            isolate=args.isolate,
            principal=args.principal,
            webhook_url=webhook_url,
            debug=args.debug_meta,
        )
    except WebhookUrlError as exc:  # a world without webhooks:, or a url off loopback
        return _usage(f"--webhook-url: {exc}")
    except ValueError as exc:  # --principal on a world without auth:, or unknown to it
        if state is not None:
            state.close()
        return _usage(f"--principal: {exc}")
    server.state_file = state
    sock = None
    if args.http:
        from faultbench.serve import ListenError, listen_socket

        try:
            sock = listen_socket(args.host, args.port)
        except ListenError as exc:
            print(f"faultbench serve: {exc.strerror}", file=sys.stderr)
            return 1
    journal = None
    if args.events:
        try:
            journal = Journals(
                args.events, world, fsync=args.fsync, keep_events=args.keep_events
            ).attach(server)
        except JournalError as exc:
            if sock is not None:
                sock.close()
            print(f"faultbench serve: {exc.summary}", file=sys.stderr)
            return 2
    _warm_up(world)
    try:
        if args.http:
            trio.run(_serve_http, server, args, journal, sock)
        else:
            trio.run(_serve_stdio, server, args)
    except KeyboardInterrupt:  # a signal that arrived before our handler was installed
        pass
    finally:
        # the last calls' webhook deliveries, sent off their path, are sent (and journaled)
        # before the journal closes
        server.wait_webhooks(WEBHOOK_DRAIN_S)
        if journal is not None:
            journal.close()
        if state is not None:
            state.close()
    return 0


#: how long a stopping server waits for the webhook deliveries its last calls made due
WEBHOOK_DRAIN_S = 30.0


# ---------------------------------------------------------------------------------------------
# Before serving: warm-up, faults, usage errors, logging
# ---------------------------------------------------------------------------------------------


def _warm_up(world: World) -> None:
    """Import now what a tool call imports on first use: at the open-file limit (many
    sessions, each with its journal open) an import on a session's first call could fail.
    A call on a throwaway fork, driven by hand (no event loop: it runs at once)."""
    coro = world.fork().acall("-")
    try:
        coro.send(None)
    except StopIteration:
        pass
    finally:
        coro.close()


def _set_faults(world: World, text: str) -> str | None:
    """Put `--faults JSON` in force; the problem with it, or None."""
    import json

    from faultbench.kernel import WorldFileError

    try:
        block = json.loads(text)
    except ValueError as exc:
        return (
            f"Expected --faults to be a faults: block as JSON. Instead, received: {text!r} ({exc})"
        )
    if not isinstance(block, dict):
        return f"Expected --faults to be a JSON object. Instead, received: {text!r}"
    try:
        world.set_faults(block)
    except WorldFileError as exc:
        return f"--faults: {exc}"
    return None


def _usage(message: str) -> int:
    print(f"faultbench serve: {message}", file=sys.stderr)
    return 2


def _configure_logging(verbose: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("faultbench: %(message)s"))
    for name in ("faultbench", "faultbench.http"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.propagate = False
    logging.getLogger("faultbench").setLevel(logging.INFO if verbose else logging.WARNING)
    # trio logs every failed accept (EMFILE at the file limit) with a traceback, ten times a
    # second: one line a minute says it.
    accept = logging.getLogger("trio.serve_listeners")
    accept.handlers[:] = [handler]
    accept.propagate = False
    accept.addFilter(_Quieter(60.0))
    # The SDK logs every session and request at INFO; only its warnings are ours to show.
    logging.getLogger("mcp").setLevel(logging.WARNING)


class _Quieter(logging.Filter):
    """Drops tracebacks, and a message already let through in the last `every` seconds."""

    def __init__(self, every: float):
        super().__init__()
        self.every = every
        self.last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        import time

        record.exc_info, record.exc_text = None, None
        now, key = time.monotonic(), str(record.msg)
        if now - self.last.get(key, -self.every) < self.every:
            return False
        self.last[key] = now
        return True


# ---------------------------------------------------------------------------------------------
# Serving: signals, stdio, HTTP
# ---------------------------------------------------------------------------------------------


async def _on_signal(stop: Callable[[], object]) -> None:
    """First SIGINT/SIGTERM: clean shutdown. A second one: leave now."""
    import signal

    import trio

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        first = True
        async for signum in signals:
            if not first:
                log.warning("second %s: exiting immediately", signal.Signals(signum).name)
                os._exit(128 + signum)
            first = False
            log.info("%s: shutting down", signal.Signals(signum).name)
            stop()


async def _serve_stdio(server: WorldServer, args: argparse.Namespace) -> None:
    import trio

    from faultbench.serve import serve_stdio

    log.info("serving %s over stdio (%d tools)", server.world.name, len(server.world.tools))
    if sys.stdin.isatty():
        # Run by hand, a stdio server would look hung: say what it is waiting for.
        print(
            f"faultbench: serving {server.world.name} ({len(server.world.tools)} tools) over "
            "stdio: waiting for an MCP client on stdin (Ctrl-C to stop; --http serves "
            "http://127.0.0.1:8000/mcp instead)",
            file=sys.stderr,
            flush=True,
        )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_on_signal, nursery.cancel_scope.cancel)
        await serve_stdio(server)
        nursery.cancel_scope.cancel()  # stdin closed: done


async def _serve_http(
    server: WorldServer,
    args: argparse.Namespace,
    journal: Journals | None,
    sock: socket.socket | None,
) -> None:
    import trio

    from faultbench.env import openenv_app
    from faultbench.serve import build_app, serve_http

    if args.openenv:
        import json

        app = openenv_app(
            server.world.spec,
            host=args.host,
            token=args.token,
            principal=server.principal,
            seed=server.world.seed,
            faults={} if args.no_faults else json.loads(args.faults) if args.faults else None,
            max_steps=args.max_steps or 50,
            max_sessions=args.max_sessions,
            idle_timeout=args.session_timeout,
            journals=journal,
            otel=args.otel,
        )
    else:
        app = build_app(
            server,
            host=args.host,
            token=args.token,
            journal=journal,
            max_sessions=args.max_sessions,
            rest=args.rest,
        )
    stopping = trio.Event()
    async with trio.open_nursery() as nursery:

        async def run_server(task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
            await serve_http(
                app,
                host=args.host,
                port=args.port,
                sock=sock,
                shutdown=stopping.wait,
                task_status=task_status,
            )
            nursery.cancel_scope.cancel()  # Hypercorn has drained: stop watching signals

        nursery.start_soon(_on_signal, stopping.set)
        url = await nursery.start(run_server)
        if args.openenv:
            ws = url.replace("http://", "ws://").removesuffix("/mcp") + "/ws"
            print(f"faultbench: serving {server.world.name} as an OpenEnv environment at {ws}",
                  file=sys.stderr, flush=True)  # fmt: skip
            return
        print(
            f"faultbench: serving {server.world.name} ({len(server.world.tools)} tools) at "
            f"{url} (control API: {url.removesuffix('/mcp')}/faultbench/)",
            file=sys.stderr,
            flush=True,
        )
        if server.token is not None:
            print(
                f"faultbench: access token for principal {server.principal!r} (send "
                f"'Authorization: Bearer TOKEN' to /mcp): {server.token}",
                file=sys.stderr,
                flush=True,
            )
