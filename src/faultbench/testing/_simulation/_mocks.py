"""`mock_tool(name)` and `MockToolRegistry`: Python functions as tools of a world.

A registry's functions become `custom` operations of a world (`faultbench.kernel.lowlevel.add_tools`): typed
from their annotations, described by their docstrings, served over MCP like any operation
(`faultbench.serve.build_server(world)`), subject to the world's fault rules (keyed
`tools.lookup`, `tools.*` or `default`), and logged and traced as calls. What the function
returns is what the agent reads. An `async def` function is run to completion by its call (on a fresh
asyncio loop; in a worker thread when the call is made from a running loop). Because the
tools are part of the world, they reach every
thread and task that holds the world; `with registry as world:` also makes it the current
world (`faultbench.current_world()`), which `asyncio.to_thread` and `anyio.to_thread` carry
into their threads.
"""

from __future__ import annotations

import contextvars
import functools
import os
import threading
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping
from contextlib import ExitStack
from typing import Any

from faultbench.kernel import World, WorldSpec, using_world
from faultbench.kernel.lowlevel import add_tools, empty_spec

from ._repeat import is_async

__all__ = ["MockTool", "MockToolRegistry", "mock_tool"]


class MockTool:
    """A function marked as a tool (`@mock_tool("lookup")`). Calling it calls the function;
    a `MockToolRegistry` (or `scenario(mock_tools=[...])`) makes it a tool of a world."""

    __slots__ = ("__dict__", "description", "fn", "name")

    def __init__(self, name: str, fn: Callable[..., Any], description: str | None = None):
        if not callable(fn):
            raise TypeError(f"Expected a function for the tool {name!r}. Instead, received: {fn!r}")
        self.name = name
        self.fn = fn
        self.description = description
        functools.update_wrapper(self, fn)
        self._mock_tool_name = name  # Attest's attribute for the same thing

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<MockTool {self.name}: {getattr(self.fn, '__qualname__', self.fn)!r}>"


def mock_tool(
    name: str | None = None, *, description: str | None = None
) -> Callable[[Callable[..., Any]], MockTool]:
    """Mark a function as a tool called `name` (default: the function's name)."""
    if callable(name):
        raise TypeError(
            "Expected @mock_tool('name') or @mock_tool() (with parentheses). Instead, "
            f"received @mock_tool applied to {name!r} directly."
        )

    def decorate(fn: Callable[..., Any]) -> MockTool:
        return MockTool(name or fn.__name__, fn, description)

    return decorate


Base = WorldSpec | str | os.PathLike[str] | None


class MockToolRegistry:
    """A set of tools defined in code, and the worlds that have them.

    ::

        registry = MockToolRegistry()

        @registry.tool()
        def lookup(city: str) -> dict:
            "The weather in a city."
            return {"city": city, "sky": "clear"}

        with registry as world:           # a fresh world with the tools, made current
            world.call("lookup", {"city": "Paris"}).value
    """

    def __init__(
        self,
        tools: Iterable[MockTool] | Mapping[str, Callable[..., Any]] = (),
        *,
        service: str = "tools",
    ):
        self.service = service
        self._tools: dict[str, MockTool] = {}
        self._specs: dict[Any, WorldSpec] = {}
        self._stack: list[ExitStack] = []
        if isinstance(tools, Mapping):
            for name, fn in tools.items():
                self.register(name, fn)
        else:
            self.add(*tools)

    # --- the tools -------------------------------------------------------------------------

    def register(
        self, name: str, fn: Callable[..., Any], *, description: str | None = None
    ) -> None:
        """Add `fn` as the tool `name` (as Attest's `MockToolRegistry.register` does)."""
        self.add(MockTool(name, fn, description))

    def add(self, *tools: MockTool) -> None:
        for t in tools:
            if not isinstance(t, MockTool):
                raise TypeError(
                    "Expected tools made with @mock_tool('name'). Instead, received: "
                    f"{t!r}; use registry.register(name, fn) for a plain function."
                )
            if t.name in self._tools:
                raise ValueError(f"The registry already has a tool named {t.name!r}.")
            self._tools[t.name] = t
        self._specs.clear()

    def tool(
        self, name: str | None = None, *, description: str | None = None
    ) -> Callable[[Callable[..., Any]], MockTool]:
        """`@registry.tool()`: `mock_tool` that also registers the tool here."""

        def decorate(fn: Callable[..., Any]) -> MockTool:
            t = mock_tool(name, description=description)(fn)
            self.add(t)
            return t

        return decorate

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[MockTool]:
        return iter(self._tools.values())

    def __repr__(self) -> str:
        return f"<MockToolRegistry {self.service}: {', '.join(self._tools) or 'no tools'}>"

    # --- worlds ------------------------------------------------------------------------------

    def spec(self, base: Base = None) -> WorldSpec:
        """The spec of `base` (a world file's path, a `WorldSpec`, or None for a world
        without records) plus these tools. Replay a log of such a world with this spec."""
        key = base if isinstance(base, WorldSpec) else os.fspath(base) if base else None
        cache_key = id(base) if isinstance(base, WorldSpec) else key
        spec = self._specs.get(cache_key)
        if spec is None:
            if base is None:
                start = empty_spec()
            elif isinstance(base, WorldSpec):
                start = base
            else:
                from faultbench.kernel.lowlevel import load_spec

                start = load_spec(base)
            spec = add_tools(
                start,
                {t.name: as_sync(t.fn) for t in self._tools.values()},
                service=self.service,
                descriptions={t.name: t.description for t in self._tools.values() if t.description},
            )
            self._specs[cache_key] = spec
        return spec

    def world(
        self, base: Base = None, *, seed: int | None = None, run: int = 0, faults: Any = None
    ) -> World:
        """A fresh world of `self.spec(base)`; `faults`: rules to set (a `faults:` block)."""
        world = World.from_spec(self.spec(base), seed=seed, run=run)
        if faults is not None:
            world.set_faults(faults)
        return world

    def __enter__(self) -> World:
        world = self.world()
        stack = ExitStack()
        stack.enter_context(using_world(world))
        self._stack.append(stack)
        return world

    def __exit__(self, *exc: object) -> None:
        self._stack.pop().close()


def as_sync(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` itself, or for an `async def` function (or a `fault_inject` wrapper of one), a
    plain function with its signature that runs it to completion: a world's call is
    synchronous, whether it was made from sync code, `acall` or an MCP server."""
    if not is_async(fn):
        return fn

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        return run_coroutine(fn(*args, **kwargs))

    return run


def run_coroutine(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run `coro` to completion and return its value: on a fresh asyncio loop here when no
    loop runs in this thread; else on one in a worker thread that runs in a copy of this
    context (so the running call and the current world reach it), this thread waiting."""
    import asyncio  # only worlds with async tools need it

    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop runs here
        return asyncio.run(coro)
    ctx = contextvars.copy_context()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = ctx.run(asyncio.run, coro)
        except BaseException as exc:  # handed to the calling thread as it is
            box["error"] = exc

    worker = threading.Thread(target=work, name="faultbench-async-tool", daemon=True)
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
