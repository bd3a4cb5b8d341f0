"""What a tool call returns, and what a tool looks like to an agent."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec


class CallResult(msgspec.Struct, frozen=True):
    """The outcome of one `World.call`: exactly what the agent sees, plus when and why.

    `text` is the literal text the agent reads: the JSON of `value` on success, the error
    message on failure, or deliberately broken text under a `malformed_json` fault. Shells
    send `text` as is; they never re-render a result.
    """

    call_id: str
    tool: str
    args: dict[str, Any]
    ok: bool
    text: str
    value: Any = None  # success: a record dict, a list of them, or a handler's return value
    error: str | None = None  # failure: the message (same as `text`)
    error_kind: str | None = None  # "invalid_arguments", "not_found", "timeout", "http_500", ...
    fault: str | None = None  # the injected fault kind, also on successes (stale_read, ...)
    k: int | None = None  # 1-based index among valid calls to this tool; None if rejected early
    started_at: datetime | None = None  # virtual
    finished_at: datetime | None = None  # virtual
    #: internal errors only (a bug in a handler or in faultbench): the traceback, for the
    #: test and the server log; shells never send it to the agent
    traceback: str | None = None
    #: an `invalid_structured_content` fault only: the broken copy an MCP answer carries as
    #: `structuredContent` beside the true `text` (None: `value` is what it carries)
    structured: Any = None

    @property
    def latency_s(self) -> float:
        """Virtual seconds between start and finish."""
        if self.started_at is None or self.finished_at is None:
            return 0.0
        return (self.finished_at - self.started_at).total_seconds()


class Tool(msgspec.Struct, frozen=True):
    """One operation as an agent sees it (an MCP tool)."""

    name: str
    description: str
    input_schema: dict[str, Any]  # JSON Schema, inline (no root $ref), "type": "object"
    service: str = ""
    kind: str = ""  # get | list | create | update | delete | custom
    record: str | None = None
    #: what a client shows a person (`_spec/_tooldoc.py`); "" for a tool made by hand
    title: str = ""
    #: MCP's hints (`readOnlyHint`, ...); None: none given
    annotations: dict[str, bool] | None = None
    #: the JSON Schema of a successful answer's value (bare: a list's is an array); None:
    #: the tool declares none
    output_schema: dict[str, Any] | None = None
