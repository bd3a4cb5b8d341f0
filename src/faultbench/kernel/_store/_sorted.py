"""Sorted field indexes: a table's records ordered by one field's value, then id.

What `list_*` operations with `sort:` or a range filter (`amount_gte`, `created_at_lt`) read:
a persistent sorted set of entries `(present, value, id_order(id), id)`, chunked like
`IdSet` (`_indexes.py`), so a range or a page starting at a cursor is found by bisection
(O(log n)) and walked in O(records returned), forwards or backwards, and one record event
changes one chunk. Nulls sort first (`present` is False, their value a placeholder), and
two records with the same value by id, so every record has exactly one place: a cursor that
names an entry's key (`key_of`) names a position that inserts and deletes do not move.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from itertools import accumulate, chain
from typing import Any

from .._text import id_order

_CAP = 1024  # entries per chunk, as for IdSet

Entry = tuple[Any, ...]  # (present, value, id_order(id), id)


def entry(value: Any, rid: str) -> Entry:
    if value is ID:
        key = id_order(rid)
        return (True, key, key, rid)
    if value is None:
        return (False, 0, id_order(rid), rid)
    return (True, value, id_order(rid), rid)


def key_of(value: Any, rid: str) -> tuple[Any, ...]:
    """The position of record `rid` with this value (an entry without its id)."""
    return entry(value, rid)[:3]


#: the value of the `id` field's entries: they sort by `id_order` (see `field_value`)
ID: Any = object()


def field_value(data: Any, field: str) -> Any:
    """What a sorted index of `field` orders a record by."""
    return ID if field == "id" else data.get(field)


#: above every id key: `(True, v, TOP)` sorts after every entry of value v
TOP = (float("inf"),)


class Ranked:
    """What `KeySet` and `IdSet` share: chunks of sorted items, and positions in them.

    A position p (0 <= p <= n) is how many items come before a place; `_place(p)` is the
    (chunk, offset) of that place and `_position` its inverse, both O(log n) once the chunks'
    starting positions are known. Those are made on the first read that needs them (a skip:
    an offset page, or a first cursor page under `page_drift`; a count) and kept with the
    set: O(chunks), in C, once per set (a write makes a new set)."""

    __slots__ = ("_starts",)
    _chunks: tuple[tuple[Any, ...], ...]
    _starts: list[int] | None

    def _starts_of(self) -> list[int]:
        starts = self._starts
        if starts is None:  # each chunk's first position, then n
            starts = self._starts = list(accumulate(map(len, self._chunks), initial=0))
        return starts

    def _position(self, i: int, j: int) -> int:
        return self._starts_of()[i] + j  # i == len(chunks): the end, n

    def _place(self, p: int) -> tuple[int, int]:
        starts = self._starts_of()
        i = min(bisect_right(starts, p) - 1, len(self._chunks))
        return i, p - starts[i]

    def _skipped(
        self, start: tuple[int, int], end: tuple[int, int], skip: int, reverse: bool
    ) -> tuple[tuple[int, int], tuple[int, int]]:
        """The places [start, end) with `skip` items left out at the walk's beginning (its
        first, or its last when `reverse`); start == end when nothing is left."""
        a, b = self._position(*start), self._position(*end)
        a, b = (min(a + skip, b), b) if not reverse else (a, max(b - skip, a))
        return self._place(a), self._place(b)


class KeySet(Ranked):
    """A persistent sorted set of entries. Never changes once made."""

    __slots__ = ("_chunks", "_fences", "_n")

    def __init__(
        self,
        chunks: tuple[tuple[Entry, ...], ...] = (),
        n: int = 0,
        fences: list[Entry] | None = None,
    ):
        self._chunks = chunks
        self._n = n
        # each chunk's last entry: made on the first read, then carried to the sets that
        # writes make from this one (a list copy in C, where remaking it read every chunk)
        self._fences = fences
        self._starts = None  # each chunk's position (`Ranked`)

    @classmethod
    def of(cls, entries: list[Entry]) -> KeySet:
        entries.sort()
        chunks = tuple(tuple(entries[i : i + _CAP]) for i in range(0, len(entries), _CAP))
        return cls(chunks, len(entries))

    def __len__(self) -> int:
        return self._n

    def _fences_of(self) -> list[Entry]:
        fences = self._fences
        if fences is None:  # once per set read without a parent's fences
            fences = self._fences = [c[-1] for c in self._chunks]
        return fences

    def _find(self, key: tuple[Any, ...]) -> tuple[int, int]:
        """(chunk, position) of the first entry >= key."""
        chunks = self._chunks
        i = bisect_left(self._fences_of(), key)
        if i == len(chunks):
            return i, 0
        return i, bisect_left(chunks[i], key)

    def add(self, e: Entry) -> KeySet:
        chunks = self._chunks
        if not chunks:
            return KeySet(((e,),), 1, [e])
        last = chunks[-1]
        fences = self._fences_of()
        if e > last[-1]:
            if len(last) < _CAP:
                return KeySet((*chunks[:-1], (*last, e)), self._n + 1, [*fences[:-1], e])
            return KeySet((*chunks, (e,)), self._n + 1, [*fences, e])
        i, j = self._find(e)
        chunk = chunks[i]
        if j < len(chunk) and chunk[j] == e:
            return self
        new = (*chunk[:j], e, *chunk[j:])
        parts = (new[: len(new) // 2], new[len(new) // 2 :]) if len(new) > 2 * _CAP else (new,)
        return KeySet(
            (*chunks[:i], *parts, *chunks[i + 1 :]),
            self._n + 1,
            [*fences[:i], *(part[-1] for part in parts), *fences[i + 1 :]],
        )

    def remove(self, e: Entry) -> KeySet:
        chunks = self._chunks
        i, j = self._find(e)
        if i == len(chunks) or j >= len(chunks[i]) or chunks[i][j] != e:
            return self
        chunk = chunks[i]
        fences = self._fences_of()
        if len(chunk) == 1:
            return KeySet(
                (*chunks[:i], *chunks[i + 1 :]), self._n - 1, fences[:i] + fences[i + 1 :]
            )
        rest = (*chunk[:j], *chunk[j + 1 :])
        return KeySet(
            (*chunks[:i], rest, *chunks[i + 1 :]),
            self._n - 1,
            [*fences[:i], rest[-1], *fences[i + 1 :]],
        )

    def _bounds(
        self, lo: tuple[Any, ...] | None, hi: tuple[Any, ...] | None
    ) -> tuple[tuple[int, int], tuple[int, int]]:
        start = self._find(lo) if lo is not None else (0, 0)
        end = self._find(hi) if hi is not None else (len(self._chunks), 0)
        return start, max(start, end)

    def count(self, lo: tuple[Any, ...] | None = None, hi: tuple[Any, ...] | None = None) -> int:
        """How many entries e have lo <= e < hi: O(log n), no entry read."""
        start, end = self._bounds(lo, hi)
        return self._position(*end) - self._position(*start)

    def walk(
        self,
        lo: tuple[Any, ...] | None = None,
        hi: tuple[Any, ...] | None = None,
        *,
        reverse: bool = False,
        skip: int = 0,
    ) -> Iterator[Entry]:
        """Entries e with lo <= e < hi (None: unbounded), ascending, or descending, the first
        `skip` of them left out: two bisections, then whole chunk slices (no comparison per
        entry); a skip is O(log n) too (`Ranked`)."""
        chunks = self._chunks
        start, end = self._bounds(lo, hi)
        if skip:
            start, end = self._skipped(start, end, skip, reverse)
        (i, j), (k, m) = start, end
        if (i, j) >= (k, m):
            return iter(())
        last = min(k, len(chunks) - 1)
        # lazily, chunk by chunk: a page reads the chunks it needs, not every chunk in range
        if not reverse:
            return chain.from_iterable(
                chunks[n][j if n == i else 0 : m if n == k else None] for n in range(i, last + 1)
            )
        return chain.from_iterable(
            chunks[n][j if n == i else 0 : m if n == k else None][::-1]
            for n in range(last, i - 1, -1)
        )
