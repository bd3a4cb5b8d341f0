"""The garbage collector while a suite's runs run (issue 24: the per-run cost of a suite).

When collection ends, the heap holds what the tests imported (an agent framework, mcp,
pydantic's schemas: ~230,000 tracked objects for the shop example under Pydantic AI), and it
holds them until the process exits. CPython's full collections walk every one of them each
time, and an agent run allocates enough to trigger one every ~140 runs: in the 1,000-run
shop suite they were 1.1 s of ~13 s under Pydantic AI and 2.1 s under the Agents SDK, on the
2-core machine of docs/BENCHMARKS.md, where one walk of that heap takes ~0.2 s.

So for a session that has runs, from the end of collection to the session's end:

- the objects alive when collection ends move to the permanent generation (`gc.freeze()`):
  the collector no longer walks them. One of them that becomes garbage in a reference cycle
  during the session is freed by the first full collection after the session.
- the youngest generation's threshold rises from CPython's 700 allocations to 5,000, so the
  many short-lived objects of an agent run die by reference counting before a collection
  sees them, and fewer reach the older generations.

Both are undone in `pytest_sessionfinish`: the thresholds as they were, and `gc.unfreeze()`
unless something else had frozen objects before (it cannot be undone in part; a pytest
session inside another, as pytester runs them, leaves the outer session's frozen objects
frozen). So pytest's own full collections at the end (from pytest 8.4, for the unraisable
exceptions of `__del__` methods: in a cleanup of the config, and in recent versions in
`pytest_unconfigure` too) see the whole heap, and an object frozen at collection's end (a
test module's global, say) whose `__del__` raises once a test drops it is reported as a
`PytestUnraisableExceptionWarning`, as without the plugin.

`--faultbench-gc=fast-exit` does the same, except that the heap stays frozen until a cleanup
of the config that the plugin adds in its `pytest_configure`. pytest calls an installed
plugin's `pytest_configure` before its built-in plugins' (unraisableexception's among them),
so that cleanup runs after the cleanups they add, and after every `pytest_unconfigure`:
pytest's own full collections at the end skip the heap. From `pytest_sessionfinish` to the
process's end, the 300-run shop suite under Pydantic AI took 0.34-0.39 s with the heap
unfrozen there and 0.13-0.18 s with it frozen (inside pytest's time for an xdist worker); an
object frozen at collection's end whose `__del__` raises is then not reported by pytest.
And when the interpreter exits, an `atexit` handler freezes what is alive then, so that
CPython's final collections (it runs several while it tears modules down) skip that heap
too: exiting the 1,000-run shop suite's process under Pydantic AI took 0.77 s after the
conftest's `atexit` handler, 0.04 s with the heap frozen (`benchmarks/bench_suite.py --gc`).
Under xdist the controller waits for every worker to exit inside pytest's own time
(`teardown_nodes`); the controller freezes its own heap at exit too, once a run's report has
reached it. It is a choice, not the default, because of what it gives up: an object alive at exit that only a reference cycle or a class keeps
(`class Log: out = open(...)`) is never finalized, where CPython's final collections would
have collected most of them. Before it freezes, the handler flushes every open file object
that `open()` makes (buffered and text writers), so their buffered output is written as it
would have been; what stays undone is the rest of such objects' finalization: a
`NamedTemporaryFile` stays on disk, a sqlite database in WAL mode keeps its `-wal` file
uncheckpointed, a `__del__` does not run. Every `atexit` handler still runs (`weakref.finalize`
callbacks and logging's shutdown among them), standard streams are flushed and module globals
cleared as usual. Once a session of a process has asked for it, the process exits this way.

`--faultbench-gc=default` leaves the collector alone.
"""

from __future__ import annotations

import atexit
import gc
import io
from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["RunLoopGC", "add_gc_option"]

#: the youngest generation's threshold during runs (CPython's default is 700)
YOUNG_THRESHOLD = 5000


def add_gc_option(group: Any) -> None:
    group.addoption(
        "--faultbench-gc",
        choices=("tuned", "fast-exit", "default"),
        default="tuned",
        help="tuned (the default): while a session's runs run, the objects alive after "
        "collection are frozen out of garbage collection and the youngest generation's "
        "threshold is 5,000; fast-exit: tuned, and at interpreter exit the heap is frozen "
        "so that CPython's final collections skip it (objects that only cycles or classes "
        "keep alive are then not finalized; open files are flushed first); default: leave "
        "the collector as it is",
    )


#: what `open()` returns, flushed before the heap is frozen at exit
_WRITERS = (io.TextIOWrapper, io.BufferedWriter, io.BufferedRandom, io.BufferedRWPair)


def freeze_at_exit() -> None:
    """Flush the open files, then leave the objects alive at exit out of CPython's final
    collections (module docstring)."""
    for obj in gc.get_objects():
        # type(obj), not isinstance: that reads `obj.__class__`, which a lazy proxy (the
        # openai package has some) answers by loading what it stands for: 2 s at exit
        if issubclass(type(obj), _WRITERS):
            try:
                if not obj.closed and obj.writable():
                    obj.flush()
            except (OSError, ValueError):  # a broken pipe, a detached buffer: as at exit
                pass
    gc.freeze()


class RunLoopGC:
    """The collector's settings during runs (registered by the plugin as `faultbench-gc`)."""

    def __init__(self, config: pytest.Config, is_run: Callable[[pytest.Item], bool]):
        choice = config.getoption("faultbench_gc", "tuned")
        self._on = choice in ("tuned", "fast-exit")
        self._fast_exit = choice == "fast-exit"
        self._exit_pending = self._fast_exit  # until `freeze_at_exit` is registered
        self._is_run = is_run
        self._saved: tuple[int, ...] | None = None
        self._was_frozen = False
        self._thaw_pending = False  # the thresholds are back, the heap not yet unfrozen

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not self._on or self._saved is not None:
            return
        if not any(self._is_run(item) for item in session.items):
            return  # a session without runs keeps the collector as it was
        self._saved = gc.get_threshold()
        self._was_frozen = gc.get_freeze_count() > 0
        gc.freeze()
        gc.set_threshold(max(YOUNG_THRESHOLD, self._saved[0]), *self._saved[1:])
        if self._exit_pending:
            self._freeze_at_exit()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # an xdist controller collects nothing, but it holds every run's report until it exits
        if self._exit_pending and getattr(report, "faultbench", None) is not None:
            self._freeze_at_exit()

    def _freeze_at_exit(self) -> None:
        self._exit_pending = False  # once per session
        atexit.unregister(freeze_at_exit)  # and once per process, however many sessions
        atexit.register(freeze_at_exit)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        # fast-exit: the heap stays frozen until the config's cleanup, so that pytest's own
        # full collections at the end skip it (module docstring)
        self.restore(thaw=not self._fast_exit)

    def restore(self, *, thaw: bool = True) -> None:
        """CPython's thresholds as they were; with `thaw`, the heap unfrozen too."""
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._thaw_pending = not self._was_frozen
            self._saved = None
        if thaw and self._thaw_pending:
            self._thaw_pending = False
            gc.unfreeze()
