"""The outbound event feed (top-level `events:`) and its tool, `list_events`.

A feed event is derived from the log, never stored: every `RecordCreated`, `RecordUpdated`
or `RecordDeleted` of a record that an `events:` type follows, for the changes it follows
(`on:`), whoever made it (a call, a scheduled effect, a test). Its id is `evt_<seq>`, the seq
of the record event, so ids are stable in a replay and a fork and increase with time.

    list_events(limit=10, starting_after=None, since=None, type=None)
    -> {"object": "list", "data": [event, ...], "has_more": bool, "next_cursor": id | None}
    event = {"id": "evt_12", "object": "event", "type": "refund.updated",
             "created": RFC 3339 time, "data": {"object": {...the record after...},
                                                "previous_attributes": {...before...}}}

Events come oldest first (unlike Stripe's /v1/events, which starts from the newest), so an
agent that polls passes the last id it saw as `starting_after` and gets what is new.

Reading the feed walks the log once: a cache keeps the events derived so far, the rows of
the followed records as they were at the last event read, and that event (by identity: a
restore or a fork of an earlier moment has another object there, and the walk starts over).
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import msgspec

from .._errors import InvalidArguments
from .._store import Event, RecordCreated, RecordDeleted, RecordUpdated, WorldCreated
from .._text import iso_time

if TYPE_CHECKING:
    from .._spec import WorldSpec

_RECORD_EVENTS = frozenset({RecordCreated, RecordUpdated, RecordDeleted})
#: the feed's page size when `limit` is not given, and the most one page may hold
PAGE_SIZE, MAX_PAGE = 10, 100
_to_json = msgspec.to_builtins


class FeedEvent(msgspec.Struct, frozen=True, gc=False):
    seq: int
    at: datetime
    type: str
    record: dict[str, Any]
    previous: dict[str, Any] | None = None

    @property
    def id(self) -> str:
        return f"evt_{self.seq}"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"object": _to_json(self.record)}
        if self.previous is not None:
            data["previous_attributes"] = _to_json(self.previous)
        return {
            "id": self.id,
            "object": "event",
            "type": self.type,
            "created": iso_time(self.at),
            "data": data,
        }


class Feed:
    """The feed of one world file: which types follow which record changes, and the cache
    of the last walk (see the module docstring)."""

    __slots__ = (
        "_by_change", "_genesis", "_last", "_lock", "_n", "_rows", "_tables", "events", "types",
    )  # fmt: skip

    def __init__(self, spec: WorldSpec):
        self.types: tuple[str, ...] = tuple(spec.feeds)
        #: (table, change) -> the event types it makes, in file order
        self._by_change: dict[tuple[str, str], list[str]] = {}
        for f in spec.feeds.values():
            for change in f.on:
                self._by_change.setdefault((f.record, change), []).append(f.type)
        self._tables = frozenset(f.record for f in spec.feeds.values())
        #: forks share their compiled operations, and may run in other threads
        self._lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        self.events: list[FeedEvent] = []
        self._rows: dict[tuple[str, str], dict[str, Any]] = {}
        self._n = 0
        self._last: Event | None = None
        #: still reading the world's genesis (its seed rows are no news to anyone)
        self._genesis = True

    def read(self, log: Sequence[Event], pending: Sequence[Event]) -> list[FeedEvent]:
        """The feed of the events `log` then `pending` (a call's own, not yet in the log)."""
        with self._lock:
            return self._read(log, pending)

    def _read(self, log: Sequence[Event], pending: Sequence[Event]) -> list[FeedEvent]:
        n = len(log)
        if self._n > n or (self._n and log[self._n - 1] is not self._last):
            self._clear()
        for i in range(self._n, n):
            self._take(log[i])
        self._n = n
        self._last = log[n - 1] if n else None
        if not any(type(ev) in _RECORD_EVENTS for ev in pending):
            return self.events  # read-only for the caller: the cache's own list
        # a call's own events: read on a copy, the cache keeps the log's only
        saved = self.events, self._rows, self._genesis
        self.events, self._rows = list(self.events), dict(self._rows)
        try:
            for ev in pending:
                self._take(ev)
            return self.events
        finally:
            self.events, self._rows, self._genesis = saved

    def _take(self, ev: Event) -> None:
        if self._genesis:
            seeded = type(ev) is WorldCreated or (type(ev) is RecordCreated and ev.call_id is None)
            self._genesis = seeded
        if type(ev) is RecordCreated:
            if ev.table in self._tables:
                self._rows[(ev.table, ev.id)] = ev.fields
                self._add(ev, "create", ev.fields, None)
        elif type(ev) is RecordUpdated:
            if ev.table in self._tables:
                key = (ev.table, ev.id)
                record = {**self._rows.get(key, {}), **ev.changes}
                self._rows[key] = record
                self._add(ev, "update", record, dict(ev.old))
        elif type(ev) is RecordDeleted and ev.table in self._tables:
            self._rows.pop((ev.table, ev.id), None)
            self._add(ev, "delete", dict(ev.old), None)

    def _add(
        self,
        ev: RecordCreated | RecordUpdated | RecordDeleted,
        change: str,
        record: dict[str, Any],
        previous: dict[str, Any] | None,
    ) -> None:
        if self._genesis:
            return
        for t in self._by_change.get((ev.table, change), ()):
            self.events.append(FeedEvent(ev.seq, ev.at, t, record, previous))


def page(feed: list[FeedEvent], args: dict[str, Any], types: Sequence[str]) -> dict[str, Any]:
    """One page of `feed` for `list_events`' arguments (validated by its schema)."""
    limit = args.get("limit")
    limit = PAGE_SIZE if limit is None else limit
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidArguments(
            f"invalid arguments for list_events: limit must be from 1 to {MAX_PAGE}. "
            f"Instead, received: {limit}"
        )
    start = 0
    after = args.get("starting_after")
    if after is not None:
        seq = _cursor_seq(after)
        start = bisect.bisect_right(feed, seq, key=_seq_of)  # ids grow with the log
        if start == 0 or feed[start - 1].seq != seq:
            raise InvalidArguments(
                f"invalid arguments for list_events: starting_after {after!r} is not the id of "
                "an event of this feed; pass the id of an event list_events returned, or omit "
                "it to start from the oldest"
            )
    since = args.get("since")
    kind = args.get("type")
    data: list[dict[str, Any]] = []
    has_more = False
    for e in feed[start:]:
        if (since is not None and e.at < since) or (kind is not None and e.type != kind):
            continue
        if len(data) == limit:
            has_more = True
            break
        data.append(e.to_json())
    return {
        "object": "list",
        "data": data,
        "has_more": has_more,
        "next_cursor": data[-1]["id"] if has_more else None,
    }


def _seq_of(e: FeedEvent) -> int:
    return e.seq


def _cursor_seq(cursor: str) -> int:
    head, _, digits = cursor.partition("_")
    if head != "evt" or not digits.isascii() or not digits.isdigit():
        return -1
    return int(digits)


# ---------------------------------------------------------------------------------------------
# Feed faults: the page a flaky delivery gives (kinds of effect "feed", `_faults/_kinds.py`)
# ---------------------------------------------------------------------------------------------


def perturb(
    value: dict[str, Any], kind: str, k: int, delay_s: float, now: datetime
) -> tuple[dict[str, Any], list[str]]:
    """`value` (a page) as the fault `kind` delivers it to the `k`-th call, and the ids of
    the events it touched. Which event is chosen depends on `k` only, so a replay agrees.

    - duplicate_delivery: one event comes twice in a row;
    - out_of_order: one event comes before the one it follows;
    - dropped: one event is missing (a cursor past it never brings it back);
    - delayed: events younger than `delay_s` are not there yet (the page ends before
      them, `has_more: false`); a later call sees them."""
    data = list(value["data"])
    touched: list[str] = []
    if kind == "delayed":
        cutoff = now - timedelta(seconds=delay_s)
        kept = [e for e in data if datetime.fromisoformat(e["created"]) <= cutoff]
        touched = [e["id"] for e in data[len(kept) :]]
        if touched:
            return {**value, "data": kept, "has_more": False, "next_cursor": None}, touched
        return value, touched
    if not data:
        return value, touched
    i = (k - 1) % len(data)
    if kind == "duplicate_delivery":
        data.insert(i + 1, msgspec.to_builtins(data[i]))
        touched = [data[i]["id"]]
    elif kind == "dropped":
        touched = [data.pop(i)["id"]]
    elif kind == "out_of_order" and len(data) > 1:
        j = min(i, len(data) - 2)
        data[j], data[j + 1] = data[j + 1], data[j]
        touched = [data[j + 1]["id"], data[j]["id"]]
    return {**value, "data": data}, touched
