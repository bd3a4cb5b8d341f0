"""Every fault kind, defined once: what it applies to, what it commits, its options, how the
call pipeline executes it and what the agent reads.

Everything else looks a kind up here: the loader's validation (`_read/_faultblock.py`), the
merge and its defaults (`_faults/_rules.py`), the plan's decisions and messages
(`_faults/_plan.py`), `faultbench check`, the pipeline, which dispatches on
`FaultKind.effect`, and the shells: REST answers a kind's `status` with its `headers`
(`http_status`, `answer_headers`), the HTML report draws it in its `colour`. Adding a kind is
one record in `KINDS`, every field filled (plus its line in docs/FAULTS.md; a test walks this
registry to check both: tests/kernel/test_kinds_registry.py).

The order of `KINDS` is part of every seeded run: the cumulative error draw walks the kinds
of a rule in this order (`ERROR_KINDS`), so a new kind goes at the end.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from .._errors import not_found_text

if TYPE_CHECKING:
    from ._types import FaultRule

__all__ = [
    "APPLIES_TO",
    "COMMIT_KINDS",
    "EFFECTS",
    "ERROR_KINDS",
    "ERROR_OPTIONS",
    "ERROR_STATUSES",
    "FAILURE_KINDS",
    "FEED_KINDS",
    "KINDS",
    "REFUSED_KINDS",
    "SUCCESS_KINDS",
    "FaultKind",
    "Option",
    "answer_headers",
    "http_status",
    "kind",
    "kinds_with_option",
]

#: How a fault executes -> whether the agent sees a failed call. The call pipeline has one
#: branch per effect; a kind whose effect is not here is refused when it is defined.
EFFECTS: dict[str, bool] = {
    "fail": True,  # an error answer; the operation runs first if the decision commits
    "empty": False,  # a success with nothing in it
    "stale": False,  # the answer from the state of `lag_s` seconds ago
    "malformed": False,  # a success whose text is not valid JSON
    "duplicate": False,  # the write applied `1 + times` times; the first answer
    "conflict": True,  # another client writes the record first; 409, the write does not run
    "token": True,  # the call's access token expires or is revoked; 401
    "feed": False,  # an event feed's page as a flaky delivery gives it (`_calls/_feed.py`)
    "inject": False,  # a success whose records (or text) carry a planted instruction
    "rewrite": False,  # a success whose answer lies (`_lies.py`): a false value, a broken shape
    "page": False,  # a list page served wrong: shifted by one, or `has_more` cut short
    "surface": False,  # the call runs as usual, then the tool list changes (`_surface.py`)
    # issue 40, faults of MCP itself: the call runs as usual and an MCP server mistreats its
    # answer on the wire (`_protocol.py`); or a true text beside a `structuredContent` that
    # breaks the tool's `outputSchema` (`_lies.broken_structure`)
    "protocol": False,
    "structured": False,
}


class Decision(Protocol):
    """What a message reads of a decision (a `FaultDecision`, which `_plan.py` defines on top
    of this registry)."""

    @property
    def timeout_s(self) -> float: ...
    @property
    def retry_after_s(self) -> float | None: ...


#: (what the agent reads) = message(decision, target, rule, target_id); `target` has
#: `qualname` and `record` (an OperationSpec or a FaultTarget).
Message = Callable[[Decision, Any, "FaultRule", "str | None"], str]


class Option(msgspec.Struct, frozen=True):
    """A parameter of a kind: a key under `errors:`/`script:` and a `FaultDecision` field."""

    name: str
    #: what a decision uses when the rule sets none; None: the plan computes it (never set
    #: by a rule, e.g. a rate limit's retry-after comes from its window)
    default: float | int | None
    #: how `faultbench check` writes it, `{}` standing for the value
    shown: str
    #: a whole number (1 to MAX_TIMES); otherwise a duration in seconds
    whole: bool = False
    #: text (a field name, a template name, a payload), not a number
    text: bool = False


class FaultKind(msgspec.Struct, frozen=True, kw_only=True):
    """One fault kind (see docs/FAULTS.md, "Error kinds")."""

    name: str
    #: how the call pipeline executes it: a key of EFFECTS
    effect: str
    #: the HTTP status a service answers with it (REST's status; 200 for a kind whose answer
    #: is a success, however wrong); a failing kind's message starts with it
    status: int
    #: the HTTP headers that answer carries: (name, value), `{option}` in a value standing for
    #: the decision's option (`answer_headers`); () for none
    headers: tuple[tuple[str, str], ...]
    #: how the HTML report draws a call it happened to (`#rrggbb`)
    colour: str
    #: does the operation run (and its writes stay) before the fault shows, by default?
    default_commit: bool
    #: may a rule set `commit:`? False when there is no choice to make
    commit_option: bool
    #: parameters, in the order `FaultInjected.detail` records them
    options: tuple[Option, ...] = ()
    #: the operation kinds it can happen to, in the order messages list them; None: all
    applies_to: tuple[str, ...] | None = None
    #: may a rule name it under `errors:` and `script:`? (rate_limit has its own key)
    configurable: bool = True
    #: what the agent reads; only kinds whose effect fails have one
    message: Message | None = None
    #: turned away before reaching the service (a 429): such calls do not count towards
    #: rate-limit windows, so an agent that backs off is admitted again
    refused: bool = False
    #: happens only to lists with `page:` (a list without one answers everything at once)
    paged: bool = False

    def __post_init__(self) -> None:
        if self.effect not in EFFECTS:
            raise ValueError(
                f"fault kind {self.name!r} has effect {self.effect!r}; expected one of "
                f"{', '.join(EFFECTS)}"
            )
        if (self.message is not None) != self.fails:
            raise ValueError(
                f"fault kind {self.name!r}: a kind has a message exactly when its effect "
                f"fails the call (effect {self.effect!r})"
            )

    @property
    def fails(self) -> bool:
        """Does the agent see a failed call?"""
        return EFFECTS[self.effect]

    def fits(self, op_kind: str, paged: bool = True) -> bool:
        """Can it happen to an operation of this kind (`paged`: a list with `page:`)?"""
        return (self.applies_to is None or op_kind in self.applies_to) and (paged or not self.paged)

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)


# ---------------------------------------------------------------------------------------------
# What the agent reads. Modelled on the status lines and bodies real HTTP APIs and gateways
# return, so an agent's error handling is exercised the way production exercises it. Every
# text names the `service.operation` that failed, as a gateway's error page does.
# ---------------------------------------------------------------------------------------------


def _secs(s: float) -> str:
    return f"{s:g}s"


def _gateway_timeout(d: Decision, target: Any, rule: FaultRule, target_id: str | None) -> str:
    return f"504 Gateway Timeout: {target.qualname} did not answer within {_secs(d.timeout_s)}"


def _status(text: str) -> Message:
    """A fixed status line; `{name}` stands for `service.operation`."""
    return lambda d, target, rule, target_id: text.format(name=target.qualname)


def _too_many_requests(d: Decision, target: Any, rule: FaultRule, target_id: str | None) -> str:
    retry = float(d.retry_after_s or _RETRY_AFTER.default or 0)
    return f"429 Too Many Requests: {target.qualname} is rate limited; retry after {_secs(retry)}"


def _rate_limited(d: Decision, target: Any, rule: FaultRule, target_id: str | None) -> str:
    rl = rule.rate_limit
    assert rl is not None
    return (
        f"429 Too Many Requests: rate limit of {rl.calls} calls per "
        f"{_secs(rl.per_seconds)} exceeded for {target.qualname}; "
        f"retry after {_secs(d.retry_after_s or 0)}"
    )


def _not_found(d: Decision, target: Any, rule: FaultRule, target_id: str | None) -> str:
    # the very words a record that is really missing gets, so a fake 404 passes for a real one
    return not_found_text(target.qualname, target.record, target_id)


# ---------------------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------------------

_TIMEOUT = Option("timeout_s", 30.0, "after {}")
_RETRY_AFTER = Option("retry_after_s", 1.0, "retry after {}")
#: a 429's `Retry-After`, in whole seconds (RFC 9110: delay-seconds)
_RETRY_AFTER_HEADER = (("Retry-After", "{retry_after_s}"),)
#: a 401's challenge (RFC 6750: an expired or revoked token is `invalid_token`)
_EXPIRED_HEADER = (
    ("WWW-Authenticate", 'Bearer error="invalid_token", error_description="token expired"'),
)
_REVOKED_HEADER = (
    ("WWW-Authenticate", 'Bearer error="invalid_token", error_description="token revoked"'),
)
_READS = ("get", "list")  # a custom handler's reads are not replayed from the past
_WRITES = ("create", "update", "delete", "custom")
#: the event feed's `list_events` (top-level `events:`) and its webhook deliveries
#: (`webhooks:`, fault key `<service>.webhooks`)
_FEED = ("events", "webhooks")
_TOOL = Option("tool", None, "tool {}", text=True)
_TEMPLATE = Option("template", None, "template {}", text=True)
_PAYLOAD = Option("payload", None, "payload {}", text=True)

KINDS: tuple[FaultKind, ...] = (
    # The write commits, then the caller waits `timeout_s` in vain: the famous case.
    FaultKind(
        name="timeout", effect="fail",
        status=504, headers=(), colour="#d62728",
        default_commit=True, commit_option=True,
        options=(_TIMEOUT,), message=_gateway_timeout,
    ),
    # `timeout` with `commit: false`, said in its name: no commit option to contradict it.
    FaultKind(
        name="timeout_before_commit", effect="fail",
        status=504, headers=(), colour="#ff7f0e",
        default_commit=False, commit_option=False,
        options=(_TIMEOUT,), message=_gateway_timeout,
    ),
    FaultKind(
        name="http_500", effect="fail",
        status=500, headers=(), colour="#9467bd",
        default_commit=False, commit_option=True,
        message=_status("500 Internal Server Error: {name} failed with an unexpected error"),
    ),
    FaultKind(
        name="http_502", effect="fail",
        status=502, headers=(), colour="#8c564b",
        default_commit=False, commit_option=True,
        message=_status("502 Bad Gateway: the upstream server for {name} sent an invalid response"),
    ),
    FaultKind(
        name="http_503", effect="fail",
        status=503, headers=(), colour="#e377c2",
        default_commit=False, commit_option=True,
        message=_status(
            "503 Service Unavailable: {name} is temporarily unavailable; try again later"
        ),
    ),
    # Refused before anything runs: nothing to commit.
    FaultKind(
        name="http_429", effect="fail",
        status=429, headers=_RETRY_AFTER_HEADER, colour="#bcbd22",
        default_commit=False, commit_option=False,
        options=(_RETRY_AFTER,), message=_too_many_requests, refused=True,
    ),
    FaultKind(
        name="not_found", effect="fail",
        status=404, headers=(), colour="#17becf",
        default_commit=False, commit_option=True,
        message=_not_found,
    ),
    FaultKind(
        name="empty_result", effect="empty",
        status=200, headers=(), colour="#7f7f7f",
        default_commit=False, commit_option=True,
    ),
    FaultKind(
        name="malformed_json", effect="malformed",
        status=200, headers=(), colour="#1f77b4",
        default_commit=False, commit_option=True,
    ),
    # Reads the past: there is nothing to commit.
    FaultKind(
        name="stale_read", effect="stale",
        status=200, headers=(), colour="#2ca02c",
        default_commit=False, commit_option=False,
        options=(Option("lag_s", 60.0, "{} behind"),), applies_to=_READS,
    ),
    # A duplicate is the write running (twice): it always commits.
    FaultKind(
        name="duplicate", effect="duplicate",
        status=200, headers=(), colour="#ff9896",
        default_commit=True, commit_option=False,
        options=(Option("times", 1, "{} extra", whole=True),), applies_to=_WRITES,
    ),
    # An attack, not an outage: the call runs as usual and its answer carries a planted
    # instruction, in a string field of the records it returns (`field`) or after its text.
    # The text is a template of `_injections.py` or the rule's own `payload` (test data).
    FaultKind(
        name="inject", effect="inject",
        status=200, headers=(), colour="#e6550d",
        default_commit=True, commit_option=False,
        options=(
            Option("field", None, "into {}", text=True),
            _TEMPLATE,
            _PAYLOAD,
        ),
    ),
    # Lying tools: the call runs as usual and its answer is rewritten (`_lies.py`).
    FaultKind(
        name="wrong_value", effect="rewrite",
        status=200, headers=(), colour="#9c9ede",
        default_commit=True, commit_option=False,
        options=(Option("field", None, "field {}", text=True),),
    ),
    FaultKind(
        name="schema_violation", effect="rewrite",
        status=200, headers=(), colour="#637939",
        default_commit=True, commit_option=False,
        options=(
            Option("field", None, "field {}", text=True),
            Option("change", None, "{}", text=True),
        ),
    ),
    FaultKind(
        name="oversized_result", effect="rewrite",
        status=200, headers=(), colour="#8ca252",
        default_commit=True, commit_option=False,
        options=(Option("times", 50, "{}x", whole=True),),
    ),
    # Decided by a `rate_limit:` rule's window, never drawn: not an `errors:` key.
    # (it stays here, before the kinds of issue 21: the order of KINDS is seeded)
    FaultKind(
        name="rate_limit", effect="fail",
        status=429, headers=_RETRY_AFTER_HEADER, colour="#bcbd22",
        default_commit=False, commit_option=False,
        options=(Option("retry_after_s", None, "retry after {}"),), configurable=False,
        message=_rate_limited, refused=True,
    ),
    # Another client wrote the record first (its version moves on, as an event); the call's
    # own write never runs. The pipeline words the 409 with the record's new version.
    FaultKind(
        name="conflict", effect="conflict",
        status=409, headers=(), colour="#aec7e8",
        default_commit=False, commit_option=False,
        applies_to=("update", "delete"),
        message=_status(
            "409 Conflict: {name}: the record was changed by another request; read it again "
            "and retry"
        ),
    ),
    # The call's access token expires now (worlds with `auth:`): refresh_token renews it.
    FaultKind(
        name="token_expired", effect="token",
        status=401, headers=_EXPIRED_HEADER, colour="#ffbb78",
        default_commit=False, commit_option=False,
        message=_status(
            "401 Unauthorized: {name}: the access token has expired; renew it with the "
            "refresh_token tool, then retry"
        ),
    ),
    # The call's token is revoked: every call and every refresh with it is refused.
    FaultKind(
        name="revoked", effect="token",
        status=401, headers=_REVOKED_HEADER, colour="#98df8a",
        default_commit=False, commit_option=False,
        message=_status(
            "401 Unauthorized: {name}: the access token has been revoked; refreshing it will "
            "not help: a new token must be issued"
        ),
    ),
    # The event feed delivers at least once, in no promised order, late, or not at all.
    # Nothing to commit: the feed is read, never written.
    FaultKind(
        name="duplicate_delivery", effect="feed",
        status=200, headers=(), colour="#c49c94",
        default_commit=False, commit_option=False,
        applies_to=_FEED,
    ),
    FaultKind(
        name="out_of_order", effect="feed",
        status=200, headers=(), colour="#f7b6d2",
        default_commit=False, commit_option=False,
        applies_to=_FEED,
    ),
    FaultKind(
        name="delayed", effect="feed",
        status=200, headers=(), colour="#dbdb8d",
        default_commit=False, commit_option=False,
        options=(Option("delay_s", 60.0, "by {}"),), applies_to=_FEED,
    ),
    FaultKind(
        name="dropped", effect="feed",
        status=200, headers=(), colour="#9edae5",
        default_commit=False, commit_option=False,
        applies_to=_FEED,
    ),
    # Pages (list operations with `page:` only): a real API's paging, at its worst.
    FaultKind(
        name="page_drift", effect="page",
        status=200, headers=(), colour="#c5b0d5",
        default_commit=False, commit_option=False,
        applies_to=("list",), paged=True,
    ),
    FaultKind(
        name="truncated_page", effect="page",
        status=200, headers=(), colour="#7b4173",
        default_commit=False, commit_option=False,
        applies_to=("list",), paged=True,
    ),
    FaultKind(
        name="expired_cursor", effect="fail",
        status=400, headers=(), colour="#843c39",
        default_commit=False, commit_option=False,
        applies_to=("list",), paged=True,
        message=_status("400 Bad Request: cursor expired; start again ({name})"),
    ),
    # The tool surface changes mid-run (issue 26): the k-th call runs as usual, then the tool
    # list changes and an MCP server announces it (`notifications/tools/list_changed`).
    # `tool` names the tool that changes (default: the one called); `_calls/_surface.py`
    # works the change out against the tools of that moment.
    FaultKind(
        name="rug_pull", effect="surface",
        status=200, headers=(), colour="#d6616b",
        default_commit=True, commit_option=False,
        options=(_TOOL, Option("description", None, "to {}", text=True), _TEMPLATE, _PAYLOAD),
    ),
    FaultKind(
        name="tool_removed", effect="surface",
        status=200, headers=(), colour="#e7969c",
        default_commit=True, commit_option=False,
        options=(_TOOL,),
    ),
    # a distractor: a copy of the tool called, under a new name (default `<tool>_v2`)
    FaultKind(
        name="tool_added", effect="surface",
        status=200, headers=(), colour="#a55194",
        default_commit=True, commit_option=False,
        options=(_TOOL, Option("description", None, "to {}", text=True)),
    ),
    FaultKind(
        name="renamed_args", effect="surface",
        status=200, headers=(), colour="#ce6dbd",
        default_commit=True, commit_option=False,
        options=(
            _TOOL, Option("arg", None, "arg {}", text=True), Option("to", None, "to {}", text=True),
        ),
    ),
    # Faults in the MCP protocol itself (issue 40): the call runs as usual in the world (its
    # writes stay), and the MCP server mistreats how its answer travels, as `_protocol.py`
    # says and the serve shell enacts. Any other face (`--rest`, a direct call) answers as
    # usual. The answer is held until the client sends `notifications/cancelled`.
    FaultKind(
        name="answer_after_cancel", effect="protocol",
        status=200, headers=(), colour="#8c6d31",
        default_commit=True, commit_option=False,
    ),
    # The answer comes `timeout_s` later (virtual and real seconds) whatever the client does:
    # a `notifications/cancelled` in between stops nothing.
    FaultKind(
        name="ignore_cancel", effect="protocol",
        status=200, headers=(), colour="#bd9e39",
        default_commit=True, commit_option=False,
        options=(Option("timeout_s", 2.0, "answers after {}"),),
    ),
    # `times` progress notifications (to a client that sent a progress token), then none and
    # no answer until the client cancels.
    FaultKind(
        name="progress_stall", effect="protocol",
        status=200, headers=(), colour="#e7ba52",
        default_commit=True, commit_option=False,
        options=(Option("times", 2, "stalls after {} notifications", whole=True),),
    ),
    # `times` `notifications/tools/list_changed` before the answer, the tools unchanged.
    FaultKind(
        name="list_changed_burst", effect="protocol",
        status=200, headers=(), colour="#e7cb94",
        default_commit=True, commit_option=False,
        options=(Option("times", 20, "{} notifications", whole=True),),
    ),
    # Faults of what a tool promises in MCP (issue 40). The answer's text is true, but its `structuredContent` breaks the tool's `outputSchema`
    # (a record field of the wrong type, or the wrong shape): the SDK's client refuses the
    # result; a client that reads the text alone sees nothing wrong.
    FaultKind(
        name="invalid_structured_content", effect="structured",
        status=200, headers=(), colour="#636363",
        default_commit=True, commit_option=False,
        options=(Option("field", None, "field {}", text=True),),
    ),
    # The call runs as usual, then the tool list changes: `tool` (default: the one called),
    # which writes, is listed with annotations that lie (`readOnlyHint: true`,
    # `destructiveHint: false`, `idempotentHint: true`), announced as a tool-list change.
    FaultKind(
        name="lying_annotations", effect="surface",
        status=200, headers=(), colour="#969696",
        default_commit=True, commit_option=False,
        options=(_TOOL,),
    ),
)  # fmt: skip

_BY_NAME = {k.name: k for k in KINDS}


def kind(name: str) -> FaultKind:
    """The kind called `name`; KeyError for an unknown one."""
    return _BY_NAME[name]


def kinds_with_option(option: str) -> tuple[str, ...]:
    """The kinds a rule may give `option` (`commit` included), in registry order."""
    if option == "commit":
        return tuple(k.name for k in KINDS if k.configurable and k.commit_option)
    return tuple(k.name for k in KINDS if k.configurable and k.option(option) is not None)


#: The HTTP status of a failed call's error kind that is not a fault kind (those carry their
#: own `status`): the kernel's errors (`_errors.py`) and the shells' own (the --events
#: journal that cannot write, a REST route that does not exist). Anything else is a 500.
ERROR_STATUSES: dict[str, int] = {
    "invalid_arguments": 400,
    "handler_error": 400,
    "clock_overflow": 400,
    "unknown_tool": 404,
    "not_found": 404,
    "method_not_allowed": 405,
    "unauthorized": 401,
    "insufficient_scope": 403,
    "idempotency_conflict": 409,
    "journal_error": 503,  # serve --events: the call was undone, try again
    "internal_error": 500,
}


def http_status(error_kind: str | None) -> int:
    """The HTTP status a failed call of `error_kind` is answered with: a fault kind's
    `status`, else `ERROR_STATUSES`, else 500."""
    found = _BY_NAME.get(error_kind or "")
    if found is not None:
        return found.status
    return ERROR_STATUSES.get(error_kind or "", 500)


def answer_headers(name: str, detail: Mapping[str, object]) -> dict[str, str]:
    """The HTTP headers of an answer to a call that fault kind `name` happened to, its
    `{option}`s filled from the decision's `detail` (a `FaultInjected.detail`); seconds are
    rounded up to whole ones, as `Retry-After` requires. {} for an unknown kind."""
    found = _BY_NAME.get(name)
    if found is None:
        return {}
    values = {k: _header_value(v) for k, v in detail.items() if v is not None}
    for option in found.options:  # an option the detail lacks: its default
        if option.name not in values and option.default is not None:
            values[option.name] = _header_value(option.default)
    out = {}
    for header, value in found.headers:
        try:
            out[header] = value.format_map(values)
        except KeyError:  # no value for it (and no default): the header is left out
            continue
    return out


def _header_value(value: object) -> str:
    if isinstance(value, float):
        return str(math.ceil(value))
    return str(value)


# ---------------------------------------------------------------------------------------------
# Views of the registry, for the modules that ask one question of every kind
# ---------------------------------------------------------------------------------------------

#: The kinds `errors:` and `script:` accept, in the fixed order of the cumulative draw.
ERROR_KINDS: tuple[str, ...] = tuple(k.name for k in KINDS if k.configurable)
#: Every option an error or script step may set, `p` first.
ERROR_OPTIONS: tuple[str, ...] = (
    "p",
    "commit",
    *dict.fromkeys(o.name for k in KINDS if k.configurable for o in k.options),
)
#: Kinds the agent sees as a failed call. The rest answer "successfully", but wrongly.
FAILURE_KINDS = frozenset(k.name for k in KINDS if k.fails)
SUCCESS_KINDS = frozenset(k.name for k in KINDS if not k.fails)
#: Kinds that accept `commit:`.
COMMIT_KINDS = frozenset(kinds_with_option("commit"))
#: Kinds that only happen to some operation kinds.
#: kinds answered 429: not counted by rate-limit windows
REFUSED_KINDS = frozenset(k.name for k in KINDS if k.refused)
#: the kinds of a flaky event feed, which also happen to webhook deliveries
FEED_KINDS: tuple[str, ...] = tuple(k.name for k in KINDS if k.effect == "feed")
APPLIES_TO = {k.name: frozenset(k.applies_to) for k in KINDS if k.applies_to is not None}
