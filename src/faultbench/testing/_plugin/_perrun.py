"""A run's own function-scoped fixtures, made again for each run of a concurrent batch.

pytest sets up one item's fixtures at a time, so when a batch's head runs the next runs of its
group (`_concurrent.py`), those runs have no fixtures of their own. This module makes them:
for each function-scoped fixture pytest set up for the head, in the order pytest finished
them (a fixture after the ones it takes), it calls the fixture's function again with that
run's values: its world, trace, ... (made by the plugin), the run's own re-made fixtures, and
the head's values of the fixtures that are shared. A fixture that yields is torn down after
the run's body, in reverse order, as pytest would. Async fixtures (`async def`, async
generators) are awaited in the run's own task, on the loop the batch runs on.

Shared, not re-made: fixtures of pytest itself and of plugins (modules registered with
pytest's plugin manager other than `conftest.py` files: entry points, `-p`, `pytest_plugins`),
a temporary directory, `monkeypatch`, a plugin's event-loop runner. The test's own fixtures
(its module, its `conftest.py` files) are re-made.

A fixture that takes `request` gets a `RunRequest`: the request's public attributes with the
run's item as `node`, and `getfixturevalue` / `addfinalizer` on the run's fixtures.
"""

from __future__ import annotations

import inspect
import os
import types
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import pytest

__all__ = ["Recipe", "RunFixtures", "SetupFailed", "plugin_modules"]


class Recipe(NamedTuple):  # a tuple: one is kept for every fixture of every item
    """How pytest made one function-scoped fixture: its function (before any async plugin
    swapped in its own for the set-up) and the names it takes."""

    name: str
    func: Callable[..., Any]
    argnames: tuple[str, ...]


class SetupFailed(Exception):
    """A run's fixture `name` could not be made: `error` is what it raised."""

    def __init__(self, name: str, error: BaseException):
        super().__init__(name, error)
        self.name = name
        self.error = error


def plugin_modules(config: pytest.Config) -> frozenset[str]:
    """The modules whose fixtures are pytest's or a plugin's: shared by a batch's runs."""
    names = set()
    for plugin in config.pluginmanager.get_plugins():
        file = getattr(plugin, "__file__", None) or ""
        if isinstance(plugin, types.ModuleType) and os.path.basename(file) != "conftest.py":
            names.add(plugin.__name__)
    return frozenset(names)


def is_shared(recipe: Recipe, plugins: frozenset[str]) -> bool:
    module = getattr(recipe.func, "__module__", None) or ""
    return module in plugins or module.startswith("_pytest.")


class RunFixtures:
    """One run's fixtures: made in its task (`setup`), torn down after its body
    (`teardown`), each at most once."""

    def __init__(
        self,
        item: pytest.Function,
        recipes: dict[str, Recipe],
        own: Iterable[str],
        values: dict[str, Any],
        shared: dict[str, Any],
    ):
        self.item = item
        self.recipes = recipes
        self.own = list(own)  # in the order pytest finished them for the head
        #: the run's values: per-run ones first, then each re-made fixture
        self.values = dict(values)
        self.shared = shared
        self._finalizers: list[tuple[str, Callable[[], Any]]] = []

    def value(self, name: str) -> Any:
        """The run's value of fixture `name` (`request.getfixturevalue` in a fixture)."""
        if name in self.values:
            return self.values[name]
        if name in self.recipes and name in self.own:
            recipe = self.recipes[name]
            if _is_async(recipe.func):
                raise pytest.fail.Exception(
                    f"{self.item.nodeid}: runs concurrently, and a fixture asks for the async "
                    f"fixture `{name}` with request.getfixturevalue, which cannot await it. "
                    f"Take `{name}` as an argument of the fixture, or run this test with "
                    "@pytest.mark.runs(n, concurrency=1).",
                    pytrace=False,
                )
            self._make_sync(recipe)
            return self.values[name]
        if name in self.shared:
            return self.shared[name]
        raise pytest.fail.Exception(
            f"{self.item.nodeid}: runs concurrently, and a fixture asks for `{name}`, which "
            "the batch's first run did not set up, so no run of the batch has it. Take "
            f"`{name}` as an argument of the test or fixture, or run this test with "
            "@pytest.mark.runs(n, concurrency=1).",
            pytrace=False,
        )

    # --- set-up ------------------------------------------------------------------------------

    async def setup(self) -> None:
        """Make the run's own fixtures in pytest's order; SetupFailed names the one that
        raised (those made before it stay, for `teardown`)."""
        for name in self.own:
            if name in self.values:
                continue  # made already, asked for by request.getfixturevalue
            recipe = self.recipes[name]
            if not _is_async(recipe.func):
                self._make_sync(recipe)
                continue
            try:
                func = self._bound(recipe)
                kwargs = self._kwargs(recipe)
                if inspect.isasyncgenfunction(func):
                    generator = func(**kwargs)
                    try:
                        value = await generator.__anext__()
                    except StopAsyncIteration:
                        raise ValueError(f"{name} did not yield a value") from None
                    self._finalizers.append((name, _async_closer(name, generator)))
                else:
                    value = await func(**kwargs)
            except SetupFailed:
                raise
            except _OUTCOMES as exc:
                raise SetupFailed(name, exc) from exc
            self.values[name] = value

    def _make_sync(self, recipe: Recipe) -> None:
        name = recipe.name
        try:
            func = self._bound(recipe)
            kwargs = self._kwargs(recipe)
            if inspect.isgeneratorfunction(func):
                generator = func(**kwargs)
                try:
                    value = next(generator)
                except StopIteration:
                    raise ValueError(f"{name} did not yield a value") from None
                self._finalizers.append((name, _sync_closer(name, generator)))
            else:
                value = func(**kwargs)
        except SetupFailed:
            raise
        except _OUTCOMES as exc:
            raise SetupFailed(name, exc) from exc
        self.values[name] = value

    def _kwargs(self, recipe: Recipe) -> dict[str, Any]:
        return {
            arg: RunRequest(self, recipe.name) if arg == "request" else self.value(arg)
            for arg in recipe.argnames
        }

    def _bound(self, recipe: Recipe) -> Callable[..., Any]:
        """The fixture's function, bound to the run's own test instance if it is a method of
        the test's class (pytest collects it bound to an instance of its own, and binds it to
        each item's instance, as here)."""
        instance = self.item.instance
        func = recipe.func
        owner = getattr(func, "__self__", None)
        if instance is None or owner is None or not isinstance(instance, type(owner)):
            return func
        bound: Callable[..., Any] = func.__func__.__get__(instance)  # type: ignore[attr-defined]  # a bound method: it has __self__
        return bound

    # --- teardown ----------------------------------------------------------------------------

    def add_finalizer(self, name: str, finalizer: Callable[[], object]) -> None:
        self._finalizers.append((name, finalizer))

    async def teardown(self) -> BaseException | None:
        """Tear the run's fixtures down, last made first; what went wrong (None: nothing),
        as pytest reports a teardown: one error, or a group of them."""
        errors: list[BaseException] = []
        while self._finalizers:
            _name, finalizer = self._finalizers.pop()
            try:
                result = finalizer()
                if inspect.isawaitable(result):
                    await result
            except _OUTCOMES as exc:
                errors.append(exc)
        if not errors:
            return None
        if len(errors) == 1:
            return errors[0]
        return BaseExceptionGroup(f"errors while tearing down {self.item!r}", errors[::-1])


_OUTCOMES: tuple[type[BaseException], ...] = (
    Exception,
    pytest.fail.Exception,
    pytest.skip.Exception,
    pytest.xfail.Exception,
)


def _is_async(func: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func)


def _sync_closer(name: str, generator: Any) -> Callable[[], None]:
    def close() -> None:
        try:
            next(generator)
        except StopIteration:
            return
        raise ValueError(f"fixture function {name} has more than one 'yield'")

    return close


def _async_closer(name: str, generator: Any) -> Callable[[], Any]:
    async def close() -> None:
        try:
            await generator.__anext__()
        except StopAsyncIteration:
            return
        raise ValueError(f"fixture function {name} has more than one 'yield'")

    return close


class RunRequest:
    """`request` for a fixture re-made for a run of a batch: pytest's public request
    attributes, read from the run's item, and the run's fixtures behind `getfixturevalue` and
    `addfinalizer`."""

    def __init__(self, fixtures: RunFixtures, name: str):
        self._fixtures = fixtures
        self.fixturename = name
        self.node = fixtures.item
        self.config = fixtures.item.config
        self.scope = "function"

    @property
    def param(self) -> Any:
        callspec = getattr(self.node, "callspec", None)
        if callspec is None or self.fixturename not in callspec.params:
            raise AttributeError(f"fixture {self.fixturename!r} is not parametrized")
        return callspec.params[self.fixturename]

    @property
    def fixturenames(self) -> list[str]:
        return list(self.node.fixturenames)

    @property
    def function(self) -> Any:
        return self.node.function

    @property
    def cls(self) -> Any:
        return self.node.cls

    @property
    def instance(self) -> Any:
        return self.node.instance

    @property
    def module(self) -> Any:
        return self.node.module

    @property
    def path(self) -> Any:
        return self.node.path

    @property
    def keywords(self) -> Any:
        return self.node.keywords

    def getfixturevalue(self, argname: str) -> Any:
        return self._fixtures.value(argname)

    def addfinalizer(self, finalizer: Callable[[], object]) -> None:
        self._fixtures.add_finalizer(self.fixturename, finalizer)

    def applymarker(self, marker: Any) -> None:
        self.node.add_marker(marker)

    def __getattr__(self, attr: str) -> Any:
        raise AttributeError(
            f"{self.node.nodeid}: runs concurrently, and its fixture `{self.fixturename}` "
            f"reads request.{attr}, which a batch's run does not have (its fixtures are made "
            "outside pytest's set-up). Run this test with @pytest.mark.runs(n, concurrency=1)."
        )
