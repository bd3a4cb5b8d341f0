"""What both integrations share: where the world is (`Target`) and what a run gave (`AgentRun`).

The frameworks keep an MCP result's `_meta` (call id, virtual times, fault) to themselves, so
the world's side of a run is read from the world: its event log from the run's first event on,
folded into a `Trace`. In-process that is the live world; over HTTP, the control API's
`/faultbench/events`; over stdio, the `--events` file of a `faultbench serve` command.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import shlex
import tempfile
import urllib.request
import warnings
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar

from faultbench.kernel import Trace, World, WorldCreated, current_world, decode_events, replay
from faultbench.kernel.lowlevel import note_agent_call
from faultbench.serve import WorldCalls

if TYPE_CHECKING:
    from faultbench.serve import WorldServer

__all__ = [
    "AgentRun",
    "Http",
    "InProcess",
    "Stdio",
    "Target",
    "Transport",
    "agent_helper",
    "check_transport",
    "counting_model_requests",
    "missing_extra",
    "model_request",
    "target",
]

#: seconds a stdio server may take to start and answer `initialize`. Both frameworks wait 5 s
#: by default, and a Python server (interpreter, mcp, the world file) can take longer on a
#: busy CI machine: the run would fail as if the server were broken.
STDIO_START_TIMEOUT = 30.0


_P = ParamSpec("_P")
_R = TypeVar("_R")


def agent_helper(
    func: Callable[_P, Coroutine[Any, Any, _R]],
) -> Callable[_P, Coroutine[Any, Any, _R]]:
    """`func` (an `async def` run_agent), noting each call and the coroutine it returns, so
    that the pytest plugin can tell a test that called it and never awaited it (the agent
    never ran) from one whose agent ran: still a coroutine function's result, which
    `asyncio.run` and tasks take as they are."""

    @functools.wraps(func)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> Coroutine[Any, Any, _R]:
        requests = ModelRequests()

        async def run() -> _R:
            token = _REQUESTS.set(requests)
            ended: BaseException | None = None
            try:
                result = await func(*args, **kwargs)
                ended = getattr(result, "error", None)
                return result
            except BaseException as exc:
                ended = exc
                raise
            finally:
                _REQUESTS.reset(token)
                if record is not None and requests.counted:
                    record.model_requests = requests.count
                if record is not None and ended is not None:
                    record.ended = f"{type(ended).__name__}: {ended}".splitlines()[0]

        coroutine = run()
        record = note_agent_call(f"{func.__module__.rsplit('.', 1)[-1]}.{func.__name__}", coroutine)
        return coroutine

    return call


@dataclass
class ModelRequests:
    """The requests an agent helper's agent sent its model (`counted`: the framework's module
    counts them; the pytest plugin tells from a count of 0 a run whose agent never reached
    its model)."""

    count: int = 0
    counted: bool = False


_REQUESTS: ContextVar[ModelRequests | None] = ContextVar("faultbench_model_requests", default=None)


def _helper_frames() -> int:
    """The frames an agent helper's wrapper adds between its caller and the helper (for a
    warning's `stacklevel` to point at the caller's line)."""
    return 0 if _REQUESTS.get() is None else 1


def counting_model_requests() -> None:
    """Say that this agent helper's framework counts its model requests (`model_request`)."""
    requests = _REQUESTS.get()
    if requests is not None:
        requests.counted = True


def model_request() -> None:
    """Count one request the running agent helper's agent sends its model (it reached the
    model, whatever the model answers: a 429 counts)."""
    requests = _REQUESTS.get()
    if requests is not None:
        requests.count += 1


def missing_extra(extra: str, error: ImportError) -> ImportError:
    """The ImportError for a framework that is not installed, with the command that fixes it;
    or, when the name was found but is a module of the user's own (an `agents.py` beside the
    tests shadows the Agents SDK's `agents`), the error that says so."""
    shadow = _shadowing(error)
    if shadow is not None:
        name, path = shadow
        return ImportError(
            f"faultbench.integrations: the module {name!r} was imported from {path}, a file "
            f"of your own, not from the {extra!r} framework, which it shadows (Python finds "
            f"the test's folder first). Rename {Path(path).name} (and remove its "
            f"__pycache__). The error: {error}"
        )
    return ImportError(
        f"faultbench.integrations needs the {extra!r} extra: pip install 'faultbench[{extra}]' "
        f"(or uv add 'faultbench[{extra}]'). Missing: {error.name or error}"
    )


def _shadowing(error: ImportError) -> tuple[str, str] | None:
    """(module, file) when `error` came from a module that was found but is not an installed
    package: a file outside every site-packages folder."""
    import sys

    name = (error.name or "").split(".")[0]
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None) or error.path
    if not name or path is None:
        return None
    parts = Path(path).parts
    if "site-packages" in parts or "dist-packages" in parts:
        return None
    return name, str(path)


@dataclass
class AgentRun:
    """One agent run against a world.

    `result` is the framework's own result (Pydantic AI's `AgentRunResult`, the Agents SDK's
    `RunResult`) and `output` its final output; both are None when the run failed, and then
    `error` holds what ended it (Pydantic AI's `UnexpectedModelBehavior` once its retry budget
    is spent, the Agents SDK's `MaxTurnsExceeded`...): a failed run, which a test counts as
    such, rather than an exception. `trace` holds the calls this run made to the world (None
    when the world cannot be read: a stdio command that is not `faultbench serve`). `world` is
    the world itself: the live one in-process, one rebuilt from the server's event log over
    stdio, None over HTTP (read it through the control API).
    """

    output: Any
    result: Any
    error: BaseException | None
    trace: Trace | None
    world: World | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        """True when the run ended with an answer, False when it failed."""
        return self.error is None


# --- where the world is ---------------------------------------------------------------------


@dataclass
class InProcess:
    """A world in this process: its tools and their handler (`WorldCalls`: a bare `World`
    gives one without MCP), or a `WorldServer`, which is both that and the SDK's server."""

    calls: WorldCalls

    @property
    def world(self) -> World:
        return self.calls.world

    def server(self) -> WorldServer:
        """The `WorldServer` of these calls, for a path that needs the SDK's server (an MCP
        session, a served URL): the one given, else one made on the same world, principal,
        token, webhook URL and after-call hooks, once per `WorldCalls` (so its runs share
        one server, and one webhook delivery lock)."""
        from faultbench.serve import WorldServer, build_server

        calls = self.calls
        if isinstance(calls, WorldServer):
            return calls
        server = _SERVERS.get(calls)
        if server is None:
            server = build_server(calls.world, webhook_url=calls.webhook_url)
            server.principal, server.token = calls.principal, calls.token  # issued once
            server.after_call = calls.after_call
            server.share_webhooks(calls)
            _SERVERS[calls] = server
        return server


#: the `WorldServer` made for a `WorldCalls` (`InProcess.server`), alive as long as it is
_SERVERS: weakref.WeakKeyDictionary[WorldCalls, WorldServer] = weakref.WeakKeyDictionary()


@dataclass
class Http:
    url: str
    #: sent with every MCP request (a `ServedUrl`'s)
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def control(self) -> str:
        return self.url.rstrip("/").removesuffix("/mcp") + "/faultbench"


@dataclass
class Stdio:
    argv: list[str]


Target = InProcess | Http | Stdio

#: how a framework reaches a world in this process: "direct" calls its tools' handler
#: (`WorldCalls`: no MCP session; what the agent sees is the same), "mcp" opens an MCP session
#: on its `WorldServer`
Transport = Literal["direct", "mcp"]


def check_transport(transport: str) -> Transport:
    if transport == "direct":
        return "direct"
    if transport == "mcp":
        return "mcp"
    raise ValueError(
        f'Expected transport="direct" (the default: a World or WorldServer in this process '
        f'called without an MCP session) or transport="mcp" (an MCP session on it). Instead, '
        f"received: {transport!r}"
    )


def target(mcp: World | WorldCalls | str | Sequence[str]) -> Target:
    """Read `run_agent`'s `mcp`: a world or a server in this process, an http(s) URL, or a
    command (argv or one string)."""
    if isinstance(mcp, WorldCalls):  # a WorldServer too
        return InProcess(mcp)
    if isinstance(mcp, World):
        if mcp.spec.auth is not None:
            warnings.warn(
                f"run_agent(mcp=world): the world {mcp.name!r} has an auth: block, and a bare "
                "World calls as nobody, so every call that needs a token gets 401. Pass "
                "WorldCalls(world, principal=NAME) (faultbench.serve), or in a faultbench "
                "test the mcp_server fixture, which acts as @pytest.mark.principal's NAME.",
                stacklevel=3 + _helper_frames(),
            )
        return InProcess(WorldCalls(mcp))
    if isinstance(mcp, str):
        if mcp.startswith(("http://", "https://")):
            return Http(str(mcp), dict(getattr(mcp, "headers", None) or {}))
        mcp = shlex.split(mcp)
    if isinstance(mcp, Sequence) and mcp and all(isinstance(a, str) for a in mcp):
        argv = list(mcp)
        _check_serve_command(argv)
        return Stdio(argv)
    raise TypeError(
        "Expected mcp to be a faultbench World (in this process, no MCP session), a "
        "WorldServer (build_server(world)), an http(s) URL "
        "('http://127.0.0.1:8000/mcp') or a stdio command (['faultbench', 'serve', "
        f"'world.yaml']). Instead, received: {mcp!r}"
    )


def _is_faultbench_serve(argv: list[str]) -> bool:
    names = [Path(a).name for a in argv]
    return "serve" in names and any(n in ("faultbench", "faultbench.cli") for n in names)


def _world_arg(argv: list[str]) -> str | None:
    """The WORLD argument of `... faultbench serve WORLD [options]` as written."""
    names = [Path(a).name for a in argv]
    for arg in argv[names.index("serve") + 1 :] if "serve" in names else ():
        if not arg.startswith("-"):
            return arg
    return None


def _check_serve_command(argv: list[str]) -> None:
    """A `faultbench serve` command that cannot serve what the caller means: a relative world
    path that does not exist here (the server resolves it against this process's working
    directory, not the test file's folder) is an error; a bare command inside a faultbench run
    (a world is current) is a warning, since it serves run 0 of the file's own faults."""
    if not _is_faultbench_serve(argv):
        return
    world = _world_arg(argv)
    if world is not None and not os.path.isabs(world) and not os.path.exists(world):
        base = os.getcwd()
        raise FileNotFoundError(
            f"faultbench serve {world!r}: no such world file. The path is relative, so the "
            f"server resolves it against the working directory {base}, which gives "
            f"{os.path.join(base, world)}. Expected an absolute path (Path(__file__).parent / "
            f"{world!r}), or in a faultbench test the mcp_command fixture, which serves the "
            "run's own world."
        )
    if current_world() is not None and "--run" not in argv:
        warnings.warn(
            f"run_agent(mcp={argv!r}) inside a faultbench run: this command serves the world "
            "file with its own seed, run 0's fault draws and its file's faults: block, "
            "ignoring this run's seed, run index and faults marker, so every run of the gate "
            "sees the same faults. Use the mcp_command fixture, which serves this run's world "
            "(run_agent(..., mcp=mcp_command)).",
            stacklevel=4 + _helper_frames(),
        )


def _served_file(argv: list[str]) -> str | None:
    """The WORLD of `... faultbench serve WORLD [options]`, if it names a file."""
    names = [Path(a).name for a in argv]
    if "serve" not in names:
        return None
    for arg in argv[names.index("serve") + 1 :]:
        if not arg.startswith("-"):
            return arg if os.path.isfile(arg) else None
    return None


# --- reading the world's side of a run ------------------------------------------------------


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        body: bytes = response.read()
        return body


@contextlib.asynccontextmanager
async def observe(where: Target) -> AsyncIterator[Observed]:
    """Watch the world through a run: yields the target to connect to (a stdio command may
    gain `--events FILE`), and fills `Observed.trace` / `.world` when the run is over."""
    seen = Observed(where)
    if isinstance(where, InProcess):
        start = len(where.world.events)
        yield seen
        seen.world = where.world
        seen.trace = Trace(seen.world.events_since(start))
    elif isinstance(where, Http):
        state = json.loads(await asyncio.to_thread(_get, where.control + "/state"))
        yield seen
        body = await asyncio.to_thread(_get, f"{where.control}/events?since={state['seq'] + 1}")
        seen.trace = Trace(decode_events(body))
    elif not _is_faultbench_serve(where.argv):
        yield seen
    elif "--events" in where.argv:
        yield seen
        seen.read_events(Path(where.argv[where.argv.index("--events") + 1]))
    else:
        with tempfile.TemporaryDirectory(prefix="faultbench-") as tmp:
            events = Path(tmp) / "events.jsonl"
            seen.target = Stdio([*where.argv, "--events", str(events)])
            yield seen
            seen.read_events(events)


@dataclass
class Observed:
    target: Target
    trace: Trace | None = None
    world: World | None = None

    def finish(self, result: Any, output: Any, error: BaseException | None) -> AgentRun:
        """The run as `run_agent` returns it; call once the run and `observe` are over."""
        return AgentRun(
            output=None if error else output,
            result=None if error else result,
            error=error,
            trace=self.trace,
            world=self.world,
        )

    def read_events(self, path: Path) -> None:
        if not path.exists():
            return
        events = decode_events(path.read_bytes())
        self.trace = Trace(events)
        # The world file is the one the command serves (a log is data: never load the file it
        # names); replay checks the log was written with it.
        world_file = _served_file(self.target.argv) if isinstance(self.target, Stdio) else None
        if events and isinstance(events[0], WorldCreated) and world_file is not None:
            self.world = replay(world_file, events)
