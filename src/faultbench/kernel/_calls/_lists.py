"""List operations with operators, `sort:` and `page:`: what `list_charges(...)` returns.

A call walks the table in the order it answers in, lazily, from where it starts (the first
record, a cursor's position, or the bounds a range filter on the sort field gives), keeps
the records every filter accepts and stops one record past the page (`has_more`). The walk
reads the state's indexes (`_store/_indexes.py`, `_store/_sorted.py`): the id order, a
field's sorted entries, or an equality bucket, so a page costs O(log n + page) however deep
it is, and nothing scans a table where an index answers.

Cursors are opaque: base64 of (sort, value, id) of the last record served, with a keyed
checksum (of the world's name and the tool) that refuses a forged or mangled one. They
name a position by sort key, not an offset, so records inserted or deleted between two
fetches move nothing: each record that stays is served exactly once.

The page fault kinds act here (`run(..., fault=)`): `page_drift` serves a page one record
off (repeating the record before it, or skipping the first), `truncated_page` says
`has_more: false` while more records follow.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Iterator
from datetime import datetime
from itertools import islice
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import msgspec

from .._errors import InvalidArguments
from .._spec import arg_name, sort_key
from .._store import ID, TOP, IdSet, KeySet, entry, field_value, key_of
from .._text import id_order

if TYPE_CHECKING:
    from .._spec import OperationSpec, WorldSpec
    from .._store import Draft

Pred = Callable[[Any], bool]
_MAX = "\U0010ffff"  # above every id: (key, _MAX) sorts after the entry of key
#: an equality bucket this small is sorted by the sort field per call; a larger one is
#: read through the sort field's index, filtering as it goes
_SORT_HERE = 4096
_ID = itemgetter(3)  # an entry's id
_ISSUED = 4096  # cursors remembered per tool


_BOUNDS = ("eq", "gt", "gte", "lt", "lte")  # the conditions a sorted index walk bounds
_PRESENT = (True,)  # below every entry of a set value, above every unset one (`entry`)
_UNSET = (False,)  # below every entry of an unset value


def _preds(
    conds: list[tuple[str, str, Any]], bounded: str | None, bucket: str | None
) -> list[tuple[str, Pred]]:
    """What each candidate must pass: every condition, but those on the field `bounded`
    whose index walk stayed between their bounds, and the equality on the field `bucket`
    whose ids the walk read (`ListRunner._walk`)."""
    return [
        (f, _id_pred(o, x) if f == "id" and o in _RANGE else _pred(o, x))
        for f, o, x in conds
        if not (f == bounded and o in _BOUNDS and (x is not None or o == "eq"))
        and not (f == bucket and o == "eq")
    ]


_RANGE = ("gt", "gte", "lt", "lte")


def _ordered(field: str, x: Any) -> Any:
    """What a range condition on `field` compares: ids in id order ("9" < "10"), the order
    lists walk them in and the `id` index keeps (`field_value`), not as text; other values
    as they are."""
    return id_order(x) if field == "id" and isinstance(x, str) else x


def _id_pred(op: str, x: Any) -> Pred:
    """A range condition on ids, checked per record in id order (`_ordered`)."""
    if not isinstance(x, str):
        return _pred(op, x)
    within = _pred(op, id_order(x))
    return lambda v: isinstance(v, str) and within(id_order(v))


def _pred(op: str, x: Any) -> Pred:
    if op == "eq":
        return lambda v: v == x
    if op == "in":
        xs = list(x)
        return lambda v: v is not None and v in xs
    if op == "gt":
        return lambda v: v is not None and v > x
    if op == "gte":
        return lambda v: v is not None and v >= x
    if op == "lt":
        return lambda v: v is not None and v < x
    if op == "lte":
        return lambda v: v is not None and v <= x
    if op == "prefix":
        return lambda v: isinstance(v, str) and v.startswith(x)
    if op == "like":
        pattern = like_pattern(x)
        return lambda v: isinstance(v, str) and pattern.fullmatch(v) is not None
    return lambda v: isinstance(v, str) and x in v  # contains


def like_pattern(text: str) -> re.Pattern[str]:
    """SQL `LIKE` as a regular expression: `%` is any text, `_` one character, `\\` escapes
    the next one; in any case, as MySQL's LIKE and most APIs' `*_pattern` filters match."""
    parts: list[str] = []
    escaped = False
    for ch in text:
        if escaped:
            parts.append(re.escape(ch))
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "%":
            parts.append(".*")
        elif ch == "_":
            parts.append(".")
        else:
            parts.append(re.escape(ch))
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


class _Walk:
    """What `ListRunner._walk` found: a list's candidate ids in answer order.

    `ids(skip)` iterates them with the first `skip` left out, and `count()` says how many
    there are, both without reading the ids where an index can tell (O(log n)). `bounded`:
    they come from the sort field's index between the bounds its conditions set, so those
    conditions hold already; `bucket`: the field whose equality bucket they are, so its
    equality holds already (`_preds` leaves both out)."""

    __slots__ = ("bounded", "bucket", "count", "ids")

    def __init__(
        self,
        ids: Callable[[int], Iterator[str]],
        count: Callable[[], int],
        *,
        bounded: bool = False,
        bucket: str | None = None,
    ):
        self.ids = ids
        self.count = count
        self.bounded = bounded
        self.bucket = bucket

    @classmethod
    def of(cls, ids: list[str], *, bucket: str | None = None) -> _Walk:
        """Candidates already listed (a small bucket sorted here, or a table without index)."""
        return cls(lambda skip: iter(ids[skip:]), lambda: len(ids), bucket=bucket)


class ListRunner:
    """One list operation's filters, orders and pages, compiled once per world spec."""

    def __init__(self, spec: WorldSpec, op: OperationSpec):
        self.op = op
        self.tool = op.name
        self.table = op.record or ""
        self.kinds = {f.name: f.kind for f in spec.records[self.table].fields}
        self.conds = {arg_name(f, o): (f, o) for f, ops in op.where for o in ops}
        self.page = op.page
        self._secret = f"faultbench cursor\0{spec.name}\0{op.name}\0".encode()
        #: cursors given out lately -> (sort, position): a walk's next call skips decoding
        self._issued: dict[str, tuple[str, tuple[Any, ...]]] = {}

    def empty(self) -> Any:
        """What `empty_result` answers: no records, and nothing more to fetch."""
        if self.page is None:
            return []
        if self.page.style == "cursor":
            return {"data": [], "has_more": False, "next_cursor": None}
        return {"data": [], "has_more": False, "total": 0}

    def run(self, tx: Draft, args: dict[str, Any], fault: str | None = None) -> Any:
        state = tx.state
        rows = state.tables[self.table]
        ix = state.index.get(self.table)
        if ix is not None and ix.rows is not rows:
            ix = None
        sort = args.get("sort") or (self.op.sort[0] if self.op.sort else "")
        field, desc = sort_key(sort) if sort else ("", False)
        conds = [(f, o, args[a]) for a, (f, o) in self.conds.items() if a in args]
        page = self.page
        limit = args.get("limit", page.size if page else 0)
        if page is not None and not 1 <= limit <= page.max_size:
            raise InvalidArguments(
                f"invalid arguments for {self.tool}: `limit`: expected 1 to {page.max_size}, "
                f"got {limit}"
            )
        back = "ending_before" in args
        if back and "starting_after" in args:
            raise InvalidArguments(
                f"invalid arguments for {self.tool}: pass starting_after or ending_before, not both"
            )
        cursor = args.get("ending_before" if back else "starting_after")
        after = self._position(
            cursor, sort, field, "ending_before" if back else "starting_after", rows
        )
        reverse = desc != back
        inclusive = fault == "page_drift" and after is not None
        walk = self._walk(rows, ix, field, conds, after, reverse, inclusive)
        preds = _preds(conds, field if walk.bounded else None, walk.bucket)

        def matching(skip: int = 0) -> Iterator[str]:
            """The ids that pass every condition, the first `skip` left out: without reading
            them when the walk's index answers every condition."""
            if not preds:
                return walk.ids(skip)
            ids = walk.ids(0)
            kept = (rid for rid in ids if all(p(rows[rid][f]) for f, p in preds))
            return islice(kept, skip, None) if skip else kept

        if page is None:
            return [rows[rid] for rid in matching()]  # page kinds never reach these lists
        offset = args.get("offset", 0)
        skip = 0
        if fault == "page_drift":
            if page.style == "offset":
                offset = offset - 1 if offset > 0 else offset + 1
            elif after is None:
                skip = 1  # the first record is skipped, as if one was deleted
        if offset < 0:
            raise InvalidArguments(
                f"invalid arguments for {self.tool}: `offset`: expected 0 or more, got {offset}"
            )
        got = list(islice(matching(skip + offset), limit + 1))
        has_more = len(got) > limit
        del got[limit:]
        if back:
            got.reverse()
        if fault == "truncated_page":
            has_more = False
        data = [rows[rid] for rid in got]
        if page.style == "offset":
            if not conds:
                total = len(rows)
            else:
                total = walk.count() if not preds else sum(1 for _ in matching())
            return {"data": data, "has_more": has_more, "total": total}
        edge = (got[0] if back else got[-1]) if got and has_more else None
        token = None if edge is None else self._cursor(sort, field, rows[edge], edge)
        return {"data": data, "has_more": has_more, "next_cursor": token}

    # --- walking ------------------------------------------------------------------------------

    def _walk(
        self,
        rows: Any,
        ix: Any,
        field: str,
        conds: list[tuple[str, str, Any]],
        after: tuple[Any, ...] | None,
        reverse: bool,
        inclusive: bool,
    ) -> _Walk:
        """Candidate ids in answer order, from just past `after` (at it, when inclusive)."""
        # The smallest equality bucket of an indexed field, if any: its ids in id order.
        best: IdSet | None = None
        by: str | None = None
        if ix is not None:
            for f, o, x in conds:
                if o == "eq" and f != field:
                    bucket = ix.bucket(f, x)
                    if bucket is not False:
                        ids = (
                            IdSet() if bucket is None
                            else IdSet.of_sorted([bucket]) if isinstance(bucket, str)
                            else bucket
                        )  # fmt: skip
                        if best is None or len(ids) < len(best):
                            best, by = ids, f
        if field and best is not None and len(best) <= _SORT_HERE:
            keyed = sorted(((self._key(field, rows[r], r), r) for r in best), reverse=reverse)
            return _Walk.of(list(self._after(keyed, after, reverse, inclusive)), bucket=by)
        ks: KeySet | None = ix.keys(field or "id") if ix is not None else None
        if not field and (best is not None or ks is None):
            # id order from an IdSet: the bucket's (it holds only matching ids, and a seek in
            # it is O(log n), so it beats filtering the whole id order however large it is),
            # or the table's (a list without pages)
            idset = best if best is not None else ix.ids if ix is not None else None
            if idset is None:
                keyed = sorted(((self._key("", rows[r], r), r) for r in rows), reverse=reverse)
                return _Walk.of(list(self._after(keyed, after, reverse, inclusive)))
            start = after[1] if after is not None else None
            if start is not None and reverse == inclusive:
                start = (*start, "")  # just above the cursor's own id
            return _Walk(
                lambda skip: idset.walk(start, reverse=reverse, skip=skip),
                lambda: idset.count(start, reverse=reverse),
                bucket=by,
            )
        if ks is None:
            name = field or "id"
            ks = KeySet.of([entry(field_value(d, name), rid) for rid, d in rows.items()])
        lo: tuple[Any, ...] | None = None
        hi: tuple[Any, ...] | None = None
        for f, o, x in conds:
            if f != field:
                continue
            if x is None:
                if o == "eq":  # the unset values: below every set one (`entry`)
                    lo, hi = _max(lo, _UNSET), _min(hi, _PRESENT)
                continue
            x = _ordered(f, x)
            if o in ("gte", "eq"):
                lo = _max(lo, (True, x))
            if o == "gt":
                lo = _max(lo, (True, x, TOP))
            if o == "lt":
                hi = _min(hi, (True, x))
            if o in ("lte", "eq"):
                hi = _min(hi, (True, x, TOP))
            lo = _max(lo, _PRESENT)  # these conditions never hold for a field left unset
        if after is not None:
            # (key, _MAX) sorts just after the entry of key: past the cursor's own record
            if not reverse:
                lo = _max(lo, after if inclusive else (*after, _MAX))
            else:
                hi = _min(hi, (*after, _MAX) if inclusive else after)
        keys = ks
        return _Walk(
            lambda skip: map(_ID, keys.walk(lo, hi, reverse=reverse, skip=skip)),
            lambda: keys.count(lo, hi),
            bounded=bool(field),
        )

    @staticmethod
    def _after(
        keyed: list[tuple[Any, str]], after: Any, reverse: bool, inclusive: bool
    ) -> Iterator[str]:
        if after is None:
            return (r for _, r in keyed)
        if reverse:
            return (r for k, r in keyed if k < after or (inclusive and k == after))
        return (r for k, r in keyed if k > after or (inclusive and k == after))

    def _key(self, field: str, data: Any, rid: str) -> tuple[Any, ...]:
        """A record's position: its entry in the sorted index (of `id` for id order)."""
        return key_of(field_value(data, field), rid) if field else key_of(ID, rid)

    # --- cursors ------------------------------------------------------------------------------

    def _mac(self, payload: bytes) -> str:
        return hashlib.sha256(self._secret + payload).hexdigest()[:16]

    def _cursor(self, sort: str, field: str, data: Any, rid: str) -> str:
        value = data.get(field) if field else None
        payload = msgspec.json.encode([sort, value, rid])
        text = base64.urlsafe_b64encode(payload).decode().rstrip("=")
        token = f"{text}.{self._mac(payload)}"
        issued = self._issued
        if len(issued) >= _ISSUED:
            issued.clear()
        issued[token] = (sort, self._key(field, data, rid))
        return token

    def _position(
        self, cursor: str | None, sort: str, field: str, arg: str, rows: Any
    ) -> tuple[Any, ...] | None:
        if cursor is None:
            return None
        known = self._issued.get(cursor)
        if known is not None and known[0] == sort:
            return known[1]  # one this runner gave out: no need to decode and check it
        record = rows.get(cursor) if isinstance(cursor, str) else None
        if record is not None:
            # The id of a record that exists, as Stripe's `starting_after` takes: its place
            # in this order now (sort key, then id), as stable as a cursor while it exists.
            return self._key(field, record, cursor)
        text, _, mac = cursor.partition(".")
        try:
            payload = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            ok = mac == self._mac(payload)
            got_sort, value, rid = msgspec.json.decode(payload) if ok else ("", None, "")
        except (ValueError, TypeError, msgspec.DecodeError):
            ok = False
        if not ok or not isinstance(rid, str):
            raise InvalidArguments(
                f"invalid arguments for {self.tool}: `{arg}`: not a cursor {self.tool} gave "
                f"out, nor the id of a record it lists; pass the next_cursor of an earlier "
                f"{self.tool} result unchanged (or the id of its last record), or leave it out "
                "to start from the beginning"
            )
        if got_sort != sort:
            raise InvalidArguments(
                f"invalid arguments for {self.tool}: `{arg}`: this cursor belongs to a walk "
                f"in {got_sort or 'id'} order, not {sort or 'id'}; pass the same sort as "
                "when it was given out, or start again without a cursor"
            )
        if field and self.kinds.get(field) == "datetime" and isinstance(value, str):
            value = datetime.fromisoformat(value)
        return self._key(field, {field: value}, rid)


def _max(a: tuple[Any, ...] | None, b: tuple[Any, ...]) -> tuple[Any, ...]:
    return b if a is None or b > a else a


def _min(a: tuple[Any, ...] | None, b: tuple[Any, ...]) -> tuple[Any, ...]:
    return b if a is None or b < a else a
