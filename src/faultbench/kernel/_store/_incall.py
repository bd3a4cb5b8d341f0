"""Faults charged from inside a tool call: what a `fault_inject` wrapper does when the function
it wraps is a world's tool (a mock tool).

A tool's handler runs inside its call's transaction, which owns the clock: the handler cannot
move the world's clock itself (the book refuses writes while a handler runs) and whatever it
writes to its transaction is dropped when it raises. So a wrapper that decides latency or an
error inside a tool does not write anything: it *charges* the running call
(`running_call().charge(...)`), and the call settles the charges when its handler is done,
whether it returned or raised: each fault becomes a `FaultInjected` event of the call, and
the latency a `ClockAdvanced` of the call. The call then ends later in virtual time, its
`CallResult.fault` names the kind, and `trace.faults()` lists it, exactly as if the world's
own fault rules had decided it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import timedelta
from typing import Any, Protocol

from ._events import Event, FaultInjected
from ._later import move_clock
from ._state import State


class Store(Protocol):
    """What charges are settled into: a call's transaction or draft (`_book.Store`)."""

    @property
    def state(self) -> State: ...

    def emit(self, event: Event) -> None: ...


__all__ = ["ToolCharges", "charging", "running_call"]


class ToolCharges:
    """The running tool call, as code inside its handler sees it: `charge` it latency and
    faults. `owner` identifies the world's book (to refuse a handler calling its own world)."""

    __slots__ = ("call_id", "first", "items", "owner", "tool")

    def __init__(self, owner: object, call_id: str | None, tool: str):
        self.owner = owner
        self.call_id = call_id
        self.tool = tool
        #: (virtual seconds, fault kind or None, FaultInjected.detail), in the order charged
        self.items: list[tuple[float, str | None, dict[str, Any]]] = []
        #: the first fault kind settled (what the call's `CallResult.fault` names)
        self.first: str | None = None

    def charge(
        self, seconds: float, kind: str | None = None, detail: dict[str, Any] | None = None
    ) -> None:
        """This call takes `seconds` more of virtual time; `kind`: the fault it received."""
        if not seconds >= 0:
            raise ValueError(f"Expected seconds >= 0. Instead, received: {seconds!r}")
        self.items.append((float(seconds), kind, dict(detail or {})))

    def settle(self, store: Store) -> str | None:
        """Write the charges into `store` (the call's transaction, or the call's draft when
        the handler raised); returns the first fault kind charged, or None."""
        first = self.first
        for seconds, kind, detail in self.items:
            state = store.state
            if kind is not None and self.call_id is not None:
                store.emit(
                    FaultInjected(
                        seq=state.seq,
                        at=state.clock,
                        call_id=self.call_id,
                        tool=self.tool,
                        kind=kind,
                        detail=detail,
                    )
                )
                first = first or kind
            if seconds > 0:
                state = store.state
                try:
                    to = state.clock + timedelta(seconds=seconds)
                except OverflowError:
                    continue  # past datetime's year 9999: the call cannot take longer
                move_clock(store, to, self.call_id)
        self.items.clear()
        self.first = first
        return first


_RUNNING: ContextVar[ToolCharges | None] = ContextVar("faultbench_running_call", default=None)


def running_call() -> ToolCharges | None:
    """The world tool call whose handler is running the current code, or None."""
    return _RUNNING.get()


@contextmanager
def charging(charges: ToolCharges) -> Iterator[ToolCharges]:
    token = _RUNNING.set(charges)
    try:
        yield charges
    finally:
        _RUNNING.reset(token)
