"""The call pipeline: `run_call(world, tool, args) -> CallResult`, the one path every tool call
takes (World.call, World.acall, the MCP server, the pytest plugin).

    1. look up the tool                      unknown  -> CallStarted(k=None) + CallFailed
    2. validate the arguments (msgspec)      invalid  -> CallStarted(k=None) + CallFailed
    3. k = valid calls to this tool so far + 1; CallStarted(k=k)
    4. decision = world._plan.decide(op.spec, k)  <- THE FAULT HOOK (None: no fault)
    5. run the operation in a Transaction; commit its events (RecordX with call_id)
    6. CallSucceeded(value) or CallFailed(kind, message); return the CallResult

Rejected calls are logged too (they are part of what the agent did) but change nothing else
and do not count towards k, so a typo never shifts which call a fault script hits.
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

import msgspec

from ._calls import CallResult
from ._errors import InvalidArguments, ToolCallError, UnknownTool
from ._events import CallFailed, CallStarted, CallSucceeded
from ._ops import Transaction, to_json_value
from ._schema import show_value
from ._tables import did_you_mean

if TYPE_CHECKING:
    from ._spec import OperationSpec
    from ._world import World

_encode = msgspec.json.Encoder().encode


class NullPlan:
    """The fault plan of a world without faults: every decision is "no fault"."""

    def __init__(self, rules: Any = None):
        self.rules: dict[str, Any] = dict(rules or {})

    def decide(self, op: OperationSpec, k: int, **context: Any) -> Any:
        return None


def make_plan(world: World, parent: Any = None) -> Any:
    """The fault plan for `world` (a fork passes its parent's plan)."""
    return NullPlan(world.spec.faults)


def _args_json(args: Any) -> dict[str, Any]:
    """Arguments as JSON types, as they go into the log (and come back from it)."""
    try:
        out = msgspec.to_builtins(args, str_keys=True)
    except (TypeError, msgspec.EncodeError, ValueError):
        out = {str(k): show_value(v) for k, v in args.items()} if isinstance(args, dict) else None
    if not isinstance(out, dict):
        return {"<arguments>": show_value(args)}
    return out


def _reject(world: World, call_id: str, tool: str, args: Any, exc: ToolCallError) -> CallResult:
    state = world._state
    jargs = _args_json(args)
    world._emit(
        CallStarted(seq=state.seq, at=state.clock, call_id=call_id, tool=tool, args=jargs, k=None)
    )
    return _failed(world, call_id, tool, jargs, None, state.clock, exc)


def _failed(
    world: World,
    call_id: str,
    tool: str,
    jargs: dict[str, Any],
    k: int | None,
    started: datetime,
    exc: ToolCallError,
) -> CallResult:
    state = world._state
    message = exc.message
    world._emit(
        CallFailed(
            seq=state.seq,
            at=state.clock,
            call_id=call_id,
            tool=tool,
            kind=exc.kind,
            message=message,
        )
    )
    return CallResult(
        call_id=call_id,
        tool=tool,
        args=jargs,
        ok=False,
        text=message,
        error=message,
        error_kind=exc.kind,
        k=k,
        started_at=started,
        finished_at=state.clock,
    )


def run_call(world: World, tool: str, args: Any = None) -> CallResult:
    """Run one tool call against `world`; never raises for anything the agent sent."""
    state = world._state
    call_id = f"c{state.calls + 1}"
    if args is None:
        args = {}
    op = world._ops.get(tool)
    if op is None:
        names = list(world._ops)
        exc = UnknownTool(
            f"unknown tool {tool!r}.{did_you_mean(str(tool), names)} "
            f"Available tools: {', '.join(names)}"
        )
        return _reject(world, call_id, str(tool), args, exc)
    try:
        clean = op.validator.validate(args)
    except InvalidArguments as exc:
        return _reject(world, call_id, tool, args, exc)

    k = state.k.get(tool, 0) + 1
    started = state.clock
    jargs = _args_json(args)
    world._emit(CallStarted(seq=state.seq, at=started, call_id=call_id, tool=tool, args=jargs, k=k))

    # --- fault hook --------------------------------------------------------------------------
    # The fault plan decides from (seed, run, operation, k) alone. KERNEL's NullPlan always
    # answers None; the FAULTS pipeline acts on the decision here (latency, errors, commit...).
    decision = world._plan.decide(op.spec, k)
    del decision

    tx = Transaction(world, call_id)
    try:
        value = to_json_value(op.run(tx, clean))
    except ToolCallError as exc:
        return _failed(world, call_id, tool, jargs, k, started, exc)
    tx.commit()
    text = _encode(value).decode()
    state = world._state
    world._emit(
        CallSucceeded(seq=state.seq, at=state.clock, call_id=call_id, tool=tool, value=value)
    )
    return CallResult(
        call_id=call_id,
        tool=tool,
        args=jargs,
        ok=True,
        text=text,
        value=value,
        k=k,
        started_at=started,
        finished_at=state.clock,
    )


async def _checkpoint() -> None:
    """Yield once to whichever event loop is running, without importing trio or asyncio."""
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_task()
        except RuntimeError:
            pass
        else:
            await trio.lowlevel.checkpoint()
            return
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            await asyncio.sleep(0)


async def arun_call(world: World, tool: str, args: Any = None) -> CallResult:
    """`run_call` for async code: one checkpoint, then the call (works under trio and asyncio)."""
    await _checkpoint()
    return run_call(world, tool, args)
