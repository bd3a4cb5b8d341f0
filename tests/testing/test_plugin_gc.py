"""The collector while runs run (`_plugin/_gc.py`), and what a finished run's item keeps.

Each check runs in a fresh pytest process: the settings are process-wide, and the suite
running these tests has runs of its own."""

from __future__ import annotations

import pytest

PROBE = """
import atexit
import gc
import json
import traceback
import weakref

import pytest

SEEN = {}
WORLDS = []

WHO = ["main"]  # or the xdist worker's id (not from the environment: it may be an outer run's)

def pytest_configure(config):
    if hasattr(config, "workerinput"):
        WHO[0] = config.workerinput["workerid"]

PYTEST_S = []  # for each full collection pytest itself ran after the session: was the heap frozen?

@atexit.register  # before the plugin's own handler, so it runs after it (last in, first out)
def _at_exit():
    with open(f"exit-{WHO[0]}.json", "w") as f:
        json.dump({"frozen at exit": gc.get_freeze_count() > 0, "pytest's": PYTEST_S}, f)

def pytest_collection_finish(session):
    SEEN["after collection"] = [gc.get_threshold()[0], gc.get_freeze_count()]

def _full_collection(phase, info):
    if phase == "start" and info["generation"] == 2 and "ended" in SEEN:
        stack = traceback.extract_stack()
        if any(f.filename.endswith("_pytest/unraisableexception.py") for f in stack):
            PYTEST_S.append(gc.get_freeze_count() > 0)

gc.callbacks.append(_full_collection)

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    SEEN["ended"] = True

def pytest_unconfigure(config):
    SEEN["after the session"] = [gc.get_threshold()[0], gc.get_freeze_count() > 0]
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
    seen: dict[str, object] = json.loads((fb.path / "seen.json").read_text())
    return seen | json.loads((fb.path / "exit-main.json").read_text())


def test_runs_run_with_the_collector_tuned_and_it_is_restored_after(fb: pytest.Pytester) -> None:
    fb.makepyfile(test_runs=RUNS)
    seen = _seen(fb, passed=4)
    default = 700  # CPython's threshold, untouched until collection ends
    assert seen["after collection"] == [default, 0]
    assert seen["in a run"] == [[5000, True]] * 3
    assert seen["after the session"] == [default, False]
    # pytest's own full collections at the end (8.4+) see the whole heap, so a `__del__`
    # that raises is reported whatever was frozen (test_an_unraisable_exception_is_reported)
    _pytests_collections(seen, frozen=False)
    assert seen["frozen at exit"] is False  # only fast-exit changes how the process exits
    seen = _seen(fb, "--faultbench-gc=fast-exit", passed=4)
    assert seen["in a run"] == [[5000, True]] * 3
    # fast-exit: the thresholds are back, the heap frozen until the config's cleanup, so
    # that pytest's own collections skip it; then frozen again at exit
    assert seen["after the session"] == [default, True]
    _pytests_collections(seen, frozen=True)
    assert seen["frozen at exit"] is True  # so CPython's final collections skip the heap


def _pytests_collections(seen: dict[str, object], *, frozen: bool) -> None:
    collections = seen["pytest's"]
    assert isinstance(collections, list)
    if pytest.version_tuple >= (8, 4):  # unraisableexception collects at the end since 8.4
        assert collections
    assert collections == [frozen] * len(collections)


UNRAISABLE = """
import pytest

class Cycle:
    def __init__(self):
        self.me = self

    def __del__(self):
        raise ValueError("raised in __del__")

DROPPED = [Cycle()]  # alive when collection ends, so frozen during the runs

@pytest.mark.world("world.yaml")
@pytest.mark.runs(2)
def test_drops_it(world, faultbench_run):
    world.call("get_order", {"id": "1"})
    if faultbench_run.index == 1:
        DROPPED.clear()  # garbage now, in a cycle: only a full collection frees it
"""


@pytest.mark.skipif(pytest.version_tuple < (8, 4), reason="pytest < 8.4 collects nothing at exit")
def test_an_unraisable_exception_is_reported_though_its_object_was_frozen(
    fb: pytest.Pytester,
) -> None:
    # The default unfreezes in pytest_sessionfinish, before pytest's own collections, so the
    # `__del__` that raises is reported as without the plugin; fast-exit says it is not.
    fb.makepyfile(test_unraisable=UNRAISABLE)
    strict = ("-p", "no:trio", "-W", "error::pytest.PytestUnraisableExceptionWarning")
    result = fb.runpytest_subprocess(*strict)
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*PytestUnraisableExceptionWarning*Cycle.__del__*"])
    result = fb.runpytest_subprocess(*strict, "--faultbench-gc=fast-exit")
    assert result.ret == 0, result.stdout.str()


def test_under_xdist_the_controller_and_the_workers_exit_fast_when_asked(
    fb: pytest.Pytester,
) -> None:
    import json

    fb.makepyfile(test_runs=RUNS)
    fb.makeconftest(PROBE)
    for option, frozen in (("--faultbench-gc=fast-exit", True), ("--faultbench-gc=tuned", False)):
        fb.runpytest_subprocess("-p", "no:trio", "-n", "2", option).assert_outcomes(passed=4)
        for process in ("main", "gw0", "gw1"):  # main: the controller, which collects nothing
            exit_file = fb.path / f"exit-{process}.json"
            seen = json.loads(exit_file.read_text())
            assert seen["frozen at exit"] is frozen, process
            if process != "main":  # a worker: pytest's collections skip the heap with fast-exit
                _pytests_collections(seen, frozen=frozen)
            exit_file.unlink()


LEFT_AT_EXIT = """
import atexit
import weakref

import pytest

class Kept:
    log = open("class.txt", "w")  # a class attribute: only the final collections finalize it

    def __init__(self):
        self.me = self  # a cycle, kept by a module global until exit
        self.log = open("cycle.txt", "w")

EXITING = []

class Proxy:  # a lazy proxy: reading its __class__ loads what it stands for
    @property
    def __class__(self):
        if EXITING:  # collection reads it too; only the interpreter's exit counts here
            open("loaded.txt", "w").close()
        return Proxy

LOG = open("log.txt", "w")  # buffered and never closed: flushed when the module is torn down
KEPT = Kept()
PROXY = Proxy()

@pytest.mark.world("world.yaml")
@pytest.mark.runs(2)
def test_leaves_things_for_exit(world):
    world.call("get_order", {"id": "1"})
    for log in (LOG, Kept.log, KEPT.log):
        log.write("a line written in a run\\n")
    weakref.finalize(KEPT, open, "finalized.txt", "a")  # runs at exit: KEPT lives until then
    atexit.register(open, "atexit.txt", "a")  # registered after the plugin's: runs before it
    atexit.register(EXITING.append, True)
"""


def test_what_exit_does_still_happens_with_the_heap_frozen(fb: pytest.Pytester) -> None:
    # With fast-exit, atexit handlers (weakref.finalize among them) run and every open file's
    # buffered output is written, however the file is kept alive, as without it. (Without the
    # flush before the freeze, the files only a class or a cycle kept were left empty.) The
    # search for open files asks no object its __class__: the openai package's lazy proxies
    # load what they stand for when asked (2 s at exit of an Agents SDK worker).
    fb.makepyfile(test_exit=LEFT_AT_EXIT)
    written = "a line written in a run\n" * 2
    for option, frozen in (("--faultbench-gc=fast-exit", True), ("--faultbench-gc=tuned", False)):
        for name in ("log.txt", "class.txt", "cycle.txt", "finalized.txt", "atexit.txt"):
            (fb.path / name).unlink(missing_ok=True)
        (fb.path / "loaded.txt").unlink(missing_ok=True)
        assert _seen(fb, option, passed=2)["frozen at exit"] is frozen
        for name in ("log.txt", "class.txt", "cycle.txt"):
            assert (fb.path / name).read_text() == written, (option, name)
        assert (fb.path / "finalized.txt").exists()
        assert (fb.path / "atexit.txt").exists()
        assert not (fb.path / "loaded.txt").exists()  # looking for files loads no proxy


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
    assert seen["after the session"] == [700, False]
    _pytests_collections(seen, frozen=False)
    assert seen["worlds alive"] == 0
    assert seen["frozen at exit"] is False
    (fb.path / "test_runs.py").unlink()
    fb.makepyfile(test_plain=PLAIN)
    seen = _seen(fb, "--faultbench-gc=fast-exit", passed=1)
    assert seen["in a plain test"] == [700, 0]
    assert seen["frozen at exit"] is False


def test_a_bad_gc_choice_is_a_usage_error(fb: pytest.Pytester) -> None:
    fb.makepyfile(test_plain=PLAIN)
    result = fb.runpytest("--faultbench-gc=off")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--faultbench-gc: invalid choice: 'off'*"])
