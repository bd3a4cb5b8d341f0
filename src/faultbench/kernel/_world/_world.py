"""`World`: a world file brought to life. State, log, clock, tables, calls, snapshots, forks.

A world's state and log belong to its `Book` (see `_book.py`), the one object that assigns
them; calls are decided by its `Pipeline` (`_pipeline.py`) and committed to the book in one
step. Snapshots, forks and restores only move references (see `_log.py`), so they cost the
same for 10 records or 10^6.

Event 0 is always `WorldCreated`; the seed rows follow as `RecordCreated` events without a
call id, so a log plus the world file it names replays on its own. What a world runs under
(run index, fault switch, the fault rules in force) is in the log too (`WorldForked`,
`FaultsChanged`), so `replay` rebuilds a world that answers its next call exactly as the
live one would.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from .._calls import (
    CallResult,
    CompiledOp,
    Pipeline,
    Tool,
    compile_ops,
    parse_rules,
    tables_to_dict,
    tool_now,
    tools_now,
)
from .._errors import FaultsDisabled, UnknownTool
from .._spec import WORLD_ATTRIBUTES, WorldSpec, tool_fingerprints
from .._store import (
    Book,
    Draft,
    EventLog,
    FaultsChanged,
    Settings,
    State,
    Table,
    VirtualClock,
    WebhookAttempted,
    WorldCreated,
    WorldForked,
    apply,
    index_fields,
    table_of,
    with_indexes,
)
from .._text import did_you_mean, iso_time
from ._webhooks import Delivery, Webhooks

if TYPE_CHECKING:
    from datetime import datetime, timedelta

    from .._faults import FaultRule, ModelFault
    from .._inspect import StateDiff, Trace


# ---------------------------------------------------------------------------------------------
# A snapshot: one moment of a world (O(1): a state and a log prefix)
# ---------------------------------------------------------------------------------------------


class Snapshot:
    """A world's state and log at one moment. Taking one is O(1); `world.restore(snap)`
    goes back to it, `world.fork(snap)` branches from it, `world.diff(snap)` compares."""

    __slots__ = ("_log", "_spec", "_state")

    def __init__(self, spec: WorldSpec, state: State, log: EventLog):
        self._spec = spec
        self._state = state
        self._log = log

    def __repr__(self) -> str:
        return f"<Snapshot {self._spec.name} at event {self.seq} ({self.at.isoformat()})>"

    @property
    def spec(self) -> WorldSpec:
        return self._spec

    @property
    def state(self) -> State:
        """The immutable state at the snapshot."""
        return self._state

    @property
    def seq(self) -> int:
        """Number of events in the log at the snapshot (the seq of the next event)."""
        return self._state.seq

    @property
    def at(self) -> datetime:
        """Virtual time at the snapshot."""
        return self._state.clock

    @property
    def events(self) -> EventLog:
        return self._log

    def state_hash(self) -> str:
        return self._state.state_hash()

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        return tables_to_dict(self._state, self._spec.records)


# ---------------------------------------------------------------------------------------------
# The world: the user API (docs/API.md) over one Book and one Pipeline
# ---------------------------------------------------------------------------------------------


class World:
    """A running world. Create one with `load_world(path)` or `World.from_spec(spec)`."""

    # --- construction ------------------------------------------------------------------------

    def __init__(self, spec: WorldSpec, seed: int | None = None, run: int = 0, faults: bool = True):
        seed = spec.seed if seed is None else int(seed)
        book = _genesis(spec, seed, int(run), bool(faults))
        self._init(spec, seed, _ops_of(spec), book, Snapshot(spec, book.state, book.log))

    def _init(
        self,
        spec: WorldSpec,
        seed: int,
        ops: dict[str, CompiledOp],
        book: Book,
        genesis: Snapshot | None,
    ) -> None:
        self._spec = spec
        self._seed = seed
        self._ops = ops
        self._book = book
        #: the seeded state, for `reset` and stale reads (None: a replayed world, which finds
        #: its genesis in its log when it needs it)
        self._genesis = genesis
        self._pipeline = Pipeline(spec, ops, seed, book, None if genesis is None else genesis.seq)
        self._tables: dict[str, Table] = {}
        self._clock = VirtualClock(book)
        self._trace: Trace | None = None
        self._webhooks: Webhooks | None = None

    @classmethod
    def from_spec(
        cls, spec: WorldSpec, seed: int | None = None, run: int = 0, faults: bool = True
    ) -> World:
        """A fresh world from a parsed spec: event 0 `WorldCreated`, then the seed rows."""
        return cls(spec, seed=seed, run=run, faults=faults)

    @classmethod
    def from_book(
        cls,
        spec: WorldSpec,
        seed: int,
        book: Book,
        *,
        ops: dict[str, CompiledOp] | None = None,
        genesis: Snapshot | None = None,
        rules: Mapping[str, FaultRule] | None = None,
        indexed: bool = False,
    ) -> World:
        """A world over an existing state and log (replay and forks build worlds this way).
        `rules`: the parsed fault rules of the book's settings, if known (spares parsing).
        `indexed`: the book's state already has `spec`'s table indexes (a fork's: every state
        of a world has them, see `_index`), so they are not checked again."""
        world = cls.__new__(cls)
        # A World setting up a World: its own class's private members.
        ops = compile_ops(spec) if ops is None else ops
        if not indexed:
            _index(book, spec)
        world._init(spec, seed, ops, book, genesis)  # noqa: SLF001
        if rules is not None:
            world._pipeline.use_plan(book.state.settings, rules)  # noqa: SLF001
        return world

    # --- identity ----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._spec.name

    @property
    def spec(self) -> WorldSpec:
        return self._spec

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def run(self) -> int:
        """Run index: selects the fault decisions (seed data depends on the seed only)."""
        return self._book.state.settings.run

    @property
    def faults_enabled(self) -> bool:
        return self._book.state.settings.faults_on

    def __repr__(self) -> str:
        state = self._book.state
        return (
            f"<World {self.name} seed={self._seed} run={self.run}: "
            f"{state.seq} events, clock {state.clock.isoformat()}>"
        )

    # --- tables ------------------------------------------------------------------------------

    def table(self, name: str) -> Table:
        """A table by record name ("order") or accessor ("orders")."""
        return table_of(self._tables, self._book, self._spec, name)

    @property
    def tables(self) -> dict[str, Table]:
        """Record name -> Table, in world-file order."""
        return {name: self.table(name) for name in self._spec.records}

    def __getattr__(self, name: str) -> Table:
        # Only called when normal lookup fails: record accessors, then a helpful error.
        if name.startswith("_"):
            raise AttributeError(name)
        spec = self.__dict__.get("_spec")
        if spec is not None and name in spec.accessors:
            return self.table(name)
        options = sorted(WORLD_ATTRIBUTES | set(spec.accessors if spec else ()))
        raise AttributeError(
            f"World {spec.name if spec else ''!s} has no attribute or table {name!r}."
            + did_you_mean(name, options, sentence=True)
        )

    @property
    def clock(self) -> VirtualClock:
        return self._clock

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        """Every table as a list of record dicts, in id order."""
        return tables_to_dict(self._book.state, self._spec.records)

    # --- effects that happen later (`_calls/_later.py`) --------------------------------------

    def schedule(
        self, after: float | str | timedelta, record: str, id: str | int, set: Mapping[str, Any]
    ) -> str:
        """Change record `id` of `record` to `set` after a delay of virtual time (seconds, a
        duration such as "5m", or a timedelta); returns the effect id ("e1", ...). It fires
        when a call or `clock.advance` reaches its time (docs/WORLDS.md)."""
        from .._calls import schedule

        self._book.refuse_own_handler("world.schedule()")
        with self._book.lock:
            return schedule(self._book, self._spec, self._tables, after, record, id, set)

    @property
    def scheduled(self) -> list[dict[str, Any]]:
        """The effects waiting to fire, in firing order (effect id, due, record, id, set)."""
        from .._calls import pending_effects

        return pending_effects(self._book.state)

    # --- tools and calls ---------------------------------------------------------------------

    @property
    def tools(self) -> list[Tool]:
        """The tools an agent can list now: the world's operations, as the tool-surface
        faults of this run have changed them so far (`rug_pull`, `tool_removed`, ...)."""
        return tools_now(self._ops, self._book.state.surface)

    def tool(self, name: str) -> Tool:
        surface = self._book.state.surface
        tool = tool_now(self._ops, surface, name)
        if tool is None:
            names = [t.name for t in tools_now(self._ops, surface)]
            raise UnknownTool(
                f"unknown tool {name!r}.{did_you_mean(name, names, sentence=True)} "
                f"Available tools: {', '.join(names)}"
            )
        return tool

    def call(
        self, tool: str, args: Mapping[str, Any] | None = None, *, token: str | None = None
    ) -> CallResult:
        """Call a tool as an agent would. Never raises for bad input: the result says.
        Safe from several threads: calls are serialised, each one atomic (see `Book.lock`).
        `token`: the caller's access token, in a world with `auth:` (`issue_token`)."""
        return self._pipeline.call(tool, args, token)

    def issue_token(self, principal: str) -> str:
        """A new access token for `principal` of the world's `auth:` block, valid for its
        `token_ttl` of virtual time (a `TokenIssued` event). Raises ValueError for a world
        without `auth:` or a principal it does not declare."""
        from .._calls import issue

        book = self._book
        book.refuse_own_handler("world.issue_token()")
        with book.lock:
            if book.busy is not None:
                raise book.busy_error("world.issue_token()")
            d = Draft(book.state)
            token = issue(d, self._spec, self.seed, principal)
            book.commit(d)
        return token

    def call_together(self, calls: Sequence[tuple[Any, ...]]) -> list[CallResult]:
        """Make `calls` ((tool, args) pairs) at the same moment, as concurrent agents would:
        they all start at the current virtual time and complete in order of virtual
        completion. The log is the same whatever order `calls` come in (they are put in a
        canonical order first); results come back in the order given."""
        book = self._book
        if book.busy is not None:
            book.refuse_own_handler("world.call_together()")
        return self._pipeline.call_together(list(calls))

    async def acall(
        self, tool: str, args: Mapping[str, Any] | None = None, *, token: str | None = None
    ) -> CallResult:
        """`call` from async code (trio or asyncio): calls made concurrently form one batch,
        as `call_together` runs it (see docs/FAULTS.md, "Concurrent calls")."""
        return await self._pipeline.acall(tool, args, token)

    def set_faults(self, rules: Any) -> None:
        """Replace the fault rules at run time: a `faults:` block as YAML text or plain
        objects (validated like the world file's; raises WorldFileError), or a mapping of
        key -> FaultRule. Call numbering (`k`) carries on. The change is an event
        (`FaultsChanged`), so a replay of the log runs under the same rules. See
        docs/FAULTS.md.

        A world created with `faults=False` never injects a fault, so rules given to it
        would silently do nothing: that raises `FaultsDisabled` (an empty rule set is fine).
        """
        with self._book.change():
            self._set_faults(rules)

    def _set_faults(self, rules: Any) -> None:
        parsed = parse_rules(self._spec, rules)
        if not self.faults_enabled and parsed:
            raise FaultsDisabled(
                f"faults are disabled for the world {self.name!r} (faults=False), so rules "
                f"for {', '.join(parsed)} would never apply. Create it with faults=True "
                "(and set_faults({}) to start without rules), or set them on "
                "world.fork(faults=True)."
            )
        from .._read import render_faults

        block = _as_logged(render_faults(parsed))
        state = self._book.state
        self._book.emit(FaultsChanged(seq=state.seq, at=state.clock, rules=block))
        self._pipeline.use_plan(self._book.state.settings, parsed)

    @property
    def fault_rules(self) -> dict[str, Any]:
        """The fault rules in force, as written: key -> FaultRule."""
        return dict(self._pipeline.plan().rules)

    def model_call(self, model: str = "") -> ModelFault:
        """Log the agent's next call to its model and return what the fault plan's `model:`
        rule decided for it (`kind` None: no fault). For model wrappers (docs/FAULTS.md,
        "Model faults"); the clock moves by the call's latency and timeout."""
        from ._model import log_model_call

        return log_model_call(self._book, self._pipeline.plan(), model)

    def model_used(self, k: int, input_tokens: int, output_tokens: int, model: str = "") -> None:
        """Log the tokens the k-th model call used (`ModelUsed`)."""
        from ._model import log_model_usage

        log_model_usage(self._book, k, input_tokens, output_tokens, model)

    # --- webhook deliveries (`webhooks:`, `_webhooks.py`) -------------------------------------

    def _hooks(self) -> Webhooks:
        hooks = self._webhooks
        if hooks is None:
            if self._spec.webhooks is None:
                raise ValueError(
                    f"the world {self.name!r} has no webhooks: block; add one to deliver its "
                    'event feed (docs/WORLDS.md, "Webhooks")'
                )
            hooks = self._webhooks = Webhooks(self._spec, self._spec.webhooks)
        return hooks

    def webhooks_pending(self) -> list[Delivery]:
        """Every webhook delivery attempt still to make, due or not, in sending order."""
        hooks = self._hooks()
        state = self._book.state
        return hooks.pending(self._book.log, self._pipeline.plan(), state.clock)

    def webhooks_due(self) -> list[Delivery]:
        """The webhook delivery attempts due at the virtual clock's time, in sending order,
        for a shell to POST and report with `webhook_attempted`. The ones a `dropped` fault
        loses are logged here (outcome "dropped") and not returned."""
        hooks = self._hooks()
        plan = self._pipeline.plan()
        with self._book.lock:
            now = self._book.state.clock
            due = hooks.pending(self._book.log, plan, now, due_only=True)
            for d in due:
                if d.fault == "dropped" and d.attempt == 1:  # lost when it was due
                    hooks.attempted(self._book, plan, d, None, "", outcome="dropped", at=d.due)
        return [d for d in due if not (d.fault == "dropped" and d.attempt == 1)]

    def webhook_attempted(
        self,
        delivery: Delivery,
        *,
        status: int | None = None,
        error: str = "",
        at: datetime | None = None,
    ) -> WebhookAttempted:
        """Log how one attempt went (`WebhookAttempted`): `status` the endpoint's HTTP status
        (a 2xx succeeds), or None with `error` saying why there was no answer. A failure with
        retries left is due again after the backoff, in virtual time. `at`: the virtual time
        the attempt was made, from its due time to now (default: now); a shell that sends
        behind the clock (`serve --webhook-url`) logs each at its due time, so the log does not
        depend on how long the endpoint took."""
        if status is None and not error:
            raise ValueError("webhook_attempted needs the endpoint's status, or an error")
        if status is not None and (
            isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599
        ):
            raise ValueError(
                f"webhook_attempted(status=) takes an HTTP status from 100 to 599; got {status!r}"
            )
        if at is not None:
            now = self.clock.now()
            if not delivery.due <= at <= now:
                raise ValueError(
                    f"webhook_attempted(at={iso_time(at)}): expected a time from the attempt's "
                    f"due time, {iso_time(delivery.due)}, to the world's clock, {iso_time(now)}"
                )
        return self._hooks().attempted(
            self._book, self._pipeline.plan(), delivery, status, error, at=at
        )

    # --- the log -----------------------------------------------------------------------------

    @property
    def events(self) -> EventLog:
        """Every event so far, as a read-only sequence (a fixed-length view). A world that
        keeps a window (`lowlevel.keep_events`) holds those from `events.first` on."""
        return self._book.log

    def events_since(self, seq: int) -> list[Any]:
        """Events with `seq >= seq` (in a window, those still held: from `events.first`)."""
        return self.events[max(seq, 0) :]

    @property
    def trace(self) -> Trace:
        """The calls of this world, rebuilt from its log (`count`, `calls_to`, `faults`...)."""
        from .._inspect import Trace

        # Trace.follow reads only the events added since the last trace of this log.
        with self._book.lock:
            self._trace = Trace.follow(self.events, self._trace)
            return self._trace

    def state_hash(self) -> str:
        """Hex digest of records, id counters, clock and call counts (see `_state.py`)."""
        return self._book.state.state_hash()

    # --- snapshots, forks, diffs -------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        with self._book.lock:  # state and log of the same moment
            return Snapshot(self._spec, self._book.state, self._book.log)

    def restore(self, snap: Snapshot) -> None:
        """Go back (or forward) to `snap`: records, clock and log, so replay still agrees.
        The fault rules in force stay in force (logged again if the snapshot had others)."""
        self._check_snapshot(snap)
        with self._book.change():  # rewind and carry-over: one change
            before = self._book.state.settings
            self._book.rewind(snap.state, snap.events)
            _carry_over(self._book, before, fork_of=None)

    def _check_snapshot(self, snap: Any) -> None:
        if not isinstance(snap, Snapshot):
            raise TypeError(
                f"Expected a Snapshot (from world.snapshot()). Instead, received: {snap!r}"
            )
        if snap.spec is not self._spec and snap.spec.digest != self._spec.digest:
            raise ValueError(
                f"Expected a snapshot of world {self.name!r}. Instead, received one of "
                f"{snap.spec.name!r} (a different world file)."
            )

    def fork(
        self, snap: Snapshot | None = None, run: int | None = None, faults: bool | None = None
    ) -> World:
        """A new, independent world starting from `snap` (default: now). O(1): it shares the
        parent's log prefix and state. Its first own event is `WorldForked`; the fault rules
        in force in this world now are in force there too."""
        if snap is None:
            snap = self.snapshot()
        else:
            self._check_snapshot(snap)
        now = self._book.state.settings
        book = Book(snap.state, snap.events)
        wanted = msgspec.structs.replace(
            now,
            run=now.run if run is None else int(run),
            faults_on=now.faults_on if faults is None else bool(faults),
        )
        _carry_over(book, wanted, fork_of=snap.seq - 1)
        same = book.state.settings.rules is now.rules  # then no need to parse them again
        return World.from_book(
            self._spec,
            self._seed,
            book,
            ops=self._ops,
            genesis=self._genesis,
            rules=self._pipeline.plan().rules if same else None,
            indexed=True,
        )

    def reset(self) -> None:
        """Back to the seeded state (a fork stays a fork: it logs `WorldForked` again). The
        fault rules in force stay in force."""
        genesis = self._genesis
        if genesis is None:  # a replayed world: seed it again, as its first event says
            first = self.events.origin  # kept by a window too (lowlevel.keep_events)
            assert isinstance(first, WorldCreated)
            book = _seeded(self._spec, self._seed, first.run, first.faults)
            genesis = self._genesis = Snapshot(self._spec, book.state, book.log)
            self._pipeline.genesis_seq = genesis.seq
        with self._book.change():
            before = self._book.state.settings
            self._book.rewind(genesis.state, genesis.events)
            _carry_over(self._book, before, fork_of=genesis.seq - 1 if before.forked else None)

    def diff(self, other: World | Snapshot) -> StateDiff:
        """What changed from `other` to this world: added / removed / changed records."""
        from .._inspect import diff_tables

        if isinstance(other, World):
            other = other.snapshot()
        if isinstance(other, Snapshot):
            return diff_tables(other.state.tables, self._book.state.tables)
        raise TypeError(f"Expected a World or a Snapshot. Instead, received: {other!r}")


# ---------------------------------------------------------------------------------------------
# What forks and restores carry over
# ---------------------------------------------------------------------------------------------


def _carry_over(book: Book, before: Settings, fork_of: int | None) -> None:
    """After `book` moved to another state: log what must stay as it was `before` (a fork's
    `WorldForked`, when `fork_of` is the parent's last seq; the fault rules in force)."""
    d = Draft(book.state)
    if fork_of is not None:
        s = d.state
        d.emit(
            WorldForked(
                seq=s.seq, at=s.clock, parent_seq=fork_of, run=before.run, faults=before.faults_on
            )
        )
    if d.state.settings.rules != before.rules:
        s = d.state
        d.emit(FaultsChanged(seq=s.seq, at=s.clock, rules=before.rules))
    book.commit(d)


#: the last spec `_index` read, and the fields it indexes (one entry: forks of one world)
_last_wanted: tuple[WorldSpec, dict[str, tuple[str, ...]]] | None = None


def _index(book: Book, spec: WorldSpec) -> None:
    """Give `book`'s state the table indexes `spec` asks for (`_store/_indexes.py`), built at once.
    A world's genesis and a replay fold their events unindexed, which is faster than
    keeping indexes per event; from here on the reducer keeps them."""
    global _last_wanted
    state = book.state
    last = _last_wanted
    if last is not None and last[0] is spec:
        wanted = last[1]
    else:  # a fork asks for its parent's spec's: computing it was ~40% of a fork's cost
        wanted = index_fields(spec)
        _last_wanted = (spec, wanted)
    index = with_indexes(state.index, state.tables, wanted)
    if index is not None:
        book.rewind(state.derived(index=index), book.log)


# ---------------------------------------------------------------------------------------------
# Seeding: event 0 and the seed rows, from the seed alone
# ---------------------------------------------------------------------------------------------


def _as_logged(value: Any) -> Any:
    """`value` as the JSON types a log holds (int keys become strings, tuples lists), so a
    live world and its replay hold equal settings."""
    return msgspec.json.decode(msgspec.json.encode(value))


def _seed_rows(spec: WorldSpec, seed: int) -> dict[str, list[dict[str, Any]]]:
    from .._spec import generate_rows  # lazily: only worlds being created need it

    return generate_rows(spec, seed)


def _seeded(spec: WorldSpec, seed: int, run: int, faults: bool) -> Book:
    """The genesis of a world: `WorldCreated`, then one `RecordCreated` per seed row."""
    book = Book(State.empty(tuple(spec.records), spec.clock_start))
    book.emit(_created(spec, seed, run, faults))
    for rname, rows in _seed_rows(spec, seed).items():
        table = Table(book, spec.records[rname])  # unlocked: no other thread has `book` yet
        for row in rows:
            table.insert(**row)
    return book


#: the last genesis made, by spec (identity) and seed: its indexed state after the seed rows,
#: and their events. A suite's runs start the same spec with the same seed and another run
#: index, which only event 0 and the settings hold, so each run after the first starts from
#: it instead of generating and inserting its rows again (~0.5 ms of a shop world's 0.7 ms)
_last_genesis: tuple[WorldSpec, int, State, tuple[Any, ...]] | None = None
#: the last spec's compiled operations: worlds of one spec share them, as forks do
_last_ops: tuple[WorldSpec, dict[str, CompiledOp]] | None = None


def _ops_of(spec: WorldSpec) -> dict[str, CompiledOp]:
    global _last_ops
    last = _last_ops
    if last is not None and last[0] is spec:
        return last[1]
    ops = compile_ops(spec)
    _last_ops = (spec, ops)
    return ops


def _genesis(spec: WorldSpec, seed: int, run: int, faults: bool) -> Book:
    """A new world's indexed book: `_seeded`, or the last genesis of the same spec and seed
    with this run's event 0 and settings. The two are equal, event for event and field for
    field (the seed rows' events and state do not read the settings; `test_world.py` checks
    it), and the cached state's records are shared as a fork shares them."""
    global _last_genesis
    last = _last_genesis
    if last is not None and last[0] is spec and last[1] == seed:
        rows_state, rows = last[2], last[3]
        created = _created(spec, seed, run, faults)
        settings = apply(State.empty((), spec.clock_start), created).settings
        return Book(msgspec.structs.replace(rows_state, settings=settings), None, [created, *rows])
    book = _seeded(spec, seed, run, faults)
    _index(book, spec)
    _last_genesis = (spec, seed, book.state, tuple(book.log)[1:])
    return book


def _created(spec: WorldSpec, seed: int, run: int, faults: bool) -> WorldCreated:
    return WorldCreated(
        seq=0,
        at=spec.clock_start,
        world=spec.name,
        seed=seed,
        run=run,
        digest=spec.digest,
        path=spec.path,
        faults=faults,
        tools=tool_fingerprints(spec) if spec.handlers else {},
    )


def genesis_events(spec: WorldSpec, seed: int, run: int = 0, faults: bool = True) -> EventLog:
    """The events a world of `spec` and `seed` starts with: `WorldCreated`, then its seed
    rows (what replay checks a log's first events against)."""
    return _seeded(spec, seed, run, faults).log


def load_world(
    path: str | os.PathLike[str], seed: int | None = None, run: int = 0, faults: bool = True
) -> World:
    """Load a world file and start a world: `seed` defaults to the file's, `run` selects the
    fault decisions, `faults=False` turns the fault plan off."""
    from .._read import load_spec

    return World.from_spec(load_spec(path), seed=seed, run=run, faults=faults)
