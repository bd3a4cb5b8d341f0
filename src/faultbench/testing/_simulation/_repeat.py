"""`repeat(n, seed=)`: run a function n times and measure how often it passes.

Each run has its own seed, derived from (seed, run index) as the pytest plugin derives one
per run (`derive_seed`), so a batch is reproducible and its runs differ: the run is current
while it runs (`current_run()`), and `scenario` and `fault_inject` draw from its index. A
run that raises is a failed run, never the end of the batch; a run returning something with
a `passed` attribute (a `ScenarioResult`) or a bool passes or fails by it; any other return
passes. Async functions are awaited, one run after the other.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from .._gate._runs import derive_seed
from .._gate._stats import Z95, pass_hat_k, wilson_interval

__all__ = ["RepeatResult", "Run", "RunOutcome", "current_run", "repeat"]


@dataclass(frozen=True)
class Run:
    """The run of a `repeat` batch that is running now (`current_run()`)."""

    index: int
    #: derived from (the batch's seed, index): for the randomness of the code under test
    seed: int
    total: int
    #: call counts of the `fault_inject` wrappers called in this run (by wrapper)
    counters: dict[int, int] = field(default_factory=dict, compare=False, repr=False)


_RUN: ContextVar[Run | None] = ContextVar("faultbench_current_run", default=None)


def current_run() -> Run | None:
    """The `repeat` run around the running code, or None outside of one."""
    return _RUN.get()


@contextmanager
def _running(run: Run) -> Iterator[Run]:
    token = _RUN.set(run)
    try:
        yield run
    finally:
        _RUN.reset(token)


@dataclass(frozen=True)
class RunOutcome:
    """One run of a batch: its index and seed, whether it passed, what it returned (None if
    it raised) and what it raised (None if it returned)."""

    index: int
    seed: int
    passed: bool
    value: Any = None
    #: why a failed run failed: what it raised, else the error its result carries (a
    #: `ScenarioResult`'s first failed turn)
    error: BaseException | None = None

    @property
    def reason(self) -> str | None:
        """Why the run failed, in one line (None for a run that passed)."""
        if self.passed:
            return None
        if self.error is not None:
            return f"{type(self.error).__name__}: {self.error}"
        if self.value is False:
            return "returned False"
        return f"returned {type(self.value).__name__} with passed=False"

    def __str__(self) -> str:
        verdict = "passed" if self.passed else "failed"
        why = f": {self.reason}" if not self.passed else ""
        return f"run{self.index} (seed {self.seed}) {verdict}{why}"


@dataclass(frozen=True)
class RepeatResult:
    """The runs of one `repeat` batch, in order."""

    runs: tuple[RunOutcome, ...]
    seed: int = 0

    @property
    def count(self) -> int:
        return len(self.runs)

    @property
    def passed(self) -> int:
        """How many runs passed."""
        return sum(r.passed for r in self.runs)

    @property
    def pass_rate(self) -> float:
        return self.passed / self.count if self.runs else 0.0

    @property
    def all_passed(self) -> bool:
        return bool(self.runs) and all(r.passed for r in self.runs)

    @property
    def results(self) -> list[Any]:
        """What each run returned (None for a run that raised)."""
        return [r.value for r in self.runs]

    @property
    def failures(self) -> list[RunOutcome]:
        """The runs that failed, each with its index, seed and exception (or return value)."""
        return [r for r in self.runs if not r.passed]

    def wilson_interval(self, z: float = Z95) -> tuple[float, float]:
        """The Wilson score interval of the pass rate (95% by default)."""
        return wilson_interval(self.passed, self.count, z)

    def pass_hat_k(self, k: int) -> float | None:
        """pass^k: the chance that k runs in a row all pass, C(passed, k) / C(count, k)
        (tau-bench's estimator); None with fewer than k runs."""
        return pass_hat_k(self.passed, self.count, k)

    def summary(self) -> str:
        """`17/20 passed (85%) [95% CI 64%-94.8%] pass^3=59.6%`, then one line per failure."""
        from .._gate._stats import _pct  # the gate's own way to write a percentage

        lo, hi = self.wilson_interval()
        line = f"{self.passed}/{self.count} passed ({_pct(self.pass_rate)}) [95% CI {_pct(lo)}-{_pct(hi)}]"
        p3 = self.pass_hat_k(3)
        if p3 is not None:
            line += f" pass^3={_pct(p3)}"
        return "\n".join([line, *(f"  {r}" for r in self.failures)])

    def __str__(self) -> str:
        return self.summary()


def fails_one_run(exc: BaseException) -> bool:
    """Does `exc`, raised by one run, fail just that run? Every exception, and the
    BaseExceptions that end a piece of work rather than the program (`SystemExit`, pytest's
    `fail()`/`skip()` outcomes...); not KeyboardInterrupt, GeneratorExit, or the
    cancellation of the task running the batch (asyncio's or trio's), which must go on up."""
    if isinstance(exc, Exception):
        return True
    if isinstance(exc, KeyboardInterrupt | GeneratorExit):
        return False
    for module, name in (("asyncio", "CancelledError"), ("trio", "Cancelled")):
        lib = sys.modules.get(module)  # only a library in use can have cancelled us
        if lib is not None and isinstance(exc, getattr(lib, name)):
            return False
    return True


def outcome(run: Run, value: Any) -> RunOutcome:
    """The outcome of a run that returned `value`."""
    passed = _passed(value)
    error = None if passed else _carried_error(value)
    return RunOutcome(run.index, run.seed, passed, value, error)


def _carried_error(value: Any) -> BaseException | None:
    error = getattr(value, "error", None)
    return error if isinstance(error, BaseException) else None


def _passed(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    verdict = getattr(value, "passed", None)
    if verdict is not None and not callable(verdict):
        return bool(verdict)
    return True


def is_async(fn: Any) -> bool:
    """Is calling `fn` to be awaited? (coroutine functions, partials of them, objects whose
    `__call__` is one)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004  (an object's async __call__)
    )


def not_awaited(fn: Any, value: Any) -> TypeError:
    if inspect.iscoroutine(value):
        value.close()  # no "never awaited" warning on top of this error
    return TypeError(
        f"{getattr(fn, '__qualname__', fn)!r} returned an awaitable, but it is not an async "
        "function, so it cannot be awaited here. Expected `async def` (its wrapper is then "
        "async too) or a function that returns its result."
    )


def repeat(
    n: int, *, seed: int = 0
) -> Callable[[Callable[..., Any]], Callable[..., RepeatResult | Awaitable[RepeatResult]]]:
    """Run the decorated function `n` times per call; the call returns a `RepeatResult`
    (awaitable for an async function). Arguments are passed to every run."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"Expected repeat(n) with an integer n >= 1. Instead, received: {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"Expected an integer seed. Instead, received: {seed!r}")

    def runs() -> Iterator[Run]:
        for i in range(n):
            yield Run(index=i, seed=derive_seed(seed, i), total=n)

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(fn):
            raise TypeError(f"Expected a function to repeat. Instead, received: {fn!r}")

        if is_async(fn):

            @functools.wraps(fn)
            async def arepeated(*args: Any, **kwargs: Any) -> RepeatResult:
                out = []
                for run in runs():
                    with _running(run):
                        try:
                            value = await fn(*args, **kwargs)
                        except BaseException as exc:
                            if not fails_one_run(exc):
                                raise
                            out.append(RunOutcome(run.index, run.seed, False, error=exc))
                            continue
                    out.append(outcome(run, value))
                return RepeatResult(tuple(out), seed)

            return arepeated

        @functools.wraps(fn)
        def repeated(*args: Any, **kwargs: Any) -> RepeatResult:
            out = []
            for run in runs():
                with _running(run):
                    try:
                        value = fn(*args, **kwargs)
                    except BaseException as exc:
                        if not fails_one_run(exc):
                            raise
                        out.append(RunOutcome(run.index, run.seed, False, error=exc))
                        continue
                if inspect.isawaitable(value):
                    raise not_awaited(fn, value)
                out.append(outcome(run, value))
            return RepeatResult(tuple(out), seed)

        return repeated

    return decorate
