"""Operations: what each tool does, run inside a transaction.

Every operation runs against a `Transaction`: a private copy of the world's state (free,
since states are immutable) plus the events written so far. Reads see the transaction's own
writes; nothing reaches the world until `commit()`. A handler that raises simply leaves its
transaction behind, so no partial write survives, without any undo code.

`compile_ops(spec)` prepares everything per tool once (validator, schema, runner), so a call
costs a dict lookup, one `msgspec.convert` and the operation itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import msgspec

from .._errors import (
    Conflict,
    HandlerCrashed,
    HandlerError,
    InvalidArguments,
    RecordError,
    RecordNotFound,
    ToolCallError,
    format_traceback,
    not_found_text,
)
from .._spec import (
    Validator,
    default_description,
    input_schema,
    is_rich,
    operation_args,
    tool_annotations,
    tool_output_schema,
    tool_title,
)
from .._store import (
    Book,
    Draft,
    Event,
    EventLog,
    Record,
    Table,
    ToolCharges,
    VirtualClock,
    charging,
    table_of,
)
from .._text import did_you_mean, id_order
from ._auth import REFRESH_TOOL, refresh_spec, run_refresh
from ._feed import Feed, page
from ._idempotency import idempotent
from ._later import schedule, schedule_then
from ._lists import ListRunner
from ._results import Tool

if TYPE_CHECKING:
    from .._spec import OperationSpec, WorldSpec
    from .._store import State


# --- the transaction a call runs in --------------------------------------------------------


class Transaction(Draft):
    """A world-like view for one operation: tables, clock and the spec, reading through its
    own pending writes. Custom handlers receive it as their `world` argument.

    A `Draft` begun on `parent`'s current state (or on `state`, an earlier one, for a stale
    read, which never commits). `commit()` adds its events to `parent`; a transaction that is
    simply dropped leaves nothing behind."""

    def __init__(
        self,
        parent: Draft,
        spec: WorldSpec,
        seed: int,
        book: Book,
        state: State | None = None,
    ):
        super().__init__(parent.state if state is None else state, parent.call_id)
        self._parent = parent
        self._seed = seed
        self._book = book
        self._tables: dict[str, Table] = {}
        self.spec: WorldSpec = spec
        #: who makes the call (worlds with `auth:`), and the token it came with
        self.principal: str | None = None
        self.token: str | None = None

    @property
    def clock(self) -> VirtualClock:
        # Made on first use: most operations never look at the time.
        clock = self.__dict__.get("_clock")
        if clock is None:
            clock = self._clock = VirtualClock(self)
        return clock

    # Read-only facts of the world, as handlers may want them.
    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def run(self) -> int:
        return self.state.settings.run

    @property
    def events(self) -> list[Event]:
        """The events this transaction has written so far (not yet in the world's log)."""
        return list(self.pending)

    def table(self, name: str) -> Table:
        return table_of(self._tables, self, self.spec, name)

    @property
    def tables(self) -> dict[str, Table]:
        return {name: self.table(name) for name in self.spec.records}

    def __getattr__(self, name: str) -> Table:
        if name in ("call", "acall"):
            example = next((f"world.{r.plural}.get(id)" for r in self.spec.records.values()), "")
            raise AttributeError(
                f"handlers cannot call tools (world.{name}): a call is one transaction with its "
                f"own fault decision. Read and write records through the tables instead: {example}"
            )
        if name.startswith("_") or name not in self.spec.accessors:
            raise AttributeError(
                f"the world passed to handlers has no attribute {name!r}."
                + did_you_mean(
                    name, [*self.spec.accessors, "table", "tables", "clock"], sentence=True
                )
            )
        return self.table(name)

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        return tables_to_dict(self.state, self.spec.records)

    def schedule(
        self,
        after: float | str | timedelta,
        record: str,
        id: str | int,
        set: Mapping[str, Any],
    ) -> str:
        """Change record `id` of `record` to `set` `after` a delay of virtual time (seconds,
        a duration such as "5m", or a timedelta); returns the effect id. It is part of this
        call: if the handler fails, it is not scheduled."""
        return schedule(self, self.spec, self._tables, after, record, id, set)

    def history(self) -> tuple[EventLog, list[Event]]:
        """The world's log, and the events its call decided before and in this transaction
        (what the event feed reads)."""
        return self._book.log, [*self._parent.pending, *self.pending]

    def running(self, handler: str) -> AbstractContextManager[None]:
        """While `handler` runs on this transaction, the world refuses direct writes."""
        return self._book.hold(handler)

    @contextmanager
    def charged(self, handler: str, tool: str) -> Iterator[ToolCharges]:
        """`running(handler)`, and the charges code inside it makes (`_incall.py`) settled
        when it ends: into this transaction when the handler returns, into the call's own
        draft when it raises (this transaction is then dropped, the charges are not)."""
        charges = ToolCharges(self._book, self.call_id, tool)
        try:
            with self._book.hold(handler), charging(charges):
                yield charges
        except BaseException:
            charges.settle(self._parent)
            raise
        else:
            charges.settle(self)

    def commit(self) -> list[Event]:
        """Hand the pending events to the call: its state becomes this transaction's. Nothing
        may have been written since the transaction began (calls are atomic)."""
        if self._book.busy is not None:
            raise self._book.busy_error("world.commit() (a call commits when its handler returns)")
        self._parent.take(self)
        return self.pending


def tables_to_dict(state: State, order: Any = None) -> dict[str, list[dict[str, Any]]]:
    """Tables (in `order`, e.g. the spec's record order) as lists of record dicts by id."""
    tables = state.tables
    out = {}
    for name in tables.keys() if order is None else order:
        rows = tables[name]
        ix = state.index.get(name)
        ids = ix.ids if ix is not None and ix.rows is rows else sorted(rows.keys(), key=id_order)
        out[name] = [dict(rows[i]) for i in ids]
    return out


# --- compiled operations ---------------------------------------------------------------------


class CompiledOp:
    """One operation, ready to run. `run(tx, args)` returns the operation's value as JSON
    types (what the agent gets, also what the log keeps); `copy(value)` is an independent
    copy of such a value, for a `CallResult` (the cheapest one that is deep: a record is a
    flat dict of scalars, so `dict` copies it entirely)."""

    __slots__ = (
        "_feed", "copy", "handler", "kind", "lister", "name", "record", "refs", "run", "spec",
        "tool", "validator", "version",
    )  # fmt: skip

    def __init__(self, spec: WorldSpec, op: OperationSpec):
        args = operation_args(op, spec.records)
        self.spec = op
        self.name = op.name
        self.kind = op.kind
        self.record: str = op.record or ""  # "" for custom operations, which have none
        self.validator = Validator(op.name, args)
        self.tool = Tool(
            name=op.name,
            description=default_description(op, spec.records),
            input_schema=input_schema(args) if op.input_schema is None else op.input_schema,
            service=op.service,
            kind=op.kind,
            record=op.record,
            title=tool_title(op),
            annotations=tool_annotations(op),
            output_schema=tool_output_schema(op, spec.records),
        )
        self.handler: Callable[..., Any] | None = spec.handlers.get(op.name)
        self._feed: Feed | None = None  # `list_events` only: made on first use
        self.run: Callable[[Transaction, dict[str, Any]], Any] = getattr(self, f"_run_{op.kind}")
        #: a list operation with operators, sort or pages (`_lists.py`); None for the rest
        self.lister = ListRunner(spec, op) if op.kind == "list" and is_rich(op) else None
        if self.lister is not None:
            self.run = self.lister.run
        rspec = spec.records.get(op.record) if op.record else None
        #: the record's `version` field, for `expected_version` (updates only)
        self.version = (
            next((f.name for f in rspec.fields if f.kind == "version"), None) if rspec else None
        )
        #: the record's top-level `ref[...]` fields: field -> the table it names (a create
        #: checks that the row it names exists)
        self.refs: tuple[tuple[str, str], ...] = (
            tuple((f.name, f.ref) for f in rspec.fields if f.kind == "ref" and f.ref)
            if rspec is not None and op.kind == "create"
            else ()
        )
        if op.idempotency is not None:
            keep = any(p.name == op.idempotency.key for p in op.params)
            self.run = idempotent(op.name, op.idempotency, self.run, keep_key=keep)
        self.copy: Callable[[Any], Any] = _copy_record if op.kind in _ONE_RECORD else _copy_json

    # Each runner returns the operation's value as JSON types. A record's fields are scalars
    # with str keys (Table checks every value), so `_record_json` converts it, and datetimes
    # become RFC 3339 strings.

    def empty(self) -> Any:
        """The answer of `empty_result`: nothing, in the shape this tool answers in."""
        if self.lister is not None:
            return self.lister.empty()
        return [] if self.kind == "list" else {}

    def _not_found(self, exc: RecordNotFound) -> RecordNotFound:
        """A Table's not-found as this tool answers it: in the words of an injected 404."""
        return RecordNotFound(
            not_found_text(self.spec.qualname, exc.table, exc.id), table=exc.table, id=exc.id
        )

    def _run_get(self, tx: Transaction, args: dict[str, Any]) -> Any:
        rid = args["id"]
        data = tx.state.tables[self.record].get(rid)
        if data is None:
            raise RecordNotFound(
                not_found_text(self.spec.qualname, self.record, rid), table=self.record, id=rid
            )
        return _record_json(data)

    def _run_list(self, tx: Transaction, args: dict[str, Any]) -> Any:
        return _record_json(tx.table(self.record).rows(**args))

    def _run_create(self, tx: Transaction, args: dict[str, Any]) -> Any:
        op = self.spec
        if op.set:  # `set:` fields are not arguments; they win anyway
            args.update(op.set)
        for name, target in self.refs:
            value = args.get(name)
            if isinstance(value, str) and value not in tx.state.tables[target]:
                # as an API answers a create naming a customer it does not have
                raise InvalidArguments(
                    f"invalid arguments for {self.name}: {name} names {target} {value!r}, "
                    f"which does not exist; expected the id of an existing {target}"
                )
        try:
            record = tx.table(self.record).insert(**args)
        except RecordError as exc:
            raise InvalidArguments(f"invalid arguments for {self.name}: {exc}") from None
        if op.then is not None:
            schedule_then(tx, tx.seed, op, record.id)
        return _record_json(record.to_dict())

    def _run_update(self, tx: Transaction, args: dict[str, Any]) -> Any:
        op = self.spec
        rid = args.pop("id")
        expected = args.pop("expected_version", None)
        if expected is not None and self.version is not None:
            check_version(self.spec.qualname, self.record, self.version, tx, rid, expected)
        if op.set:
            args.update(op.set)
        try:
            record = tx.table(self.record).update(rid, **args)
        except RecordError as exc:
            raise InvalidArguments(f"invalid arguments for {self.name}: {exc}") from None
        except RecordNotFound as exc:
            raise self._not_found(exc) from None
        if op.then is not None:
            schedule_then(tx, tx.seed, op, record.id)
        return _record_json(record.to_dict())

    def _run_delete(self, tx: Transaction, args: dict[str, Any]) -> Any:
        try:
            return _record_json(tx.table(self.record).delete(args["id"]).to_dict())
        except RecordNotFound as exc:
            raise self._not_found(exc) from None

    def _run_events(self, tx: Transaction, args: dict[str, Any]) -> Any:
        feed = self._feed
        if feed is None:
            feed = self._feed = Feed(tx.spec)
        log, pending = tx.history()
        return page(feed.read(log, pending), args, feed.types)

    def _run_custom(self, tx: Transaction, args: dict[str, Any]) -> Any:
        where = self.spec.handler or self.name
        if self.handler is None:
            raise HandlerCrashed(f"internal error in handler {where}: handler not loaded")
        charges = tx.charged(where, self.name)
        try:
            with charges as charged:
                value = self.handler(tx, tx.clock, **args)
        except ToolCallError as exc:
            exc.fault = exc.fault or charged.first
            if isinstance(exc, RecordNotFound) and exc.table is not None:
                # a Table's not-found: the tool's 404, as for update
                raise self._not_found(exc) from None
            raise  # the handler's own words
        except (KeyError, IndexError) as exc:
            # LookupErrors, but raised by a dict or a list the handler got wrong, not by the
            # handler refusing the call: a bug, and it must read as one.
            raise _crashed(where, exc, charged.first) from exc
        except (ValueError, LookupError, PermissionError) as exc:
            err = HandlerError(str(exc) or type(exc).__name__)
            err.fault = charged.first
            raise err from exc
        except Exception as exc:
            raise _crashed(where, exc, charged.first) from exc
        if inspect.isawaitable(value):
            if inspect.iscoroutine(value):
                value.close()
            raise HandlerCrashed(
                f"internal error in handler {where}: it returned an awaitable; handlers are "
                "plain (sync) functions"
            )
        try:
            return to_json_value(value)
        except Exception as exc:  # RecursionError for a cyclic value, too
            raise HandlerCrashed(
                f"internal error in handler {where}: its return value is not JSON: {exc}"
            ) from None


def check_version(
    where: str, table: str, field: str, tx: Transaction, rid: str, expected: int
) -> None:
    """409 unless record `rid` is at version `expected` (a missing record is the update's own
    404, answered after this)."""
    data = tx.state.tables[table].get(rid)
    if data is not None and data[field] != expected:
        current = data[field]
        raise Conflict(
            f"409 Conflict: {where}: {table} {rid!r} is at {field} {current}, not the "
            f"expected {expected}: someone else changed it since it was read. Read it again, "
            f"then retry with expected_version: {current}"
        )


def _crashed(where: str, exc: Exception, fault: str | None = None) -> HandlerCrashed:
    err = HandlerCrashed(f"internal error in handler {where}: {type(exc).__name__}: {exc}")
    err.traceback = format_traceback(exc)
    err.fault = fault
    return err


def _enc_hook(obj: Any) -> Any:
    if isinstance(obj, Record):
        return obj.to_dict()
    if isinstance(obj, Table):
        return obj.rows()
    raise TypeError(f"a value of type {type(obj).__name__!r} cannot be sent as JSON")


def to_json_value(value: Any) -> Any:
    """`value` as plain JSON types: what the agent receives (datetimes become RFC 3339)."""
    return msgspec.to_builtins(value, enc_hook=_enc_hook, str_keys=True)


#: Records (and lists of them) as JSON types: no hook and no key conversion needed, which
#: makes it twice as fast as `to_json_value`.
_record_json = msgspec.to_builtins
_copy_json = msgspec.to_builtins
_ONE_RECORD = frozenset({"get", "create", "update", "delete"})


def _copy_record(value: Any) -> Any:
    return dict(value) if type(value) is dict else _copy_json(value)


def compile_ops(spec: WorldSpec) -> dict[str, CompiledOp]:
    ops = {name: CompiledOp(spec, op) for name, op in spec.operations.items()}
    if spec.auth is not None:
        refresh = ops[REFRESH_TOOL] = CompiledOp(spec, refresh_spec())
        refresh.run = run_refresh
    return ops
