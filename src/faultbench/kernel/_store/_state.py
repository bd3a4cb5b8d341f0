"""The state of a world: one immutable value, produced only by `apply` (see `_reducer.py`).

Everything here is persistent (`immutables.Map`, frozen Structs), so a snapshot is a reference
and a fork shares structure with its parent. Record values are plain dicts in field order; they
are never mutated once inside a state (the reducer copies on update), and `Record` hands users
read-only views of them.

The state hash
--------------
`state_hash()` must be cheap enough to compute after every call, so the record part is kept
incrementally: `rsum` is the sum, modulo 2**256, of one blake2b digest per live record
(over the canonical JSON of `[table, id, fields]`). Creating a record adds its digest, deleting
subtracts it, updating does both: O(1) per event, and the sum does not depend on the order in
which records were written. `state_hash()` then folds in the small scalar parts.

The hash covers: every record (table, id, field values), the id counters, the virtual clock,
the per-tool counts of valid calls and the call counter, the scheduled effects not yet
fired (once a world has scheduled one), and the tool surface's changes (once a run has
one). So two worlds with the same hash answer the same fault-free calls the same way (same records, same new ids and call ids, same
times). It leaves out the log itself, the seed and the `settings` (run index, fault switch,
run-time fault rules), so a fork with another run index hashes like its parent. Some fault decisions also read the log's recent past (rate-limit windows
count earlier calls, stale reads answer from an older state), so under faults two worlds with
equal hashes but different histories may answer differently; compare logs (`diff_events`)
for that.
"""

from __future__ import annotations

from datetime import datetime
from hashlib import blake2b
from typing import Any

import immutables
import msgspec

from .._faults import Admitted, ToolChange, surface_digest_items
from ._indexes import TableIndex

_MOD = 1 << 256
_EMPTY: immutables.Map[str, int] = immutables.Map()

_NO_INDEX: immutables.Map[str, TableIndex] = immutables.Map()
_NO_WINDOWS: immutables.Map[str, Admitted] = immutables.Map()

# Sorted keys make the digest independent of dict insertion order.
_canon = msgspec.json.Encoder(order="deterministic").encode


def record_digest(table: str, rid: str, fields: dict[str, Any]) -> int:
    """The hash contribution of one record."""
    return int.from_bytes(blake2b(_canon((table, rid, fields)), digest_size=32).digest(), "big")


class Settings(msgspec.Struct, frozen=True, gc=False):
    """What a world runs under, as its log says: set by `WorldCreated`, `WorldForked` and
    `FaultsChanged`, so a replay, a fork or a restored snapshot runs under exactly the same.
    One object shared by every state until one of those events replaces it, so code that
    derives something from it (the fault plan) can cache by identity."""

    #: run index: selects the fault decisions
    run: int = 0
    #: whether the fault plan may inject anything (`faults=False` turns it off for good)
    faults_on: bool = True
    #: fault rules set at run time, as a `faults:` block (plain JSON objects); None: the
    #: world file's own
    rules: Any = None
    #: whether this world began as a fork (its log holds a `WorldForked`)
    forked: bool = False


_SETTINGS = Settings()


class KeyEntry(msgspec.Struct, frozen=True, gc=False):
    """A recorded idempotency key (`IdempotencyKeyRecorded`)."""

    digest: str
    value: Any
    at: datetime
    call_id: str


class TokenEntry(msgspec.Struct, frozen=True, gc=False):
    """An access token of a world with `auth:` (`TokenIssued` and what followed)."""

    principal: str
    expires_at: datetime
    revoked: bool = False


_NO_KEYS: immutables.Map[str, KeyEntry] = immutables.Map()
_NO_CHANGES: immutables.Map[str, ToolChange] = immutables.Map()
_NO_TOKENS: immutables.Map[str, TokenEntry] = immutables.Map()


class Pending(msgspec.Struct, frozen=True, gc=False):
    """A scheduled effect not yet fired (see `_later.py`), as its `EffectScheduled` says."""

    effect_id: str
    due: datetime
    n: int  # scheduling order: ties at `due` fire in this order
    table: str
    id: str
    changes: dict[str, Any]


class State(msgspec.Struct, frozen=True, gc=False):
    """One world's state. Build it only with `State.empty`, `apply`, and `derived` (the same
    state seen with other indexes, or another moment's records: views, never new facts)."""

    #: record name -> id -> field dict (field order, `id` included)
    tables: immutables.Map[str, immutables.Map[str, dict[str, Any]]]
    #: the virtual clock, timezone-aware UTC
    clock: datetime
    #: number of events applied so far: the `seq` the next event gets
    seq: int = 0
    #: record name -> the next automatic id (as an int)
    next_ids: immutables.Map[str, int] = _EMPTY
    #: tool name -> number of valid calls so far (the `k` of the last one); fault scripts
    #: count on this, and forks inherit it with the rest of the state
    k: immutables.Map[str, int] = _EMPTY
    #: number of calls started (valid or not); the next call id is `c{calls + 1}`
    calls: int = 0
    #: sum of record digests mod 2**256 (see module docstring)
    rsum: int = 0
    #: run index, fault switch and run-time fault rules (see `Settings`)
    settings: Settings = _SETTINGS
    #: record name -> its id order and field indexes (`_indexes.py`), kept by the reducer for
    #: the tables that have one; derived from `tables`, so not part of the hash
    index: immutables.Map[str, TableIndex] = _NO_INDEX
    #: tool name -> its admitted calls, newest first (`_faults/_window.py`): what rate-limit
    #: windows count, kept per event so a window costs O(1) to O(log n), not what it holds;
    #: derived from the log's CallStarted / FaultInjected events, so not part of the hash
    admitted: immutables.Map[str, Admitted] = _NO_WINDOWS
    #: "tool\x00key" -> the idempotency key's first answer (`_calls/_idempotency.py`)
    keys: immutables.Map[str, KeyEntry] = _NO_KEYS
    #: access token -> whose it is and until when (`_calls/_auth.py`)
    tokens: immutables.Map[str, TokenEntry] = _NO_TOKENS
    #: sum of the digests of `keys` and `tokens` entries mod 2**256, kept like `rsum`; 0 for
    #: a world that uses neither, whose hash is then what it was before they existed
    xsum: int = 0
    #: scheduled effects not yet fired, in firing order: by due time, then scheduling order
    effects: tuple[Pending, ...] = ()
    #: number of effects scheduled so far: the next one is `e{effect_n + 1}`
    effect_n: int = 0
    #: number of model calls so far (`ModelCalled`): the `k` of the next one is this + 1;
    #: not part of the hash (a model call changes no record; its clock move is hashed)
    model_calls: int = 0
    #: tool name -> what the tool-surface faults did to it (`_faults/_surface.py`): the tools
    #: an agent sees now are the world's, changed by these; empty for most runs
    surface: immutables.Map[str, ToolChange] = _NO_CHANGES

    @classmethod
    def empty(cls, tables: list[str] | tuple[str, ...], clock: datetime) -> State:
        """A state with the given (empty) tables, before any event."""
        return cls(
            tables=immutables.Map({name: immutables.Map() for name in tables}),
            clock=clock,
            next_ids=immutables.Map(dict.fromkeys(tables, 1)),
        )

    def derived(
        self,
        *,
        tables: immutables.Map[str, immutables.Map[str, dict[str, Any]]] | None = None,
        index: immutables.Map[str, TableIndex] | None = None,
        admitted: immutables.Map[str, Admitted] | None = None,
    ) -> State:
        """This state with its table indexes rebuilt (`index`: derived data, not hashed), or
        with the records of another moment (`tables` and their `index`: what a stale read
        answers from), or with its rate windows cut to what a rule may still count
        (`admitted`: not hashed; `Book.rate_reach_s`). The one way, besides `apply`, that
        code outside the reducer makes a `State`; the seq, clock, counters and settings stay
        this state's."""
        changes: dict[str, Any] = {}
        if tables is not None:
            changes["tables"] = tables
        if index is not None:
            changes["index"] = index
        if admitted is not None:
            changes["admitted"] = admitted
        return msgspec.structs.replace(self, **changes)

    def state_hash(self) -> str:
        """Hex digest of everything the hash covers (see module docstring)."""
        scalar: tuple[Any, ...] = (
            f"{self.rsum:064x}",
            self.clock,
            sorted(self.next_ids.items()),
            sorted(self.k.items()),
            self.calls,
        )
        if self.xsum:  # keys and tokens change what later calls answer
            scalar = (*scalar, f"{self.xsum:064x}")
        if self.effect_n:  # a world that never scheduled anything hashes as before
            scalar += (
                self.effect_n,
                [(p.effect_id, p.due, p.table, p.id, p.changes) for p in self.effects],
            )
        if self.surface:  # the tools later calls may use; a run without changes hashes as before
            scalar += (surface_digest_items(self.surface),)
        return blake2b(_canon(scalar), digest_size=32).hexdigest()


def entry_digest(kind: str, name: str, entry: Any) -> int:
    """The hash contribution of one idempotency key or token entry."""
    data = _canon((kind, name, msgspec.to_builtins(entry)))
    return int.from_bytes(blake2b(data, digest_size=32).digest(), "big")


def add_digest(rsum: int, digest: int) -> int:
    return (rsum + digest) % _MOD


def sub_digest(rsum: int, digest: int) -> int:
    return (rsum - digest) % _MOD
