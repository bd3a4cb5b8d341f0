"""The plugin's fixtures (`world`, `trace`, `clock`, `faults`, `faultbench_run`, `mcp_server`,
`mcp_url`, `mcp_command`, `webhook_receiver`), all sync so that they work under
pytest-asyncio, anyio's plugin and pytest-trio alike, and the same values made for a run of a
concurrent batch (`concurrent_run`, `_concurrent.py`).

`faultbench.serve` (hence mcp, trio) is imported inside the fixtures that serve a world only:
a pytest run that serves nothing imports none of it (tests/testing/test_plugin_imports.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from ..._gate._runs import FILE_FAULTS, RUN_PARAM, Plan, RunInfo, derive_seed
from .._command import ServeCommand
from .._handles import Faults, LiveTrace
from .._outputs import faults_override
from .._usage import logging_model
from ._stash import COMMAND_KEY, FAULTS_OFF_KEY, RUN_KEY, SPECS_KEY, WORLD_KEY, plan_of, runs_of

if TYPE_CHECKING:
    from faultbench.kernel import VirtualClock, World, WorldSpec
    from faultbench.serve import WorldServer
    from faultbench.webhooks import WebhookReceiver

__all__ = [
    "adopt_world",
    "clock",
    "concurrency_of",
    "concurrent_run",
    "faultbench_run",
    "faults",
    "group_of_item",
    "mcp_command",
    "mcp_server",
    "mcp_url",
    "trace",
    "webhook_receiver",
    "world",
]


def _spec(request: pytest.FixtureRequest, path: Path) -> WorldSpec:
    """The parsed world file at `path`, parsed once per session (again if it changed)."""
    from faultbench.kernel import WorldFileError
    from faultbench.kernel.lowlevel import load_spec

    cache = request.config.stash[SPECS_KEY]
    try:
        mtime = path.stat().st_mtime_ns
        hit = cache.get(path)
        if hit is None or hit[0] != mtime:
            hit = cache[path] = (mtime, load_spec(path))
    except (OSError, WorldFileError) as exc:
        pytest.fail(f"{request.node.nodeid}: cannot load the world file: {exc}", pytrace=False)
    return hit[1]


def _world_plan(request: pytest.FixtureRequest) -> Plan:
    plan = plan_of(request.node)
    if plan is None or plan.world is None:
        pytest.fail(
            f'{request.node.nodeid}: the `world` fixture needs @pytest.mark.world("world.yaml") '
            "(a path relative to the test file) on the test, its class or its module.",
            pytrace=False,
        )
    return plan


@pytest.fixture
def faultbench_run(request: pytest.FixtureRequest) -> RunInfo:
    """Which run this is: `index`, `total`, `world_seed` and `seed`, an integer derived from
    (world seed, index) for the randomness of the code under test."""
    return _run_info(request, getattr(request, "param", 0))


def _run_info(request: pytest.FixtureRequest, index: int) -> RunInfo:
    plan = plan_of(request.node)
    if plan is None:
        return RunInfo(index=index, total=1, seed=derive_seed(0, index), world_seed=None)
    world_seed = plan.seed
    if world_seed is None and plan.world is not None:
        world_seed = _spec(request, plan.world).seed
    return RunInfo(
        index=index,
        total=runs_of(request.config, plan),
        seed=derive_seed(0 if world_seed is None else world_seed, index),
        world_seed=world_seed,
    )


@pytest.fixture
def world(request: pytest.FixtureRequest, faultbench_run: RunInfo) -> Iterator[World]:
    """A fresh world for this run: the test's world file, seeded with its `seed` marker (or
    the file's seed), fault draws of run `faultbench_run.index`, and the fault rules of its
    `faults` marker (none without one). It is the current world (`faultbench.using_world`)
    while the test runs, so `fault_inject` charges its latency to it."""
    from faultbench.kernel import using_world

    plan = _world_plan(request)
    w, _block = _start_world(request, plan, faultbench_run)
    request.node.stash[WORLD_KEY] = w
    with using_world(w):
        yield w
    if request.config.getoption("faultbench_otel", False):
        from faultbench.otel import export_run

        export_run(w)


def _start_world(
    request: pytest.FixtureRequest, plan: Plan, run: RunInfo
) -> tuple[World, dict[str, Any] | None]:
    """A run's world as it starts, and the faults block set on it (None: the file's own)."""
    from faultbench.kernel import World

    assert plan.world is not None
    spec = _spec(request, plan.world)
    w = World.from_spec(spec, seed=plan.seed, run=run.index)
    block = logging_model(request.node, w, _fault_block(request, w, plan))
    if block is not None:
        _set_faults(request, w, block, plan)
    return w, block


def _fault_block(request: pytest.FixtureRequest, w: World, plan: Plan) -> dict[str, Any] | None:
    """The `faults` marker's rules as the block to put in force (a logged `FaultsChanged`
    event, so a replay of the run's log injects the same faults); None to keep the world
    file's own."""
    from faultbench.kernel import WorldFileError
    from faultbench.kernel.lowlevel import render_faults

    faults = plan.faults
    override = faults_override(request.config)
    if override is not None:  # --faultbench-faults (shrinking's probes, reproduce commands)
        faults = override
    if faults is FILE_FAULTS or (isinstance(faults, Path) and faults == plan.world):
        return None  # the world was created with its file's block in force
    if faults is None:
        # no marker: fault-free (the rules can still be set mid-test), and the gate line
        # says so when the world file has rules (faultbench 0.1's opt-in, never silent)
        if w.fault_rules and plan.world is not None:
            request.node.stash[FAULTS_OFF_KEY] = [plan.world.name, len(w.fault_rules)]
        return {} if w.fault_rules else None
    if isinstance(faults, Path):
        try:
            return dict(render_faults(_spec(request, faults).faults))
        except (OSError, WorldFileError) as exc:
            pytest.fail(
                f"{request.node.nodeid}: @pytest.mark.faults({_short(faults)}): {exc}",
                pytrace=False,
            )
    return dict(faults)


def _set_faults(request: pytest.FixtureRequest, w: Any, block: dict[str, Any], plan: Plan) -> None:
    from faultbench.kernel import WorldFileError

    try:
        w.set_faults(block)
    except WorldFileError as exc:
        pytest.fail(
            f"{request.node.nodeid}: @pytest.mark.faults({_short(plan.faults)}): {exc}",
            pytrace=False,
        )


def _short(value: Any) -> str:
    text = repr(str(value) if isinstance(value, Path) else value)
    return text if len(text) <= 80 else text[:77] + "..."


@pytest.fixture
def trace(world: World) -> LiveTrace:
    """The calls of this run's world so far (`world.trace`, always up to date)."""
    return LiveTrace(world)


@pytest.fixture
def clock(world: World) -> VirtualClock:
    """This run's virtual clock (`world.clock`)."""
    return world.clock


@pytest.fixture
def faults(world: World) -> Faults:
    """The fault rules of this run: `rules`, `block`, `injected`, `set(...)`, `clear()`."""
    return Faults(world)


def _marked_principal(request: pytest.FixtureRequest) -> str | None:
    """The `principal` marker's name, if the test has one."""
    node = request.node
    mark = node.get_closest_marker("principal")
    if mark is None:
        return None
    if len(mark.args) != 1 or mark.kwargs or not isinstance(mark.args[0], str):
        pytest.fail(
            f"{node.nodeid}: expected @pytest.mark.principal(NAME), NAME a principal of the "
            f"world's auth: block. Instead, received: args={mark.args!r} kwargs={mark.kwargs!r}",
            pytrace=False,
        )
    return str(mark.args[0])


@pytest.fixture
def mcp_server(request: pytest.FixtureRequest, world: World) -> WorldServer:
    """An in-process MCP server (`faultbench.serve.WorldServer`) on this run's world: use it
    with `mcp.Client(mcp_server)`. With `@pytest.mark.principal(NAME)` its calls act as NAME
    (a world with `auth:`)."""
    return _server(request, world)


def _server(request: pytest.FixtureRequest, world: World) -> WorldServer:
    from faultbench.serve import build_server

    url = _webhook_url(request, world)
    name = _marked_principal(request)
    problem: str | None = None
    try:
        server = build_server(world, principal=name, webhook_url=url, debug=_debug_meta(request))
    except ValueError as exc:  # an unknown principal, or a world without auth:
        problem = str(exc)
    if problem is not None:  # outside the except: the report shows this error alone
        pytest.fail(f"{request.node.nodeid}: @pytest.mark.principal: {problem}", pytrace=False)
    if url is not None:  # the receiver's reads wait for what the server sends off its path
        request.getfixturevalue("webhook_receiver").sent_by(server.wait_webhooks)
    return server


def _debug_meta(request: pytest.FixtureRequest) -> bool:
    """`--faultbench-debug-meta`: served answers name their call id and fault."""
    return bool(request.config.getoption("faultbench_debug_meta", False))


def _webhook_url(request: pytest.FixtureRequest, world: World) -> str | None:
    """The `webhook_receiver`'s URL when the test takes it (its served world delivers there;
    the receiver checks signatures with the world's secret), else None."""
    if "webhook_receiver" not in request.node.fixturenames:
        return None
    if isinstance(request, _ItemRequest):  # a concurrent batch shares the test's fixtures
        pytest.fail(
            f"{request.node.nodeid}: runs concurrently and takes webhook_receiver, which "
            "would record every run's deliveries at once. Run it with concurrency=1.",
            pytrace=False,
        )
    if world.spec.webhooks is None:
        pytest.fail(
            f"{request.node.nodeid}: takes webhook_receiver, but the world {world.name!r} has "
            "no webhooks: block, so it delivers nothing; expected a world file with "
            "'webhooks: {secret: ...}' and events: (docs/WORLDS.md, \"Webhooks\")",
            pytrace=False,
        )
    receiver = request.getfixturevalue("webhook_receiver")
    receiver.secret = world.spec.webhooks.secret
    return str(receiver.url)


@pytest.fixture
def mcp_command(request: pytest.FixtureRequest, faultbench_run: RunInfo) -> Iterator[ServeCommand]:
    """The command (argv) that serves this run's world over stdio: `faultbench serve` with
    the world file's absolute path, the run's seed and index, the `faults` marker's rules and
    an event journal, for `run_agent(..., mcp=mcp_command)` or any MCP client that starts
    its server. After the run the plugin reads the journal, so the summary, diff, report,
    replay and shrinking see the served world; the test reads it with
    `mcp_command.world()`."""
    import tempfile

    taken = [
        name
        for name in ("world", "trace", "clock", "faults", "mcp_server", "mcp_url")
        if name in request.fixturenames
    ]
    if taken:
        pytest.fail(
            f"{request.node.nodeid}: takes mcp_command and {', '.join(taken)}. mcp_command "
            "serves the run's world from a server process, and the `world` fixture (which "
            f"{', '.join(taken)} {'is' if taken == ['world'] else 'are'} about) would be "
            "another copy that the agent never touches. Read the served world after the "
            "agent's run with `mcp_command.world()` (and its calls with "
            "`mcp_command.trace()`).",
            pytrace=False,
        )
    plan = _world_plan(request)
    assert plan.world is not None
    start, block = _start_world(request, plan, faultbench_run)
    with tempfile.TemporaryDirectory(prefix="faultbench-") as tmp:
        command = ServeCommand(
            plan.world,
            run=faultbench_run.index,
            seed=plan.seed,
            faults=block,
            journal=Path(tmp) / "events.jsonl",
            spec=start.spec,
            start=start,
            principal=_marked_principal(request),
            webhook_url=_webhook_url(request, start),
            debug=_debug_meta(request),
        )
        request.node.stash[COMMAND_KEY] = command
        yield command


@pytest.fixture
def mcp_url(request: pytest.FixtureRequest, world: World) -> Iterator[str]:
    """The URL (`http://127.0.0.1:PORT/mcp`) of a streamable HTTP MCP server on this run's
    world, on a free loopback port, stopped after the test. A `ServedUrl`: with
    `@pytest.mark.principal(NAME)` (a world with `auth:`) its `headers` carry a bearer token
    issued to NAME, which `run_agent(mcp=mcp_url)` sends under every framework (another
    client sends `mcp_url.headers` itself); HTTP requests without it get 401."""
    from faultbench.serve import ServedUrl, serve_in_thread

    server = _server(request, world)
    token = server.token  # issued on the world for the marked principal, if any
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    with serve_in_thread(server) as url:
        yield ServedUrl(url, headers=headers)


@pytest.fixture
def webhook_receiver() -> Iterator[WebhookReceiver]:
    """A webhook endpoint on 127.0.0.1 for this test (`faultbench.webhooks.WebhookReceiver`):
    it keeps every POST it gets (`received`: path, headers with the signature, raw body;
    `events()`: the events, signatures checked) and answers 200, or the next of `statuses`.
    A test that takes it and `mcp_server`, `mcp_url` or `mcp_command` has its run's world
    (one with `webhooks:`) deliver there after each call and each clock move."""
    from faultbench.webhooks import WebhookReceiver

    with WebhookReceiver() as receiver:
        yield receiver


# ---------------------------------------------------------------------------------------------
# Concurrent runs (`_plugin/_concurrent.py`): a run's own fixtures, made for its batch's head
# ---------------------------------------------------------------------------------------------


class _ItemRequest:
    """What the fixtures' helpers read of a request (`node`, `config`), for a run item whose
    fixtures a batch makes outside pytest's set-up."""

    def __init__(self, item: pytest.Item):
        self.node = item
        self.config = item.config


def concurrency_of(item: pytest.Item) -> int:
    plan = plan_of(item)
    if plan is not None and plan.concurrency is not None:
        return plan.concurrency
    option: int | None = item.config.getoption("faultbench_concurrency", None)
    return 1 if option is None else option


def group_of_item(item: pytest.Item) -> str | None:
    data = item.stash.get(RUN_KEY, None)
    return None if data is None else str(data["group"])


def adopt_world(item: pytest.Item, world: World) -> None:
    item.stash[WORLD_KEY] = world


def concurrent_run(item: pytest.Function) -> tuple[dict[str, Any], World | None]:
    """A run's per-run fixture values, made as its fixtures make them, and its world."""
    # only .node and .config are read by the helpers below
    request = cast(pytest.FixtureRequest, _ItemRequest(item))
    run = _run_info(request, item.stash[RUN_KEY]["run"])
    values: dict[str, Any] = {RUN_PARAM: run}
    plan = plan_of(item)
    if plan is None or plan.world is None:
        return values, None
    w, _block = _start_world(request, plan, run)
    values.update(world=w, trace=LiveTrace(w), clock=w.clock, faults=Faults(w))
    if "mcp_server" in item.fixturenames:
        values["mcp_server"] = _server(request, w)
    return values, w
