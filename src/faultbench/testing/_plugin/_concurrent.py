"""Concurrent runs: up to N runs of a group's `async def` test at once, in one event loop.

`--faultbench-concurrency N` (or `@pytest.mark.runs(n, concurrency=N)`, which wins) runs a
group's runs in a pool. pytest still runs every run item one after another, set-up, call and
teardown, and reports it as usual; but when the first run of a group (its *head*) reaches its
call, the test bodies of the rest of the group run with it, as tasks of the head's event
loop, at most N at once (N lanes, each starting the next run the moment its last one ended),
and their outcomes are kept. Each of those runs gets a world of its own, made as the `world`
fixture makes it (same spec, seed, run index, fault block) when its run starts, with its own
`trace`, `clock`, `faults`, `faultbench_run` and `mcp_server`, and is the current world in its
own task. The pool stops starting runs once the gate is decided (`Pool`), and under xdist's
`--dist load` (a worker does not know which runs it will get) it covers N runs only.

pytest holds the function-scoped fixtures of one item at a time (its set-up state is a
stack), so the batch makes the others' fixtures itself (`_perrun.py`): every function-scoped
fixture of the test's own (its module's, its `conftest.py` files') that pytest set up for the
head is made again for each run, in the run's task, from that run's values (an agent fixture
built from `world` acts on its run's world; a stateful agent is one per run), sync or async,
and torn down after the run's body, last made first. pytest's and plugins' fixtures (a
temporary directory, an event-loop runner) are the head's, shared; one of those that takes a
per-run fixture is refused with an error that says so, as are `mcp_url` and `mcp_command` (a
server per run is not made here).

When a run's item comes to its own set-up, the fixtures its run had are handed back as they
were (the fixture's function is swapped, for its set-up only, for one that returns the kept
value or raises the kept set-up error), so nothing is made twice; its call raises the kept
outcome (the same exception, or none) and its teardown the kept teardown error: the same
report, event log and gate as without concurrency.

Neither asyncio's nor trio's loop is started here: the batch is a coroutine function swapped
in for the test's as the item's call starts (`pytest_runtest_call`, before any runner reads
it), so whoever runs coroutine tests (faultbench's `_async.py`, anyio's plugin,
pytest-asyncio's items, pytest-trio's runner) runs it on the loop it would have used. trio is
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
from dataclasses import dataclass, field
from typing import Any

import pytest

from ._perrun import Recipe, RunFixtures, RunRequest, SetupFailed, is_shared, plugin_modules

__all__ = ["ConcurrentRuns", "add_concurrency_option"]

#: what each run of a batch gets of its own from the plugin
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

#: function-scoped fixtures pytest set up for an item, in the order it finished them
RECIPES_KEY = pytest.StashKey[dict[str, Recipe]]()
#: an item whose kept teardown error is registered to be raised at its teardown
TEARDOWN_KEY = pytest.StashKey[bool]()


@dataclass(frozen=True)
class Outcome:
    """A run that ran in its batch's head: how its body ended, its world, its fixtures'
    values, the fixture whose set-up failed (if one did) and what its teardown raised."""

    error: BaseException | None
    world: Any
    values: dict[str, Any] = field(default_factory=dict)
    failed: tuple[str, BaseException] | None = None
    teardown: BaseException | None = None


OUTCOME_KEY = pytest.StashKey[Outcome]()
#: a run whose kept outcome was replayed: it stays out of later batches
RAN = Outcome(None, None)

#: the plugin's side: a run item -> (its per-run fixture values, its world or None)
MakeRun = Callable[[pytest.Function], tuple[dict[str, Any], Any]]
#: the most runs one head's call runs (memory: each run's world and fixture values are kept
#: until its own item reports them)
POOL_LIMIT = 1024


def add_concurrency_option(group: Any) -> None:
    group.addoption(
        "--faultbench-concurrency",
        type=int,
        metavar="N",
        default=None,
        help="run up to N runs of an async test's group at once in one event loop, each "
        "with its own world and fixtures (@pytest.mark.runs(n, concurrency=k) wins); results "
        "and logs are those of running them one by one",
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
        decided: Callable[[pytest.Item, int, int], bool] = lambda _item, _passed, _failed: False,
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
        self._decided = decided
        # an xdist worker under --dist load runs only some of a group's runs: a pool over the
        # rest of the group would compute runs scheduled elsewhere, so it keeps to N
        dist = config.getoption("dist", None) if hasattr(config, "workerinput") else None
        self._whole_group = dist in (None, "no", "loadscope", "loadgroup", "loadfile")
        self._positions: dict[int, int] = {}
        self._plugins: frozenset[str] | None = None

    # tryfirst: outside the async plugins' wrappers, which swap `func` during the set-up
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_fixture_setup(
        self, fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
    ) -> Any:
        if fixturedef.scope != "function":
            return (yield)
        node = request.node
        name = fixturedef.argname
        kept = node.stash.get(OUTCOME_KEY, None)
        if kept is not None and (
            name in kept.values or (kept.failed is not None and kept.failed[0] == name)
        ):
            return (yield from self._hand_back(fixturedef, node, kept))
        recipe = Recipe(name, fixturedef.func, tuple(fixturedef.argnames))
        result = yield
        node.stash.setdefault(RECIPES_KEY, {})[name] = recipe
        return result

    def _hand_back(self, fixturedef: pytest.FixtureDef[Any], node: Any, kept: Outcome) -> Any:
        """Set up a fixture of a run that ran in a batch as the value it had there."""
        name = fixturedef.argname
        if name == "world" and kept.world is not None:
            self._adopt(node, kept.world)
        if kept.teardown is not None and not node.stash.get(TEARDOWN_KEY, False):
            node.stash[TEARDOWN_KEY] = True
            node.addfinalizer(_raiser(kept.teardown))
        original = fixturedef.func
        # as pytest-asyncio and anyio swap in their runners' functions for a set-up
        fixturedef.func = _kept_value(name, kept)  # type: ignore[misc]  # Final in typing only
        try:
            return (yield)
        finally:
            fixturedef.func = original  # type: ignore[misc]  # Final in typing only

    # tryfirst: before pytest-trio's wrapper and pytest-asyncio's item read the function
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        swap = self._swap(item) if isinstance(item, pytest.Function) else None
        if swap is None:
            return (yield)
        assert isinstance(item, pytest.Function)
        original = item.obj
        item.obj = swap
        try:
            return (yield)
        finally:
            item.obj = original

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Any:
        """Let go of what an item kept for batches once it is torn down: items live until
        the session ends, their fixtures' recipes and a batch's outcome (a world, fixture
        values) need not."""
        try:
            return (yield)
        finally:
            if RECIPES_KEY in item.stash:
                del item.stash[RECIPES_KEY]
            if OUTCOME_KEY in item.stash:
                item.stash[OUTCOME_KEY] = RAN

    # --- batches -----------------------------------------------------------------------------

    def _swap(self, item: pytest.Function) -> Callable[..., Coroutine[Any, Any, None]] | None:
        """The coroutine function to run in place of the test's, or None to leave it."""
        function = item.obj
        if not inspect.iscoroutinefunction(function) or self._group_of(item) is None:
            return None  # a sync test
        n = self._concurrency_of(item)
        if n <= 1:
            return None
        signature = inspect.signature(function)
        kept = item.stash.get(OUTCOME_KEY, None)
        if kept is not None:  # ran in its batch's head: its outcome, as it was
            if kept.world is not None:
                self._adopt(item, kept.world)
            # its fixtures were handed back: let go of them (as pytest lets go of funcargs)
            item.stash[OUTCOME_KEY] = RAN
            return _with_signature(_replay(kept.error), signature)
        if self._plugins is None:
            self._plugins = plugin_modules(item.config)
        recipes = item.stash.get(RECIPES_KEY, {})
        own = [
            name
            for name, recipe in recipes.items()
            if name not in PER_RUN and not is_shared(recipe, self._plugins)
        ]
        _refuse_shared(item, recipes, own)
        limit = POOL_LIMIT if self._whole_group else n - 1
        pool = Pool(item, n, self._rest(item, limit), self._make_run, self._decided)
        return _with_signature(_pooled(function, signature, item, recipes, own, pool), signature)

    def _rest(self, head: pytest.Function, limit: int) -> list[pytest.Function]:
        """Up to `limit` runs of the head's group after it, in the session's order, not yet
        run."""
        items = head.session.items
        if not self._positions:
            self._positions = {id(item): i for i, item in enumerate(items)}
        group = self._group_of(head)
        batch: list[pytest.Function] = []
        for item in items[self._positions.get(id(head), len(items)) + 1 :]:
            if len(batch) == limit:
                break
            if (
                isinstance(item, pytest.Function)
                and self._group_of(item) == group
                and OUTCOME_KEY not in item.stash
            ):
                batch.append(item)
        return batch


def _refuse_shared(item: pytest.Function, recipes: dict[str, Recipe], own: list[str]) -> None:
    """Fail a batch whose other runs would act on the head's world through a shared fixture."""
    refused = sorted(set(recipes) & set(REFUSED))
    if refused:
        pytest.fail(
            f"{item.nodeid}: runs concurrently (--faultbench-concurrency or "
            f"runs(n, concurrency=k)) and takes {', '.join(refused)}, which serves the run's "
            "world from a server per run that a batch does not make. Use mcp_server (an "
            "in-process server per run), or run this test with concurrency=1.",
            pytrace=False,
        )
    per_run = set(PER_RUN) | set(own)
    for name, recipe in recipes.items():
        if name in per_run:
            continue
        reached = _reaches(name, recipes, per_run)
        if reached is not None:
            module = getattr(recipe.func, "__module__", "?")
            pytest.fail(
                f"{item.nodeid}: runs concurrently, and the fixture `{name}` (of {module}, "
                f"pytest's or a plugin's) takes `{reached}`. A batch makes the test's own "
                "fixtures again for each run, but shares pytest's and plugins' fixtures, so "
                f"every run's `{name}` would act on the first run's `{reached}`. Define "
                f"`{name}` in the test's module or conftest.py, or run this test with "
                "@pytest.mark.runs(n, concurrency=1).",
                pytrace=False,
            )


def _reaches(name: str, recipes: dict[str, Recipe], per_run: set[str]) -> str | None:
    """The per-run fixture `name` takes, directly or through other fixtures; None if none."""
    seen = {name}
    todo = [name]
    while todo:
        recipe = recipes.get(todo.pop())
        for dep in () if recipe is None else recipe.argnames:
            if dep in per_run:
                return dep
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return None


def _kept_value(name: str, kept: Outcome) -> Callable[..., Any]:
    def kept_value(**_kwargs: Any) -> Any:
        if kept.failed is not None and kept.failed[0] == name:
            raise kept.failed[1]
        return kept.values[name]

    return kept_value


def _raiser(error: BaseException) -> Callable[[], None]:
    def raise_kept() -> None:
        raise error

    return raise_kept


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


# ---------------------------------------------------------------------------------------------
# A batch: the head's body and each other run's fixtures, body and teardown, as tasks of one
# loop; the others' outcomes kept on their items, the head's raised as its own
# ---------------------------------------------------------------------------------------------


class Pool:
    """The runs a head's call runs: the head and the rest of its group, at most `n` at once;
    a run starts the moment another ends. It stops starting runs once the runs that ended
    in a row from the head decide the gate (an estimate from their bodies' outcomes: a run
    it did not start is run by its own item, or skipped by early stop, as without it)."""

    def __init__(
        self,
        head: pytest.Function,
        n: int,
        rest: list[pytest.Function],
        make_run: MakeRun,
        decided: Callable[[pytest.Item, int, int], bool],
    ):
        self.head = head
        self.make_run = make_run
        self.decided = decided
        self.n = n
        self.rest = rest
        self.next = 0
        #: the runs' bodies in group order, head first: None until it ends, then passed or not
        self.ended: list[bool | None] = [None] * (len(rest) + 1)

    def take(self) -> tuple[int, pytest.Function] | None:
        """The next run to start (its place in `ended`, its item), or None: none left, or
        the outcome is decided."""
        if self.next >= len(self.rest) or self._decided():
            return None
        self.next += 1
        return self.next, self.rest[self.next - 1]

    def end(self, place: int, passed: bool) -> None:
        self.ended[place] = passed

    def _decided(self) -> bool:
        passed = failed = 0
        for outcome in self.ended:
            if outcome is None:
                break
            passed += outcome
            failed += not outcome
        return (passed or failed) > 0 and self.decided(self.head, passed, failed)


def _pooled(
    function: Callable[..., Coroutine[Any, Any, None]],
    signature: inspect.Signature,
    head: pytest.Function,
    recipes: dict[str, Recipe],
    own: list[str],
    pool: Pool,
) -> Callable[..., Coroutine[Any, Any, None]]:
    @functools.wraps(function)
    async def pooled(**kwargs: Any) -> None:
        shared = {**head.funcargs, **kwargs}
        errors: list[BaseException] = []

        async def lane(first: bool) -> None:
            if first:
                try:
                    await function(**kwargs)
                except CAUGHT as exc:
                    errors.append(exc)
                pool.end(0, not errors)
            while (taken := pool.take()) is not None:
                place, item = taken
                try:
                    values, world = pool.make_run(item)
                except CAUGHT as exc:  # its world could not be made: that is its outcome
                    item.stash[OUTCOME_KEY] = Outcome(exc, None)
                    pool.end(place, False)
                    continue
                # each run's own test function: a method is bound to its item's own instance
                fixtures = RunFixtures(item, recipes, own, values, shared)
                await _run(item.obj, signature, fixtures, world)
                kept = item.stash[OUTCOME_KEY]
                pool.end(place, kept.error is None and kept.failed is None)

        await _all([lane(i == 0) for i in range(min(pool.n, len(pool.rest) + 1))])
        if errors:
            raise errors[0]

    return pooled


async def _run(
    function: Callable[..., Coroutine[Any, Any, None]],
    signature: inspect.Signature,
    fixtures: RunFixtures,
    world: Any,
) -> None:
    """One run of a batch, in its own task with `world` as its current world: its fixtures,
    its body, its teardown; how it went kept on its item."""
    from faultbench.kernel import using_world

    error: BaseException | None = None
    failed: tuple[str, BaseException] | None = None
    with using_world(world) if world is not None else contextlib.nullcontext():
        try:
            await fixtures.setup()
        except SetupFailed as exc:
            failed = (exc.name, exc.error)
        else:
            try:
                kwargs = {
                    name: RunRequest(fixtures, name) if name == "request" else fixtures.value(name)
                    for name in signature.parameters
                }
                await function(**kwargs)
            except CAUGHT as exc:
                error = exc
        teardown = await fixtures.teardown()
    fixtures.item.stash[OUTCOME_KEY] = Outcome(error, world, fixtures.values, failed, teardown)


async def _all(bodies: list[Coroutine[Any, Any, None]]) -> None:
    """Await every body at once, started in order."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # not asyncio: trio (anyio's plugin, pytest-trio)
        trio = sys.modules["trio"]
        async with trio.open_nursery() as nursery:
            for body in bodies:
                nursery.start_soon(_awaited, body)
    else:
        async with asyncio.TaskGroup() as group:
            for body in bodies:
                group.create_task(body)


async def _awaited(body: Coroutine[Any, Any, None]) -> None:
    await body
