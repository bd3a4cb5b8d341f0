"""The event log as a persistent sequence: forks share their parent's prefix, restores are O(1).

A log is a chain of append-only segments. Each segment continues the first `start` events of
its base segment (the events of the base chain after those belong to someone else's future). An `EventLog` is an immutable view: a
segment plus a length. Because segments are only ever appended to, and only by the one world
that writes them, a view never changes once taken, so

- `world.snapshot()` keeps a view (O(1));
- `world.fork()` starts a new segment on top of that view (O(1), nothing copied);
- `world.restore(snap)` starts a new segment on top of the snapshot's view (O(1)): the old
  events after it stay where they are for anyone still holding a view of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain, islice
from typing import overload

from ._events import Event

# Reading a log
# -------------
# A view's events are spread over its chain of segments, which is as long as the number of
# forks and restores it went through (10k nested forks: 10k segments). So nothing here walks
# the whole chain unless it reads the whole log: `events[i]` finds its segment with skip
# pointers (`jump`, O(log depth)), and a tail `events[p:]` walks back from the newest
# segment only as far as `p` and copies with list slices, so it costs O(events after p).


class Segment:
    """Events appended after the first `start` events of `base` (None: from the beginning).

    `depth` is the number of segments below this one, and `jump` an older segment of the
    same chain chosen so that finding the segment holding any position takes O(log depth)
    steps (the skew-binary jump pointers of Myers' random-access lists)."""

    __slots__ = ("base", "depth", "items", "jump", "start")

    def __init__(self, base: Segment | None, start: int, items: list[Event] | None = None):
        self.base = base
        self.start = start
        self.items: list[Event] = [] if items is None else items
        if base is None:
            self.depth = 0
            self.jump: Segment = self
        else:
            self.depth = base.depth + 1
            j = base.jump
            if base.depth - j.depth == j.depth - j.jump.depth:
                self.jump = j.jump
            else:
                self.jump = base

    def holding(self, i: int) -> Segment:
        """The segment of this chain that holds position `i` (0 <= i < a view's length).
        Starts decrease strictly down the chain, and the first segment starts at 0."""
        seg = self
        while seg.start > i:
            seg = seg.jump if seg.jump.start > i else seg.base  # type: ignore[assignment]  # start > 0: not the first segment, so it has a base
        return seg


class EventLog(Sequence[Event]):
    """A read-only, fixed-length view of a world's events (`world.events`)."""

    __slots__ = ("_n", "_seg")

    def __init__(self, seg: Segment, n: int):
        self._seg = seg
        self._n = n

    def __len__(self) -> int:
        return self._n

    def branch(self, items: list[Event] | None = None) -> Segment:
        """A new segment continuing this view: the log of a fork, or of a world restored to
        it. Anyone holding a view of events after it keeps them."""
        n = self._n
        if n == 0:
            return Segment(None, 0, items)
        # The segment holding the last event: a view that adds nothing to its own segment
        # is skipped, which keeps chains short however often a world restores a snapshot.
        return Segment(self._seg.holding(n - 1), n, items)

    @overload
    def __getitem__(self, i: int) -> Event: ...
    @overload
    def __getitem__(self, i: slice) -> list[Event]: ...
    def __getitem__(self, i: int | slice) -> Event | list[Event]:
        if isinstance(i, slice):
            start, stop, step = i.indices(self._n)
            if step == 1:
                return self._range(start, stop)
            return [self[j] for j in range(start, stop, step)]
        n = self._n
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"event index {i} out of range for a log of {n} events")
        seg = self._seg.holding(i)
        return seg.items[i - seg.start]

    def parts(self) -> list[tuple[list[Event], int, int]]:
        """(items, lo, hi) slices of each segment, oldest first (O(segments): reading a
        part of the log is cheaper with a slice)."""
        return self._parts(0, self._n)

    def _parts(self, start: int, stop: int) -> list[tuple[list[Event], int, int]]:
        """(items, lo, hi) slices holding positions start..stop-1, oldest first; costs the
        segments they span, plus O(log depth) to find the newest."""
        parts: list[tuple[list[Event], int, int]] = []
        if start >= stop:
            return parts
        seg = self._seg.holding(stop - 1)
        hi = stop
        while True:
            lo = max(start, seg.start)
            parts.append((seg.items, lo - seg.start, hi - seg.start))
            if seg.start <= start or seg.base is None:
                break
            hi = seg.start
            seg = seg.base
        parts.reverse()
        return parts

    def _range(self, start: int, stop: int) -> list[Event]:
        parts = self._parts(start, stop)
        if len(parts) == 1:
            items, lo, hi = parts[0]
            return items[lo:hi]
        return list(chain.from_iterable(items[lo:hi] for items, lo, hi in parts))

    def __iter__(self) -> Iterator[Event]:
        for items, lo, hi in self._parts(0, self._n):
            # islice, not a copy, from the start; never past `hi`: the newest segment may
            # grow while this runs
            yield from islice(items, hi) if lo == 0 else items[lo:hi]

    def __reversed__(self) -> Iterator[Event]:
        """Newest first; each event read costs O(1), so stopping early is cheap."""
        seg: Segment | None = self._seg
        hi = self._n
        while seg is not None and hi > 0:
            items = seg.items
            for i in range(hi - seg.start - 1, -1, -1):
                yield items[i]
            hi = seg.start
            seg = seg.base

    def __repr__(self) -> str:
        return f"<EventLog: {self._n} events>"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EventLog | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists and tuples, so not hashable
