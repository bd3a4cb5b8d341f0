"""Trace: the calls of a world, rebuilt from its event log.

A call is the run of events sharing one `call_id`: `CallStarted`, then any `FaultInjected`,
`ClockAdvanced` and record events, then `CallSucceeded` or `CallFailed`. Calls made together
(`World.acall`) interleave in the log; the trace orders them by start, and leaves out calls
still in flight.

A trace is asked for after every call (`world.trace.count("issue_refund")` in an agent loop,
the pytest report after each run), so it is built incrementally: the work of reading the log
lives in a shared, append-only `_Index`, and each `Trace` is an immutable view of its first n
calls. `Trace.follow(events, previous)` returns the trace of a grown log for the cost of the
new events only. The index keeps, per finished call, its start and end events (the log's own)
and builds a call's `CallResult` only when someone reads it: counts and summaries, what an
agent loop asks after every call, never copy a value, and a long session's trace costs a few
pointers per call until its calls are read.

The trace of a window (a world that keeps only its latest events, `lowlevel.keep_events`)
holds the calls that started in the window: `first_seq` says where it begins, and it is
built anew, from the window alone, once the window moved past it.
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

import msgspec

from .._calls import CallResult
from .._spec import as_checks
from .._store import (
    CallFailed,
    CallStarted,
    CallSucceeded,
    Event,
    FaultInjected,
    ModelCalled,
    ModelUsed,
    WorldCreated,
)
from .._text import iso_time
from ._checks import TraceChecks
from ._diff import format_value
from ._grade import Grade, grade

__all__ = ["Trace"]

#: Fault kinds that only slow a call down; they are events, but not marks in `summary()`.
_QUIET_FAULTS = frozenset({"latency"})

_json = msgspec.json.Encoder()
#: Results get their own copies of the event's dicts: changing `trace.calls[0].value` must
#: not rewrite the log (the copy is made once per call, when its result is first read).
_copy = msgspec.to_builtins


def render_text(value: Any) -> str:
    """The JSON text an agent reads for a successful call answering `value`."""
    return _json.encode(value).decode()


# ---------------------------------------------------------------------------------------------
# Reading the log: one shared, append-only index of the calls it holds
# ---------------------------------------------------------------------------------------------


class _Open:
    """A call that has started and not finished yet."""

    __slots__ = ("faults", "start", "texts")

    def __init__(self, start: CallStarted):
        self.start = start
        self.faults: list[str] = []
        self.texts: list[str] = []  # text overrides carried by faults (malformed_json)


class _Index:
    """Everything read from one log so far. Only ever appended to, so views stay valid."""

    __slots__ = (
        "built",
        "by_tool",
        "disorder_at",
        "ends",
        "events",
        "failed",
        "failed_by_tool",
        "fault_events",
        "first",
        "marks",
        "model",
        "open",
        "origin",
        "starts",
        "unusual",
    )

    def __init__(self, first: int = 0, origin: datetime | None = None) -> None:
        self.events: list[Event] = []
        self.first = first  # the seq of events[0] (0 unless the log read is a window)
        self.origin = origin
        self.open: dict[str, _Open] = {}
        #: finished calls in finish (log) order: their first and last events (the log's own)
        self.starts: list[CallStarted] = []
        self.ends: list[CallSucceeded | CallFailed] = []
        #: positions of calls marked by a fault, or answered a fault's text (malformed_json)
        self.unusual: dict[int, tuple[str | None, str | None]] = {}
        self.built: dict[int, CallResult] = {}  # positions whose result was read
        self.marks: list[str] = []  # parallel to starts: "" or "!timeout"
        self.disorder_at: int | None = None  # first result that finished before an earlier start
        self.by_tool: dict[str, list[int]] = {}  # tool -> positions in results
        self.failed: list[int] = []
        self.failed_by_tool: dict[str, list[int]] = {}
        self.fault_events: list[FaultInjected] = []
        self.model: list[ModelCalled | ModelUsed] = []  # the agent's model calls and usage

    def feed(self, events: Iterable[Event]) -> None:
        # One look-up by type, as the reducer does: most events of a log (records, clock
        # steps) concern no call, and a chain of isinstance tests cost each of them ~6 checks.
        on = _ON
        append = self.events.append
        for ev in events:
            append(ev)
            handle = on.get(type(ev))
            if handle is not None:
                handle(self, ev)

    def on_started(self, ev: CallStarted) -> None:
        self.open[ev.call_id] = _Open(ev)

    def on_fault(self, ev: FaultInjected) -> None:
        self.fault_events.append(ev)
        call = self.open.get(ev.call_id)
        if call is not None:
            call.faults.append(ev.kind)
            text = ev.detail.get("text") if ev.detail else None
            if isinstance(text, str):
                call.texts.append(text)

    def on_ended(self, ev: CallSucceeded | CallFailed) -> None:
        call = self.open.pop(ev.call_id, None)
        if call is not None:
            self._finish(call, ev)

    def on_model(self, ev: ModelCalled | ModelUsed) -> None:
        self.model.append(ev)

    def on_created(self, ev: WorldCreated) -> None:
        if self.origin is None:
            self.origin = ev.at

    def _finish(self, call: _Open, end: CallSucceeded | CallFailed) -> None:
        start = call.start
        faults = [f for f in call.faults if f not in _QUIET_FAULTS]
        fault = faults[0] if faults else None
        ok = isinstance(end, CallSucceeded)
        if isinstance(end, CallSucceeded):
            text = call.texts[-1] if call.texts else None
            mark = "".join("!" + f for f in faults)
        else:
            text = None
            mark = "".join("!" + f for f in faults) if faults else "!" + end.kind
        pos = len(self.starts)
        if self.origin is None:
            self.origin = start.at
        if self.disorder_at is None and self.starts and start.seq < self.starts[-1].seq:
            self.disorder_at = pos
        self.starts.append(start)
        self.ends.append(end)
        if fault is not None or text is not None:
            self.unusual[pos] = (fault, text)
        self.marks.append(sys.intern(mark))  # a few kinds, over and over: one string each
        self.by_tool.setdefault(start.tool, []).append(pos)
        if not ok:
            self.failed.append(pos)
            self.failed_by_tool.setdefault(start.tool, []).append(pos)

    def start_seq(self, pos: int) -> int:
        return self.starts[pos].seq

    def result(self, pos: int, *, keep: bool = True) -> CallResult:
        """The result of the call at `pos`, built on first read and kept (so every trace of
        this log hands out the same object); `keep=False` for a read that only renders it."""
        result = self.built.get(pos)
        if result is None:
            result = _result(self.starts[pos], self.ends[pos], *self.unusual.get(pos, _USUAL))
            if keep:
                self.built[pos] = result
        return result


# ---------------------------------------------------------------------------------------------
# A call's result, built from its events when someone reads it
# ---------------------------------------------------------------------------------------------


#: most calls: no fault marks them, and they answered their own text
_USUAL: tuple[None, None] = (None, None)


def _result(
    start: CallStarted, end: CallSucceeded | CallFailed, fault: str | None, text: str | None
) -> CallResult:
    if isinstance(end, CallSucceeded):
        return CallResult(
            call_id=start.call_id,
            tool=start.tool,
            args=_copy(start.args),
            ok=True,
            text=render_text(end.value) if text is None else text,
            value=_copy(end.value),
            fault=fault,
            k=start.k,
            started_at=start.at,
            finished_at=end.at,
        )
    return CallResult(
        call_id=start.call_id,
        tool=start.tool,
        args=_copy(start.args),
        ok=False,
        text=end.message,
        error=end.message,
        error_kind=end.kind,
        fault=fault,
        k=start.k,
        started_at=start.at,
        finished_at=end.at,
        traceback=end.traceback,
    )


#: what `_Index.feed` does with each event type (the rest it only keeps)
_ON: dict[type[Event], Callable[[_Index, Any], None]] = {
    CallStarted: _Index.on_started,
    FaultInjected: _Index.on_fault,
    CallSucceeded: _Index.on_ended,
    CallFailed: _Index.on_ended,
    ModelCalled: _Index.on_model,
    ModelUsed: _Index.on_model,
    WorldCreated: _Index.on_created,
}


def _index_for(events: Iterable[Event]) -> _Index:
    """An empty index for reading `events`: a window (`EventLog.first` > 0) begins at its
    first seq, its offsets still count from the world's creation."""
    first = getattr(events, "first", 0)
    if not first:
        return _Index()
    origin = getattr(events, "origin", None)
    return _Index(first, origin.at if origin is not None else None)


def _count_below(positions: list[int], n: int) -> int:
    return bisect_left(positions, n)


# ---------------------------------------------------------------------------------------------
# The trace: an immutable view of an index's first n calls
# ---------------------------------------------------------------------------------------------


class Trace(TraceChecks):
    """The finished calls of a world, in the order they started.

    ::

        world.trace.count("issue_refund")            # calls to a tool
        world.trace.count("issue_refund", ok=False)  # ... that failed
        world.trace.summary()   # 'get_order → issue_refund!timeout → issue_refund'
        world.trace.required_tools("get_order").forbidden_tools("delete_order")
        print(world.trace)      # one numbered line per call, with virtual time offsets

    A `Trace` never changes once made: a world's next call gives a new one. Its results
    hold copies of the logged values, shared by every trace of the same world: change them
    and the log stays as it was, but later traces show the change, so treat them as
    read-only (`msgspec.to_builtins(result.value)` makes a copy of your own).
    """

    __slots__ = ("_calls", "_index", "_n", "_n_events", "_n_faults", "_n_model", "_order")

    def __init__(self, events: Iterable[Event] = ()):
        index = _index_for(events)
        index.feed(events)
        self._view(index)

    def _view(self, index: _Index) -> None:
        self._index = index
        self._n = len(index.starts)
        self._n_faults = len(index.fault_events)
        self._n_model = len(index.model)
        self._n_events = len(index.events)
        self._order: list[int] | None = None
        self._calls: list[CallResult] | None = None

    @classmethod
    def _of(cls, index: _Index) -> Trace:
        t = cls.__new__(cls)
        t._view(index)  # noqa: SLF001  (a Trace setting up a Trace)
        return t

    # --- building -------------------------------------------------------------------------

    def extend(self, events: Iterable[Event]) -> Trace:
        """The trace of this log followed by `events` (this trace is left as it was).

        Costs only the new events when this is the newest trace of its log.
        """
        index = self._index
        if len(index.events) != self._n_events:
            # Another trace already grew the shared index past this one: start a new index.
            index = _Index(index.first, index.origin)
            index.feed(self._index.events[: self._n_events])
        index.feed(events)
        return Trace._of(index)

    @classmethod
    def follow(cls, events: Sequence[Event], previous: Trace | None = None) -> Trace:
        """The trace of `events`, reusing `previous` when `events` extends the log it read.

        This is what `World.trace` calls with its whole log every time: when the log only grew
        since `previous`, just the new events are read; when it was cut or rewritten
        (`restore`, `reset`), the trace is rebuilt.
        """
        if previous is not None:
            return previous.updated(events)
        return cls(events)

    def updated(self, events: Sequence[Event]) -> Trace:
        """The trace of `events`: this one, extended by the new events when `events` extends
        the log it read, else one built anew (see `follow`)."""
        n = self._n_events
        seen = self._index.events
        first = self._index.first
        end = first + n  # the seq after the last event read
        if (
            getattr(events, "first", 0) == first
            and len(events) >= end
            and (n == 0 or events[end - 1] is seen[n - 1])
        ):
            if len(events) == end:
                return self
            return self.extend(events[end:])
        return Trace(events)

    @property
    def n_events(self) -> int:
        """How many events of the log this trace has read."""
        return self._n_events

    @property
    def first_seq(self) -> int:
        """The seq of the first event this trace read: 0, unless its log is a window (a
        world that keeps only its latest events, `lowlevel.keep_events`); then the trace
        holds the calls that started from there on."""
        return self._index.first

    # --- queries ----------------------------------------------------------------------------

    def _positions(self) -> list[int]:
        """Positions in the index of this view's calls, in start order."""
        if self._order is None:
            index, n = self._index, self._n
            order = list(range(n))
            if index.disorder_at is not None and index.disorder_at < n:
                order.sort(key=index.start_seq)
            self._order = order
        return self._order

    @property
    def calls(self) -> list[CallResult]:
        """Every finished call, in start order (a copy: change it freely)."""
        if self._calls is None:
            result = self._index.result
            self._calls = [result(i) for i in self._positions()]
        return list(self._calls)

    def count(self, tool: str | None = None, *, ok: bool | None = None) -> int:
        """How many calls (to `tool`, if given) finished (`ok=True`: succeeded; `ok=False`:
        failed)."""
        index, n = self._index, self._n
        if tool is None:
            total = n
            failed = _count_below(index.failed, n) if ok is not None else 0
        else:
            total = _count_below(index.by_tool.get(tool, []), n)
            failed = _count_below(index.failed_by_tool.get(tool, []), n) if ok is not None else 0
        if ok is None:
            return total
        return total - failed if ok else failed

    def calls_to(self, tool: str) -> list[CallResult]:
        """The finished calls to one tool, in start order."""
        index, n = self._index, self._n
        positions = index.by_tool.get(tool, [])[: _count_below(index.by_tool.get(tool, []), n)]
        if index.disorder_at is not None and index.disorder_at < n:
            positions = sorted(positions, key=index.start_seq)
        return [index.result(i) for i in positions]

    def faults(self, tool: str | None = None) -> list[FaultInjected]:
        """The faults injected (into calls to `tool`, if given), in log order."""
        events = self._index.fault_events[: self._n_faults]
        if tool is None:
            return events
        return [f for f in events if f.tool == tool]

    @property
    def model_calls(self) -> list[ModelCalled]:
        """The agent's calls to its model (`World.model_call`), in log order: each with the
        model fault it met (`kind`, None for none) and its `detail`."""
        return [e for e in self._index.model[: self._n_model] if isinstance(e, ModelCalled)]

    @property
    def model_usage(self) -> list[ModelUsed]:
        """The usage the agent's model calls reported (`World.model_used`), in log order."""
        return [e for e in self._index.model[: self._n_model] if isinstance(e, ModelUsed)]

    def failures(self) -> list[CallResult]:
        """The calls that failed, in start order."""
        index = self._index
        ends = index.ends
        return [index.result(i) for i in self._positions() if type(ends[i]) is CallFailed]

    def summary(self, sep: str = " → ") -> str:
        """The calls on one line: `get_order → issue_refund!timeout → issue_refund`.

        A call is its tool name. An injected fault appends `!kind` (`!timeout`, `!http_429`,
        also on a call that still answered, such as `!stale_read` or `!duplicate`); latency
        alone is no mark. A call that failed without a fault appends its error kind
        (`!not_found`, `!invalid_arguments`, `!handler_error`...). A plain success is bare.
        """
        index = self._index
        starts, marks = index.starts, index.marks
        return sep.join(starts[i].tool + marks[i] for i in self._positions())

    def _iter_calls(self, *, keep: bool = True) -> Iterator[CallResult]:
        result = self._index.result
        return (result(i, keep=keep) for i in self._positions())

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[CallResult]:
        return self._iter_calls()

    def __getitem__(self, i: int) -> CallResult:
        return self._index.result(self._positions()[i])

    def __bool__(self) -> bool:
        return self._n > 0

    # --- grading ------------------------------------------------------------------------------

    def grade(self, checks: Any, *, turns: Sequence[tuple[int, str]] | None = None) -> Grade:
        """Grade this run on `checks` (a `Checks`, a `Policy`, or their mapping as written in
        a world file) without raising: violations, milestone hits and score (docs/CHECKS.md).
        `turns`: the user's turns of a conversation, as (calls finished before it, text)."""
        return grade(
            as_checks(checks), self.calls, self._index.events[: self._n_events], turns=turns
        )

    def check(self, checks: Any, *, turns: Sequence[tuple[int, str]] | None = None) -> Trace:
        """Assert that this run keeps `checks` (see `grade`): an `AssertionError` lists every
        violation, with the calls that broke it, then the numbered trace."""
        result = self.grade(checks, turns=turns)
        if result.violations:
            raise AssertionError(
                f"{result.message()}\nCalls: {self.summary() or 'no calls'}\n{self}"
            )
        return self

    # --- output -------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (datetimes as ISO strings), as the HTTP control API serves it."""
        out = {
            "count": self._n,
            "failed": self.count(ok=False),
            "summary": self.summary(),
            "calls": [msgspec.to_builtins(c) for c in self._iter_calls(keep=False)],
            "faults": [msgspec.to_builtins(f) for f in self.faults()],
            "model_calls": [msgspec.to_builtins(m) for m in self.model_calls],
        }
        if self._index.first:  # a window's trace says where it begins
            out["first_seq"] = self._index.first
        return out

    def lines(self, *, width: int = 100) -> list[str]:
        """One numbered line per call, as `str(trace)` prints them."""
        origin = self._index.origin
        out = []
        for no, i in enumerate(self._positions(), 1):
            c = self._index.result(i, keep=False)
            offset = (c.started_at - origin).total_seconds() if origin and c.started_at else 0.0
            args = ", ".join(f"{k}={format_value(v)}" for k, v in c.args.items())
            head = f"{no:>3}  +{offset:.3f}s  {c.tool}({_clip(args, width // 2)})"
            if c.ok:
                tail = "ok " + _clip(c.text, width // 2)
                if c.fault:
                    tail = f"ok [{c.fault}] " + _clip(c.text, width // 2)
            else:
                kind = c.error_kind or "error"
                label = f"{kind} [fault]" if c.fault else kind
                tail = f"FAILED {label}: " + _clip(c.error or "", width)
            if c.latency_s:
                tail += f" ({c.latency_s:.3f}".rstrip("0").rstrip(".") + "s)"
            out.append(f"{head} -> {tail}")
            if c.traceback:  # an internal error: a bug, so show where it is
                out.extend("       " + line for line in c.traceback.splitlines())
        return out

    def __str__(self) -> str:
        n, failed = self._n, self.count(ok=False)
        origin = self._index.origin
        since = f" (offsets from {iso_time(origin)})" if origin else ""
        head = f"Trace: {n} call{'' if n == 1 else 's'}, {failed} failed{since}"
        if self._index.first:
            head += (
                f"\n(the calls from event {self._index.first} on: the world keeps only its "
                "latest events in memory; its journal has them all)"
            )
        model = self.model_calls
        if model:
            faults = [f"#{m.k} {m.kind}" for m in model if m.kind is not None]
            head += f"\nModel: {len(model)} call{'' if len(model) == 1 else 's'}"
            head += f", faults: {', '.join(faults)}" if faults else ", no faults"
        return "\n".join([head, *self.lines()])

    def __repr__(self) -> str:
        summary = self.summary()
        if len(summary) > 120:
            summary = "… " + summary[-118:]
        return f"<Trace {self._n} calls: {summary}>" if self._n else "<Trace 0 calls>"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
