"""The event log as a persistent sequence: forks share their parent's prefix, restores are O(1).

A log is a chain of append-only segments. Each segment continues the first `start` events of
its base segment (the events of the base chain after those belong to someone else's future). An `EventLog` is an immutable view: a
segment plus a length. Because segments are only ever appended to, and only by the one world
that writes them, a view never changes once taken, so

- `world.snapshot()` keeps a view (O(1));
- `world.fork()` starts a new segment on top of that view (O(1), nothing copied);
- `world.restore(snap)` starts a new segment on top of the snapshot's view (O(1)): the old
  events after it stay where they are for anyone still holding a view of them.

A log may also be a window (`EventLog.cut`, what `lowlevel.keep_events` does to a long
session's log): its chain then starts with a segment whose `start` is the log's `first` seq,
not 0, and the events before it are gone from memory (a journal holds them). Positions stay
seqs (`log[i].seq == i`, `len(log)` is the seq of the next event), so code that reads the
tail of a log works on a window unchanged; reading an event before `first` raises an
`IndexError` that says so, slices and iteration cover the window only.
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


class Cut:
    """Where a window begins: its first seq, and the log's event 0 (`WorldCreated`), which
    a window keeps however far it moved (a reset needs it). One per `EventLog.cut`, shared
    by every view built on that window: a journal tells windows apart by it."""

    __slots__ = ("__weakref__", "origin", "seq")

    def __init__(self, seq: int, origin: Event | None):
        self.seq = seq
        self.origin = origin


class Segment:
    """Events appended after the first `start` events of `base` (None: from the beginning,
    or, with `cut`, from the window's first seq).

    `depth` is the number of segments below this one, and `jump` an older segment of the
    same chain chosen so that finding the segment holding any position takes O(log depth)
    steps (the skew-binary jump pointers of Myers' random-access lists)."""

    __slots__ = ("base", "cut", "depth", "items", "jump", "start")

    def __init__(
        self,
        base: Segment | None,
        start: int,
        items: list[Event] | None = None,
        cut: Cut | None = None,
    ):
        self.base = base
        self.start = start
        self.items: list[Event] = [] if items is None else items
        if base is None:
            #: the window this chain is, None for a whole log (from event 0)
            self.cut = cut
            self.depth = 0
            self.jump: Segment = self
        else:
            self.cut = base.cut
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
        """The number of events the world logged: the seq of the next one (a window holds
        only those from `first` on)."""
        return self._n

    @property
    def first(self) -> int:
        """The seq of the first event held in memory: 0, unless this log is a window whose
        older events were dropped (`lowlevel.keep_events`; the journal holds them)."""
        cut = self._seg.cut
        return 0 if cut is None else cut.seq

    @property
    def window(self) -> Cut | None:
        """Where this window begins (None for a whole log)."""
        return self._seg.cut

    @property
    def origin(self) -> Event | None:
        """Event 0 (`WorldCreated`), kept by a window too; None for an empty log."""
        cut = self._seg.cut
        if cut is not None:
            return cut.origin
        return self[0] if self._n else None

    def cut(self, first: int) -> EventLog:
        """This log as a window from seq `first` on: a new chain of one segment, holding a
        copy of the events from `first` (the older ones stay only in views taken before)."""
        n = self._n
        if not self.first <= first < n:
            raise ValueError(
                f"Expected a seq from {self.first} to {n - 1} to cut the log at. "
                f"Instead, received: {first}"
            )
        seg = Segment(None, first, self._range(first, n), Cut(first, self.origin))
        return EventLog(seg, n)

    def branch(self, items: list[Event] | None = None) -> Segment:
        """A new segment continuing this view: the log of a fork, or of a world restored to
        it. Anyone holding a view of events after it keeps them."""
        n = self._n
        if n == 0:
            return Segment(None, 0, items)
        if n == self.first:  # an empty window (never made by `cut`, which keeps an event)
            return Segment(None, n, items, self._seg.cut)
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
        first = self.first
        if i < first:
            raise IndexError(
                f"event {i} is no longer in memory: this log keeps the events from seq "
                f"{first} on (lowlevel.keep_events, serve --keep-events); the journal file "
                "(--events) holds every event"
            )
        seg = self._seg.holding(i)
        return seg.items[i - seg.start]

    def parts(self) -> list[tuple[list[Event], int, int]]:
        """(items, lo, hi) slices of each segment, oldest first (O(segments): reading a
        part of the log is cheaper with a slice)."""
        return self._parts(0, self._n)

    def _parts(self, start: int, stop: int) -> list[tuple[list[Event], int, int]]:
        """(items, lo, hi) slices holding positions start..stop-1, oldest first (a window:
        those from `first` on); costs the segments they span, plus O(log depth) to find the
        newest."""
        parts: list[tuple[list[Event], int, int]] = []
        start = max(start, self.first)
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
        first = self.first
        held = f", from seq {first} held" if first else ""
        return f"<EventLog: {self._n} events{held}>"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EventLog | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists and tuples, so not hashable
