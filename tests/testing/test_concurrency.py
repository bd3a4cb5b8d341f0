"""Concurrent runs (`--faultbench-concurrency N`, `@pytest.mark.runs(n, concurrency=k)`): the
runs of an async test's group run at once in one event loop, each in its own world, and give
the same reports, event logs (byte for byte) and gate as running them one by one, on asyncio
and on trio; an agent whose model awaits 0.5 s a turn runs 20 runs in a fraction of 20 x one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

SHOP = Path(__file__).parent / "shop" / "world.yaml"

#: a Pydantic AI agent whose model awaits LATENCY seconds a turn (a stand-in for a real
#: model's latency), reads an order and refunds it, retrying a refund that failed; the shop's
#: faults (503 reads, timeouts after commit) and model faults make the runs differ
SUITE = """
import asyncio
import os

import pytest
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel

from faultbench.integrations.pydantic_ai import run_agent

LATENCY = float(os.environ.get("LATENCY", "0.05"))


def model():
    async def respond(messages, info):
        await asyncio.sleep(LATENCY)
        returns = [
            p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
        ]
        if len(returns) == 0:
            return ModelResponse(parts=[ToolCallPart("get_order", {"id": "1"}, tool_call_id="c1")])
        if len(returns) == 1:
            args = {"order_id": "1", "amount": 10.0}
            return ModelResponse(parts=[ToolCallPart("issue_refund", args, tool_call_id="c2")])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond)


@pytest.mark.world("world.yaml")
@pytest.mark.faults()
@pytest.mark.runs(int(os.environ.get("RUNS", "8")))
@pytest.mark.min_pass_rate(0.75 if os.environ.get("RUNS", "8") != "1" else 1.0)  # 1 run: no rate
async def test_agent(mcp_server, world, faultbench_run):
    run = await run_agent(model(), "refund order 1", mcp=mcp_server)
    assert run.ok, repr(run.error)
    assert faultbench_run.index % 5 != 3, "run 3 and 8 fail on purpose"
    assert len(world.refunds.where(order_id="1")) == 1, "refunded twice"
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", world=SHOP.read_text())
    pytester.makepyfile(test_agent=SUITE)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return pytester


def _logs(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.jsonl"))}


def _summary(out: str) -> list[str]:
    """The faultbench summary and the outcome letters, without pytest's timing."""
    lines = out.splitlines()
    start = next(i for i, x in enumerate(lines) if "faultbench: pass rate over runs" in x)
    # a reproduce line carries the concurrency option the run had
    kept = [x for x in lines[start:] if " in " not in x or "passed" not in x]
    return [re.sub(r" --faultbench-concurrency \d+", "", x) for x in kept]


def test_concurrent_runs_give_the_logs_and_verdict_of_runs_one_by_one(suite, monkeypatch):
    monkeypatch.setenv("LATENCY", "0.02")
    one = suite.runpytest("-p", "no:cacheprovider", "--faultbench-events", "one", "-rA")
    many = suite.runpytest(
        "-p",
        "no:cacheprovider",
        "--faultbench-events",
        "many",
        "--faultbench-concurrency",
        "3",
        "-rA",
    )
    assert one.ret == many.ret
    logs = _logs(suite.path / "one")
    assert len(logs) >= 4  # early stop may decide before the 8th run: the same in both
    assert logs == _logs(suite.path / "many")
    assert b'"kind":"http_503"' in b"".join(logs.values())  # the faults made runs differ
    assert len(set(logs.values())) == len(logs)
    assert _summary(one.stdout.str()) == _summary(many.stdout.str().replace("many/", "one/"))
    # each run's own outcome, in the same order: run3 fails with its own message
    progress = [x for x in one.stdout.lines if x.startswith("test_agent.py ")]
    assert progress == [x for x in many.stdout.lines if x.startswith("test_agent.py ")]
    assert "t" in progress[0].split()[1]
    assert "run3 (tolerated)" in many.stdout.str()
    assert "run 3 and 8 fail on purpose" in many.stdout.str()


def _calls(recorder: pytest.HookRecorder) -> tuple[int, float]:
    """How many runs passed or were tolerated, and the seconds their calls took in all (the
    test bodies: collection and start-up left out)."""
    reports = [
        r
        for r in recorder.getreports("pytest_runtest_logreport")
        if r.when == "call" and "faultbench_gate" not in r.keywords  # a gate's own report
    ]
    done = [r for r in reports if r.passed or getattr(r, "faultbench", {}).get("tolerated")]
    return len(done), sum(r.duration for r in reports)


def test_twenty_runs_of_a_slow_model_take_a_fraction_of_twenty_times_one(suite, monkeypatch):
    """The model awaits 0.5 s a turn (3 turns a run): 20 runs at once take about one run's
    time. A ratio, not a time: generous for a loaded machine (ideal: 1/20 = 0.05)."""
    monkeypatch.setenv("LATENCY", "0.5")
    monkeypatch.setenv("RUNS", "1")
    args = ("-p", "no:cacheprovider", "--faultbench-no-early-stop")
    done, single = _calls(suite.inline_run(*args))
    assert done == 1
    monkeypatch.setenv("RUNS", "20")
    done, twenty = _calls(suite.inline_run(*args, "--faultbench-concurrency", "20"))
    assert done == 20
    assert single >= 1.5  # three turns of 0.5 s
    assert twenty < 0.5 * 20 * single, (twenty, single)


TRIO_SUITE = """
import anyio
import pytest


@pytest.fixture
def anyio_backend():
    return "trio"


@pytest.mark.anyio
@pytest.mark.world("world.yaml")
@pytest.mark.faults()
@pytest.mark.runs(6, concurrency=6)
@pytest.mark.min_pass_rate(0.1)
async def test_agent(world, trace):
    import trio  # the loop is trio's

    trio.lowlevel.current_task()
    for _ in range(3):
        await anyio.sleep(0.3)
        if (await world.acall("get_order", {"id": "1"})).ok:
            break
    for _ in range(3):
        await anyio.sleep(0.3)
        if (await world.acall("issue_refund", {"order_id": "1", "amount": 5.0})).ok:
            break
    assert trace.count("issue_refund") == 1, trace.summary()
"""


def test_concurrent_runs_on_trio_under_anyio(pytester: pytest.Pytester):
    pytest.importorskip("trio")
    pytester.makefile(".yaml", world=SHOP.read_text())
    pytester.makepyfile(test_trio=TRIO_SUITE)
    args = ("-p", "no:cacheprovider", "--faultbench-no-early-stop", "-rA")
    many = pytester.runpytest(*args, "--faultbench-events", "many")
    _done, concurrent = _calls(pytester.inline_run(*args))
    pytester.makepyfile(test_trio=TRIO_SUITE.replace("concurrency=6", "concurrency=1"))
    one = pytester.runpytest(*args, "--faultbench-events", "one")
    _done, sequential = _calls(pytester.inline_run(*args))
    logs = _logs(pytester.path / "one")
    assert len(logs) == 6
    assert logs == _logs(pytester.path / "many")
    assert _summary(one.stdout.str()) == _summary(many.stdout.str().replace("many/", "one/"))
    assert "[trio" not in many.stdout.str() or "deselected" in many.stdout.str()
    # 6 runs of >= 1.2 s of awaited sleeps: at once they take about one run's time
    assert concurrent < 0.5 * sequential, (concurrent, sequential)


def test_a_bad_concurrency_argument_is_a_collection_error(pytester):
    pytester.makepyfile(
        test_bad="""
import pytest

@pytest.mark.runs(2, concurrency=0)
async def test_bad(faultbench_run):
    pass
"""
    )
    out = pytester.runpytest("-p", "no:cacheprovider").stdout.str()
    assert (
        "test_bad.py::test_bad: Expected @pytest.mark.runs(n, concurrency=k) with an integer "
        "k >= 1 (the runs of an async test at once). Instead, received: concurrency=0"
    ) in out


def test_the_option_is_checked(pytester):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--faultbench-concurrency", "0")
    assert "Expected --faultbench-concurrency N with N >= 1. Instead, received: 0" in (
        result.stderr.str()
    )


#: run 0 waits until the group's last run has started; the others end at once. Batches of
#: two would never start run 5 while run 0 waits (run 0 times out); a sliding pool of two
#: starts every other run in the second lane meanwhile.
POOL_SUITE = """
import asyncio

import pytest

LAST_STARTED = asyncio.Event()
STARTED = []


@pytest.mark.world("world.yaml")
@pytest.mark.runs(6, concurrency=2)
@pytest.mark.min_pass_rate(1.0)
async def test_pool(world, faultbench_run):
    STARTED.append(faultbench_run.index)
    if faultbench_run.index == 5:
        LAST_STARTED.set()
    if faultbench_run.index == 0:
        await asyncio.wait_for(LAST_STARTED.wait(), 5)
    assert (await world.acall("get_order", {"id": "1"})).ok


def test_order():
    assert STARTED == [0, 1, 2, 3, 4, 5]
"""


def test_a_run_starts_as_soon_as_another_ends(pytester: pytest.Pytester):
    pytester.makefile(".yaml", world=SHOP.read_text())
    pytester.makepyfile(test_pool=POOL_SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=7)
    assert "test_pool.py::test_pool: 6/6 passed" in result.stdout.str()


#: every run passes; at 50% over 20 runs the gate is decided after 10 passes
EARLY_SUITE = """
import asyncio

import pytest

BODIES = []


@pytest.mark.world("world.yaml")
@pytest.mark.runs(20, concurrency=RUNS_AT_ONCE)
@pytest.mark.min_pass_rate(0.5)
async def test_early(world, faultbench_run):
    BODIES.append(faultbench_run.index)
    await asyncio.sleep(0.01 * (faultbench_run.index % 3))


def test_bodies():
    print("BODIES", sorted(BODIES))
"""


@pytest.mark.parametrize("at_once", [1, 4])
def test_a_pool_stops_starting_runs_once_the_gate_is_decided(pytester, at_once):
    pytester.makefile(".yaml", world=SHOP.read_text())
    pytester.makepyfile(test_early=EARLY_SUITE.replace("RUNS_AT_ONCE", str(at_once)))
    result = pytester.runpytest("-p", "no:cacheprovider", "-s", "-rA")
    result.assert_outcomes(passed=11, skipped=10)
    out = result.stdout.str()
    bodies = [int(x) for x in re.search(r"BODIES \[([\d, ]*)\]", out)[1].split(", ")]
    # as serially: runs 0-9 decide the gate, the later ones are skipped; a pool stops
    # starting runs once runs 0-9 have ended (those it started while one of them was still
    # going are thrown away)
    assert bodies[:10] == list(range(10))
    assert len(bodies) < 20 if at_once > 1 else len(bodies) == 10, bodies
