"""`async def` tests that carry faultbench's markers or fixtures, run as written.

pytest runs no coroutine itself ("async def functions are not natively supported"), and the
integrations' frameworks run on asyncio only. So a faultbench test that no async plugin has
taken is run here, on a fresh asyncio event loop, like pytest-asyncio's auto mode does, but
only for faultbench's own tests. The plugin stays out of the way of the others:

- pytest-asyncio (a test marked `asyncio`, or every test in its auto mode) and pytest-trio (a
  test marked `trio`, or every test with `trio_mode`) replace the test's function with a
  synchronous one before `pytest_pyfunc_call`: what reaches it is no coroutine function.
- anyio's plugin runs the tests that hold an `anyio_backend` fixture value, in its own
  `tryfirst` `pytest_pyfunc_call`, before this one.

anyio's default `anyio_backend` fixture is parametrized over every backend installed, and
faultbench installs trio: a faultbench test marked `anyio` would run each run twice, once on
trio, where the frameworks cannot run. `trio_variants` finds those variants; the plugin
deselects them. A test asks for trio by parametrizing `anyio_backend` itself, by its own
`anyio_backend` fixture (not parametrized by anyio), or with `@pytest.mark.trio`.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

__all__ = ["run_coroutine_test", "trio_variants"]

#: markers of the async plugins: a test carrying one asked for that plugin
PLUGIN_MARKERS = {"asyncio": "pytest-asyncio", "trio": "pytest-trio", "anyio": "anyio"}


def run_coroutine_test(item: pytest.Function) -> bool:
    """Run `item` on asyncio if it is a coroutine test no async plugin took; True if run."""
    function = item.obj
    if not inspect.iscoroutinefunction(function):
        return False  # a sync test, or one an async plugin already wrapped
    if item.funcargs.get("anyio_backend"):
        return False  # anyio's plugin runs it
    for name, plugin in PLUGIN_MARKERS.items():
        if name != "asyncio" and item.get_closest_marker(name) is not None:
            pytest.fail(
                f"{item.nodeid} is marked @pytest.mark.{name}, but {plugin} is not installed, "
                f"so nothing runs it: install {plugin} (uv add --dev {plugin}), or drop the "
                "marker and let faultbench run the test on asyncio.",
                pytrace=False,
            )
    names = inspect.signature(function).parameters
    kwargs = {name: item.funcargs[name] for name in names if name in item.funcargs}
    # A fresh loop per run, as asyncio.run makes; the context (the current world) is the
    # fixtures', so the test sees what they set up.
    with asyncio.Runner() as runner:
        runner.run(function(**kwargs))
    return True


def trio_variants(items: list[pytest.Item], is_faultbench: Any) -> list[pytest.Item]:
    """The items anyio's default `anyio_backend` parametrization put on a backend other than
    asyncio, among faultbench tests marked `anyio` that did not parametrize it themselves."""
    extra = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or item.get_closest_marker("anyio") is None:
            continue
        backend = callspec.params.get("anyio_backend")
        if backend is None or backend == "asyncio" or not is_faultbench(item):
            continue
        if any("anyio_backend" in _argnames(mark) for mark in item.iter_markers("parametrize")):
            continue  # the test asked for these backends itself
        extra.append(item)
    return extra


def _argnames(mark: Any) -> list[str]:
    names = mark.args[0] if mark.args else mark.kwargs.get("argnames", "")
    if isinstance(names, str):
        return [n.strip() for n in names.split(",")]
    return list(names)
