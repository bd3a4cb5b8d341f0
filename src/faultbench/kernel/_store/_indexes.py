"""Table indexes kept in the state: each table's ids in id order, and its ids by field value.

Why
---
`list_orders`, `where` and `pick` return records in id order. Sorting every id per read (or
per new state) made a read at 1M records cost seconds. So a table's id order is part of the
persistent state, updated by the reducer per record event and shared, like the records, by
snapshots and forks: a read walks it in O(records returned) and never sorts.

An `IdSet` is a persistent sorted set of ids (the order of `id_order`): a tuple of chunks of
at most `_CAP` ids each. Adding or removing one id copies one chunk and the tuple of chunks,
O(sqrt n)-ish with small constants (a pointer copy of about 1k entries at 1M ids); appending
the largest id, what automatic ids always do, needs no search at all.

A `TableIndex` holds a table's `IdSet` and, for a few fields, value -> the ids having that
value (one id as a plain `str`, more as an `IdSet`), so `where(status="x")` and a `list_*`
filter read only the matching ids. Which fields: whatever the world asks for
(`index_fields`: the filters of its operations and every `ref` field), decided once per
world when it is created, replayed or forked; a table read on another field scans the id
order, still without sorting.

A `TableIndex` remembers the rows map it describes (`rows`): a reader that finds another map
in the state (a state built some other way) falls back to sorting, so an index can only ever
be missing, never wrong.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain
from typing import TYPE_CHECKING, Any, Literal

import immutables

from .._spec import list_sorted_fields
from .._text import id_order
from ._sorted import KeySet, Ranked, entry, field_value

if TYPE_CHECKING:
    from .._spec import WorldSpec

_CAP = 1024  # ids per chunk: appends fill chunks to _CAP, inserts split above 2 * _CAP

Chunks = tuple[tuple[str, ...], ...]


def _last_key(chunk: tuple[str, ...]) -> tuple[int, int, str]:
    return id_order(chunk[-1])


class IdSet(Ranked):
    """A persistent set of ids, iterated in id order. Never changes once made."""

    __slots__ = ("_chunks", "_n")

    def __init__(self, chunks: Chunks = (), n: int = 0):
        self._chunks = chunks
        self._n = n
        self._starts = None  # each chunk's position (`Ranked`)

    @classmethod
    def of_sorted(cls, ids: list[str]) -> IdSet:
        """The set of `ids`, already in id order and distinct."""
        chunks = tuple(tuple(ids[i : i + _CAP]) for i in range(0, len(ids), _CAP))
        return cls(chunks, len(ids))

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[str]:
        return chain.from_iterable(self._chunks)

    def first(self) -> str | None:
        return self._chunks[0][0] if self._chunks else None

    def _find(self, key: tuple[Any, ...]) -> tuple[int, int]:
        """(chunk, position) where an id of sort key `key` is or would go; chunk may be
        len(chunks) when it goes after everything."""
        chunks = self._chunks
        i = bisect_left(chunks, key, key=_last_key)
        if i == len(chunks):
            return i, 0
        return i, bisect_left(chunks[i], key, key=id_order)

    def __contains__(self, rid: object) -> bool:
        if not isinstance(rid, str):
            return False
        i, j = self._find(id_order(rid))
        return i < len(self._chunks) and j < len(self._chunks[i]) and self._chunks[i][j] == rid

    def walk(
        self, start: tuple[Any, ...] | None = None, *, reverse: bool = False, skip: int = 0
    ) -> Iterator[str]:
        """Ids whose `id_order` key is >= `start` in id order, or < `start` in reverse id
        order (None: from the first, or from the last), the first `skip` of them left out;
        O(log n) to begin, then iterated in C. (`start` may extend a key, `(*id_order(rid),
        "")`: just above `rid`'s own key.)"""
        chunks = self._chunks
        if not reverse:
            i, j = self._find(start) if start is not None else (0, 0)
            if skip:
                (i, j), _ = self._skipped((i, j), (len(chunks), 0), skip, reverse)
            if i == len(chunks):
                return iter(())
            first = chunks[i][j:] if j else chunks[i]
            rest = map(chunks.__getitem__, range(i + 1, len(chunks)))
            return chain(first, chain.from_iterable(rest))
        i, j = self._find(start) if start is not None else (len(chunks), 0)
        if skip:
            _, (i, j) = self._skipped((0, 0), (i, j), skip, reverse)
        head = reversed(chunks[i][:j]) if i < len(chunks) else iter(())
        before = map(reversed, map(chunks.__getitem__, range(i - 1, -1, -1)))
        return chain(head, chain.from_iterable(before))

    def count(self, start: tuple[Any, ...] | None = None, *, reverse: bool = False) -> int:
        """How many ids `walk(start, reverse=reverse)` gives: O(log n), no id read."""
        if start is None:
            return self._n
        at = self._position(*self._find(start))
        return at if reverse else self._n - at

    def add(self, rid: str) -> IdSet:
        chunks = self._chunks
        if not chunks:
            return IdSet(((rid,),), 1)
        key = id_order(rid)
        last = chunks[-1]
        if key > id_order(last[-1]):  # the common case: a new largest id
            if len(last) < _CAP:
                return IdSet((*chunks[:-1], (*last, rid)), self._n + 1)
            return IdSet((*chunks, (rid,)), self._n + 1)
        i, j = self._find(key)
        chunk = chunks[i]
        if j < len(chunk) and chunk[j] == rid:
            return self
        new = (*chunk[:j], rid, *chunk[j:])
        if len(new) > 2 * _CAP:
            half = len(new) // 2
            parts: Chunks = (new[:half], new[half:])
        else:
            parts = (new,)
        return IdSet((*chunks[:i], *parts, *chunks[i + 1 :]), self._n + 1)

    def remove(self, rid: str) -> IdSet:
        chunks = self._chunks
        i, j = self._find(id_order(rid))
        if i == len(chunks) or j >= len(chunks[i]) or chunks[i][j] != rid:
            return self
        chunk = chunks[i]
        if len(chunk) == 1:
            return IdSet((*chunks[:i], *chunks[i + 1 :]), self._n - 1)
        return IdSet((*chunks[:i], (*chunk[:j], *chunk[j + 1 :]), *chunks[i + 1 :]), self._n - 1)


#: the ids having one value of an indexed field: one id, or an IdSet of two or more
Bucket = str | IdSet


def bucket_ids(bucket: Bucket | None) -> Iterable[str]:
    if bucket is None:
        return ()
    if isinstance(bucket, str):
        return (bucket,)
    return bucket


def bucket_len(bucket: Bucket | None) -> int:
    if bucket is None:
        return 0
    return 1 if isinstance(bucket, str) else len(bucket)


def _bucket_add(
    by: immutables.Map[Any, Bucket], value: Any, rid: str
) -> immutables.Map[Any, Bucket]:
    cur = by.get(value)
    if cur is None:
        return by.set(value, rid)
    if isinstance(cur, str):
        if cur == rid:
            return by
        ids = [cur, rid] if id_order(cur) < id_order(rid) else [rid, cur]
        return by.set(value, IdSet.of_sorted(ids))
    return by.set(value, cur.add(rid))


def _bucket_remove(
    by: immutables.Map[Any, Bucket], value: Any, rid: str
) -> immutables.Map[Any, Bucket]:
    cur = by.get(value)
    if cur is None:
        return by
    if isinstance(cur, str):
        return by.delete(value) if cur == rid else by
    ids = cur.remove(rid)
    if len(ids) == 1:
        only = ids.first()
        assert only is not None
        return by.set(value, only)
    return by.set(value, ids)


_NO_BY: tuple[immutables.Map[Any, Bucket], ...] = ()


#: in a `wanted` tuple, a field kept sorted by value (`_sorted.py`) rather than by value
SORTED = "<"


class TableIndex:
    """One table's id order, ids by value for `fields`, and a `KeySet` by value for each of
    `sorted_fields` (see the module docstring and `_sorted.py`)."""

    __slots__ = ("by", "fields", "ids", "rows", "sorted", "sorted_fields")

    def __init__(
        self,
        rows: immutables.Map[str, dict[str, Any]],
        ids: IdSet,
        fields: tuple[str, ...] = (),
        by: tuple[immutables.Map[Any, Bucket], ...] = _NO_BY,
        sorted_fields: tuple[str, ...] = (),
        sorted: tuple[KeySet, ...] = (),
    ):
        self.rows = rows
        self.ids = ids
        self.fields = fields
        self.by = by
        self.sorted_fields = sorted_fields
        self.sorted = sorted

    @property
    def wanted(self) -> tuple[str, ...]:
        """What `index_fields` asked of this index: `fields`, then `<name` per sorted field."""
        return (*self.fields, *(SORTED + f for f in self.sorted_fields))

    def keys(self, field: str) -> KeySet | None:
        """The sorted index of `field`, if this table keeps one."""
        try:
            return self.sorted[self.sorted_fields.index(field)]
        except ValueError:
            return None

    @classmethod
    def build(
        cls, rows: immutables.Map[str, dict[str, Any]], fields: tuple[str, ...]
    ) -> TableIndex:
        """The index of `rows`, built at once (O(n log n))."""
        sorted_fields = tuple(f[1:] for f in fields if f.startswith(SORTED))
        fields = tuple(f for f in fields if not f.startswith(SORTED))
        keysets = tuple(
            KeySet.of([entry(field_value(data, f), rid) for rid, data in rows.items()])
            for f in sorted_fields
        )
        ix = cls._build(rows, fields)
        return cls(ix.rows, ix.ids, ix.fields, ix.by, sorted_fields, keysets)

    @classmethod
    def _build(
        cls, rows: immutables.Map[str, dict[str, Any]], fields: tuple[str, ...]
    ) -> TableIndex:
        ids = sorted(rows.keys(), key=id_order)
        by: list[immutables.Map[Any, Bucket]] = []
        try:
            for f in fields:
                groups: dict[Any, list[str]] = {}
                for rid in ids:
                    groups.setdefault(rows[rid].get(f), []).append(rid)
                by.append(
                    immutables.Map(
                        {v: g[0] if len(g) == 1 else IdSet.of_sorted(g) for v, g in groups.items()}
                    )
                )
        except TypeError:  # an unhashable value: reads on these fields scan instead
            fields, by = (), []
        return cls(rows, IdSet.of_sorted(ids), fields, tuple(by))

    def changed(
        self,
        rows: immutables.Map[str, dict[str, Any]],
        rid: str,
        old: Mapping[str, Any] | None,
        new: Mapping[str, Any] | None,
    ) -> TableIndex:
        """The index after record `rid` went from `old` to `new` (None: absent); `rows` is
        the table's new rows map."""
        ids = self.ids
        if old is None:
            ids = ids.add(rid)
        elif new is None:
            ids = ids.remove(rid)
        keysets = self.sorted
        if keysets:
            keysets = tuple(
                _key_changed(ks, f, rid, old, new) for f, ks in zip(self.sorted_fields, keysets)
            )
        if not self.fields:
            return TableIndex(rows, ids, (), _NO_BY, self.sorted_fields, keysets)
        by = list(self.by)
        try:
            for n, f in enumerate(self.fields):
                if old is not None and new is not None:
                    before, after = old.get(f), new.get(f)
                    if before == after:
                        continue
                    by[n] = _bucket_add(_bucket_remove(by[n], before, rid), after, rid)
                elif old is not None:
                    by[n] = _bucket_remove(by[n], old.get(f), rid)
                elif new is not None:
                    by[n] = _bucket_add(by[n], new.get(f), rid)
        except TypeError:  # an unhashable value: this table's reads scan from now on
            return TableIndex(rows, ids, (), _NO_BY, self.sorted_fields, keysets)
        return TableIndex(rows, ids, self.fields, tuple(by), self.sorted_fields, keysets)

    def bucket(self, field: str, value: Any) -> Bucket | Literal[False] | None:
        """The ids whose `field` equals `value`; False when `field` is not indexed (or
        `value` cannot be looked up)."""
        try:
            n = self.fields.index(field)
        except ValueError:
            return False
        try:
            return self.by[n].get(value)
        except TypeError:
            return False


def _key_changed(
    ks: KeySet, field: str, rid: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None
) -> KeySet:
    if old is not None and new is not None and old.get(field) == new.get(field):
        return ks
    if old is not None:
        ks = ks.remove(entry(field_value(old, field), rid))
    if new is not None:
        ks = ks.add(entry(field_value(new, field), rid))
    return ks


def index_fields(spec: WorldSpec) -> dict[str, tuple[str, ...]]:
    """The fields a world indexes, by record: those its operations filter on, and its refs
    (what handlers look up with `where(order_id=...)`)."""
    out: dict[str, list[str]] = {}
    for name, rspec in spec.records.items():
        out[name] = [f.name for f in rspec.fields if f.kind == "ref" and f.name != "id"]
    for op in spec.operations.values():
        if op.record is not None and op.record in out:
            for f in op.filter:
                if f not in out[op.record] and f != "id":
                    out[op.record].append(f)
    # then the fields list operations sort on or filter by range: kept sorted by value
    for op in spec.operations.values():
        if op.record is not None and op.record in out:
            for f in list_sorted_fields(op):
                if SORTED + f not in out[op.record]:
                    out[op.record].append(SORTED + f)
    return {name: tuple(fields) for name, fields in out.items()}


def with_indexes(
    index: immutables.Map[str, TableIndex],
    tables: immutables.Map[str, immutables.Map[str, dict[str, Any]]],
    wanted: Mapping[str, tuple[str, ...]],
) -> immutables.Map[str, TableIndex] | None:
    """`index` with every table indexed on `wanted`'s fields; None if it already is."""
    changes = {}
    for name, rows in tables.items():
        fields = wanted.get(name, ())
        ix = index.get(name)
        if ix is None or ix.rows is not rows or ix.wanted != fields:
            changes[name] = TableIndex.build(rows, fields)
    if not changes:
        return None
    return index.update(changes)
