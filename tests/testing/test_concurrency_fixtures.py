"""Concurrent runs make each run's own fixtures (`_plugin/_perrun.py`): a fixture built from
`world` acts on its run's world, a stateful fixture is one per run, yield fixtures are torn
down after each run, set-up and teardown errors are the run's own; and all of it under each
runner of coroutine tests: faultbench's own, anyio's plugin, pytest-asyncio and pytest-trio.
The event logs (byte for byte), outcomes, and what the fixtures did are those of running the
runs one by one."""

from __future__ import annotations

from pathlib import Path

import pytest

SHOP = Path(__file__).parent / "shop" / "world.yaml"

#: an agent object made per run from `world`, holding the run's calls in a list (another
#: fixture); a yield fixture whose teardown fails in run 4, one whose set-up fails in run 5,
#: an async generator fixture (where the runner has async fixtures); FB_LOG gets a line per
#: fixture set-up and teardown, FB_PEAK how many runs were in their bodies at once
SUITE = """
import os
from pathlib import Path

import anyio
import pytest
{imports}

LOG = Path(os.environ["FB_LOG"])
PEAK = Path(os.environ["FB_PEAK"])
ACTIVE = [0]


def note(path, line):
    with path.open("a") as f:
        f.write(line + "\\n")


class Agent:
    def __init__(self, world, run, calls):
        self.world = world
        self.run = run
        self.calls = calls

    async def call(self, tool, args):
        for _ in range(3):
            await anyio.sleep(0.02)
            result = await self.world.acall(tool, args)
            self.calls.append((tool, result.ok))
            if result.ok:
                return


@pytest.fixture
def calls():
    return []


@pytest.fixture
def agent(world, faultbench_run, calls, request):
    note(LOG, f"set up agent of {{request.node.name}} (run {{faultbench_run.index}})")
    yield Agent(world, faultbench_run.index, calls)
    note(LOG, f"tore down agent of run {{faultbench_run.index}}: {{len(calls)}} calls")
    if faultbench_run.index == 4:
        raise RuntimeError("the teardown of run 4 fails on purpose")


@pytest.fixture
def broken(faultbench_run):
    if faultbench_run.index == 5:
        raise RuntimeError("the set-up of run 5 fails on purpose")


{token}

{backend}

{mark}
@pytest.mark.world("world.yaml")
@pytest.mark.faults()
@pytest.mark.runs(6)
@pytest.mark.min_pass_rate(0.1)
async def test_agent(agent, world, trace, calls, faultbench_run, broken, token):
    ACTIVE[0] += 1
    try:
        assert agent.world is world and agent.run == faultbench_run.index
        assert token == f"token of run {{faultbench_run.index}}"
        await agent.call("get_order", {{"id": "1"}})
        await agent.call("issue_refund", {{"order_id": "1", "amount": 5.0}})
        note(PEAK, str(ACTIVE[0]))
        # the list holds this run's calls, all of them and no other run's
        assert len(calls) == len(trace), (calls, trace.summary())
        assert faultbench_run.index != 2, "run 2 fails on purpose"
    finally:
        ACTIVE[0] -= 1
"""

ASYNC_TOKEN = """
@{decorator}
async def token(agent):
    await anyio.sleep(0.01)
    note(LOG, f"set up token of run {{agent.run}}")
    yield f"token of run {{agent.run}}"
    await anyio.sleep(0.01)
    note(LOG, f"tore down token of run {{agent.run}}")
"""

SYNC_TOKEN = """
@pytest.fixture
def token(agent):
    note(LOG, f"set up token of run {agent.run}")
    yield f"token of run {agent.run}"
    note(LOG, f"tore down token of run {agent.run}")
"""

RUNNERS = {
    "faultbench": {"imports": "", "token": SYNC_TOKEN, "backend": "", "mark": ""},
    "anyio": {
        "imports": "",
        "token": ASYNC_TOKEN.format(decorator="pytest.fixture"),
        "backend": '@pytest.fixture\ndef anyio_backend():\n    return "asyncio"\n',
        "mark": "@pytest.mark.anyio",
    },
    "anyio-trio": {
        "imports": "",
        "token": ASYNC_TOKEN.format(decorator="pytest.fixture"),
        "backend": '@pytest.fixture\ndef anyio_backend():\n    return "trio"\n',
        "mark": "@pytest.mark.anyio",
    },
    "pytest-asyncio": {
        "imports": "import pytest_asyncio",
        "token": ASYNC_TOKEN.format(decorator="pytest_asyncio.fixture"),
        "backend": "",
        "mark": "@pytest.mark.asyncio",
    },
    "pytest-trio": {
        "imports": "",
        "token": ASYNC_TOKEN.format(decorator="pytest.fixture"),
        "backend": "",
        "mark": "@pytest.mark.trio",
    },
}
NEEDS = {"anyio-trio": "trio", "pytest-asyncio": "pytest_asyncio", "pytest-trio": "pytest_trio"}


def _logs(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.jsonl"))}


def _outcomes(out: str) -> list[str]:
    """The short summary's line per run (-rA) and the error sections' titles."""
    lines = out.splitlines()
    return [x for x in lines if x.startswith(("PASSED ", "FAILED ", "ERROR ", "_" * 5))]


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, name: str, *args: str):
    log, peak = pytester.path / f"{name}.log", pytester.path / f"{name}.peak"
    monkeypatch.setenv("FB_LOG", str(log))
    monkeypatch.setenv("FB_PEAK", str(peak))
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--faultbench-no-early-stop",
        "--faultbench-events",
        name,
        "-rA",
        *args,
    )
    return result, log.read_text().splitlines(), [int(x) for x in peak.read_text().split()]


@pytest.mark.parametrize("runner", list(RUNNERS))
def test_each_run_of_a_batch_has_its_own_fixtures(pytester, monkeypatch, runner):
    if runner in NEEDS:
        pytest.importorskip(NEEDS[runner])
    pytester.makefile(".yaml", world=SHOP.read_text())
    pytester.makepyfile(test_agent=SUITE.format(**RUNNERS[runner]))
    pytester.makeini(
        "[pytest]\nasyncio_mode = strict\nasyncio_default_fixture_loop_scope = function\n"
    )
    one, one_log, one_peak = _run(pytester, monkeypatch, "one")
    many, many_log, many_peak = _run(pytester, monkeypatch, "many", "--faultbench-concurrency", "3")
    out = many.stdout.str()
    # the runs ran at once (two batches of three), and alone without the option
    assert one_peak == [1] * 5  # runs 0 to 4 reach it
    assert max(many_peak) == 3, (many_peak, out)
    # same logs, byte for byte, and the faults made the runs differ
    logs = _logs(pytester.path / "one")
    assert len(logs) == 5  # not run 5's: its set-up failed
    assert logs == _logs(pytester.path / "many")
    assert len(set(logs.values())) == 5
    # same outcomes: run 2 fails, run 4's teardown and run 5's set-up are errors of their own
    assert one.ret == many.ret
    assert _outcomes(one.stdout.str()) == _outcomes(out)
    assert "ERROR test_agent.py::test_agent[run4] - RuntimeError: the teardown of run 4" in out
    assert "ERROR test_agent.py::test_agent[run5] - RuntimeError: the set-up of run 5" in out
    assert "ERROR at teardown of test_agent[run4]" in out
    assert "ERROR at setup of test_agent[run5]" in out
    assert "run2 (tolerated)" in out  # (pytest-trio reports it in an ExceptionGroup)
    many.assert_outcomes(passed=4, failed=0, errors=2)
    # each fixture was made once per run, from the run's own item, and torn down once: the
    # same lines, in another order (a batch sets its runs up together)
    assert sorted(one_log) == sorted(many_log)
    assert len([x for x in many_log if x.startswith("set up agent of test_agent[run")]) == 6
    assert "set up agent of test_agent[run3] (run 3)" in many_log
    assert len([x for x in many_log if x.startswith("tore down agent")]) == 6
    assert len([x for x in many_log if x.startswith("tore down token")]) == 5  # not run 5's
    # each run's teardown after its own set-up, the token before the agent it takes
    for run in range(5):
        assert many_log.index(f"set up token of run {run}") < many_log.index(
            f"tore down token of run {run}"
        )
        tore_token = many_log.index(f"tore down token of run {run}")
        tore_agent = next(
            i for i, x in enumerate(many_log) if x.startswith(f"tore down agent of run {run}:")
        )
        assert tore_token < tore_agent


REFUSED = """
import pytest


@pytest.mark.world("world.yaml")
@pytest.mark.runs(2, concurrency=2)
async def test_takes_mcp_command(mcp_command):
    pass


@pytest.mark.world("world.yaml")
@pytest.mark.runs(2, concurrency=2)
async def test_reads_a_request_attribute(world, reads_request):
    pass


@pytest.fixture
def reads_request(request):
    return request.session


@pytest.fixture
def asks_for_the_world(request):
    return request.getfixturevalue("world")


@pytest.mark.world("world.yaml")
@pytest.mark.runs(3, concurrency=3)
async def test_asks_for_the_world(world, asks_for_the_world):
    assert asks_for_the_world is world


@pytest.mark.world("world.yaml")
@pytest.mark.runs(2, concurrency=2)
async def test_takes_a_plugins_fixture_of_the_world(plugins_agent):
    pass
"""

#: a plugin's fixture (not the test's own): shared by a batch's runs, so one that takes
#: `world` is refused
PLUGIN = """
import pytest


@pytest.fixture
def plugins_agent(world):
    return world
"""


def test_what_a_batch_cannot_make_is_an_error_that_says_why(pytester):
    pytester.makefile(".yaml", world=SHOP.read_text())
    pytester.makepyfile(test_refused=REFUSED, fb_agents_plugin=PLUGIN)
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "fb_agents_plugin", "-rA")
    out = result.stdout.str()
    assert "takes mcp_command, which serves the run's world from a server per run" in out
    # run 1's fixture reads what a run of a batch does not have: its own set-up error
    assert "ERROR at setup of test_reads_a_request_attribute[run1]" in out
    assert (
        "AttributeError: test_refused.py::test_reads_a_request_attribute[run1]: runs "
        "concurrently, and its fixture `reads_request` reads request.session, which a batch's "
        "run does not have (its fixtures are made outside pytest's set-up). Run this test with "
        "@pytest.mark.runs(n, concurrency=1)."
    ) in out
    assert "PASSED test_refused.py::test_reads_a_request_attribute[run0]" in out
    # request.getfixturevalue in a fixture made for a run gives that run's value
    for run in range(3):
        assert f"PASSED test_refused.py::test_asks_for_the_world[run{run}]" in out
    assert (
        "test_refused.py::test_takes_a_plugins_fixture_of_the_world[run0]: runs concurrently, "
        "and the fixture `plugins_agent` (of fb_agents_plugin, pytest's or a plugin's) takes "
        "`world`. A batch makes the test's own fixtures again for each run, but shares "
        "pytest's and plugins' fixtures, so every run's `plugins_agent` would act on the first "
        "run's `world`."
    ) in out


CLASS = """
import anyio
import pytest


@pytest.fixture(params=["careful"])
def policy(request):
    return request.param


class TestAgent:
    @pytest.fixture
    def agent(self, world, policy):
        self.made = (world, policy)
        return self

    @pytest.mark.world("world.yaml")
    @pytest.mark.faults()
    @pytest.mark.runs(4, concurrency=4)
    async def test_agent(self, agent, world, policy, faultbench_run):
        await anyio.sleep(0.01)
        # the fixture method ran on this run's own instance of the class, with its world
        assert agent is self and self.made == (world, "careful")
        await world.acall("get_order", {"id": "1"})
"""


def test_a_fixture_method_and_a_parametrized_fixture_are_made_per_run(pytester, monkeypatch):
    pytester.makefile(".yaml", world=SHOP.read_text())
    pytester.makepyfile(test_class=CLASS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=4)
    for run in range(4):
        assert f"PASSED test_class.py::TestAgent::test_agent[careful-run{run}]" in (
            result.stdout.str()
        )


FINALIZERS = """
import os
from pathlib import Path

import anyio
import pytest

LOG = Path(os.environ["FB_LOG"])


def note(line):
    with LOG.open("a") as f:
        f.write(line + "\\n")


@pytest.fixture
def session(request, faultbench_run):
    request.addfinalizer(lambda: note(f"closed session of run {faultbench_run.index}"))
    return f"session {faultbench_run.index}"


@pytest.mark.world("world.yaml")
@pytest.mark.runs(3, concurrency=3)
async def test_agent(session, faultbench_run):
    await anyio.sleep(0.01)
    note(f"{session} ran in run {faultbench_run.index}")
"""


def test_a_finalizer_a_fixture_adds_runs_after_its_own_run(pytester, monkeypatch):
    pytester.makefile(".yaml", world=SHOP.read_text())
    pytester.makepyfile(test_finalizers=FINALIZERS)
    log = pytester.path / "log"
    monkeypatch.setenv("FB_LOG", str(log))
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=3)
    lines = log.read_text().splitlines()
    assert sorted(lines) == sorted(
        [f"session {i} ran in run {i}" for i in range(3)]
        + [f"closed session of run {i}" for i in range(3)]
    )
    for i in range(3):
        assert lines.index(f"session {i} ran in run {i}") < lines.index(
            f"closed session of run {i}"
        )
