"""`World`: a world file brought to life. State, log, clock, tables, calls, snapshots, forks.

A world is two references: `_state` (an immutable `State`) and `_seg` (the log segment it
appends to). Every change goes through `_emit(event)`: apply, then append. Snapshots, forks and
restores only move references (see `_log.py`), so they cost the same for 10 records or 10^6.

Event 0 is always `WorldCreated`; the seed rows follow as `RecordCreated` events without a
call id, so a log plus the world file it names replays on its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from . import _pipeline as _call
from ._clock import VirtualClock
from ._errors import FaultsDisabled, UnknownTool
from ._events import Event, WorldCreated, WorldForked
from ._log import EventLog, Segment
from ._ops import CompiledOp, compile_ops, tables_to_dict
from ._reducer import apply
from ._results import CallResult, Tool
from ._spec import WORLD_ATTRIBUTES, WorldSpec
from ._state import State
from ._tables import Table, did_you_mean

if TYPE_CHECKING:
    from datetime import datetime


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


class World:
    """A running world. Create one with `load_world(path)` or `World.from_spec(spec)`."""

    # --- construction ------------------------------------------------------------------------

    def __init__(self, spec: WorldSpec, seed: int | None = None, run: int = 0, faults: bool = True):
        self._setup(spec, spec.seed if seed is None else int(seed), run, faults, compile_ops(spec))
        self._state, self._seg = _seeded(spec, self._seed, run, faults)
        self._genesis: Snapshot | None = self.snapshot()
        self._plan = _call.make_plan(self)

    @classmethod
    def from_spec(
        cls, spec: WorldSpec, seed: int | None = None, run: int = 0, faults: bool = True
    ) -> World:
        """A fresh world from a parsed spec: event 0 `WorldCreated`, then the seed rows."""
        return cls(spec, seed=seed, run=run, faults=faults)

    def _setup(
        self, spec: WorldSpec, seed: int, run: int, faults: bool, ops: dict[str, CompiledOp]
    ) -> None:
        self._spec = spec
        self._seed = seed
        self._run = int(run)
        self._faults = bool(faults)
        self._ops = ops
        self._call_id: str | None = None  # writes outside calls carry no call id
        self._handler: str | None = None  # the custom handler running now, if any (_ops.py)
        self._tables: dict[str, Table] = {}
        self._clock = VirtualClock(self)
        self._forked = False
        self._genesis = None
        self._trace: Any = None

    @classmethod
    def _blank(
        cls, spec: WorldSpec, seed: int, run: int, faults: bool, ops: dict[str, CompiledOp]
    ) -> World:
        """A world with no events at all (for replay and forks); the caller fills it."""
        world = cls.__new__(cls)
        world._setup(spec, seed, run, faults, ops)
        world._state = State.empty(tuple(spec.records), spec.clock_start)
        world._seg = Segment(None)
        return world

    # --- the only ways state changes ---------------------------------------------------------

    def _emit(self, event: Event) -> None:
        if self._handler is not None:
            raise self._busy(f"to write to the world ({type(event).__name__})")
        self._state = apply(self._state, event)
        self._seg.items.append(event)

    def _busy(self, what: str) -> RuntimeError:
        # A handler that reached the world itself (e.g. through a global) would write around
        # its call's transaction, which then could not commit.
        return RuntimeError(
            f"handler {self._handler} tried {what} while its call is running. A handler reads "
            "and writes through the `world` argument it receives (its call's transaction), "
            "and cannot call tools."
        )

    def _adopt(self, state: State, events: list[Event]) -> None:
        """Take over a transaction's result: its final state and the events that built it."""
        self._state = state
        self._seg.items.extend(events)

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
        return self._run

    @property
    def faults_enabled(self) -> bool:
        return self._faults

    def __repr__(self) -> str:
        return (
            f"<World {self.name} seed={self._seed} run={self._run}: "
            f"{self._state.seq} events, clock {self._state.clock.isoformat()}>"
        )

    # --- tables ------------------------------------------------------------------------------

    def table(self, name: str) -> Table:
        """A table by record name ("order") or accessor ("orders")."""
        t = self._tables.get(name)
        if t is None:
            spec = self._spec
            rname = spec.accessors.get(name, name)
            rspec = spec.records.get(rname)
            if rspec is None:
                names = sorted(set(spec.accessors) | set(spec.records))
                raise LookupError(
                    f"Expected a table name ({', '.join(names)}). Instead, received: {name!r}."
                    + did_you_mean(name, names)
                )
            t = self._tables.get(rname) or Table(self, rspec)
            self._tables[rname] = self._tables[name] = t
        return t

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
            + did_you_mean(name, options)
        )

    @property
    def clock(self) -> VirtualClock:
        return self._clock

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        """Every table as a list of record dicts, in id order."""
        return tables_to_dict(self._state, self._spec.records)

    # --- tools and calls ---------------------------------------------------------------------

    @property
    def tools(self) -> list[Tool]:
        return [op.tool for op in self._ops.values()]

    def tool(self, name: str) -> Tool:
        op = self._ops.get(name)
        if op is None:
            raise UnknownTool(
                f"unknown tool {name!r}.{did_you_mean(name, self._ops)} "
                f"Available tools: {', '.join(self._ops)}"
            )
        return op.tool

    def call(self, tool: str, args: Mapping[str, Any] | None = None) -> CallResult:
        """Call a tool as an agent would. Never raises for bad input: the result says."""
        if self._handler is not None:
            raise self._busy(f"world.call({tool!r})")
        return _call.run_call(self, tool, args)

    async def acall(self, tool: str, args: Mapping[str, Any] | None = None) -> CallResult:
        """`call` from async code (trio or asyncio)."""
        from ._schedule import join

        return await join(self, tool, args)

    def set_faults(self, rules: Any) -> None:
        """Replace the fault rules at run time: a `faults:` block as YAML text or plain
        objects (validated like the world file's; raises WorldFileError), or a mapping of
        key -> FaultRule. Call numbering (`k`) carries on. See docs/FAULTS.md.

        A world created with `faults=False` never injects a fault, so rules given to it
        would silently do nothing: that raises `FaultsDisabled` (an empty rule set is fine).
        """
        plan = _call.make_plan(self, rules=rules)
        if not self._faults and plan.rules:
            raise FaultsDisabled(
                f"faults are disabled for the world {self.name!r} (faults=False), so rules "
                f"for {', '.join(plan.rules)} would never apply. Create it with faults=True "
                "(and set_faults({}) to start without rules), or set them on "
                "world.fork(faults=True)."
            )
        self._plan = plan

    @property
    def fault_rules(self) -> dict[str, Any]:
        """The fault rules in force, as written: key -> FaultRule."""
        return dict(self._plan.rules)

    # --- the log -----------------------------------------------------------------------------

    @property
    def events(self) -> EventLog:
        """Every event so far, as a read-only sequence (a fixed-length view)."""
        return EventLog(self._seg, self._state.seq)

    def events_since(self, seq: int) -> list[Event]:
        """Events with `seq >= seq`."""
        return self.events[max(seq, 0) :]

    @property
    def trace(self) -> Any:
        """The calls of this world, rebuilt from its log (`count`, `calls_to`, `faults`...)."""
        from ._trace import Trace

        # Trace.follow reads only the events added since the last trace of this log.
        self._trace = Trace.follow(self.events, self._trace)
        return self._trace

    def state_hash(self) -> str:
        """Hex digest of records, id counters, clock and call counts (see `_state.py`)."""
        return self._state.state_hash()

    # --- snapshots, forks, diffs -------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        return Snapshot(self._spec, self._state, EventLog(self._seg, self._state.seq))

    def restore(self, snap: Snapshot) -> None:
        """Go back (or forward) to `snap`: state and log both, so replay still agrees."""
        self._check_snapshot(snap)
        if self._handler is not None:
            raise self._busy("world.restore()")
        self._state = snap._state
        self._seg = Segment(snap._log)

    def _check_snapshot(self, snap: Any) -> None:
        if not isinstance(snap, Snapshot):
            raise TypeError(
                f"Expected a Snapshot (from world.snapshot()). Instead, received: {snap!r}"
            )
        if snap._spec is not self._spec and snap._spec.digest != self._spec.digest:
            raise ValueError(
                f"Expected a snapshot of world {self.name!r}. Instead, received one of "
                f"{snap._spec.name!r} (a different world file)."
            )

    def fork(
        self, snap: Snapshot | None = None, run: int | None = None, faults: bool | None = None
    ) -> World:
        """A new, independent world starting from `snap` (default: now). O(1): it shares the
        parent's log prefix and state. Its first own event is `WorldForked`."""
        if snap is None:
            snap = self.snapshot()
        else:
            self._check_snapshot(snap)
        child = World.__new__(World)
        child._setup(
            self._spec,
            self._seed,
            self._run if run is None else run,
            self._faults if faults is None else faults,
            self._ops,
        )
        child._forked = True
        child._genesis = self._genesis
        child._state = snap._state
        child._seg = Segment(snap._log)
        child._plan = _call.make_plan(child, parent=self._plan)
        child._mark_fork(snap._state.seq - 1)
        return child

    def _mark_fork(self, parent_seq: int) -> None:
        s = self._state
        self._emit(
            WorldForked(
                seq=s.seq, at=s.clock, parent_seq=parent_seq, run=self._run, faults=self._faults
            )
        )

    def reset(self) -> None:
        """Back to the seeded state (a fork stays a fork: it logs `WorldForked` again)."""
        if self._genesis is None:
            state, seg = _seeded(self._spec, self._seed, self._run, self._faults)
            self._genesis = Snapshot(self._spec, state, EventLog(seg, state.seq))
        self.restore(self._genesis)
        if self._forked:
            self._mark_fork(self._genesis.seq - 1)

    def diff(self, other: World | Snapshot) -> Any:
        """What changed from `other` to this world: added / removed / changed records."""
        from ._diff import diff_tables

        if isinstance(other, World | Snapshot):
            return diff_tables(other._state.tables, self._state.tables)
        raise TypeError(f"Expected a World or a Snapshot. Instead, received: {other!r}")


# --- seeding -------------------------------------------------------------------------------------


def _seed_rows(spec: WorldSpec, seed: int) -> dict[str, list[dict[str, Any]]]:
    from ._seed import generate_rows  # lazily: only worlds being created need it

    return generate_rows(spec, seed)


def _seeded(spec: WorldSpec, seed: int, run: int, faults: bool) -> tuple[State, Segment]:
    """The genesis of a world: `WorldCreated`, then one `RecordCreated` per seed row."""
    world = World._blank(spec, seed, run, faults, {})
    world._emit(
        WorldCreated(
            seq=0,
            at=spec.clock_start,
            world=spec.name,
            seed=seed,
            run=run,
            digest=spec.digest,
            path=spec.path,
            faults=faults,
        )
    )
    for rname, rows in _seed_rows(spec, seed).items():
        table = world.table(rname)
        for row in rows:
            table.insert(**row)
    return world._state, world._seg


def load_world(
    path: str | os.PathLike[str], seed: int | None = None, run: int = 0, faults: bool = True
) -> World:
    """Load a world file and start a world: `seed` defaults to the file's, `run` selects the
    fault decisions, `faults=False` turns the fault plan off."""
    from ._loader import load_spec

    return World.from_spec(load_spec(path), seed=seed, run=run, faults=faults)
