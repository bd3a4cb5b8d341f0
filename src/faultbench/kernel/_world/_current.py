"""The current world: which world code that has no world in hand (a `fault_inject` wrapper, a
mock tool, an agent's helper) should charge its latency to and call tools on.

One `contextvars.ContextVar`, so it follows the code that set it: into tasks (asyncio and trio
copy the context when a task starts) and into threads started with `asyncio.to_thread` or
`anyio.to_thread.run_sync`, which run their function in a copy of the caller's context. A
plain `threading.Thread` starts with an empty context, as Python defines it; hand such a
thread the world itself (a world's tools live in the world, not in the context).

`faultbench.testing.scenario` and the pytest plugin's `world` fixture set it; anything else
can, with `using_world(world)`.
"""

from __future__ import annotations

import inspect
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._world import World

__all__ = [
    "AgentCall",
    "current_world",
    "note_agent_call",
    "recording_agent_calls",
    "using_world",
]

_CURRENT: ContextVar[World | None] = ContextVar("faultbench_current_world", default=None)


def current_world() -> World | None:
    """The world set by the innermost `using_world` (or `scenario`, or the pytest `world`
    fixture) around the running code; None outside of one."""
    return _CURRENT.get()


@contextmanager
def using_world(world: World | None) -> Iterator[World | None]:
    """Make `world` the current world inside the block (None: no current world)::

    with faultbench.using_world(world):
        lookup("Paris")  # a fault_inject wrapper charges its latency to world.clock
    """
    from ._world import World

    if world is not None and not isinstance(world, World):
        raise TypeError(
            f"Expected a faultbench World (or None). Instead, received: {world!r} "
            f"({type(world).__name__})"
        )
    token = _CURRENT.set(world)
    try:
        yield world
    finally:
        try:
            _CURRENT.reset(token)
        except ValueError:
            # Left from another context (a generator fixture finalized elsewhere): the
            # block is over all the same, so no world is current any more.
            _CURRENT.set(None)


# --- agent helper calls -----------------------------------------------------------------------


@dataclass
class AgentCall:
    """One call of an agent helper (`run_agent`): its name and the coroutine it returned,
    which the caller should have awaited."""

    helper: str
    coroutine: Coroutine[Any, Any, Any]
    #: the requests the agent sent its model during the call, once it is over (None: not
    #: over, or a helper that does not count them)
    model_requests: int | None = None
    #: what ended the call when it failed (an exception it raised, or its run's error)
    ended: str | None = None

    @property
    def awaited(self) -> bool:
        """The coroutine started (awaited, or run by `asyncio.run`, a task...)."""
        return inspect.getcoroutinestate(self.coroutine) != inspect.CORO_CREATED


_AGENT_CALLS: ContextVar[list[AgentCall] | None] = ContextVar(
    "faultbench_agent_calls", default=None
)


@contextmanager
def recording_agent_calls() -> Iterator[list[AgentCall]]:
    """Inside the block, every agent helper called (`note_agent_call`) lands in the list it
    yields: the pytest plugin tells from it a run whose agent was called but never awaited."""
    calls: list[AgentCall] = []
    token = _AGENT_CALLS.set(calls)
    try:
        yield calls
    finally:
        try:
            _AGENT_CALLS.reset(token)
        except ValueError:
            _AGENT_CALLS.set(None)


def note_agent_call(helper: str, coroutine: Coroutine[Any, Any, Any]) -> AgentCall | None:
    """Record that `helper` was called and returned `coroutine`, and return the record, which
    the helper fills in as it runs (None outside `recording_agent_calls`)."""
    calls = _AGENT_CALLS.get()
    if calls is None:
        return None
    call = AgentCall(helper, coroutine)
    calls.append(call)
    return call
