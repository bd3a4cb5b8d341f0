"""The call pipeline: every tool call (World.call, World.acall, the MCP server, the pytest
plugin) goes through here. A call has three stages, so concurrent calls can interleave them
in virtual time (`_schedule.py` orders the stages of a batch; a lone call is a batch of one):

    admit    look up the tool and validate the arguments   unknown/invalid -> CallStarted(k=None)
             + CallFailed, done. Otherwise k = valid calls to this tool so far + 1,
             CallStarted(k), ask the fault plan (`_faults.FaultPlan`), log FaultInjected.
    execute  at start + latency: run the operation in a Transaction as the decision says
             (not at all, normally, twice, against the state of `lag_s` ago...), commit.
    finish   at start + latency (+ timeout_s): CallSucceeded or CallFailed; the CallResult.

Rejected calls are logged too (they are part of what the agent did) but take no fault and do
not count towards k, so a typo never shifts which call a fault script hits.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import msgspec

from ._errors import (
    InjectedFault,
    InternalError,
    InvalidArguments,
    ToolCallError,
    UnknownTool,
    unknown_tool_text,
)
from ._events import (
    CallFailed,
    CallStarted,
    CallSucceeded,
    ClockAdvanced,
    Event,
    FaultInjected,
    RecordCreated,
    RecordDeleted,
    RecordUpdated,
    WorldCreated,
)
from ._faults import FAILURE_KINDS, FaultDecision, FaultPlan, created_field
from ._log import EventLog, Segment
from ._ops import CompiledOp, Transaction
from ._results import CallResult
from ._schema import show_value

if TYPE_CHECKING:
    from ._state import State
    from ._world import World

_encode = msgspec.json.Encoder().encode
_canon = msgspec.json.Encoder(order="deterministic").encode
#: A deep copy of JSON-typed data (new dicts and lists, same scalars): the log and each
#: CallResult hold their own, so changing `result.value` can never rewrite history.
_copy = msgspec.to_builtins
_MAX_INTERNAL = 500  # characters of an unexpected exception's text passed on to the agent
_REFUSED = frozenset({"rate_limit", "http_429"})  # answered 429: not counted by rate limits
_BY_ID = frozenset({"get", "update", "delete"})


# ---------------------------------------------------------------------------------------------
# The plan of a world
# ---------------------------------------------------------------------------------------------


def make_plan(world: World, parent: Any = None, rules: Any = None) -> FaultPlan:
    """The fault plan for `world`: its spec's rules, a parent's (forks keep rules set at run
    time), or `rules` (a `faults:` block as YAML text, plain objects or parsed FaultRules)."""
    if rules is not None:
        rules = parse_rules(world, rules)
    elif parent is not None:
        rules = parent.rules
    else:
        rules = world.spec.faults
    return FaultPlan(rules, seed=world.seed, run=world.run, enabled=world.faults_enabled)


def parse_rules(world: World, rules: Any) -> dict[str, Any]:
    from ._spec import FaultRule

    if isinstance(rules, Mapping) and all(isinstance(v, FaultRule) for v in rules.values()):
        return dict(rules)
    from ._loader import parse_faults

    return parse_faults(rules, world.spec, source="<set_faults>")


# ---------------------------------------------------------------------------------------------
# Stage 1: admit
# ---------------------------------------------------------------------------------------------


class Flight:
    """A valid call between `admit` and `finish`."""

    __slots__ = (
        "args",
        "call_id",
        "decision",
        "end_at",
        "error",
        "exec_at",
        "jargs",
        "k",
        "op",
        "started",
        "text",
        "value",
    )

    def __init__(self, call_id: str, op: CompiledOp, args: dict[str, Any], jargs: dict[str, Any]):
        self.call_id = call_id
        self.op = op
        self.args = args
        self.jargs = jargs
        self.k = 0
        self.decision: FaultDecision | None = None
        self.started: datetime = None  # type: ignore[assignment]
        self.exec_at: datetime = None  # type: ignore[assignment]
        self.end_at: datetime = None  # type: ignore[assignment]
        self.value: Any = None
        self.text: str | None = None
        self.error: ToolCallError | None = None


def args_json(args: Any) -> dict[str, Any]:
    """Arguments as JSON types, as they go into the log (and come back from it): always a new
    dict, so a caller changing its own dict after the call cannot rewrite the log."""
    if type(args) is not dict and isinstance(args, Mapping):
        args = dict(args)  # a MappingProxy, a custom Mapping: logged as the mapping it is
    try:
        out = msgspec.to_builtins(args, str_keys=True)
    except (TypeError, msgspec.EncodeError, ValueError, RecursionError):
        out = {str(k): show_value(v) for k, v in args.items()} if isinstance(args, dict) else None
    if not isinstance(out, dict):
        return {"<arguments>": show_value(args)}
    return out


def admit(world: World, tool: str, args: Any) -> Flight | CallResult:
    """Log the call's start and decide its fault. A rejected call is finished on the spot."""
    state = world._state
    call_id = f"c{state.calls + 1}"
    if args is None:
        args = {}
    op = world._ops.get(tool)
    if op is None:
        exc: ToolCallError = UnknownTool(unknown_tool_text(tool, list(world._ops)))
        return _reject(world, call_id, str(tool), args, exc)
    try:
        clean = op.validator.validate(args)
    except InvalidArguments as exc:
        return _reject(world, call_id, tool, args, exc)

    flight = Flight(call_id, op, clean, args_json(args))
    flight.k = k = state.k.get(tool, 0) + 1
    flight.started = now = state.clock
    plan: FaultPlan = world._plan
    # Decided before this call is in the log, so its own start is not in its rate window.
    decision = _decide(world, plan, op, k, clean, now) if _may_fault(plan, op) else None
    flight.decision = decision
    world._emit(
        CallStarted(seq=state.seq, at=now, call_id=call_id, tool=tool, args=flight.jargs, k=k)
    )
    if decision is None:
        flight.exec_at = flight.end_at = now
        return flight
    flight.exec_at = now + timedelta(seconds=decision.latency_s)
    flight.end_at = flight.exec_at + timedelta(seconds=decision.timeout_s)
    # malformed_json is logged when its broken text exists (see execute)
    if decision.kind is not None and decision.kind != "malformed_json":
        _log_fault(world, flight, decision.detail())
    return flight


def _may_fault(plan: FaultPlan, op: CompiledOp) -> bool:
    """False when the plan surely leaves `op` alone: off, or its rule does nothing (known
    once the plan has decided one call to it)."""
    return plan.enabled and plan._active.get(op.spec.qualname) is not False


def _decide(
    world: World, plan: FaultPlan, op: CompiledOp, k: int, args: dict[str, Any], now: datetime
) -> FaultDecision | None:
    rule = plan.rule_for(op.spec)
    recent: list[datetime] = []
    if rule.rate_limit is not None:
        recent = admitted_since(world.events, op.name, now, rule.rate_limit.per_seconds)
    record_time = None
    rspec = world.spec.records.get(op.record) if op.record else None
    target = args.get("id") if op.kind in _BY_ID else None
    if rule.not_found_if_newer_than_s is not None and rspec is not None and target is not None:
        fname = created_field(rspec)
        data = world._state.tables[rspec.name].get(target)
        if fname is not None and data is not None:
            record_time = _as_datetime(data.get(fname))
    return plan.decide(
        op.spec, k, now=now, recent=recent, record_time=record_time, record=rspec, target_id=target
    )


def _as_datetime(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return None
    return None


def _log_fault(world: World, flight: Flight, detail: dict[str, Any]) -> None:
    state = world._state
    world._emit(
        FaultInjected(
            seq=state.seq,
            at=state.clock,
            call_id=flight.call_id,
            tool=flight.op.name,
            kind=flight.decision.kind,  # type: ignore[union-attr]
            detail=detail,
        )
    )


def _reject(world: World, call_id: str, tool: str, args: Any, exc: ToolCallError) -> CallResult:
    state = world._state
    jargs = args_json(args)
    world._emit(
        CallStarted(seq=state.seq, at=state.clock, call_id=call_id, tool=tool, args=jargs, k=None)
    )
    return _failed(world, call_id, tool, jargs, exc, started=state.clock)


def _failed(
    world: World,
    call_id: str,
    tool: str,
    jargs: dict[str, Any],
    exc: ToolCallError,
    *,
    started: datetime,
    k: int | None = None,
    fault: str | None = None,
) -> CallResult:
    """Log the call's failure and answer it: the one way a call ends in an error."""
    state = world._state
    world._emit(
        CallFailed(
            seq=state.seq,
            at=state.clock,
            call_id=call_id,
            tool=tool,
            kind=exc.kind,
            message=exc.message,
        )
    )
    return CallResult(
        call_id=call_id,
        tool=tool,
        args=_copy(jargs),
        ok=False,
        text=exc.message,
        error=exc.message,
        error_kind=exc.kind,
        fault=fault,
        k=k,
        started_at=started,
        finished_at=state.clock,
    )


# ---------------------------------------------------------------------------------------------
# Stage 2: execute
# ---------------------------------------------------------------------------------------------


def advance_to(world: World, to: datetime, call_id: str) -> None:
    state = world._state
    if to > state.clock:
        world._emit(ClockAdvanced(seq=state.seq, at=state.clock, to=to, call_id=call_id))


def _attempt(world: World, flight: Flight, state: State | None = None) -> tuple[Any, Transaction]:
    """Run the operation once in a fresh transaction; raises ToolCallError."""
    tx = Transaction(world, flight.call_id, state)
    return flight.op.run(tx, dict(flight.args)), tx


def execute(world: World, flight: Flight) -> None:
    """Run the operation as the decision says. The clock is at `flight.exec_at`.

    Never raises: a tool error is the call's answer, and so is anything else (a bug in
    faultbench or in what it runs), as an `internal_error` after undoing whatever the call
    had committed, so the log never holds a call that started and never finished.
    """
    state, seg = world._state, world._seg
    try:
        _execute(world, flight)
        if flight.error is None and flight.text is None:
            flight.text = _encode(flight.value).decode()
    except Exception as exc:
        _undo(world, state, seg)
        flight.value = flight.text = None
        flight.error = internal_error(flight.op.name, exc)


def _undo(world: World, state: State, seg: Segment) -> None:
    """Back to `state` (and the log of `seg` as it was then), after a call broke."""
    if world._state is not state:
        # As `restore` does: a new segment on a view of the log as it was, so anyone holding
        # a view of the undone events keeps them.
        world._state = state
        world._seg = Segment(EventLog(seg, state.seq))


def internal_error(tool: str, exc: BaseException) -> InternalError:
    detail = f"{type(exc).__name__}: {exc}"
    if len(detail) > _MAX_INTERNAL:
        detail = detail[: _MAX_INTERNAL - 1] + "…"
    err = InternalError(f"internal error in {tool}: {detail}")
    err.__cause__ = exc
    return err


def _execute(world: World, flight: Flight) -> None:
    d = flight.decision
    kind = d.kind if d is not None else None
    try:
        if kind is None:
            flight.value, tx = _attempt(world, flight)
            tx.commit()
        elif kind in FAILURE_KINDS:
            flight.error = InjectedFault(d.message, kind=kind)  # type: ignore[union-attr]
            if d.commit:  # type: ignore[union-attr]
                # The server did the work; only the answer is lost. If the operation itself
                # fails there is nothing to keep, and the caller still only sees the fault.
                try:
                    _, tx = _attempt(world, flight)
                except ToolCallError:
                    pass
                else:
                    tx.commit()
        elif kind == "empty_result":
            if d.commit:  # type: ignore[union-attr]
                # The write happened and the body got lost: 200 with nothing in it. An error
                # answer is passed on intact, as for malformed_json.
                _, tx = _attempt(world, flight)
                tx.commit()
            flight.value = [] if flight.op.kind == "list" else {}
        elif kind == "stale_read":
            past = state_as_of(world, flight.exec_at - timedelta(seconds=d.lag_s or 0.0))  # type: ignore[union-attr]
            flight.value, _ = _attempt(world, flight, past)
        elif kind == "malformed_json":
            # Logged here rather than at admission: the event carries the broken text.
            detail = d.detail()  # type: ignore[union-attr]
            try:
                flight.value, tx = _attempt(world, flight)
            except ToolCallError:
                _log_fault(world, flight, detail)  # an error answer is passed on intact
                raise
            if d.commit:  # type: ignore[union-attr]
                tx.commit()
            flight.text = detail["text"] = break_json(_encode(flight.value).decode())
            _log_fault(world, flight, detail)
        elif kind == "duplicate":
            flight.value, tx = _attempt(world, flight)
            tx.commit()
            # At-least-once delivery: the same request arrives again. A repeat that fails
            # (a second delete, a handler refusing) changes nothing; the caller saw the first.
            for _ in range(d.times):  # type: ignore[union-attr]
                try:
                    _, tx = _attempt(world, flight)
                except ToolCallError:
                    continue
                tx.commit()
        else:  # pragma: no cover - every kind is handled above
            raise AssertionError(f"unhandled fault kind {kind!r}")
    except ToolCallError as exc:
        flight.error = exc


def break_json(text: str) -> str:
    """`text` cut short, as a proxy that drops the end of a response does; never valid JSON."""
    cut = text[: max(1, len(text) // 2)]
    try:
        msgspec.json.decode(cut)
    except msgspec.DecodeError:
        return cut
    return cut + ","  # a number cut in half is still a number


# ---------------------------------------------------------------------------------------------
# Stage 3: finish
# ---------------------------------------------------------------------------------------------


def finish(world: World, flight: Flight) -> CallResult:
    """Log the answer (the clock is at `flight.end_at`) and build what the agent gets."""
    d = flight.decision
    return _answer(
        world,
        flight.op,
        flight.call_id,
        flight.jargs,
        flight.k,
        flight.started,
        d.kind if d is not None else None,
        flight.error,
        flight.value,
        flight.text,
    )


def _answer(
    world: World,
    op: CompiledOp,
    call_id: str,
    jargs: dict[str, Any],
    k: int,
    started: datetime,
    fault: str | None,
    exc: ToolCallError | None,
    value: Any,
    text: str | None,
) -> CallResult:
    state = world._state
    tool = op.name
    if exc is not None:
        return _failed(world, call_id, tool, jargs, exc, started=started, k=k, fault=fault)
    world._emit(
        CallSucceeded(seq=state.seq, at=state.clock, call_id=call_id, tool=tool, value=value)
    )
    return CallResult(
        call_id=call_id,
        tool=tool,
        args=_copy(jargs),
        ok=True,
        text=text,  # type: ignore[arg-type]  # set by execute
        value=op.copy(value),
        fault=fault,
        k=k,
        started_at=started,
        finished_at=state.clock,
    )


# ---------------------------------------------------------------------------------------------
# History from the log: what rate limits and stale reads need, derived from events only, so a
# replay, a fork or a restored snapshot sees exactly what the live world saw.
# ---------------------------------------------------------------------------------------------


def _backwards(log: EventLog) -> Iterator[Event]:
    for items, lo, hi in reversed(log._parts()):
        for i in range(hi - 1, lo - 1, -1):
            yield items[i]


def admitted_since(log: EventLog, tool: str, now: datetime, per_seconds: float) -> list[datetime]:
    """Start times of the calls to `tool` in the `per_seconds` before `now` that were not
    answered 429. The clock never goes backwards, so the scan stops at the window's edge."""
    cutoff = now - timedelta(seconds=per_seconds)
    refused: set[str] = set()
    times: list[datetime] = []
    for ev in _backwards(log):
        if ev.at <= cutoff:
            break
        cls = type(ev)
        if cls is FaultInjected and ev.tool == tool and ev.kind in _REFUSED:  # type: ignore[attr-defined]
            refused.add(ev.call_id)  # type: ignore[attr-defined]
        elif (
            cls is CallStarted
            and ev.tool == tool  # type: ignore[attr-defined]
            and ev.k is not None  # type: ignore[attr-defined]
            and ev.call_id not in refused  # type: ignore[attr-defined]
        ):
            times.append(ev.at)
    return times


def _genesis_seq(world: World) -> int:
    """Events before this seq are the world's genesis (WorldCreated and the seed rows)."""
    if world._genesis is not None:
        return world._genesis.seq
    # A replayed world has no genesis snapshot: its genesis is the leading run of events
    # written outside any call.
    for ev in world.events:
        if type(ev) is not WorldCreated and not (type(ev) is RecordCreated and ev.call_id is None):
            return ev.seq
    return world._state.seq


def state_as_of(world: World, cutoff: datetime) -> State:
    """The world's records as they were at virtual time `cutoff` (the clock stays now).

    Walks the log back, undoing record events later than `cutoff`: a creation is removed, an
    update gets its `old` values back, a deletion brings `old` back. The seeded genesis is
    never undone: seed rows have existed "forever", however young the world is.
    """
    state = world._state
    genesis = _genesis_seq(world)
    tables = dict(state.tables.items())
    touched = False
    for ev in _backwards(world.events):
        if ev.at <= cutoff or ev.seq < genesis:
            break
        cls = type(ev)
        if cls is RecordCreated:
            tables[ev.table] = tables[ev.table].delete(ev.id)  # type: ignore[attr-defined]
        elif cls is RecordUpdated:
            rows = tables[ev.table]  # type: ignore[attr-defined]
            tables[ev.table] = rows.set(ev.id, {**rows[ev.id], **ev.old})  # type: ignore[attr-defined]
        elif cls is RecordDeleted:
            tables[ev.table] = tables[ev.table].set(ev.id, ev.old)  # type: ignore[attr-defined]
        else:
            continue
        touched = True
    if not touched:
        return state
    import immutables

    return msgspec.structs.replace(state, tables=immutables.Map(tables))


# ---------------------------------------------------------------------------------------------
# Running a batch
# ---------------------------------------------------------------------------------------------


def run_batch(world: World, calls: Sequence[tuple[str, Any]]) -> list[CallResult]:
    """Run `calls` (tool, args) as concurrent calls, in the order given; results in that
    order. The caller canonicalizes the order (see `canonical_order`)."""
    results: list[Any] = [None] * len(calls)
    flights: list[tuple[int, Flight]] = []
    for i, (tool, args) in enumerate(calls):
        admitted = admit(world, tool, args)
        if isinstance(admitted, Flight):
            flights.append((i, admitted))
        else:
            results[i] = admitted  # rejected: answered at once

    # Each flight has two stages: execute at exec_at, finish at end_at (equal unless it is a
    # timeout). Sorting by (time, position, stage) completes a call atomically at a tie.
    stages = []
    for i, f in flights:
        stages.append((f.exec_at, i, 0, f))
        stages.append((f.end_at, i, 1, f))
    stages.sort(key=lambda s: (s[0], s[1], s[2]))
    for at, i, stage, f in stages:
        advance_to(world, at, f.call_id)
        if stage == 0:
            execute(world, f)
        else:
            results[i] = finish(world, f)
    return results


def canonical_key(tool: Any, args: Any) -> tuple[str, bytes]:
    """Sort key of a call in a batch: tool name, then arguments as canonical JSON."""
    try:
        encoded = _canon(args_json(args if args is not None else {}))
    except (TypeError, msgspec.EncodeError, ValueError, RecursionError):
        encoded = show_value(args).encode()  # never raises, however deep or odd
    return (str(tool), encoded)


def canonical_order(calls: Sequence[tuple[Any, Any]]) -> list[int]:
    """Positions of `calls` (in arrival order) sorted canonically; ties keep arrival order."""
    keys = [canonical_key(tool, args) for tool, args in calls]
    return sorted(range(len(calls)), key=lambda i: (keys[i], i))


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------


def run_call(world: World, tool: str, args: Any = None) -> CallResult:
    """Run one tool call against `world`; never raises for anything the agent sent."""
    op = world._ops.get(tool)
    if op is not None and not _may_fault(world._plan, op):
        return _run_plain(world, op, tool, args)
    admitted = admit(world, tool, args)
    if isinstance(admitted, CallResult):
        return admitted
    if admitted.exec_at != admitted.started:
        advance_to(world, admitted.exec_at, admitted.call_id)
    execute(world, admitted)
    if admitted.end_at != admitted.exec_at:
        advance_to(world, admitted.end_at, admitted.call_id)
    return finish(world, admitted)


def _run_plain(world: World, op: CompiledOp, tool: str, args: Any) -> CallResult:
    """`run_call` for a call the fault plan leaves alone, the common case: the three stages
    back to back, with no decision, no latency and no Flight. Same events, same result."""
    state = world._state
    call_id = f"c{state.calls + 1}"
    if args is None:
        args = {}
    try:
        clean = op.validator.validate(args)
    except InvalidArguments as exc:
        return _reject(world, call_id, tool, args, exc)
    jargs = args_json(args)
    k = state.k.get(tool, 0) + 1
    now = state.clock
    world._emit(CallStarted(seq=state.seq, at=now, call_id=call_id, tool=tool, args=jargs, k=k))
    state, seg = world._state, world._seg
    value = text = error = None
    try:
        tx = Transaction(world, call_id)
        value = op.run(tx, clean)  # `clean` is a new dict, the runner's to change
        tx.commit()
        text = _encode(value).decode()
    except ToolCallError as exc:  # the operation's own answer (nothing was committed)
        error = exc
    except Exception as exc:  # as `execute` does
        _undo(world, state, seg)
        value = text = None
        error = internal_error(op.name, exc)
    return _answer(world, op, call_id, jargs, k, now, None, error, value, text)
