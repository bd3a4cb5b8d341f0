"""Options, markers and runs as items: the plugin's command-line options, its set-up and
tear-down of a session (the parts it registers), the checks of a test's marks, and the
parametrization that makes each run an item (`test_x[run4]`); an `async def` test no async
plugin took runs on asyncio (`_plugin/_async.py`)."""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest

from ..._gate._checks import foreign_mark, gate_too_small
from ..._gate._runs import MARKERS, RUN_PARAM, group_of, near_miss, registered_markers, run_id
from .._async import run_coroutine_test, trio_variants
from .._compare import ComparePlugin
from .._concurrent import ConcurrentRuns, add_concurrency_option
from .._gc import RunLoopGC, add_gc_option
from .._outputs import add_output_options
from ._fixtures import adopt_world, concurrency_of, concurrent_run, group_of_item
from ._session import SESSION_KEY, FaultbenchSession
from ._stash import RUN_KEY, SPECS_KEY, is_faultbench, plan_of, runs_of

__all__ = [
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_generate_tests",
    "pytest_make_collect_report",
    "pytest_pyfunc_call",
    "pytest_unconfigure",
]


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
        "--faultbench-seed",
        type=int,
        metavar="N",
        default=None,
        help="seed every test's world with N (its seed rows and its runs' fault draws), "
        "overriding @pytest.mark.seed and the world file's seed: another sample of the "
        "same gate; failing runs' reproduce lines carry it",
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
    seed = config.getoption("faultbench_seed", None)
    if seed is not None and seed < 0:
        raise pytest.UsageError(
            f"Expected --faultbench-seed N with N >= 0. Instead, received: {seed}"
        )
    session = FaultbenchSession(config)
    config.stash[SESSION_KEY] = session
    config.stash[SPECS_KEY] = {}
    config.pluginmanager.register(session, "faultbench-session")
    config.pluginmanager.register(ComparePlugin(session), "faultbench-compare")
    config.pluginmanager.register(
        ConcurrentRuns(
            config,
            concurrency_of=concurrency_of,
            make_run=concurrent_run,
            adopt=adopt_world,
            group_of=group_of_item,
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
    plan = plan_of(metafunc.definition, keep=False)
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
    n = runs_of(metafunc.config, plan)
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
    others = trio_variants(items, is_faultbench)
    if others:
        drop = set(map(id, others))
        items[:] = [item for item in items if id(item) not in drop]
        config.hook.pytest_deselected(items=others)
    for position, item in enumerate(items):
        state.order.setdefault(item.nodeid, position)
        callspec = getattr(item, "callspec", None)
        if callspec is None or RUN_PARAM not in callspec.params:
            continue
        plan = plan_of(item, keep=False)
        if plan is None:
            continue
        index = callspec.params[RUN_PARAM]
        data = {
            "group": group_of(item.nodeid, index),
            "run": index,
            "total": runs_of(config, plan),
            "min_pass_rate": plan.min_pass_rate,
        }
        item.stash[RUN_KEY] = data
        state.planned[data["group"]] = state.planned.get(data["group"], 0) + 1


@pytest.hookimpl
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """An `async def` faultbench test no async plugin took runs on asyncio (`_async.py`)."""
    if not is_faultbench(pyfuncitem):
        return None
    return True if run_coroutine_test(pyfuncitem) else None
