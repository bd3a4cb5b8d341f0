"""Tables and records: the API tests and custom handlers use to read and write a world.

A `Table` is a view bound to a *store* (a `World`, or the transaction a custom handler runs
in). Reads look at the store's current state; writes are checked against the record's fields,
turned into `RecordCreated` / `RecordUpdated` / `RecordDeleted` events and handed to the store,
which applies them. Nothing here mutates state directly.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .._errors import RecordError, RecordNotFound
from .._spec import INT_MAX, INT_MIN, NestedError, conform, describe_field, merge
from .._text import did_you_mean, id_order, show_value, to_utc
from ._book import atomic
from ._events import RecordCreated, RecordDeleted, RecordUpdated
from ._indexes import IdSet, TableIndex, bucket_ids, bucket_len

if TYPE_CHECKING:
    from .._spec import FieldSpec, RecordSpec, WorldSpec
    from ._book import Store


# --- records -----------------------------------------------------------------------------------


class Record(Mapping[str, Any]):
    """One record, read-only: `order.status`, `order["status"]`, `order.to_dict()`.

    Compares equal to a dict with the same fields, so `assert order == {...}` reads naturally.
    Field names that are also Mapping methods (`items`, `keys`, `values`, `get`) are reachable
    with item access.
    """

    __slots__ = ("_data", "_name")

    _data: dict[str, Any]
    _name: str

    def __init__(self, name: str, data: Mapping[str, Any]):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_data", data)

    def __getattr__(self, key: str) -> Any:
        if key in ("_data", "_name"):  # not set yet (copy/pickle protocols)
            raise AttributeError(key)
        try:
            return _nested_view(self._name, key, self._data[key])
        except KeyError:
            raise AttributeError(
                f"{self._name} has no field {key!r}; fields: {', '.join(self._data)}."
                + did_you_mean(key, self._data, sentence=True)
            ) from None

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(
            f"records are read-only; write through the table instead, e.g. "
            f"world.table({self._name!r}).update({self._data.get('id')!r}, {key}=...)"
        )

    def __getitem__(self, key: str) -> Any:
        return _nested_view(self._name, key, self._data[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Record):
            return self._name == other._name and self._data == other._data
        if isinstance(other, Mapping):
            return self._data == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to dicts, so not hashable

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._data.items())
        return f"{self._name}({inner})"

    def to_dict(self) -> dict[str, Any]:
        """A fresh dict of the fields, in declaration order."""
        return dict(self._data)

    def __reduce__(self) -> tuple[type[Record], tuple[str, dict[str, Any]]]:
        return (Record, (self._name, dict(self._data)))


def _nested_view(name: str, key: str, value: Any) -> Any:
    """A nested field's value as code reads it: objects as read-only `Record`s (so
    `customer.address.city` works), lists as fresh lists of such views."""
    if type(value) is dict:
        return Record(f"{name}.{key}", value)
    if type(value) is list:
        return [_nested_view(name, f"{key}[{i}]", v) for i, v in enumerate(value)]
    return value


# --- value checking ----------------------------------------------------------------------------


def check_value(table: str, f: FieldSpec, value: Any) -> Any:
    """`value` normalized for field `f` (ints widen to float, datetimes move to UTC), or a
    `RecordError` naming the field, the expected type and the received value."""
    kind = f.kind
    if kind == "list" or kind == "object":
        try:
            return conform(f, value, f.name, text_dates=False)
        except NestedError as exc:
            raise RecordError(f"{table}.{exc}") from None
    want = None  # what the error says is expected, when the plain type name would mislead
    if value is None:
        if f.optional:
            return None
    elif kind == "str" or kind == "ref":
        if isinstance(value, str):
            return value
    elif kind == "int" or kind == "version":
        lo = 1 if kind == "version" else INT_MIN
        if isinstance(value, int) and not isinstance(value, bool):
            if lo <= value <= INT_MAX:
                return value
            want = f"an integer from {lo} to {INT_MAX}"
    elif kind == "float":
        if isinstance(value, int | float) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:  # an int beyond the float range
                number = math.inf
            if math.isfinite(number):
                return number
            want = "a finite number"
    elif kind == "bool":
        if isinstance(value, bool):
            return value
    elif kind == "enum":
        if isinstance(value, str) and value in f.choices:
            return value
    elif kind == "datetime" and isinstance(value, datetime):
        if value.tzinfo is None:
            raise RecordError(
                f"{table}.{f.name}: expected a timezone-aware datetime. Instead, received: "
                f"{value!r}. Fix: datetime(..., tzinfo=timezone.utc) or clock.now()."
            )
        try:
            return to_utc(value)
        except ValueError as exc:
            raise RecordError(f"{table}.{f.name}: {exc}") from None
    hint = (
        did_you_mean(value, f.choices, sentence=True)
        if kind == "enum" and isinstance(value, str)
        else ""
    )
    raise RecordError(
        f"{table}.{f.name}: expected {want or describe_field(f)}. Instead, received: {show_value(value)}{hint}"
    )


def _unknown_field(rspec: RecordSpec, key: str) -> RecordError:
    names = [f.name for f in rspec.fields]
    return RecordError(
        f"{rspec.name} has no field {key!r}; expected one of: {', '.join(names)}."
        + did_you_mean(key, names, sentence=True)
    )


def _no_match(rspec: RecordSpec, eq: Mapping[str, Any], count: int) -> str:
    """Why `pick(**eq)` found nothing, and how to seed the record it wanted."""
    asked = ", ".join(f"{k}={v!r}" for k, v in eq.items())
    call = f"{rspec.plural}.pick({asked})"
    row = ", ".join(f"{k}: {v!r}" for k, v in eq.items()) or "..."
    seed = (
        f"seed it in the world file (services.{rspec.service}.seed: {{ {rspec.name}: "
        f"{{ rows: [{{ {row}, ... }}] }} }}), or insert it in the test "
        f"(world.{rspec.plural}.insert(...)) before the agent runs"
    )
    if count == 0:
        return (
            f"{call}: the {rspec.name} table is empty (the world file seeds no {rspec.name} "
            f"records): {seed}."
        )
    plural = "s" if count != 1 else ""
    return f"{call}: none of the {count} {rspec.name} record{plural} matches: {seed}."


def check_new_record(rspec: RecordSpec, values: Mapping[str, Any], rid: str) -> dict[str, Any]:
    """A complete field dict for a new record: checked values, defaults, nulls."""
    out: dict[str, Any] = {}
    for f in rspec.fields:
        if f.name == "id":
            out["id"] = rid
        elif f.name in values:
            out[f.name] = check_value(rspec.name, f, values[f.name])
        elif f.kind == "version":
            out[f.name] = 1
        elif f.has_default:
            out[f.name] = check_value(rspec.name, f, f.default)
        elif f.optional:
            out[f.name] = None
        else:
            raise RecordError(
                f"{rspec.name}.{f.name} is required: expected {describe_field(f)}, "
                "received nothing. Pass it, or make the field optional (`?`) in the world file."
            )
    for key in values:
        if key not in out:
            raise _unknown_field(rspec, key)
    return out


# --- tables ------------------------------------------------------------------------------------


class Table:
    """All records of one record type, in one store (a world or a handler's transaction)."""

    __slots__ = ("_fields", "_order", "_spec", "_store", "_version", "name")

    def __init__(self, store: Store, rspec: RecordSpec):
        self._store = store
        self._spec = rspec
        self._fields = {f.name: f for f in rspec.fields}
        #: the record's `version` field, if it has one
        self._version = next((f.name for f in rspec.fields if f.kind == "version"), None)
        self.name = rspec.name
        self._order: tuple[Any, list[str]] | None = None

    def __repr__(self) -> str:
        return f"<Table {self.name}: {len(self)} records>"

    @property
    def spec(self) -> RecordSpec:
        return self._spec

    # --- reads -------------------------------------------------------------------------------

    def _rows(self) -> Any:
        return self._store.state.tables[self.name]

    def _read(self) -> tuple[Any, TableIndex | None]:
        """The rows, and their index when the state keeps one (see `_indexes.py`)."""
        state = self._store.state
        rows = state.tables[self.name]
        ix = state.index.get(self.name)
        return rows, (ix if ix is not None and ix.rows is rows else None)

    def _ids(self, rows: Any, ix: TableIndex | None) -> IdSet | list[str]:
        """Every id in id order: the index's, else sorted once per rows map."""
        if ix is not None:
            return ix.ids
        cached = self._order
        # States are immutable, so the same map object always has the same ids.
        if cached is not None and cached[0] is rows:
            return cached[1]
        ids = sorted(rows.keys(), key=id_order)
        self._order = (rows, ids)
        return ids

    def __len__(self) -> int:
        return len(self._rows())

    def __iter__(self) -> Iterator[Record]:
        return iter(self.all())

    def __contains__(self, rid: object) -> bool:
        return _as_id(rid) in self._rows()

    def get(self, id: str | int) -> Record | None:
        """The record with this id, or None."""
        data = self._rows().get(_as_id(id))
        return None if data is None else Record(self.name, data)

    def all(self) -> list[Record]:
        """Every record, in id order."""
        rows, ix = self._read()
        name = self.name
        return [Record(name, rows[i]) for i in self._ids(rows, ix)]

    def where(self, **eq: Any) -> list[Record]:
        """Records whose fields equal all the given values, in id order."""
        name = self.name
        return [Record(name, data) for data in self.rows(**eq)]

    def rows(self, **eq: Any) -> list[Mapping[str, Any]]:
        """`where(**eq)` as the stored field mappings, without `Record` wrappers: for bulk
        reads. They are the world's own values: read them, never change them."""
        return list(self._matching(eq))

    def pick(self, **eq: Any) -> Record:
        """The first record (by id order) matching `where(**eq)`. Raises `RecordNotFound`
        (a LookupError) when none does, saying whether the table is empty or nothing in it
        matches, and how to seed it: a test that picks its record from the world's seed
        data fails there, before its agent runs, rather than on a None later. For a record
        that may be missing, `where(**eq)` returns a list and `get(id)` None."""
        for data in self._matching(eq):
            return Record(self.name, data)
        raise RecordNotFound(_no_match(self._spec, eq, len(self)), table=self.name)

    def _matching(self, eq: dict[str, Any]) -> Iterator[Mapping[str, Any]]:
        """The records matching `eq`, lazily, in id order. Reads only the ids of the
        smallest index bucket among the fields asked for (or the one record of an `id`),
        else scans the id order; never sorts when the table is indexed."""
        for key in eq:
            if key not in self._fields:
                raise _unknown_field(self._spec, key)
        rows, ix = self._read()
        if not eq:
            return (rows[rid] for rid in self._ids(rows, ix))
        candidates: Any = None
        if "id" in eq:
            rid = eq["id"]
            candidates = (rid,) if isinstance(rid, str) and rid in rows else ()
        elif ix is not None:
            best = -1
            for key, value in eq.items():
                bucket = ix.bucket(key, value)
                if bucket is False:
                    continue
                size = bucket_len(bucket)
                if best < 0 or size < best:
                    best, candidates = size, bucket_ids(bucket)
                    if size == 0:
                        return iter(())
        if candidates is None:
            candidates = self._ids(rows, ix)
        items = tuple(eq.items())
        if len(items) == 1:
            k, v = items[0]
            return (data for rid in candidates if (data := rows[rid])[k] == v)
        return (data for rid in candidates if all((data := rows[rid])[k] == v for k, v in items))

    # --- writes ------------------------------------------------------------------------------

    def insert(self, **fields: Any) -> Record:
        """Create a record. `id` is optional: automatic ids are "1", "2", ... after the largest
        numeric id the table has seen. Returns the new record."""
        store = self._store
        state = store.state
        rows = state.tables[self.name]
        if "id" in fields:
            rid = fields["id"]
            if not isinstance(rid, str) or not rid:
                raise RecordError(
                    f"{self.name}.id: expected a non-empty string. Instead, received: "
                    f"{show_value(rid)}"
                )
            if rid in rows:
                raise RecordError(
                    f"{self.name} {rid!r} already exists; ids are unique. Omit `id` to get "
                    "the next free one."
                )
        else:
            n = state.next_ids.get(self.name, 1)
            while str(n) in rows:
                n += 1
            rid = str(n)
        data = check_new_record(self._spec, fields, rid)
        self._write(RecordCreated, rid, fields=data)
        return Record(self.name, data)

    def update(self, id: str | int | None = None, /, **fields: Any) -> Record:
        """Change some fields of an existing record; returns the record as it now is.
        `update("1", status="shipped")` and `update(id="1", status="shipped")` both work."""
        if id is None:
            id = fields.pop("id", None)
            if id is None:
                raise TypeError(f"{self.name}.update() needs the record id: update(id, **fields)")
        rid = _as_id(id)
        old = self._existing(rid)
        changes: dict[str, Any] = {}
        before: dict[str, Any] = {}
        for key, value in fields.items():
            f = self._fields.get(key)
            if f is None:
                raise _unknown_field(self._spec, key)
            if key == "id":
                if value == rid:
                    continue
                raise RecordError(
                    f"{self.name}.id cannot change (from {rid!r} to {value!r}); "
                    "delete the record and insert a new one instead."
                )
            if f.kind == "object":
                value = merge(f, old[key], value)  # a field-level merge (see _nested.py)
            value = check_value(self.name, f, value)
            if old[key] != value or type(old[key]) is not type(value):
                changes[key] = value
                before[key] = old[key]
        if not changes:
            return Record(self.name, old)
        version = self._version
        if version is not None and version not in changes:
            # every write moves a version on, whoever makes it (optimistic concurrency)
            changes[version] = old[version] + 1
            before[version] = old[version]
        self._write(RecordUpdated, rid, changes=changes, old=before)
        return Record(self.name, self._store.state.tables[self.name][rid])

    def delete(self, id: str | int) -> Record:
        """Remove a record; returns it as it was."""
        rid = _as_id(id)
        old = self._existing(rid)
        self._write(RecordDeleted, rid, old=old)
        return Record(self.name, old)

    def _existing(self, rid: str) -> dict[str, Any]:
        old: dict[str, Any] | None = self._store.state.tables[self.name].get(rid)
        if old is None:
            raise RecordNotFound(f"{self.name} {rid!r} not found", table=self.name, id=rid)
        return old

    def _write(self, event: type, rid: str, **fields: Any) -> None:
        """Log one record event for this table, at the store's current seq and time."""
        store = self._store
        state = store.state
        store.emit(
            event(
                seq=state.seq,
                at=state.clock,
                table=self.name,
                id=rid,
                call_id=store.call_id,
                **fields,
            )
        )


def _as_id(rid: object) -> str:
    if isinstance(rid, str):
        return rid
    if isinstance(rid, int) and not isinstance(rid, bool):
        return str(rid)
    raise RecordError(f"Expected a record id (a string). Instead, received: {show_value(rid)}")


class LockedTable(Table):
    """A world's own table (`world.orders`), which any thread may write to: each write holds
    the book's lock from reading the state to emitting its event. A handler's transaction,
    which one call owns, gets a plain `Table` and pays nothing for locking."""

    __slots__ = ()

    insert = atomic(Table.insert)
    update = atomic(Table.update)
    delete = atomic(Table.delete)


def table_of(tables: dict[str, Table], store: Store, spec: WorldSpec, name: str) -> Table:
    """The table `name` (a record name, "order", or an accessor, "orders") of a world or a
    handler's transaction, made on first use and kept in `tables` under both names."""
    t = tables.get(name)
    if t is None:
        rname = spec.accessors.get(name, name)
        rspec = spec.records.get(rname)
        if rspec is None:
            names = sorted(set(spec.accessors) | set(spec.records))
            raise LookupError(
                f"Expected a table name ({', '.join(names)}). Instead, received: {name!r}."
                + did_you_mean(name, names, sentence=True)
            )
        t = tables.get(rname)  # not `or`: an empty table is falsy
        if t is None:
            t = (Table if store.lock is None else LockedTable)(store, rspec)
        tables[rname] = tables[name] = t
    return t
