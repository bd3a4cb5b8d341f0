"""Idempotency keys: an operation's `idempotency: {key: idempotency_key, window: 24h}`.

The key is an optional argument of the tool. A write that carries one records it with the
digest of its other arguments and its answer (`IdempotencyKeyRecorded`, an event of the
call's transaction, so it commits exactly when the write does: also when a `timeout` fault
commits the write and loses the answer). Within the window (virtual time, counted from the
recording) a call with the same key:

- and the same arguments gets the first answer and writes nothing (`IdempotentRetryAnswered`);
- and other arguments gets a 409 naming the key, as Stripe answers, and writes nothing.

Keys are per tool. Only answers are recorded: a write the operation refused (a 404, a bad
value) records nothing, so a corrected retry with the same key runs. After the window the
key is free again and the next call with it runs and records it anew.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from hashlib import blake2b
from typing import TYPE_CHECKING, Any

import msgspec

from .._errors import Conflict
from .._store import IdempotencyKeyRecorded, IdempotentRetryAnswered

if TYPE_CHECKING:
    from .._spec import IdempotencySpec

Runner = Callable[[Any, dict[str, Any]], Any]

_canon = msgspec.json.Encoder(order="deterministic").encode


def args_digest(args: dict[str, Any]) -> str:
    """The digest a key is recorded with: canonical JSON of the arguments, blake2b."""
    return blake2b(_canon(msgspec.to_builtins(args)), digest_size=16).hexdigest()


def idempotent(tool: str, spec: IdempotencySpec, run: Runner, *, keep_key: bool) -> Runner:
    """`run` behind the operation's idempotency key. `keep_key`: the argument is also one
    of the runner's own (a custom handler that declares it), so it is passed on."""
    name = spec.key
    window = timedelta(seconds=spec.window_s)

    def run_idempotent(tx: Any, args: dict[str, Any]) -> Any:
        key = args.get(name) if keep_key else args.pop(name, None)
        if key is None:
            return run(tx, args)
        rest = {k: v for k, v in args.items() if k != name}
        digest = args_digest(rest)
        state = tx.state
        entry = state.keys.get(f"{tool}\x00{key}")
        call_id = tx.call_id or ""
        if entry is not None and state.clock - entry.at < window:
            if entry.digest != digest:
                raise Conflict(
                    f"409 Conflict: idempotency key {key!r} was already used with other "
                    f"arguments by {tool} (call {entry.call_id}). Keys for idempotent requests "
                    "can only be used with the same parameters they were first used with: "
                    "send those again, or a new key for a new request",
                    kind="idempotency_conflict",
                )
            tx.emit(
                IdempotentRetryAnswered(
                    seq=state.seq, at=state.clock, call_id=call_id, tool=tool, key=key,
                    first_call_id=entry.call_id,
                )
            )  # fmt: skip
            return msgspec.to_builtins(entry.value)
        value = run(tx, args)
        state = tx.state
        tx.emit(
            IdempotencyKeyRecorded(
                seq=state.seq, at=state.clock, call_id=call_id, tool=tool, key=key,
                digest=digest, value=msgspec.to_builtins(value),
            )
        )  # fmt: skip
        return value

    return run_idempotent
