"""Events: every change to a world is one of these, appended to its log and folded into its
state by `apply` (see `_reducer.py`).

Rules that keep old logs readable forever:
- events are facts, named in the past tense, frozen;
- a new field always has a default (msgspec decodes old logs without it);
- the tag (the `type` key in JSON) is the class name: never rename a class;
- a field the class does not have is an error (a log edited by hand, or written by a newer
  faultbench), not something to drop silently.

Times are virtual (the world's clock), timezone-aware UTC datetimes.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import msgspec


class Event(
    msgspec.Struct, frozen=True, tag_field="type", tag=True, gc=False, forbid_unknown_fields=True
):
    seq: int  # position in the log, 0-based, gap-free
    at: datetime  # virtual time at which the fact happened


# --- world lifecycle -------------------------------------------------------------------------


class WorldCreated(Event, frozen=True):
    """Always event 0. Enough to find the world again and rebuild its genesis."""

    world: str
    seed: int
    run: int = 0
    digest: str = ""  # sha256 of the world file the log was made with
    path: str | None = None
    faults: bool = True  # whether the fault plan was enabled
    #: the tools defined in code the world ran with (`_spec/_code.py`): name -> fingerprint
    #: of the operation; a replay needs the same ones
    tools: dict[str, str] = {}


class WorldForked(Event, frozen=True):
    """First event a fork appends: the log before it is the parent's, shared."""

    parent_seq: int  # seq of the parent's last event at the fork point
    run: int = 0
    faults: bool = True


class FaultsChanged(Event, frozen=True):
    """The fault rules in force changed at run time (`World.set_faults`, the control API,
    `serve --no-faults`, the pytest `faults` marker), or kept across a restore or a reset.
    `rules` is the new `faults:` block as plain JSON objects (what `parse_faults` reads), or
    None for the world file's own; it replaces the rules before it entirely."""

    rules: dict[str, Any] | None = None


class LogRewound(Event, frozen=True):
    """Not a change to a world: a line of an append-only log file (`serve --events`) saying
    that the log went back to its first `seq` events (a reset or a restore), so the events
    after this line replace those from `seq` on. `decode_events` applies it; it never
    reaches a world's log or `apply`. `at` is the virtual time after the rewind."""


# --- records -----------------------------------------------------------------------------------


class RecordCreated(Event, frozen=True):
    table: str
    id: str
    fields: dict[str, Any]  # the whole record, `id` included, in field order
    call_id: str | None = None  # None for seed data and direct Table writes


class RecordUpdated(Event, frozen=True):
    table: str
    id: str
    changes: dict[str, Any]  # new values of the fields that changed
    old: dict[str, Any] = {}  # their values before, for diffs and stale reads
    call_id: str | None = None


class RecordDeleted(Event, frozen=True):
    table: str
    id: str
    old: dict[str, Any] = {}  # the record as it was
    call_id: str | None = None


# --- time ----------------------------------------------------------------------------------


class ClockAdvanced(Event, frozen=True):
    """The virtual clock moved from `at` to `to` (latency, a timeout, or a test)."""

    to: datetime
    call_id: str | None = None


# --- effects that happen later (`_later.py`) ---------------------------------------------------


class EffectScheduled(Event, frozen=True):
    """A change to a record, due at `due` on the virtual clock: an operation's `then:`
    (its duration and branch already drawn), or `world.schedule(...)`. It stays pending in
    the state until the clock reaches `due`; then `EffectFired` and the record's change."""

    effect_id: str  # "e1", "e2", ...: the world's effects in scheduling order
    due: datetime
    table: str
    id: str
    changes: dict[str, Any]  # the fields to set, as the record stores them
    call_id: str | None = None  # the call that scheduled it; None for world.schedule
    #: for a `then:`, the branch drawn: "then" or "or"; "" for world.schedule
    branch: str = ""


class EffectFired(Event, frozen=True):
    """A scheduled effect came due. The record events it causes follow it, without a call
    id (no call made them); `outcome` is "applied", or "gone" when the record had been
    deleted in the meantime (nothing changes)."""

    effect_id: str
    table: str
    id: str
    outcome: str = "applied"


# --- calls -----------------------------------------------------------------------------------


class CallStarted(Event, frozen=True):
    call_id: str
    tool: str
    args: dict[str, Any]
    #: this call's 1-based index among valid calls to `tool` (what fault scripts count);
    #: None for calls rejected before reaching the operation (unknown tool, bad arguments)
    k: int | None = None


class FaultInjected(Event, frozen=True):
    call_id: str
    tool: str
    kind: str  # "timeout", "http_500", "rate_limit", ...
    detail: dict[str, Any] = {}  # e.g. {"timeout_s": 30, "commit": true}


class CallSucceeded(Event, frozen=True):
    call_id: str
    tool: str
    value: Any = None  # what the agent was answered


class CallFailed(Event, frozen=True):
    call_id: str
    tool: str
    kind: str  # ToolCallError.kind: "invalid_arguments", "not_found", "timeout", ...
    message: str = ""  # exactly what the agent saw
    #: internal errors only: where the bug is, file names without directories (never sent
    #: to the agent; `world.trace` and the server log show it)
    traceback: str | None = None


# --- idempotency keys and access tokens (issue 21) --------------------------------------------


class IdempotencyKeyRecorded(Event, frozen=True):
    """A write with an idempotency key ran: a retry with the same key and arguments within
    the operation's window is answered `value` without running again (`_idempotency.py`)."""

    call_id: str
    tool: str
    key: str
    digest: str  # of the call's arguments, the key left out (canonical JSON, blake2b)
    value: Any = None  # what the write answered


class IdempotentRetryAnswered(Event, frozen=True):
    """A call repeated a recorded key with the same arguments: it got the first answer and
    wrote nothing."""

    call_id: str
    tool: str
    key: str
    first_call_id: str  # the call that recorded the key


class TokenIssued(Event, frozen=True):
    """An access token for `principal` was minted (`World.issue_token`, the control API,
    `build_server(world, principal=)`), valid until `expires_at` (virtual time)."""

    token: str
    principal: str
    expires_at: datetime
    call_id: str | None = None


class TokenRefreshed(Event, frozen=True):
    """The `refresh_token` tool renewed a token that was not revoked."""

    token: str
    expires_at: datetime
    call_id: str | None = None


class TokenExpired(Event, frozen=True):
    """A `token_expired` fault ended a token's life early (at `at`)."""

    token: str
    call_id: str | None = None


class TokenRevoked(Event, frozen=True):
    """A token was revoked (the `revoked` fault): no call and no refresh accepts it again."""

    token: str
    call_id: str | None = None


class AuthChecked(Event, frozen=True):
    """The auth decision for a call in a world with `auth:`: `outcome` is "allowed",
    "missing_token", "unknown_token", "expired", "revoked" or "insufficient_scope"."""

    call_id: str
    tool: str
    outcome: str
    principal: str | None = None
    scope: str | None = None  # the scope missing, for insufficient_scope


# --- the agent's model --------------------------------------------------------------------------


class ModelCalled(Event, frozen=True):
    """The agent called its model for the k-th time and the fault plan's `model:` rule decided
    what happens to the call (`kind`: a model fault kind, or None for latency only). A
    latency or a timeout follows as a `ClockAdvanced` with `call_id` `model#k`."""

    k: int
    kind: str | None = None
    model: str = ""  # the model's name as the framework gives it
    detail: dict[str, Any] = {}  # e.g. {"source": "random", "retry_after_s": 2.0}


class ModelUsed(Event, frozen=True):
    """What the k-th model call used, as the framework's usage object reports it."""

    k: int
    input_tokens: int = 0
    output_tokens: int = 0
    model: str = ""


# --- webhook deliveries ------------------------------------------------------------------


class WebhookAttempted(Event, frozen=True):
    """One attempt to deliver an event of the feed to the webhook endpoint (`webhooks:`),
    made by a shell and reported back (`World.webhook_attempted`). `delivery` is `dlv_<k>`
    for the k-th event delivered (`dlv_<k>_2` for the copy a `duplicate_delivery` adds);
    `outcome` is "succeeded" (a 2xx), "failed" (another status, a timeout, a refused
    connection: `status` and `error` say which) or "dropped" (a `dropped` fault: nothing was
    sent). After a failure with retries left, `retry_at` is when the next attempt is due."""

    delivery: str
    event: str  # the feed event's id, evt_<seq>
    attempt: int  # 1 for the first
    outcome: str
    status: int | None = None  # the endpoint's HTTP status, if it answered
    error: str = ""  # why the attempt failed without an answer ("timed out after 10s", ...)
    retry_at: datetime | None = None


AnyEvent = (
    WorldCreated
    | WorldForked
    | FaultsChanged
    | RecordCreated
    | RecordUpdated
    | RecordDeleted
    | ClockAdvanced
    | EffectScheduled
    | EffectFired
    | CallStarted
    | FaultInjected
    | CallSucceeded
    | CallFailed
    | ModelCalled
    | ModelUsed
    | LogRewound
    | IdempotencyKeyRecorded
    | IdempotentRetryAnswered
    | TokenIssued
    | TokenRefreshed
    | TokenExpired
    | TokenRevoked
    | AuthChecked
    | WebhookAttempted
)

# `order="deterministic"` sorts dict keys, so the bytes never depend on insertion order.
_encoder = msgspec.json.Encoder(order="deterministic")
_decoder = msgspec.json.Decoder(AnyEvent)


def encode_events(events: Iterable[Event]) -> bytes:
    """Events as JSON Lines: deterministic bytes, one event per line, newline-terminated."""
    out = bytearray()
    for ev in events:
        _encoder.encode_into(ev, out, -1)
        out += b"\n"
    return bytes(out)


def decode_events(data: bytes | str | Iterable[bytes | str]) -> list[Event]:
    """Parse JSON Lines (a whole buffer or an iterable of lines) back into events.
    Blank lines are skipped; a malformed line raises `msgspec.DecodeError` naming its line.
    """
    if isinstance(data, str):
        data = data.encode()
    lines = data.splitlines() if isinstance(data, bytes) else data
    events: list[Event] = []
    for lineno, line in enumerate(lines, 1):
        if isinstance(line, str):
            line = line.encode()
        if not line.strip():
            continue
        try:
            ev = _decoder.decode(line)
        except msgspec.DecodeError as exc:
            raise msgspec.DecodeError(f"event log line {lineno}: {exc}") from None
        except RecursionError:  # nested deeper than the stack allows
            raise msgspec.DecodeError(f"event log line {lineno}: nested too deeply") from None
        except UnicodeDecodeError as exc:  # msgspec raises it for some invalid bytes
            raise msgspec.DecodeError(
                f"event log line {lineno}: not UTF-8 (byte 0x{exc.object[exc.start]:02x})"
            ) from None
        add_log_line(events, ev, lineno)
    return events


def add_log_line(events: list[Event], ev: Event, lineno: int) -> None:
    """Add one decoded line to `events`: an event is appended, a `LogRewound` cuts back."""
    if type(ev) is not LogRewound:
        events.append(ev)
    elif 0 < ev.seq <= len(events):
        del events[ev.seq :]
    else:
        raise msgspec.DecodeError(
            f"event log line {lineno}: LogRewound to seq {ev.seq}, but the log before it has "
            f"{len(events)} events; expected a seq from 1 to {len(events)}"
        )
