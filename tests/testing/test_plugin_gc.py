"""The collector while runs run (`_plugin/_gc.py`), and what a finished run's item keeps.

Each check runs in a fresh pytest process: the settings are process-wide, and the suite
running these tests has runs of its own."""

from __future__ import annotations

import pytest

PROBE = """
import gc
import json
import weakref

import pytest

SEEN = {}
WORLDS = []

def pytest_collection_finish(session):
    SEEN["after collection"] = [gc.get_threshold()[0], gc.get_freeze_count()]

def pytest_unconfigure(config):
    SEEN["after the session"] = [gc.get_threshold()[0], gc.get_freeze_count()]
    with open("seen.json", "w") as f:
        json.dump(SEEN, f)
"""

RUNS = """
import gc
import weakref

import pytest
from conftest import SEEN, WORLDS

@pytest.mark.world("world.yaml")
@pytest.mark.runs(3)
def test_a_run(world):
    SEEN.setdefault("in a run", []).append([gc.get_threshold()[0], gc.get_freeze_count() > 0])
    world.call("get_order", {"id": "1"})
    WORLDS.append(weakref.ref(world))

def test_z_after_the_runs():
    gc.collect()
    SEEN["worlds alive"] = sum(ref() is not None for ref in WORLDS)
"""

# the same runs in one batch of three: a batch keeps each run's world until the run's turn
CONCURRENT = RUNS.replace(
    "@pytest.mark.runs(3)\ndef test_a_run",
    "@pytest.mark.runs(3, concurrency=3)\nasync def test_a_run",
)

PLAIN = """
import gc
from conftest import SEEN

def test_plain():
    SEEN["in a plain test"] = [gc.get_threshold()[0], gc.get_freeze_count()]
"""


def _seen(fb: pytest.Pytester, *args: str, passed: int) -> dict[str, object]:
    import json

    # conftest before anything freezes, then a fresh process: the settings are the process's
    fb.makeconftest(PROBE)
    result = fb.runpytest_subprocess("-p", "no:trio", *args)
    result.assert_outcomes(passed=passed)
    return json.loads((fb.path / "seen.json").read_text())


def test_runs_run_with_the_collector_tuned_and_it_is_restored_after(fb: pytest.Pytester) -> None:
    fb.makepyfile(test_runs=RUNS)
    seen = _seen(fb, passed=4)
    default = 700  # CPython's threshold, untouched until collection ends
    assert seen["after collection"] == [default, 0]
    assert seen["in a run"] == [[5000, True]] * 3
    assert seen["after the session"] == [default, 0]


@pytest.mark.parametrize("source", [RUNS, CONCURRENT], ids=["one by one", "in a batch"])
def test_a_finished_run_keeps_no_world(fb: pytest.Pytester, source: str) -> None:
    # Items live until the session ends; a world kept on each would be walked by every full
    # collection (and held in memory) for the rest of the session.
    assert "async def" in CONCURRENT
    fb.makepyfile(test_runs=source)
    assert _seen(fb, passed=4)["worlds alive"] == 0


def test_the_collector_is_left_alone_when_asked_or_without_runs(fb: pytest.Pytester) -> None:
    fb.makepyfile(test_runs=RUNS)
    seen = _seen(fb, "--faultbench-gc=default", passed=4)
    assert seen["in a run"] == [[700, False]] * 3
    assert seen["worlds alive"] == 0
    (fb.path / "test_runs.py").unlink()
    fb.makepyfile(test_plain=PLAIN)
    assert _seen(fb, passed=1)["in a plain test"] == [700, 0]


def test_a_bad_gc_choice_is_a_usage_error(fb: pytest.Pytester) -> None:
    fb.makepyfile(test_plain=PLAIN)
    result = fb.runpytest("--faultbench-gc=off")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--faultbench-gc: invalid choice: 'off'*"])
