"""faultbench's pytest plugin (entry point `pytest11: faultbench`).

A test marked `@pytest.mark.world("world.yaml")` (or `@pytest.mark.runs(n)`) becomes one item
per run, `test_x[run0]` ... `test_x[run{n-1}]`, parametrized last so the ids compose with the
test's own parameters (`test_x[case-a-run3]`). Each run gets a fresh world, `load_world(path,
seed, run=index)`; every report of a run carries `report.faultbench`, a plain dict (what the
run was, how it ended, its call line and event log), so the runs can be tallied wherever the
reports meet: in this process, or on pytest-xdist's controller. There the gate of each group
of runs is computed, failing runs are explained, and the exit status follows the gate.

This module imports pytest and faultbench's kernel only; `faultbench.serve` (hence mcp, trio)
is imported inside the fixtures that serve a world (DESIGN.md, "Architecture").
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from ._gate._checks import foreign_mark, gate_too_small
from ._gate._report import Group, Tally, render_group
from ._gate._reproduce import launcher, reproduce_command, shaping_options
from ._gate._runs import (
    FILE_FAULTS,
    MARKERS,
    RUN_PARAM,
    Plan,
    RunInfo,
    derive_seed,
    group_of,
    near_miss,
    registered_markers,
    run_id,
)
from ._gate._stats import decided
from ._plugin._async import run_coroutine_test, trio_variants
from ._plugin._ci import (
    faults_met,
    github_annotation,
    group_properties,
    send_gate_reports,
    step_summary,
    write_json,
)
from ._plugin._command import ServeCommand
from ._plugin._compare import ComparePlugin, compare_spec
from ._plugin._concurrent import ConcurrentRuns, add_concurrency_option
from ._plugin._gc import RunLoopGC, add_gc_option
from ._plugin._grading import grade_run
from ._plugin._handles import Faults, LiveTrace
from ._plugin._harness import before_first_call, never_awaited, problem, setup_problem
from ._plugin._logs import Logs
from ._plugin._outputs import Outputs, add_output_options, faults_override
from ._plugin._usage import group_usage, logging_model, run_usage, runs_needed

if TYPE_CHECKING:
    from faultbench.kernel import VirtualClock, World, WorldSpec
    from faultbench.serve import WorldServer
    from faultbench.webhooks import WebhookReceiver

#: a run item's identity: group, run, total, min_pass_rate (set at collection)
RUN_KEY = pytest.StashKey[dict[str, Any]]()
#: the world a run's `world` fixture made
WORLD_KEY = pytest.StashKey["World"]()
#: set on an item that early stop skips
STOPPED_KEY = pytest.StashKey[bool]()
#: the plugin's per-session state
SESSION_KEY = pytest.StashKey["FaultbenchSession"]()
#: parsed world files by path, shared by the runs of a session
SPECS_KEY = pytest.StashKey[dict[Path, tuple[int, "WorldSpec"]]]()
#: the `mcp_command` a run used: its journal is the run's world
COMMAND_KEY = pytest.StashKey[ServeCommand]()
#: a node's `Plan` (None: not ours), once read
PLAN_KEY = pytest.StashKey["Plan | None"]()
_UNREAD: Any = object()
#: [world file name, its fault rules] of a run the world file's rules were left off in
FAULTS_OFF_KEY = pytest.StashKey[list[Any]]()
#: the failure message of a run the gate tolerated
TOLERATED_KEY = pytest.StashKey[str]()
#: the agent helper calls (`run_agent`) a run's body made
AGENT_CALLS_KEY = pytest.StashKey[list[Any]]()
#: the fixtures that make a test one of faultbench's (its async test runs on asyncio here)
FIXTURES = ("world", "mcp_server", "mcp_url", "mcp_command", "trace", "clock", "faults")


# ---------------------------------------------------------------------------------------------
# Options and markers
# ---------------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("faultbench", "faultbench: tests in a fake, faulty world")
    group.addoption(
        "--runs",
        type=int,
        metavar="N",
        default=None,
        help="run every test that has a world (or a runs marker) N times, overriding "
        "@pytest.mark.runs",
    )
    group.addoption(
        "--faultbench-otel",
        action="store_true",
        default=False,
        help="export every run's world as OpenTelemetry spans (GenAI conventions, virtual "
        "time) through the global TracerProvider (the `otel` extra; docs/ENVIRONMENTS.md)",
    )
    group.addoption(
        "--faultbench-no-early-stop",
        action="store_true",
        default=False,
        help="run every run even when a group's pass-rate outcome is already decided",
    )
    group.addoption(
        "--faultbench-events",
        metavar="DIR",
        default=None,
        help="write each run's event log to DIR as JSON Lines (faultbench replay FILE)",
    )
    group.addoption(
        "--faultbench-json",
        metavar="FILE",
        default=None,
        help="write a machine-readable summary of every gate to FILE (JSON): counts, pass "
        "rate, interval, verdict, fault figures, failing runs and their reproduce commands",
    )
    add_output_options(group)
    add_concurrency_option(group)
    add_gc_option(group)


def pytest_configure(config: pytest.Config) -> None:
    for line in MARKERS.values():
        config.addinivalue_line("markers", line)
    runs = config.getoption("runs", None)
    if runs is not None and runs < 1:
        raise pytest.UsageError(f"Expected --runs N with N >= 1. Instead, received: {runs}")
    session = FaultbenchSession(config)
    config.stash[SESSION_KEY] = session
    config.stash[SPECS_KEY] = {}
    config.pluginmanager.register(session, "faultbench-session")
    config.pluginmanager.register(ComparePlugin(session), "faultbench-compare")
    config.pluginmanager.register(
        ConcurrentRuns(
            config,
            concurrency_of=_concurrency_of,
            make_run=_concurrent_run,
            adopt=_adopt_world,
            group_of=_group_of,
            decided=session.pool_decided,
        ),
        "faultbench-concurrency",
    )
    collector = RunLoopGC(config, lambda item: RUN_KEY in item.stash)
    config.pluginmanager.register(collector, "faultbench-gc")
    # Added in our pytest_configure, which pytest calls before its built-in plugins', so it
    # runs after the cleanups they add (last in, first out) and after every
    # pytest_unconfigure: with fast-exit, pytest's full collections at the end skip the
    # frozen heap (_gc.py).
    config.add_cleanup(functools.partial(_release_collector, config, collector))


def _release_collector(config: pytest.Config, collector: RunLoopGC) -> None:
    collector.restore()  # also for a session that ended before its sessionfinish
    if config.pluginmanager.is_registered(collector):
        config.pluginmanager.unregister(collector)


def pytest_unconfigure(config: pytest.Config) -> None:
    concurrency = config.pluginmanager.get_plugin("faultbench-concurrency")
    if concurrency is not None:
        config.pluginmanager.unregister(concurrency)
    compare = config.pluginmanager.get_plugin("faultbench-compare")
    if compare is not None:
        config.pluginmanager.unregister(compare)
    session = config.stash.get(SESSION_KEY, None)
    if session is not None and config.pluginmanager.is_registered(session):
        config.pluginmanager.unregister(session)


# ---------------------------------------------------------------------------------------------
# Runs as items
# ---------------------------------------------------------------------------------------------


def _plan(node: Any, *, keep: bool = True) -> Plan | None:
    """The plan of `node`'s markers, read once per node from its set-up on (a run's hooks
    and fixtures ask for it several times); `keep=False` during collection, where another
    plugin may still add markers."""
    got = node.stash.get(PLAN_KEY, _UNREAD) if keep else _UNREAD
    if got is not _UNREAD:
        return cast("Plan | None", got)
    try:
        plan = Plan.of(node)
    except ValueError as exc:
        pytest.fail(f"{node.nodeid}: {exc}", pytrace=False)
    if keep:
        node.stash[PLAN_KEY] = plan
    return plan


def _runs(config: pytest.Config, plan: Plan) -> int:
    option = config.getoption("runs", None)
    return plan.runs if option is None else option


def _check_marks(definition: Any) -> None:
    """A mark that is a typo of one of ours is a collection error, strict markers or not; so
    is any unregistered mark on a test that carries our markers (`repeat`, `count`: another
    plugin's vocabulary, silently ignored, `_gate/_checks.py`)."""
    registered = registered_markers(definition.config.getini("markers"))
    for mark in definition.iter_markers():
        meant = near_miss(mark.name, registered)
        foreign = foreign_mark(mark.name, registered, definition)
        if meant is None and foreign is not None:
            pytest.fail(f"{definition.nodeid}: {foreign}", pytrace=False)
        if meant is not None:
            pytest.fail(
                f"{definition.nodeid}: unknown marker @pytest.mark.{mark.name}: did you mean "
                f"@pytest.mark.{meant}? faultbench's markers are "
                f"{', '.join(MARKERS)}; a misspelt one would silently drop what it asks for "
                "(the runs, the gate). If the mark is your own, register it (markers = "
                f"{mark.name}: ... in pytest.ini).",
                pytrace=False,
            )


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    """With `--strict-markers`, pytest refuses an unknown mark while importing the module,
    before `_check_marks` sees it: add the hint to its error."""
    report = yield
    if report.failed:
        text = str(report.longrepr)
        found = re.search(r"'(\w+)' not found in `markers` configuration option", text)
        registered = registered_markers(collector.config.getini("markers"))
        meant = None if found is None else near_miss(found.group(1), registered)
        if meant is not None:
            report.longrepr = (
                f"{text}\nfaultbench: did you mean @pytest.mark.{meant}? (a misspelt "
                f"faultbench marker silently drops what it asks for)"
            )
    return report


@pytest.hookimpl(trylast=True)  # after the test's own parametrize: its ids come first
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    _check_marks(metafunc.definition)
    plan = _plan(metafunc.definition, keep=False)
    if plan is None:
        return
    if RUN_PARAM not in metafunc.fixturenames:
        pytest.fail(
            f"{metafunc.definition.nodeid}: a test marked with @pytest.mark.world or "
            "@pytest.mark.runs is run once per run through the `faultbench_run` fixture, and "
            "this one requests none of faultbench's fixtures (world, mcp_server, mcp_url, "
            "mcp_command, trace, clock, faults, faultbench_run), so its runs could not differ. "
            "Expected it to take `world` (or `faultbench_run`) as an argument.",
            pytrace=False,
        )
    n = _runs(metafunc.config, plan)
    # the marker's runs; `--runs N` on the command line is the user's own choice of the moment
    undecidable = gate_too_small(plan.min_pass_rate, plan.runs)
    if undecidable is not None:
        pytest.fail(f"{metafunc.definition.nodeid}: {undecidable}", pytrace=False)
    metafunc.parametrize(RUN_PARAM, range(n), ids=[run_id(i) for i in range(n)], indirect=True)


@pytest.hookimpl(trylast=True)  # after -k/-m deselection: count what will run
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    state = config.stash[SESSION_KEY]
    # anyio runs a test marked `anyio` on every backend installed (trio, with faultbench);
    # the frameworks run on asyncio only, so a faultbench test runs there unless it asks.
    others = trio_variants(items, _is_faultbench)
    if others:
        drop = set(map(id, others))
        items[:] = [item for item in items if id(item) not in drop]
        config.hook.pytest_deselected(items=others)
    for position, item in enumerate(items):
        state.order.setdefault(item.nodeid, position)
        callspec = getattr(item, "callspec", None)
        if callspec is None or RUN_PARAM not in callspec.params:
            continue
        plan = _plan(item, keep=False)
        if plan is None:
            continue
        index = callspec.params[RUN_PARAM]
        data = {
            "group": group_of(item.nodeid, index),
            "run": index,
            "total": _runs(config, plan),
            "min_pass_rate": plan.min_pass_rate,
        }
        item.stash[RUN_KEY] = data
        state.planned[data["group"]] = state.planned.get(data["group"], 0) + 1


def _is_faultbench(item: Any) -> bool:
    """The test carries faultbench's markers or fixtures."""
    if item.get_closest_marker("world") is not None or item.get_closest_marker("runs"):
        return True
    return any(name in FIXTURES or name == RUN_PARAM for name in item.fixturenames)


@pytest.hookimpl
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """An `async def` faultbench test no async plugin took runs on asyncio (`_async.py`)."""
    if not _is_faultbench(pyfuncitem):
        return None
    return True if run_coroutine_test(pyfuncitem) else None


# ---------------------------------------------------------------------------------------------
# Fixtures (all sync: they work under pytest-asyncio, anyio's plugin and pytest-trio alike)
# ---------------------------------------------------------------------------------------------


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
    plan = _plan(request.node)
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
    plan = _plan(request.node)
    if plan is None:
        return RunInfo(index=index, total=1, seed=derive_seed(0, index), world_seed=None)
    world_seed = plan.seed
    if world_seed is None and plan.world is not None:
        world_seed = _spec(request, plan.world).seed
    return RunInfo(
        index=index,
        total=_runs(request.config, plan),
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


def _concurrency_of(item: pytest.Item) -> int:
    plan = _plan(item)
    if plan is not None and plan.concurrency is not None:
        return plan.concurrency
    option: int | None = item.config.getoption("faultbench_concurrency", None)
    return 1 if option is None else option


def _group_of(item: pytest.Item) -> str | None:
    data = item.stash.get(RUN_KEY, None)
    return None if data is None else str(data["group"])


def _adopt_world(item: pytest.Item, world: World) -> None:
    item.stash[WORLD_KEY] = world


def _concurrent_run(item: pytest.Function) -> tuple[dict[str, Any], World | None]:
    """A run's per-run fixture values, made as its fixtures make them, and its world."""
    # only .node and .config are read by the helpers below
    request = cast(pytest.FixtureRequest, _ItemRequest(item))
    run = _run_info(request, item.stash[RUN_KEY]["run"])
    values: dict[str, Any] = {RUN_PARAM: run}
    plan = _plan(item)
    if plan is None or plan.world is None:
        return values, None
    w, _block = _start_world(request, plan, run)
    values.update(world=w, trace=LiveTrace(w), clock=w.clock, faults=Faults(w))
    if "mcp_server" in item.fixturenames:
        values["mcp_server"] = _server(request, w)
    return values, w


# ---------------------------------------------------------------------------------------------
# Reports, the gate and the summary
# ---------------------------------------------------------------------------------------------


class FaultbenchSession:
    """Per-session state and the hooks that need it (registered in `pytest_configure`)."""

    def __init__(self, config: pytest.Config):
        self.config = config
        #: xdist workers run tests and pass their reports on; the controller decides
        self.worker = hasattr(config, "workerinput")
        self.early_stop = not config.getoption("faultbench_no_early_stop", False)
        events = config.getoption("faultbench_events", None)
        self.events_dir = None if events is None else Path(events)
        self.tally = Tally()
        self.planned: dict[str, int] = {}  # group -> runs selected in this process
        self.order: dict[str, int] = {}  # nodeid -> collection position
        self.failed_gates: list[Group] = []
        self.outputs = Outputs(config)
        self.logs = Logs(config)
        #: the launcher and the options of the reproduce lines, once read
        self._command: tuple[list[str], list[str]] | None = None

    # --- early stop --------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Any:
        data = item.stash.get(RUN_KEY, None)
        # a compared test's runs pair up one for one: none may stop early
        if data is not None and self.early_stop and item.get_closest_marker("compare") is None:
            group = self.tally.groups.get(data["group"])
            if group is not None:
                passed, failed, _stopped = group.counts()
                errors = group.errors()
                skipped = len(group.runs) - passed - failed - _stopped - errors
                planned = self.planned.get(data["group"], data["total"]) - skipped - errors
                ran = passed + failed
                reason = None
                if errors:  # the gate has failed, and the next run would hit the same
                    reason = f"outcome decided: a set-up problem in run{_first_error(group)}"
                elif ran < planned and decided(
                    passed, failed, planned, data["min_pass_rate"] or 1.0
                ):
                    reason = f"outcome decided after {ran} run{'s' if ran != 1 else ''}"
                if reason is not None:
                    item.stash[STOPPED_KEY] = True
                    # A skip mark rather than raising here: pytest reports it at the test's
                    # own location, like any skip.
                    item.add_marker(pytest.mark.skip(reason=reason))
        return (yield)

    def pool_decided(self, item: pytest.Item, passed: int, failed: int) -> bool:
        """Whether a concurrent pool's runs that ended in a row from its first (`passed` and
        `failed` by their bodies), after the group's runs already reported, decide the gate:
        the pool starts no more runs then (_concurrent.py). An estimate: a run it leaves is
        run by its own item, or skipped by early stop above."""
        data = item.stash.get(RUN_KEY, None)
        if data is None or not self.early_stop or item.get_closest_marker("compare") is not None:
            return False
        group = self.tally.groups.get(data["group"])
        before_passed, before_failed, _stopped = (0, 0, 0) if group is None else group.counts()
        planned = self.planned.get(data["group"], data["total"])
        rate = data["min_pass_rate"] or 1.0
        return decided(before_passed + passed, before_failed + failed, planned, rate)

    # --- what a report carries ---------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        base = item.stash.get(RUN_KEY, None)
        if base is None:
            return report
        data = dict(base)
        if call.when == "call":
            data["compare"] = compare_spec(item)
        if call.when == "teardown":
            data["location"] = [item.location[0], item.location[1]]
            if FAULTS_OFF_KEY in item.stash:
                data["faults_off"] = item.stash[FAULTS_OFF_KEY]
        if call.when == "setup" and report.skipped and item.stash.get(STOPPED_KEY, False):
            data["stopped"] = True
        if report.failed and call.excinfo is not None:
            data["message"] = call.excinfo.exconly()
            # A run that never reached the agent is a set-up problem, never tolerated
            # (_harness.py; docs/TESTING.md, "What counts as a failure").
            cause = (
                problem(call.excinfo.value)
                if call.when == "call"
                else setup_problem(call.when, data["message"])
            )
            if cause is not None:
                data["problem"] = cause
        command = item.stash.get(COMMAND_KEY, None)
        if call.when == "call" and command is not None:
            # The run's world is the one the server logged (its journal), not a copy here.
            try:
                item.stash[WORLD_KEY] = command.world()
            except Exception as exc:  # a journal cut short, a world file changed mid-run
                item.stash[WORLD_KEY] = command.start
                if "problem" not in data:
                    text = f"faultbench could not read the mcp_command journal: {exc}"
                    data["problem"] = text
                    data.setdefault("message", text)
                    if not report.failed:
                        report.outcome = "failed"
                        report.longrepr = text
        world = item.stash.get(WORLD_KEY, None)
        if call.when == "call" and "problem" not in data:
            _agent_ran(item, call, report, world, data)
        if call.when == "call" and world is not None and report.failed:
            crashes = _handler_tracebacks(world)
            if crashes:
                # pytest shows a CallResult cut short and escaped into one line; the bug's
                # traceback reads better whole, under its own heading
                report.sections.append(("faultbench: handler tracebacks", crashes))
                data["crashes"] = crashes
        if call.when == "call" and world is not None:
            data["faults_met"] = faults_met(world)
            data["summary"] = world.trace.summary()
            data["world_file"] = world.spec.path
            self.logs.put(item.nodeid, world, data)  # as text only for who needs it
            data["state_hash"] = world.state_hash()
            grade_run(item, world, report, data)  # policies, expectations, milestones
            run_usage(item, report, world, data)  # figures, and a budget that fails the run
        if (
            call.when == "call"
            and report.failed
            and base["min_pass_rate"] is not None
            and "problem" not in data
        ):
            # Tolerated: not a failure for pytest (the gate decides the exit status, and the
            # gate is a test case of its own in JUnit XML: `_plugin/_ci.py`), shown as
            # TOLERATED. Not a skip either: the run ran. Its test case says what it was in
            # its properties (faultbench_outcome, faultbench_failure).
            report.outcome = "passed"
            report.longrepr = None
            data["tolerated"] = True
            item.stash[TOLERATED_KEY] = data.get("message") or "failed"
        if call.when == "teardown":
            report.user_properties.append(("faultbench_run", base["run"]))
            tolerated = item.stash.get(TOLERATED_KEY, None)
            if tolerated is not None:
                rate = base["min_pass_rate"]
                report.user_properties += [
                    ("faultbench_outcome", f"tolerated failure (min_pass_rate={rate:g})"),
                    ("faultbench_failure", tolerated),
                ]
            if world is not None:
                report.user_properties.append(("faultbench_calls", world.trace.summary()))
                report.user_properties.append(("faultbench_state_hash", world.state_hash()))
            # The item lives until the session ends; its world need not. Kept, every run's
            # world (~150 objects) would stay for the garbage collector to walk on each full
            # collection: 1,000 runs made those collections several times costlier (issue 24).
            if WORLD_KEY in item.stash:
                del item.stash[WORLD_KEY]
            if COMMAND_KEY in item.stash:
                del item.stash[COMMAND_KEY]
        # A report may carry extra attributes (pytest's TestReport says so); JSON types only,
        # so that pytest-xdist carries it from worker to controller.
        report.faultbench = data
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: Any, config: pytest.Config) -> Any:
        data = getattr(report, "faultbench", None)
        if data is not None and data.get("tolerated") and report.when == "call":
            return "tolerated", "t", ("TOLERATED", {"yellow": True})
        if data is not None and data.get("problem") and report.when == "call" and report.failed:
            # never reached the agent: an error, as a fixture's failure is
            return "error", "E", ("ERROR", {"red": True})
        return None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        if RUN_KEY not in item.stash:
            return (yield)
        from faultbench.kernel.lowlevel import recording_agent_calls

        with recording_agent_calls() as calls:
            item.stash[AGENT_CALLS_KEY] = calls
            return (yield)

    # --- where reports meet ------------------------------------------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # On the controller: the collection order, so groups are listed as without xdist.
        for position, nodeid in enumerate(ids):
            self.order.setdefault(nodeid, position)

    @pytest.hookimpl(tryfirst=True)  # before junitxml reads user_properties
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "faultbench", None)
        if data is None:
            return
        if (
            report.when == "call"
            and self.events_dir is not None
            and not self.worker
            and data.get("events") is not None
        ):
            data["events_file"] = self._write_events(report.nodeid, data["events"])
        group = self.tally.add(report, data)
        if report.when == "call":
            self.logs.attach(self.tally, report.nodeid)
        if group is not None and group.complete and not self.worker:
            report.user_properties.extend(group_properties(group))

    def _write_events(self, nodeid: str, events: str) -> str:
        assert self.events_dir is not None
        self.events_dir.mkdir(parents=True, exist_ok=True)
        name = nodeid.replace("::", ".").replace("/", ".").replace("[", ".").rstrip("]")
        name = re.sub(r"[^\w.\-]+", "_", name)
        path = self.events_dir / f"{name}.jsonl"
        path.write_text(events)
        return os.path.relpath(path) if not path.is_absolute() else str(path)

    @pytest.hookimpl(tryfirst=True)  # before junitxml writes its file
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.worker:
            return
        groups = self._groups()
        gates = [g.gate() for g in groups]
        counted = [(g, gate) for g, gate in zip(groups, gates) if gate.planned or gate.errors]
        self.failed_gates = [g for g, gate in counted if not gate.ok]
        if self.failed_gates and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        send_gate_reports(
            self.config,
            [(g, gate.ok, self._lines(g), group_properties(g)) for g, gate in counted],
        )
        json_file = self.config.getoption("faultbench_json", None)
        if json_file:
            write_json(Path(json_file), [(g, gate) for g, gate in counted], self._reproduce)
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if _on_github() and summary and counted:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(step_summary([(g.name, gate) for g, gate in counted], self._display))
        # --faultbench-shrink, the session file next to the event logs, --faultbench-report
        self.outputs.finish(self._groups(every=True), self._reproduce)

    def _groups(self, *, every: bool = False) -> list[Group]:
        groups = list(self.tally.groups.values()) if every else self.tally.shown()
        last = len(self.order)

        def position(g: Group) -> int:
            return min((self.order.get(r.nodeid, last) for r in g.runs.values()), default=last)

        return sorted(groups, key=position)

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: Any) -> None:
        if self.worker:
            return
        groups = self._groups()
        if not groups:
            self.outputs.summary(terminalreporter)
            return
        terminalreporter.section("faultbench: pass rate over runs")
        verbose = config.get_verbosity() > 0
        for group in groups:
            lines = self._lines(group, verbose=verbose)
            for line in lines:
                markup = {}
                if line.startswith(self._display(group.name) + ":"):
                    markup = {"green": True} if group.gate().ok else {"red": True, "bold": True}
                terminalreporter.write_line(line, **markup)
            if _on_github() and group in self.failed_gates:
                terminalreporter.write_line(github_annotation(group, lines, self.config.rootpath))
        if self.failed_gates:
            # Counted in pytest's last line ("17 passed, 3 tolerated, 1 gate failed").
            key = "gate failed" if len(self.failed_gates) == 1 else "gates failed"
            terminalreporter.stats.setdefault(key, []).extend(self.failed_gates)
        self.outputs.summary(terminalreporter)  # shrinking's findings, where the report went

    def _lines(self, group: Group, *, verbose: bool = False) -> list[str]:
        """The summary's lines of `group`: its gate, failing runs, usage, runs needed."""
        lines = render_group(
            group,
            display=self._display,
            reproduce=self._reproduce,
            verbose=verbose,
            diff=self.config.getoption("faultbench_diff", "calls"),
        )
        extras = (group_usage(group)[0], runs_needed(group))
        return lines + ["    " + extra for extra in extras if extra is not None]

    def _display(self, nodeid: str) -> str:
        """`nodeid` with its file relative to the working directory, as pytest takes it."""
        path, sep, rest = nodeid.partition("::")
        full = self.config.rootpath / path
        try:
            rel = os.path.relpath(full, self.config.invocation_params.dir)
        except ValueError:  # another drive (Windows)
            return nodeid
        return rel.replace(os.sep, "/") + sep + rest

    def _reproduce(self, nodeid: str) -> str:
        """The command that runs `nodeid` again as this session ran it (`_reproduce.py`)."""
        if self._command is None:
            self._command = (launcher(), shaping_options(self.config))
        words, options = self._command
        return reproduce_command(self._display(nodeid), options, words)


def _agent_ran(
    item: pytest.Item, call: pytest.CallInfo[None], report: Any, world: Any, data: dict[str, Any]
) -> None:
    """Make a run whose agent never ran a set-up problem (`_plugin/_harness.py`), failed if it
    passed: a gate never passes on runs that tested nothing."""
    calls = item.stash.get(AGENT_CALLS_KEY, [])
    cause = never_awaited(calls)
    if cause is None and report.failed and call.excinfo is not None:
        cause = before_first_call(call.excinfo.value, world, calls)
    if cause is None:
        return
    data["problem"] = cause
    if not report.failed:
        report.outcome = "failed"
        report.longrepr = f"faultbench: {cause}"


def _on_github() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def _handler_tracebacks(world: Any) -> str:
    """The tracebacks of the run's handler bugs (internal errors), one block per call."""
    blocks = []
    for c in world.trace:
        if c.traceback:
            blocks.append(
                f"{c.tool} (call {c.call_id}): a bug in the world's handler\n{c.traceback}"
            )
    return "\n".join(blocks)


def _first_error(group: Group) -> int:
    return min(i for i, r in group.runs.items() if r.outcome == "error")
