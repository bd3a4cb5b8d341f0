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

Deciding, not mutating: every stage reads a `Draft` (the world's state plus the events the
call, or the batch, has decided so far) and emits into it; nothing here assigns a world's
state. When the call or batch is answered, its draft goes to the world's `Book` in one
`commit`. A call that breaks rolls its draft back to where the call began.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import msgspec

from .._errors import (
    ClockOverflow,
    InternalError,
    InvalidArguments,
    ToolCallError,
    UnknownTool,
    format_traceback,
    unknown_tool_text,
)
from .._faults import (
    BY_ID,
    FaultDecision,
    FaultPlan,
    Window,
    created_field,
    kind,
)
from .._store import (
    CallFailed,
    CallStarted,
    CallSucceeded,
    Draft,
    fire_due,
)
from .._text import loggable, show_value
from ._auth import authorize, checked, refusal, run_refresh
from ._effects import EFFECTS
from ._flight import Flight, advance_to, log_fault, stale_reach
from ._ops import CompiledOp, Transaction
from ._results import CallResult
from ._surface import Admitted, surface_op

if TYPE_CHECKING:
    from .._faults import FaultRule
    from .._spec import WorldSpec
    from .._store import Book, Settings, State

_encode = msgspec.json.Encoder().encode
_canon = msgspec.json.Encoder(order="deterministic").encode
#: A deep copy of JSON-typed data (new dicts and lists, same scalars): the log and each
#: CallResult hold their own, so changing `result.value` can never rewrite history.
_copy = msgspec.to_builtins
_MAX_INTERNAL = 500  # characters of an unexpected exception's text passed on to the agent


# ---------------------------------------------------------------------------------------------
# The plan of a world
# ---------------------------------------------------------------------------------------------


class Pipeline:
    """Runs the calls of one world: its spec, compiled operations and seed, the `Book` that
    owns its state, and the fault plan, derived from the state's `settings` (the run index,
    the fault switch and the rules in force are all in the log)."""

    __slots__ = ("_plan", "_plan_for", "book", "genesis_seq", "ops", "seed", "spec")

    def __init__(
        self,
        spec: WorldSpec,
        ops: dict[str, CompiledOp],
        seed: int,
        book: Book,
        genesis_seq: int | None = None,
    ):
        self.spec = spec
        self.ops = ops
        self.seed = seed
        self.book = book
        #: events before this seq are the world's genesis (None: find it in the log)
        self.genesis_seq = genesis_seq
        self._plan: FaultPlan | None = None
        self._plan_for: Settings | None = None

    def plan(self, settings: Settings | None = None) -> FaultPlan:
        """The fault plan under `settings` (default: the world's now). Built once per
        settings object: they change only with WorldCreated, WorldForked and FaultsChanged."""
        if settings is None:
            settings = self.book.state.settings
        if settings is not self._plan_for or self._plan is None:
            rules = (
                self.spec.faults
                if settings.rules is None
                else parse_rules(self.spec, settings.rules, source="<FaultsChanged>")
            )
            self.use_plan(settings, rules)
        assert self._plan is not None
        return self._plan

    def use_plan(self, settings: Settings, rules: Mapping[str, FaultRule]) -> FaultPlan:
        """Plan under `settings` from `rules` already parsed (spares parsing them again)."""
        self._plan = FaultPlan(rules, seed=self.seed, run=settings.run, enabled=settings.faults_on)
        self._plan_for = settings
        reach = stale_reach(rules)
        if reach > self.book.reach_s:  # what a window must keep (`Book.reach_s`)
            self.book.reach_s = reach
        rate = max((r.rate_limit.per_seconds for r in rules.values() if r.rate_limit), default=0.0)
        if rate > self.book.rate_reach_s:  # and of the rate windows (`Book.rate_reach_s`)
            self.book.rate_reach_s = rate
        return self._plan

    def transaction(self, d: Draft, state: State | None = None) -> Transaction:
        return Transaction(d, self.spec, self.seed, self.book, state)

    def call(self, tool: str, args: Any = None, token: str | None = None) -> CallResult:
        """Run one tool call; never raises for anything the agent sent. Atomic: the book's
        lock is held from deciding to committing (see `Book.lock`); a handler of a call
        running now (`Book.busy`) is refused. `token`: the caller's access token, in a world
        with `auth:` (see `_auth.py`). Lock by `acquire`/`release`, not `with`: half the
        instructions on CPython 3.11, on a path of ~65k per plain call."""
        book = self.book
        if book.busy is not None:  # a handler runs: if it is this world's own, refuse
            book.refuse_own_handler(f"world.call({tool!r})")
        lock = book.lock
        lock.acquire()
        try:
            if book.busy is not None:
                raise book.busy_error(f"world.call({tool!r})")
            d = Draft(book.state)
            fire_due(d, d.state.clock)  # effects due by now come before the call
            op = self.ops.get(tool)
            plan = self.plan(d.state.settings)
            if (
                op is not None
                and not plan.may_fault(op.spec)
                and self.spec.auth is None
                and not d.state.surface
            ):
                result = _run_plain(self, d, op, tool, args)
            else:
                result = _run_one(self, d, plan, tool, args, token)
            book.commit_locked(d)
        finally:
            lock.release()
        return result

    async def acall(self, tool: str, args: Any = None, token: str | None = None) -> CallResult:
        """`call` from async code: the call joins the calls in flight with it on this world,
        and a batch of them runs as `call_together` (`_schedule.join`; one alone is `call`)."""
        from ._schedule import join  # its event-loop probes load with the first async call

        return await join(self, tool, args, token)

    def call_together(self, calls: Sequence[tuple[Any, ...]]) -> list[CallResult]:
        """Run `calls` (tool, args) or (tool, args, token) as calls made at the same moment;
        see `run_batch`."""
        order = canonical_order([(c[0], c[1]) for c in calls])
        book = self.book
        with book.lock:
            if book.busy is not None:
                raise book.busy_error("world.call_together()")
            d = Draft(book.state)
            fire_due(d, d.state.clock)
            ordered = run_batch(self, d, self.plan(), [calls[i] for i in order])
            book.commit_locked(d)
        results: list[Any] = [None] * len(calls)
        for i, result in zip(order, ordered):
            results[i] = result
        return results


def parse_rules(
    spec: WorldSpec, rules: Any, *, source: str = "<set_faults>"
) -> dict[str, FaultRule]:
    """Fault rules from a `faults:` block (YAML text or plain objects), or parsed FaultRules
    as they are; raises WorldFileError."""
    from .._faults import FaultRule

    if isinstance(rules, Mapping) and all(isinstance(v, FaultRule) for v in rules.values()):
        return dict(rules)
    from .._read import parse_faults

    return parse_faults(rules, spec, source=source)


# ---------------------------------------------------------------------------------------------
# Stage 1: admit
# ---------------------------------------------------------------------------------------------


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


def admit(
    cx: Pipeline, d: Draft, plan: FaultPlan, tool: str, args: Any, token: str | None = None
) -> Flight | CallResult:
    """Log the call's start and decide its fault. A rejected call is finished on the spot."""
    state = d.state
    call_id = f"c{state.calls + 1}"
    if args is None:
        args = {}
    op = cx.ops.get(tool)
    shown: Admitted | None = None
    if state.surface:  # the tool list changed during the run (`_surface.py`)
        found = surface_op(cx.spec, cx.ops, state.surface, tool)
        if isinstance(found, UnknownTool):
            return _reject(d, call_id, str(tool), args, found)
        shown, op = found, found.op
    if op is None:
        exc: ToolCallError = UnknownTool(unknown_tool_text(tool, list(cx.ops)))
        return _reject(d, call_id, str(tool), args, exc)
    principal = None
    if cx.spec.auth is not None:
        outcome, principal, scope = authorize(cx.spec, state, op.spec, token)
        if outcome != "allowed":
            refused = refusal(op.spec, outcome, principal, scope)
            return _reject(d, call_id, tool, args, refused, (outcome, principal, scope))
    try:
        clean = op.validator.validate(args) if shown is None else shown.validate(args)
    except InvalidArguments as exc:
        return _reject(d, call_id, tool, args, exc)

    flight = Flight(call_id, op, clean, args_json(args))
    flight.principal, flight.token = principal, token
    flight.k = k = state.k.get(tool, 0) + 1
    flight.started = now = state.clock
    # Decided before this call is in the log, so its own start is not in its rate window.
    faulty = plan.may_fault(op.spec) and op.run is not run_refresh  # a refresh never fails
    decision = _decide(cx, d, plan, op, k, clean, now) if faulty else None
    flight.decision = decision
    if decision is not None:
        # Checked before anything is logged: a clock past datetime.max is a refused call.
        try:
            flight.exec_at = now + timedelta(seconds=decision.latency_s)
            flight.end_at = flight.exec_at + timedelta(seconds=decision.timeout_s)
        except OverflowError:
            return _reject(d, call_id, tool, args, _clock_overflow(tool, now, decision))
    d.emit(CallStarted(seq=state.seq, at=now, call_id=call_id, tool=tool, args=flight.jargs, k=k))
    if cx.spec.auth is not None:
        checked(d, call_id, tool, "allowed", principal, None)
    if decision is None:
        flight.exec_at = flight.end_at = now
        return flight
    # a malformed answer is logged when its broken text exists (see _malformed), a feed fault
    # when it knows the events it touched (see _feed), an injection or a lie with what it placed
    if decision.kind is not None and kind(decision.kind).effect not in _LOGGED_LATE:
        log_fault(d, flight, decision.detail())
    return flight


#: effects whose fault is logged by their executor, with the text it made
_LOGGED_LATE = frozenset({"malformed", "feed", "inject", "rewrite", "surface", "structured"})


def _clock_overflow(tool: str, now: datetime, decision: FaultDecision) -> ClockOverflow:
    return ClockOverflow(
        f"503 Service Unavailable: {tool} cannot run: its latency "
        f"({decision.latency_s:g}s) and timeout ({decision.timeout_s:g}s) would move the "
        f"virtual clock past the year 9999 (it is {now.isoformat()}). Expected a clock at "
        "least that far from datetime.max; restore an earlier snapshot or start the clock "
        "earlier."
    )


def _decide(
    cx: Pipeline,
    d: Draft,
    plan: FaultPlan,
    op: CompiledOp,
    k: int,
    args: dict[str, Any],
    now: datetime,
) -> FaultDecision | None:
    rule = plan.rule_for(op.spec)
    recent = Window(d.state.admitted.get(op.name)) if rule.rate_limit is not None else ()
    record_time = None
    rspec = cx.spec.records.get(op.record) if op.record else None
    target = args.get("id") if op.kind in BY_ID else None
    if rule.not_found_if_newer_than_s is not None and rspec is not None and target is not None:
        fname = created_field(rspec)
        data = d.state.tables[rspec.name].get(target)
        if fname is not None and data is not None:
            record_time = _as_datetime(data.get(fname))
    return plan.decide(
        op.spec,
        k,
        now=now,
        recent=recent,
        record_time=record_time,
        record=rspec,
        target_id=target,
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


def _reject(
    d: Draft,
    call_id: str,
    tool: str,
    args: Any,
    exc: ToolCallError,
    auth: tuple[str, str | None, str | None] | None = None,
) -> CallResult:
    state = d.state
    tool, jargs = loggable(tool), loggable(args_json(args))  # rejected: may not be UTF-8
    d.emit(
        CallStarted(seq=state.seq, at=state.clock, call_id=call_id, tool=tool, args=jargs, k=None)
    )
    if auth is not None:  # refused by auth: the decision is an event of its own
        checked(d, call_id, tool, *auth)
    return _failed(d, call_id, tool, jargs, exc, started=state.clock)


def _failed(
    d: Draft,
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
    state = d.state
    fault = fault or exc.fault  # charged from inside the tool (`_incall.py`)
    # An agent repeats its mistakes: the same message over and over, held once in the log
    message = sys.intern(exc.message)
    d.emit(
        CallFailed(
            seq=state.seq,
            at=state.clock,
            call_id=call_id,
            tool=tool,
            kind=exc.kind,
            message=message,
            traceback=exc.traceback,
        )
    )
    return CallResult(
        call_id=call_id,
        tool=tool,
        args=_copy(jargs),
        ok=False,
        text=message,
        error=message,
        error_kind=exc.kind,
        fault=fault,
        k=k,
        started_at=started,
        finished_at=state.clock,
        traceback=exc.traceback,
    )


# ---------------------------------------------------------------------------------------------
# Stage 2: execute
# ---------------------------------------------------------------------------------------------


def execute(cx: Pipeline, d: Draft, flight: Flight) -> None:
    """Run the operation as the decision says. The clock is at `flight.exec_at`.

    Never raises: a tool error is the call's answer, and so is anything else (a bug in
    faultbench or in what it runs), as an `internal_error` after undoing whatever the call
    had committed, so the log never holds a call that started and never finished.
    """
    decision = flight.decision
    if decision is None or decision.kind is None:  # no fault: the operation once, as asked
        flight.value, flight.text, flight.error = run_once(
            cx, d, flight.op, flight.call_id, dict(flight.args), flight.principal, flight.token
        )
        return
    mark = d.mark()
    try:
        _execute(cx, d, flight, decision)
        if flight.error is None and flight.text is None:
            flight.text = _encode(flight.value).decode()
    except Exception as exc:
        d.rollback(mark)
        flight.value = flight.text = None
        flight.error = internal_error(flight.op.name, exc)


def internal_error(tool: str, exc: BaseException) -> InternalError:
    detail = f"{type(exc).__name__}: {exc}"
    if len(detail) > _MAX_INTERNAL:
        detail = detail[: _MAX_INTERNAL - 1] + "…"
    err = InternalError(f"internal error in {tool}: {detail}")
    err.__cause__ = exc
    err.traceback = format_traceback(exc)
    return err


def _execute(cx: Pipeline, d: Draft, flight: Flight, decision: FaultDecision) -> None:
    assert decision.kind is not None
    try:
        EFFECTS[kind(decision.kind).effect](cx, d, flight, decision)
    except ToolCallError as exc:
        flight.error = exc


def run_once(
    cx: Pipeline,
    d: Draft,
    op: CompiledOp,
    call_id: str,
    args: dict[str, Any],
    principal: str | None = None,
    token: str | None = None,
) -> tuple[Any, str | None, ToolCallError | None]:
    """Execute a call no fault touches (`execute`'s plain case, and `_run_plain`'s): the
    operation once, committed, as (value, text, error). A tool error is the answer with
    nothing committed; anything else undoes what the call wrote and is an `internal_error`.
    `args` is a new dict, the runner's to change."""
    mark = d.mark()
    d.call_id = call_id
    try:
        tx = cx.transaction(d)
        if principal is not None or token is not None:
            tx.principal, tx.token = principal, token
        value = op.run(tx, args)
        tx.commit()
        return value, _encode(value).decode(), None
    except ToolCallError as exc:  # the operation's own answer (nothing was committed)
        return None, None, exc
    except Exception as exc:
        d.rollback(mark)
        return None, None, internal_error(op.name, exc)


# ---------------------------------------------------------------------------------------------
# Stage 3: finish
# ---------------------------------------------------------------------------------------------


def finish(d: Draft, flight: Flight) -> CallResult:
    """Log the answer (the clock is at `flight.end_at`) and build what the agent gets."""
    decision = flight.decision
    return _answer(
        d,
        flight.op,
        flight.call_id,
        flight.jargs,
        flight.k,
        flight.started,
        decision.kind if decision is not None else None,
        flight.error,
        flight.value,
        flight.text,
        flight.structured,
    )


def _answer(
    d: Draft,
    op: CompiledOp,
    call_id: str,
    jargs: dict[str, Any],
    k: int,
    started: datetime,
    fault: str | None,
    exc: ToolCallError | None,
    value: Any,
    text: str | None,
    structured: Any = None,
) -> CallResult:
    state = d.state
    tool = op.name
    if exc is not None:
        return _failed(d, call_id, tool, jargs, exc, started=started, k=k, fault=fault)
    d.emit(CallSucceeded(seq=state.seq, at=state.clock, call_id=call_id, tool=tool, value=value))
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
        structured=structured,
    )


# ---------------------------------------------------------------------------------------------
# Running a batch
# ---------------------------------------------------------------------------------------------


def run_batch(
    cx: Pipeline, d: Draft, plan: FaultPlan, calls: Sequence[tuple[Any, ...]]
) -> list[CallResult]:
    """Run `calls` (tool, args[, token]) as concurrent calls, in the order given (the caller
    puts them in canonical order, see `canonical_order`); results in that order."""
    results: list[Any] = [None] * len(calls)
    flights: list[tuple[int, Flight]] = []
    for i, call in enumerate(calls):
        tool, args = call[0], call[1]
        admitted = admit(cx, d, plan, tool, args, call[2] if len(call) > 2 else None)
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
        advance_to(d, at, f.call_id)
        if stage == 0:
            execute(cx, d, f)
        else:
            results[i] = finish(d, f)
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


def _run_one(
    cx: Pipeline, d: Draft, plan: FaultPlan, tool: str, args: Any, token: str | None = None
) -> CallResult:
    """One call, the three stages back to back."""
    admitted = admit(cx, d, plan, tool, args, token)
    if isinstance(admitted, CallResult):
        return admitted
    if admitted.exec_at != admitted.started:
        advance_to(d, admitted.exec_at, admitted.call_id)
    execute(cx, d, admitted)
    if admitted.end_at != admitted.exec_at:
        advance_to(d, admitted.end_at, admitted.call_id)
    return finish(d, admitted)


def _run_plain(cx: Pipeline, d: Draft, op: CompiledOp, tool: str, args: Any) -> CallResult:
    """`_run_one` for a call the fault plan leaves alone, the common case: admission without
    a decision, a Flight or a clock move, then the stages' own `run_once` and `_answer`. Same
    events, same result."""
    state = d.state
    call_id = f"c{state.calls + 1}"
    if args is None:
        args = {}
    try:
        clean = op.validator.validate(args)
    except InvalidArguments as exc:
        return _reject(d, call_id, tool, args, exc)
    jargs = args_json(args)
    k = state.k.get(tool, 0) + 1
    now = state.clock
    d.emit(CallStarted(seq=state.seq, at=now, call_id=call_id, tool=tool, args=jargs, k=k))
    value, text, error = run_once(cx, d, op, call_id, clean)
    return _answer(d, op, call_id, jargs, k, now, None, error, value, text)
