"""faultbench's exceptions.

One tree, so callers can catch as broadly or as narrowly as they need::

    FaultbenchError
    ├── WorldFileError          a world file is wrong; message starts "path:line:col:"
    │                           (also a ValueError). `.errors` holds every problem found.
    ├── ToolCallError           a tool call was refused or failed; what the agent sees
    │   ├── InvalidArguments    arguments do not match the tool's schema (also a TypeError)
    │   ├── UnknownTool         no tool of that name (also a LookupError)
    │   ├── RecordNotFound      get/update/delete of a missing id (also a LookupError)
    │   ├── HandlerError        a custom handler refused the call (ValueError/LookupError/
    │   │                       PermissionError raised inside it)
    │   ├── HandlerCrashed      a custom handler raised anything else ("internal error")
    │   ├── InternalError       anything else went wrong running the call (a bug)
    │   ├── ClockOverflow       the call's latency or timeout would move the virtual clock
    │   │                       past the year 9999 (datetime's end)
    │   ├── InjectedFault       a fault from the fault plan (timeout, http_500, ...)
    │   ├── Conflict            409: a stale `expected_version`, or an idempotency key reused
    │   │                       with other arguments
    │   └── Unauthorized        401 / 403 in a world with `auth:` (kind says which)
    ├── RecordError             a Table write was refused: bad field or value (also a ValueError)
    ├── FaultsDisabled          fault rules set on a world created with faults=False
    ├── WebhookSignatureError   a webhook delivery's signature does not match (a ValueError)
    └── ReplayError             an event log does not replay (wrong world, gap in seq, ...)
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Sequence

import msgspec

from ._text import did_you_mean, show_repr


class Location(msgspec.Struct, frozen=True):
    """Where a spec element was written (1-based), for error messages after loading."""

    path: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


class FaultbenchError(Exception):
    """Base class of every error faultbench raises on purpose."""


#: what would break a problem's line in two (or make a terminal act), written as escapes: a
#: name holding a newline is still one problem on one line
_ONE_LINE = {
    c: repr(chr(c))[1:-1]
    for c in (*range(0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029)
    if c != 0x09  # a tab is harmless
}


class SourceError(msgspec.Struct, frozen=True):
    """One problem in a world file, at a 1-based line and column."""

    path: str
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.message}".translate(_ONE_LINE)


class WorldFileError(FaultbenchError, ValueError):
    """A world file could not be loaded. `str(err)` lists every problem, one per line,
    each starting ``path:line:col:``; `err.errors` holds them as `SourceError`s."""

    def __init__(self, errors: list[SourceError] | SourceError):
        if isinstance(errors, SourceError):
            errors = [errors]
        self.errors: list[SourceError] = list(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


class ToolCallError(FaultbenchError):
    """A tool call the agent made failed. `str(err)` is exactly what the agent sees."""

    #: short machine-readable kind, e.g. "invalid_arguments", "not_found", "timeout"
    kind: str = "error"
    #: for internal errors: where the bug is (see `format_traceback`); never sent to an agent
    traceback: str | None = None
    #: the fault kind charged to the call that raised this (`_incall.py`), if any
    fault: str | None = None

    def __init__(self, message: str, *, kind: str | None = None):
        super().__init__(message)
        if kind is not None:
            self.kind = kind

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidArguments(ToolCallError, TypeError):
    kind = "invalid_arguments"


class UnknownTool(ToolCallError, LookupError):
    kind = "unknown_tool"


class RecordNotFound(ToolCallError, LookupError):
    kind = "not_found"

    def __init__(
        self,
        message: str,
        *,
        kind: str | None = None,
        table: str | None = None,
        id: str | None = None,
    ):
        super().__init__(message, kind=kind)
        #: the record kind and id that were missing, when a Table raised it
        self.table = table
        self.id = id


def not_found_text(where: str, record: str | None, target_id: str | None) -> str:
    """What the agent reads when a tool finds no record: `where` is "service.operation".
    One text for a record that is really missing and for an injected `not_found` fault, so an
    agent cannot tell a fake 404 from a real one (which is the point of injecting it)."""
    what = record or "resource"
    if target_id is not None:
        return f"404 Not Found: {where}: no {what} with id {show_repr(target_id)}"
    return f"404 Not Found: {where}: the requested {what} was not found"


def unknown_tool_text(tool: object, names: Sequence[str]) -> str:
    """What the agent reads when it calls a tool that does not exist: its name (cut short, it
    may be anything), the closest real one, and every tool it could call instead."""
    name = tool if isinstance(tool, str) else str(tool)
    hint = did_you_mean(name, names, sentence=True)
    return f"unknown tool {show_repr(name, 100)}.{hint} Available tools: {', '.join(names)}"


def format_traceback(exc: BaseException, limit: int = 20) -> str:
    """`exc`'s traceback as Python prints it, with file names only (no directories), so the
    text (which goes into the event log) is the same on every machine. At most `limit`
    innermost frames."""
    frames = traceback.extract_tb(exc.__traceback__)[-limit:]
    lines = ["Traceback (most recent call last):\n"]
    for f in frames:
        lines.append(f'  File "{os.path.basename(f.filename)}", line {f.lineno}, in {f.name}\n')
        if f.line:
            lines.append(f"    {f.line.strip()}\n")
    lines.extend(traceback.format_exception_only(type(exc), exc))
    return "".join(lines).rstrip("\n")


class HandlerError(ToolCallError):
    kind = "handler_error"


class HandlerCrashed(ToolCallError):
    kind = "internal_error"


class InternalError(ToolCallError):
    """A call failed for a reason that is nobody's fault but faultbench's (or a bug in what it
    ran): the agent gets an `internal_error` answer and the call's writes are undone."""

    kind = "internal_error"


class ClockOverflow(ToolCallError, ValueError):
    """A call whose latency or timeout would take the virtual clock past `datetime.max`.
    Refused before it starts: logged as a rejected call (`CallStarted(k=None)`, `CallFailed`),
    like bad arguments, so nothing else changes and it does not count towards `k`."""

    kind = "clock_overflow"


class InjectedFault(ToolCallError):
    kind = "fault"


class Conflict(ToolCallError):
    """409 Conflict: the request contradicts the record's current version, or reuses an
    idempotency key with other arguments (kind "idempotency_conflict")."""

    kind = "conflict"


class Unauthorized(ToolCallError):
    """401 (kind "unauthorized") or 403 (kind "insufficient_scope") in a world with `auth:`."""

    kind = "unauthorized"


class RecordError(FaultbenchError, ValueError):
    """A Table write or query was refused: unknown field, wrong type, bad enum value,
    duplicate id. Inside a custom handler it becomes a clean tool error (a ValueError)."""


class FaultsDisabled(FaultbenchError, RuntimeError):
    """`set_faults` was given rules for a world created with `faults=False`, where no rule
    ever applies."""


class WebhookSignatureError(FaultbenchError, ValueError):
    """A webhook delivery's signature header does not match its body under the secret, or
    is malformed (`verify_webhook`)."""


class ReplayError(FaultbenchError):
    """An event log could not be replayed into a world."""

    #: the seq of the first event that does not fit (None when no one event is to blame)
    seq: int | None = None
