"""Fault rules as written in a world file's `faults:` block, parsed: plain frozen data.

The world-file reader (`_read/_faultblock.py`) builds them, `WorldSpec.faults` holds them by
key, and the rest of this package (the registry, merging, the plan) reads them. They live
here, below the spec, so that faults never import the spec.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from .._errors import Location

# ---------------------------------------------------------------------------------------------


class Latency(msgspec.Struct, frozen=True):
    """Virtual duration of a call, in milliseconds."""

    dist: Literal["uniform", "lognormal", "fixed"]
    lo_ms: float = 0.0  # uniform: bounds; fixed: lo_ms == hi_ms
    hi_ms: float = 0.0
    p50_ms: float = 0.0  # lognormal: fitted to p50/p99
    p99_ms: float = 0.0


class ErrorRule(msgspec.Struct, frozen=True):
    kind: str  # one of ERROR_KINDS; its options: `_kinds.kind(kind).options`
    p: float  # probability per call, 0..1
    commit: bool | None = None  # None: the kind's own default (FaultKind.default_commit)
    # The options of all kinds; None: the kind's default (`_kinds.Option.default`).
    timeout_s: float | None = None  # timeout kinds
    retry_after_s: float | None = None  # http_429
    lag_s: float | None = None  # stale_read
    times: int | None = None  # duplicate: how many extra applications
    delay_s: float | None = None  # delayed: how late the feed's newest events come
    field: str | None = None  # inject: the string field of the answer's records
    template: str | None = None  # inject: a template name (`_injections.TEMPLATES`)
    payload: str | None = None  # inject: the text itself, instead of a template
    change: str | None = None  # schema_violation: "missing" or "wrong_type"
    tool: str | None = None  # tool-surface kinds: the tool that changes (or, added, appears)
    description: str | None = None  # rug_pull / tool_added: the description shown after
    arg: str | None = None  # renamed_args: the argument renamed
    to: str | None = None  # renamed_args: its new name


class RateLimit(msgspec.Struct, frozen=True):
    calls: int
    per_seconds: float


class FaultRule(msgspec.Struct, frozen=True):
    """One rule as written under one key of `faults:` (or the merge of several)."""

    latency: Latency | None = None
    errors: tuple[ErrorRule, ...] = ()  # file order; at most one per kind
    rate_limit: RateLimit | None = None
    not_found_if_newer_than_s: float | None = None
    script: tuple[tuple[int, ErrorRule], ...] = ()  # (k, error), k 1-based, sorted by k
    loc: Location | None = None
    #: rule-level `timeout_s:`; `merged_rule` copies it into timeout errors that set none
    timeout_s: float | None = None
