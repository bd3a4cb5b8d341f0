"""Concurrent runs: up to N runs of a group's `async def` test at once, in one event loop.

`--faultbench-concurrency N` (or `@pytest.mark.runs(n, concurrency=N)`, which wins) turns a
group's runs into batches. pytest still runs every run item one after another, set-up, call
and teardown, and reports it as usual; but when the first run of a batch (its *head*) reaches
its call, the test bodies of the next N-1 runs of the group run with it, as tasks of the
head's event loop (asyncio, or trio under anyio's plugin), and their outcomes are kept. Each
of those runs gets a world of its own, made as the `world` fixture makes it (same spec, seed,
run index, fault block), with its own `trace`, `clock`, `faults`, `faultbench_run` and
`mcp_server`, and is the current world in its own task. When the run's item comes to its
call, its kept outcome is its result: the same exception (or none), the same world, hence the
same report, event log and gate as without concurrency.

pytest can hold the function-scoped fixtures of one item at a time (its set-up state is a
stack), so the batch's other runs get the head's values of the test's *other* fixtures (an
agent, a model, `anyio_backend`): they must be safe to share between concurrent runs. A
fixture of the test's own that takes a per-run fixture (an agent built from `world`) would
silently act on the head's world; the batch refuses it with an error that says so, as it
does `mcp_url` and `mcp_command` (a server per run is not made here).

Neither asyncio's nor trio's loop is started here: the batch is the head's coroutine
function, swapped in for the test's while its call runs, so whoever runs coroutine tests
(faultbench's `_async.py`, anyio's plugin) runs it on the loop it would have used. trio is
taken from `sys.modules` (as the kernel's `_calls/_loops.py` does): a task can only run
under a library someone has already imported.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import sys
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import pytest

__all__ = ["ConcurrentRuns", "add_concurrency_option"]

#: what each run of a batch gets of its own
PER_RUN = ("world", "trace", "clock", "faults", "faultbench_run", "mcp_server")
#: fixtures that serve a run's world from a server made per run: not made for a batch
REFUSED = ("mcp_url", "mcp_command")
#: a run's body ends in one of these: its outcome, kept for its item
CAUGHT: tuple[type[BaseException], ...] = (
    Exception,
    pytest.fail.Exception,
    pytest.skip.Exception,
    pytest.xfail.Exception,
)

#: function-scoped fixtures set up for an item: name -> the names it takes
DEPS_KEY = pytest.StashKey[dict[str, tuple[str, ...]]]()


@dataclass(frozen=True)
class Outcome:
    """A run that ran in its batch's head: how its body ended, and its world."""

    error: BaseException | None
    world: Any


OUTCOME_KEY = pytest.StashKey[Outcome]()

#: the plugin's side: a run item -> (its per-run fixture values, its world or None)
MakeRun = Callable[[pytest.Function], tuple[dict[str, Any], Any]]


def add_concurrency_option(group: Any) -> None:
    group.addoption(
        "--faultbench-concurrency",
        type=int,
        metavar="N",
        default=None,
        help="run up to N runs of an async test's group at once in one event loop, each "
        "with its own world (@pytest.mark.runs(n, concurrency=k) wins); results and logs "
        "are those of running them one by one",
    )


class ConcurrentRuns:
    """The hooks of concurrent runs (registered by the plugin as `faultbench-concurrency`)."""

    def __init__(
        self,
        config: pytest.Config,
        *,
        concurrency_of: Callable[[pytest.Item], int],
        make_run: MakeRun,
        adopt: Callable[[pytest.Item, Any], None],
        group_of: Callable[[pytest.Item], str | None],
    ):
        option = config.getoption("faultbench_concurrency", None)
        if option is not None and option < 1:
            raise pytest.UsageError(
                f"Expected --faultbench-concurrency N with N >= 1. Instead, received: {option}"
            )
        self._concurrency_of = concurrency_of
        self._make_run = make_run
        self._adopt = adopt
        self._group_of = group_of
        self._positions: dict[int, int] = {}

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any, request: pytest.FixtureRequest) -> Any:
        if fixturedef.scope == "function":
            deps = request.node.stash.setdefault(DEPS_KEY, {})
            deps[fixturedef.argname] = tuple(fixturedef.argnames)
        return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Any:
        swap = self._swap(pyfuncitem)
        if swap is None:
            return (yield)
        original = pyfuncitem.obj
        pyfuncitem.obj = swap
        try:
            return (yield)
        finally:
            pyfuncitem.obj = original

    # --- batches -----------------------------------------------------------------------------

    def _swap(self, item: pytest.Function) -> Callable[..., Coroutine[Any, Any, None]] | None:
        """The coroutine function to run in place of the test's, or None to leave it."""
        function = item.obj
        if not inspect.iscoroutinefunction(function) or self._group_of(item) is None:
            return None  # a sync test, or one an async plugin wrapped (pytest-trio's marker)
        n = self._concurrency_of(item)
        if n <= 1:
            return None
        signature = inspect.signature(function)
        kept = item.stash.get(OUTCOME_KEY, None)
        if kept is not None:  # ran in its batch's head: its outcome, as it was
            if kept.world is not None:
                self._adopt(item, kept.world)
            return _with_signature(_replay(kept.error), signature)
        _refuse_shared(item, set(signature.parameters))
        runs = []
        for other in self._batch(item, n):
            try:
                values, world = self._make_run(other)
            except CAUGHT as exc:  # its world could not be made: that is its outcome
                other.stash[OUTCOME_KEY] = Outcome(exc, None)
                continue
            kwargs = {
                name: values[name] if name in values else item.funcargs[name]
                for name in signature.parameters
                if name in values or name in item.funcargs
            }
            runs.append((other, kwargs, world))
        return _with_signature(_batch(function, runs), signature)

    def _batch(self, head: pytest.Function, n: int) -> list[pytest.Function]:
        """The next n - 1 runs of the head's group, in the session's order, not yet run."""
        items = head.session.items
        if not self._positions:
            self._positions = {id(item): i for i, item in enumerate(items)}
        group = self._group_of(head)
        batch: list[pytest.Function] = []
        for item in items[self._positions.get(id(head), len(items)) + 1 :]:
            if len(batch) == n - 1:
                break
            if (
                isinstance(item, pytest.Function)
                and self._group_of(item) == group
                and OUTCOME_KEY not in item.stash
            ):
                batch.append(item)
        return batch


def _refuse_shared(item: pytest.Function, taken: set[str]) -> None:
    """Fail a batch whose other runs would act on the head's world through a shared fixture."""
    refused = sorted(taken & set(REFUSED))
    if refused:
        pytest.fail(
            f"{item.nodeid}: runs concurrently (--faultbench-concurrency or "
            f"runs(n, concurrency=k)) and takes {', '.join(refused)}, which serves the run's "
            "world from a server per run that a batch does not make. Use mcp_server (an "
            "in-process server per run), or run this test with concurrency=1.",
            pytrace=False,
        )
    deps = item.stash.get(DEPS_KEY, {})
    for name in sorted(taken):
        if name in PER_RUN or name not in deps:
            continue
        reached = _reaches(name, deps)
        if reached is not None:
            pytest.fail(
                f"{item.nodeid}: runs concurrently, and its fixture `{name}` takes "
                f"`{reached}`. The runs of a batch share the test's own fixtures (pytest sets "
                f"up one item's at a time), so every run's `{name}` would act on the first "
                f"run's {reached}. Take `{reached}` in the test and build what `{name}` "
                "builds there, or run this test with @pytest.mark.runs(n, concurrency=1).",
                pytrace=False,
            )


def _reaches(name: str, deps: dict[str, tuple[str, ...]]) -> str | None:
    """The per-run fixture `name` takes, directly or through other fixtures; None if none."""
    seen = {name}
    todo = [name]
    while todo:
        for dep in deps.get(todo.pop(), ()):
            if dep in PER_RUN or dep in REFUSED:
                return dep
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return None


def _with_signature(
    function: Callable[..., Coroutine[Any, Any, None]], signature: inspect.Signature
) -> Callable[..., Coroutine[Any, Any, None]]:
    """`function` as the test's signature: runners pass the test's arguments by name."""
    function.__signature__ = signature  # type: ignore[attr-defined]  # read by inspect.signature
    return function


def _replay(error: BaseException | None) -> Callable[..., Coroutine[Any, Any, None]]:
    async def replay(**_kwargs: Any) -> None:
        if error is not None:
            raise error

    return replay


def _batch(
    function: Callable[..., Coroutine[Any, Any, None]],
    runs: list[tuple[pytest.Function, dict[str, Any], Any]],
) -> Callable[..., Coroutine[Any, Any, None]]:
    """The head's body and the other runs' bodies as tasks of one loop; the others' outcomes
    kept on their items, the head's raised as its own."""

    @functools.wraps(function)
    async def batch(**kwargs: Any) -> None:
        bodies = [function(**kwargs)] + [_in_world(function(**kw), w) for _item, kw, w in runs]
        errors = await _all(bodies)
        for (other, _kwargs, world), error in zip(runs, errors[1:]):
            other.stash[OUTCOME_KEY] = Outcome(error, world)
        if errors[0] is not None:
            raise errors[0]

    return batch


async def _in_world(body: Coroutine[Any, Any, None], world: Any) -> None:
    """Run `body` with `world` as the current world of its task (`using_world`)."""
    from faultbench.kernel import using_world

    with using_world(world) if world is not None else contextlib.nullcontext():
        await body


async def _all(bodies: list[Coroutine[Any, Any, None]]) -> list[BaseException | None]:
    """Await every body at once, started in order; how each ended (None: it returned)."""
    errors: list[BaseException | None] = [None] * len(bodies)

    async def one(i: int) -> None:
        try:
            await bodies[i]
        except CAUGHT as exc:
            errors[i] = exc

    try:
        asyncio.get_running_loop()
    except RuntimeError:  # not asyncio: trio, under anyio's plugin
        trio = sys.modules["trio"]
        async with trio.open_nursery() as nursery:
            for i in range(len(bodies)):
                nursery.start_soon(one, i)
    else:
        async with asyncio.TaskGroup() as group:
            for i in range(len(bodies)):
                group.create_task(one(i))
    return errors
