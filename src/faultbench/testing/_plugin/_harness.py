"""Agent failures and set-up problems: which failing runs the pass-rate gate may tolerate.

A gate measures how often an agent gets it right. A run that never reached the agent or the
world says nothing about the agent: counted as a tolerated failure, it reads like a flaky
agent (`0/2 passed -> FAIL`), or hides among real failures under a loose `min_pass_rate`.
So a failing run is one of two things (docs/TESTING.md, "What counts as
a failure"):

- an **agent failure**: an `AssertionError` (the test's `assert`, a `trace` check, an
  `AgentRun` the test found failed), `pytest.fail()` called by the test, or an exception
  raised by the agent's own code (the test's module, the user's packages, the agent
  framework);
- a **set-up problem**: anything that fails in set-up or teardown (a fixture, a world file
  that does not load, a server that does not start), an import error, an exception raised
  inside faultbench's plugin, integrations or server, or inside pytest itself (an async test
  nothing could run included), a lost connection to the world's MCP server (the MCP
  client's own errors), and asyncio code that ran without an asyncio loop.

An exception from faultbench's kernel (a record's missing field, an unknown table) is the
agent's: it is what the agent's own code called.

`problem(excinfo)` is that rule for the call phase; set-up and teardown errors are set-up
problems by where they happen.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "before_first_call",
    "never_awaited",
    "never_reached_model",
    "problem",
    "setup_problem",
]

#: packages whose own exceptions mean the run never got an answer from the world's server
_TRANSPORT = ("mcp", "fastmcp", "anyio")
#: faultbench's own machinery: the kernel's data API (a record, a table) is what an agent's
#: code may call and misuse, so an error raised there is the agent's
_SHELLS = (
    "faultbench.testing",
    "faultbench.integrations",
    "faultbench.serve",
    "faultbench.commands",
)
#: packages whose frames are the test machinery, not the test
_MACHINERY = ("_pytest", "pluggy", "pytest_asyncio", "pytest_trio")


def _package_dir(name: str) -> Path | None:
    module = sys.modules.get(name)
    file = getattr(module, "__file__", None)
    return None if file is None else Path(file).resolve().parent


def _inside(path: Path, names: tuple[str, ...]) -> bool:
    for name in names:
        base = _package_dir(name)
        if base is not None and path.is_relative_to(base):
            return True
    return False


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for e in exc.exceptions for leaf in _leaves(e)]
    return [exc]


def _origin(exc: BaseException) -> Path | None:
    """The file of the innermost frame that is not pytest's machinery (None: all of it is)."""
    tb = exc.__traceback__
    origin = None
    while tb is not None:
        path = Path(tb.tb_frame.f_code.co_filename)
        if not _inside(path.resolve(), _MACHINERY):
            origin = path.resolve()
        tb = tb.tb_next
    return origin


def _why(exc: BaseException) -> str | None:
    """Why this exception (not a group) is a set-up problem; None for an agent failure."""
    if isinstance(exc, AssertionError):
        return None
    if isinstance(exc, ImportError):
        return "an import failed"
    if isinstance(exc, RuntimeError) and "no running event loop" in str(exc):
        # asyncio code (the frameworks run on asyncio only) ran in a trio test
        return "the test's event loop is not asyncio"
    top = type(exc).__module__.split(".")[0]
    if top in _TRANSPORT:
        return "the connection to the world's MCP server failed"
    origin = _origin(exc)
    if origin is None:
        return "pytest could not run the test"
    if _inside(origin, _SHELLS):
        return "faultbench raised it"
    if _inside(origin, _TRANSPORT):
        return "the connection to the world's MCP server failed"
    return None


def problem(exc: BaseException) -> str | None:
    """None if a run that raised `exc` in its call phase is an agent failure; otherwise what
    made it a set-up problem ("an import failed: ModuleNotFoundError: ..."). An exception
    group is a set-up problem when any exception in it is one."""
    for leaf in _leaves(exc):
        why = _why(leaf)
        if why is not None:
            text = f"{type(leaf).__name__}: {leaf}".strip().rstrip(":")
            return f"{why}: {text.splitlines()[0] if text else type(leaf).__name__}"
    return None


def setup_problem(when: str, message: Any) -> str:
    """The cause line of a run that failed in set-up or teardown."""
    first = str(message or "").strip().splitlines()
    text = first[-1] if first else "(no message)"
    return f"it failed in {when}: {text}"


# --- did the agent run? ----------------------------------------------------------------------
# Did the agent run? A run whose agent never ran says nothing about the agent, so a gate
# must never pass on it (docs/TESTING.md, "What counts as a failure"):
#
# - a test that called an agent helper (`run_agent`) and never awaited the coroutine it
#   returned (a sync test, or a forgotten `await`): the agent never ran, whatever the test's
#   asserts said; a set-up problem of the whole group, with the fix (`async def` + `await`);
# - a run that raised before the agent's first call (its world saw no tool call and no model
#   call, and no agent helper started): an empty table, a typo in the test, a bad fixture.
#   Only what happens from the agent's first call on can be an agent failure.


def never_awaited(calls: Sequence[Any]) -> str | None:
    """The set-up problem of a run whose agent helpers were called and not awaited (None:
    every one ran). Closes those coroutines: Python's "coroutine ... was never awaited"
    warning would only repeat this, less clearly."""
    never = [c for c in calls if not c.awaited]
    if not never:
        return None
    for call in never:
        call.coroutine.close()
    names = ", ".join(sorted({c.helper for c in never}))
    times = f"{len(never)} times" if len(never) > 1 else "once"
    return (
        f"{names}(...) was called {times} and never awaited, so the agent never ran and the "
        "test checked nothing about it. Make the test `async def` and await the call: "
        "`run = await run_agent(...)`"
    )


def never_reached_model(calls: Sequence[Any]) -> str | None:
    """The set-up problem of a run with an awaited agent helper call whose agent sent its
    model no request (its framework counts them: Pydantic AI, the Agents SDK): the agent
    never ran, whether the call raised, returned a failed run or the test passed anyway.
    None when every counted call reached its model."""
    never = [c for c in calls if c.awaited and c.model_requests == 0]
    if not never:
        return None
    call = never[0]
    why = f" It ended with {call.ended}." if call.ended else ""
    return (
        f"{call.helper}(...) was awaited, but its agent never sent its model a request (0 "
        f"model requests), so the agent never ran and the test checked nothing about it.{why} "
        "Check what the agent is given before its first turn: the model, the agent's "
        "settings (max_turns=0, a bad output type...), its tools"
    )


def _world_saw_a_call(world: Any) -> bool:
    from faultbench.kernel import ModelCalled

    if len(world.trace):
        return True
    return any(isinstance(e, ModelCalled) for e in world.events)


def before_first_call(exc: BaseException, world: Any, calls: Sequence[Any]) -> str | None:
    """The set-up problem of a run whose test raised `exc` before the agent's first call: its
    world saw no tool call and no model call, and no agent helper started. None when the
    agent had started, when there is no world to ask, and for an assertion or `pytest.fail`
    (the test's verdict, even on an agent that did nothing)."""
    if isinstance(exc, AssertionError | pytest.fail.Exception | pytest.skip.Exception):
        return None
    if world is None or any(c.awaited for c in calls) or _world_saw_a_call(world):
        return None
    text = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
    first = text.splitlines()[0] if text else type(exc).__name__
    return f"the test raised before the agent's first call (the world saw no call): {first}"
