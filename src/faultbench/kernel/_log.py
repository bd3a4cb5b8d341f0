"""The event log as a persistent sequence: forks share their parent's prefix, restores are O(1).

A log is a chain of append-only segments. Each segment starts where its base (an `EventLog`
view of another segment, capped at a length) ends. An `EventLog` is an immutable view: a
segment plus a length. Because segments are only ever appended to, and only by the one world
that writes them, a view never changes once taken, so

- `world.snapshot()` keeps a view (O(1));
- `world.fork()` starts a new segment on top of that view (O(1), nothing copied);
- `world.restore(snap)` starts a new segment on top of the snapshot's view (O(1)): the old
  events after it stay where they are for anyone still holding a view of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import overload

from ._events import Event


class Segment:
    __slots__ = ("base", "items", "start")

    base: EventLog | None
    start: int

    def __init__(self, base: EventLog | None, items: list[Event] | None = None):
        # A view that adds nothing to its own segment can be skipped: this keeps chains
        # short however often a world restores the same snapshot.
        while base is not None and base._n == base._seg.start and base._seg.base is not None:
            base = base._seg.base
        if base is not None and base._n == 0:
            base = None
        self.base = base
        self.start = 0 if base is None else base._n
        self.items: list[Event] = [] if items is None else items


class EventLog(Sequence[Event]):
    """A read-only, fixed-length view of a world's events (`world.events`)."""

    __slots__ = ("_n", "_seg")

    def __init__(self, seg: Segment, n: int):
        self._seg = seg
        self._n = n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Event: ...
    @overload
    def __getitem__(self, i: slice) -> list[Event]: ...
    def __getitem__(self, i: int | slice) -> Event | list[Event]:
        if isinstance(i, slice):
            start, stop, step = i.indices(self._n)
            if step == 1:
                return list(self._iter_range(start, stop))
            return [self[j] for j in range(start, stop, step)]
        n = self._n
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"event index {i} out of range for a log of {n} events")
        seg = self._seg
        while i < seg.start:
            seg = seg.base._seg  # type: ignore[union-attr]
        return seg.items[i - seg.start]

    def _parts(self) -> list[tuple[list[Event], int, int]]:
        """(items, lo, hi) slices of each segment, oldest first."""
        parts = []
        seg, hi = self._seg, self._n
        while True:
            parts.append((seg.items, 0, hi - seg.start))
            if seg.base is None:
                break
            hi = seg.base._n
            seg = seg.base._seg
        parts.reverse()
        return parts

    def _iter_range(self, start: int, stop: int) -> Iterator[Event]:
        offset = 0
        for items, lo, hi in self._parts():
            size = hi - lo
            a, b = max(start - offset, 0), min(stop - offset, size)
            if a < b:
                yield from islice(items, lo + a, lo + b)
            offset += size
            if offset >= stop:
                break

    def __iter__(self) -> Iterator[Event]:
        for items, lo, hi in self._parts():
            yield from islice(items, lo, hi)

    def __repr__(self) -> str:
        return f"<EventLog: {self._n} events>"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EventLog | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]
