"""The virtual clock: a world's time, which moves only through `ClockAdvanced` events.

Nothing in faultbench sleeps. Latency, timeouts and `clock.advance()` in a test all append a
`ClockAdvanced` event; `now()` reads the time from the state the events built. So time is
part of the log: a replay, a fork or a restore has exactly the clock it had.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from .._text import to_utc
from ._book import atomic
from ._later import move_clock

if TYPE_CHECKING:
    from ._book import Store


class VirtualClock:
    """`now()`, `advance(seconds)`, `set(dt)` over one world (or one handler's transaction)."""

    __slots__ = ("_store",)

    def __init__(self, store: Store):
        self._store = store

    def __repr__(self) -> str:
        return f"<VirtualClock {self.now().isoformat()}>"

    def now(self) -> datetime:
        """The current virtual time (timezone-aware, UTC)."""
        return self._store.state.clock

    @atomic
    def advance(self, seconds: float | timedelta) -> datetime:
        """Move time forward by `seconds` (a number or a timedelta); returns the new time."""
        if isinstance(seconds, bool) or not isinstance(seconds, int | float | timedelta):
            raise TypeError(
                "Expected a number of seconds or a timedelta. Instead, received: "
                f"{seconds!r} ({type(seconds).__name__})"
            )
        now = self.now()
        try:
            delta = seconds if isinstance(seconds, timedelta) else timedelta(seconds=seconds)
            to = now + delta
        except (OverflowError, ValueError):  # NaN, inf, or past datetime's year 9999
            raise ValueError(
                f"Expected a finite number of seconds that keeps the clock before year 10000. "
                f"Instead, received: {seconds!r} (the clock is at {now.isoformat()})."
            ) from None
        if delta < timedelta(0):
            raise ValueError(
                f"The virtual clock only moves forward. Expected seconds >= 0. Instead, "
                f"received: {seconds!r}. To go back in time, restore a snapshot."
            )
        return self._move(to)

    @atomic
    def set(self, dt: datetime | str) -> datetime:
        """Jump to `dt` (a datetime, naive means UTC, or an ISO 8601 string). Never backwards."""
        if isinstance(dt, str):
            try:
                dt = datetime.fromisoformat(dt)
            except ValueError:
                raise ValueError(
                    f"Expected an ISO 8601 date-time such as '2025-06-01T12:00:00Z'. "
                    f"Instead, received: {dt!r}"
                ) from None
        if not isinstance(dt, datetime):
            raise TypeError(f"Expected a datetime. Instead, received: {dt!r}")
        dt = to_utc(dt)
        now = self.now()
        if dt < now:
            raise ValueError(
                f"The virtual clock cannot go backwards: it is {now.isoformat()} and "
                f"set() received {dt.isoformat()}. To go back, restore a snapshot taken "
                "earlier (world.snapshot() / world.restore(snap))."
            )
        return self._move(dt)

    def _move(self, to: datetime) -> datetime:
        store = self._store
        # effects due on the way fire at their time (`_later.py`)
        move_clock(store, to, store.call_id)
        return to
