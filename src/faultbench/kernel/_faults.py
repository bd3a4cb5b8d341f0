"""The fault plan: what goes wrong with one call, decided before the call runs.

A `FaultPlan` is pure. Given the world's fault rules, seed and run index, the decision for the
k-th valid call to an operation depends only on::

    (seed, run, "service.operation", k)  +  the merged rule of that operation
    +  the virtual time of the call, the times of that operation's earlier calls (rate limits)
       and the target record's creation time (`not_found_if_newer_than`)

and the last three come from the world's event log, so a replay or a fork sees the same
inputs. Randomness is a `random.Random` seeded per call from a BLAKE2b digest of the first
four, never `hash()` (randomized per process) and never a shared generator (whose position
would depend on every other operation's calls). So adding a call to `get_order` never changes
what happens to the 3rd `issue_refund`, and a failing run can be replayed with its faults
pinned. The call pipeline (`_pipeline.py`) executes decisions; nothing here touches a world.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Mapping, Sequence
from datetime import datetime
from statistics import NormalDist

import msgspec

from ._errors import not_found_text
from ._spec import ERROR_KINDS, ErrorRule, FaultRule, OperationSpec, RecordSpec

__all__ = [
    "APPLIES_TO",
    "COMMIT_KINDS",
    "FAILURE_KINDS",
    "SUCCESS_KINDS",
    "FaultDecision",
    "FaultPlan",
    "created_field",
    "effective_rule",
]

#: Kinds the agent sees as a failed call. The rest answer "successfully", but wrongly.
FAILURE_KINDS = frozenset(
    {
        "timeout",
        "timeout_before_commit",
        "http_500",
        "http_502",
        "http_503",
        "http_429",
        "not_found",
        "rate_limit",
    }
)
SUCCESS_KINDS = frozenset({"empty_result", "malformed_json", "stale_read", "duplicate"})

#: Whether the operation runs (and its writes stay) before the fault shows, unless the rule
#: says `commit:`. A timeout is the famous case: the write happened, the answer was lost.
_DEFAULT_COMMIT = {
    "timeout": True,
    "timeout_before_commit": False,
    "http_500": False,
    "http_502": False,
    "http_503": False,
    "http_429": False,
    "not_found": False,
    "empty_result": False,
    "malformed_json": False,
    "stale_read": False,
    "duplicate": True,
    "rate_limit": False,
}

#: Kinds that accept `commit:`. The others have nothing to choose: a stale read and a 429
#: never run the operation, a duplicate always does, and `timeout_before_commit` says it in
#: its name (`timeout` with `commit: false` is the same thing). The loader rejects the rest.
COMMIT_KINDS = frozenset(
    {"timeout", "http_500", "http_502", "http_503", "not_found", "empty_result", "malformed_json"}
)

#: Kinds that only make sense for some operation kinds. In a `default:` or `service.*` rule a
#: drawn one is ignored where it does not fit (the call runs normally); in a rule keyed by
#: the operation itself the loader rejects it, since it could never happen.
APPLIES_TO = {
    "stale_read": frozenset({"get", "list"}),
    "duplicate": frozenset({"create", "update", "delete", "custom"}),
}

#: The cumulative error draw walks kinds in this fixed order, not in the order the file lists
#: them (nor the order merging left them in), so reordering keys never changes a run.
_KIND_ORDER = {kind: i for i, kind in enumerate(ERROR_KINDS)}

_TIMEOUT_KINDS = frozenset({"timeout", "timeout_before_commit"})
_BY_ID = frozenset({"get", "update", "delete"})

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_RETRY_AFTER_S = 1.0
DEFAULT_LAG_S = 60.0

# z-score of the 99th percentile of the standard normal: p99 = exp(mu + Z99 * sigma)
_Z99 = 2.3263
_EMPTY_RULE = FaultRule()
_NORMAL = NormalDist()


class FaultDecision(msgspec.Struct, frozen=True):
    """What the plan decided for one call. `kind is None` means latency only."""

    latency_s: float = 0.0  # virtual duration of the call itself
    kind: str | None = None  # an ERROR_KIND, "rate_limit", or None
    commit: bool = False  # does the operation run (and its writes stay) despite the fault?
    timeout_s: float = 0.0  # timeout kinds: virtual seconds the caller waited in vain
    retry_after_s: float | None = None  # http_429 / rate_limit
    lag_s: float | None = None  # stale_read: how old the state answered from is
    times: int = 1  # duplicate: extra applications of the write
    message: str = ""  # failure kinds: exactly what the agent reads
    source: str | None = None  # "script", "rate_limit", "not_found_if_newer_than", "random"
    k: int = 0

    @property
    def fails(self) -> bool:
        return self.kind in FAILURE_KINDS

    @property
    def duration_s(self) -> float:
        """How far the call moves the virtual clock: latency, plus the wait of a timeout."""
        return self.latency_s + self.timeout_s

    def detail(self) -> dict[str, object]:
        """The parameters worth recording in a `FaultInjected` event."""
        out: dict[str, object] = {"source": self.source, "commit": self.commit}
        if self.kind in _TIMEOUT_KINDS:
            out["timeout_s"] = self.timeout_s
        if self.retry_after_s is not None:
            out["retry_after_s"] = self.retry_after_s
        if self.lag_s is not None:
            out["lag_s"] = self.lag_s
        if self.kind == "duplicate":
            out["times"] = self.times
        return out


class FaultPlan:
    """Decides faults for a world's calls. Pure: no clock reads, no shared random state."""

    __slots__ = ("_active", "_merged", "enabled", "rules", "run", "seed")

    def __init__(
        self, rules: Mapping[str, FaultRule], seed: int, run: int, enabled: bool = True
    ) -> None:
        self.rules: dict[str, FaultRule] = dict(rules)
        self.seed = seed
        self.run = run
        self.enabled = enabled
        self._merged: dict[str, FaultRule] = {}
        #: qualname -> does the merged rule do anything? (the fault-free path stays cheap)
        self._active: dict[str, bool] = {}

    def rule_for(self, op: OperationSpec) -> FaultRule:
        """The rule the plan draws from for one operation: merged (default -> service.* ->
        service.operation), defaults written out, errors in the fixed draw order
        (ERROR_KINDS). It keeps kinds that cannot happen to the operation: their share of
        the draw runs the call normally (see `effective_rule` for what can happen)."""
        rule = self._merged.get(op.qualname)
        if rule is None:
            rule = _drawn_rule(self.rules, op)
            errors = tuple(sorted(rule.errors, key=lambda e: _KIND_ORDER[e.kind]))
            if errors != rule.errors:
                rule = msgspec.structs.replace(rule, errors=errors)
            self._merged[op.qualname] = rule
        return rule

    def effective_rule(self, op: OperationSpec) -> FaultRule:
        """What can happen to `op` under this plan; see `effective_rule`."""
        return effective_rule(self.rules, op)

    def rng(self, op: OperationSpec, k: int) -> random.Random:
        """The k-th call's own generator: a function of (seed, run, operation, k) only."""
        key = f"faultbench-fault-v1\x1f{self.seed}\x1f{self.run}\x1f{op.qualname}\x1f{k}"
        digest = hashlib.blake2b(key.encode(), digest_size=16).digest()
        return random.Random(int.from_bytes(digest, "big"))

    def decide(
        self,
        op: OperationSpec,
        k: int,
        *,
        now: datetime,
        recent: Sequence[datetime] = (),
        record_time: datetime | None = None,
        record: RecordSpec | None = None,
        target_id: str | None = None,
    ) -> FaultDecision | None:
        """Decide the fault for the k-th (1-based) valid call to `op`, made at virtual `now`.

        `recent`: start times of earlier calls to `op` that were not answered 429 (only those
        inside the rate-limit window matter). `record_time`: creation time of the record a
        get/update/delete targets (see `created_field`), for `not_found_if_newer_than`.
        `record` / `target_id` only make the not-found message precise.

        Precedence: a `script` entry for k decides the fault instead of everything else; then
        the rate limit; then `not_found_if_newer_than`; then the probabilistic `errors`. Both
        random draws (error, then latency) are always taken, so whichever of these decides,
        the latency of call k is the same.
        """
        if not self.enabled:
            return None
        active = self._active.get(op.qualname)
        if active is None:
            rule = self.rule_for(op)
            active = self._active[op.qualname] = (
                msgspec.structs.replace(rule, loc=None) != _EMPTY_RULE
            )
        if not active:
            return None
        rule = self._merged[op.qualname]

        rng = self.rng(op, k)
        u_error = rng.random()
        latency_s = _latency_s(rule, rng.random())

        chosen: ErrorRule | None = None
        source: str | None = None
        kind: str | None = None
        retry_after: float | None = None
        for script_k, entry in rule.script:
            # An entry that cannot happen to this operation (a `default:` script's duplicate,
            # on a read) is no entry: the call goes through the rules as usual.
            if script_k == k and _fits(entry.kind, op):
                chosen, source = entry, "script"
                break
        if chosen is None and rule.rate_limit is not None:
            retry_after = _rate_limited(
                rule.rate_limit.calls, rule.rate_limit.per_seconds, now, recent
            )
            if retry_after is not None:
                kind, source = "rate_limit", "rate_limit"
        threshold = rule.not_found_if_newer_than_s
        if (
            source is None
            and threshold is not None
            and op.kind in _BY_ID
            and record_time is not None
            and (now - record_time).total_seconds() < threshold
        ):
            kind, source = "not_found", "not_found_if_newer_than"
        if source is None:
            cumulative = 0.0
            for entry in rule.errors:
                cumulative += entry.p
                if u_error < cumulative:
                    chosen, source = entry, "random"
                    break

        if chosen is not None:
            kind = chosen.kind
            if not _fits(kind, op):  # drawn where it cannot happen: the call runs normally
                chosen = kind = source = None
        if kind is None:
            if latency_s == 0.0:
                return None
            return FaultDecision(latency_s=latency_s, k=k)

        commit = _DEFAULT_COMMIT[kind]
        timeout_s = 0.0
        lag_s = None
        times = 1
        if chosen is not None:
            if chosen.commit is not None:
                commit = chosen.commit
            # rule_for wrote every default out (see _with_defaults)
            if kind in _TIMEOUT_KINDS:
                timeout_s = chosen.timeout_s  # type: ignore[assignment]
            elif kind == "http_429":
                retry_after = chosen.retry_after_s
            elif kind == "stale_read":
                lag_s = chosen.lag_s
            elif kind == "duplicate":
                times = chosen.times  # type: ignore[assignment]
        decision = FaultDecision(
            latency_s=latency_s,
            kind=kind,
            commit=commit,
            timeout_s=timeout_s,
            retry_after_s=retry_after,
            lag_s=lag_s,
            times=times,
            source=source,
            k=k,
        )
        if kind in FAILURE_KINDS:
            message = fault_message(decision, op, rule, record=record, target_id=target_id)
            decision = msgspec.structs.replace(decision, message=message)
        return decision


# ---------------------------------------------------------------------------------------------
# The rule of one operation
# ---------------------------------------------------------------------------------------------


def effective_rule(rules: Mapping[str, FaultRule], op: OperationSpec) -> FaultRule:
    """The faults that can happen to `op` under `rules`, in the merged rule's order, with
    every default the plan applies written out (`timeout_s`, `retry_after_s`, `lag_s`,
    `times`): what `faultbench check` shows.

    It is the rule the plan draws from (`FaultPlan.rule_for`) minus what cannot happen to
    this kind of operation, by the same tests `decide` applies: error kinds and script steps
    that do not fit it (`APPLIES_TO`), and `not_found_if_newer_than` except on get, update
    and delete. A `default:` rule's `stale_read: 0.1` on an update is no fault at all; its
    share of the draw runs the call normally, so the other kinds keep their probabilities.
    """
    rule = _drawn_rule(rules, op)
    errors = tuple(e for e in rule.errors if _fits(e.kind, op))
    script = tuple((k, e) for k, e in rule.script if _fits(e.kind, op))
    threshold = rule.not_found_if_newer_than_s if op.kind in _BY_ID else None
    if (errors, script, threshold) == (rule.errors, rule.script, rule.not_found_if_newer_than_s):
        return rule
    return msgspec.structs.replace(
        rule, errors=errors, script=script, not_found_if_newer_than_s=threshold
    )


def _drawn_rule(rules: Mapping[str, FaultRule], op: OperationSpec) -> FaultRule:
    from ._loader import merged_rule  # the loader owns the merge semantics

    return _with_defaults(merged_rule(rules, op.service, op.name))


def _with_defaults(rule: FaultRule) -> FaultRule:
    """`rule` with each error's and script step's unset parameters set to what a decision
    uses; the only place those defaults are applied."""

    def fill(e: ErrorRule) -> ErrorRule:
        changes: dict[str, object] = {}
        if e.kind in _TIMEOUT_KINDS and e.timeout_s is None:
            changes["timeout_s"] = DEFAULT_TIMEOUT_S
        elif e.kind == "http_429" and e.retry_after_s is None:
            changes["retry_after_s"] = DEFAULT_RETRY_AFTER_S
        elif e.kind == "stale_read" and e.lag_s is None:
            changes["lag_s"] = DEFAULT_LAG_S
        elif e.kind == "duplicate" and e.times is None:
            changes["times"] = 1
        return msgspec.structs.replace(e, **changes) if changes else e

    errors = tuple(fill(e) for e in rule.errors)
    script = tuple((k, fill(e)) for k, e in rule.script)
    if errors == rule.errors and script == rule.script:
        return rule
    return msgspec.structs.replace(rule, errors=errors, script=script)


# ---------------------------------------------------------------------------------------------
# Draws and windows
# ---------------------------------------------------------------------------------------------


def _fits(kind: str, op: OperationSpec) -> bool:
    allowed = APPLIES_TO.get(kind)
    return allowed is None or op.kind in allowed


def _latency_s(rule: FaultRule, u: float) -> float:
    lat = rule.latency
    if lat is None:
        return 0.0
    if lat.dist == "uniform":
        ms = lat.lo_ms + (lat.hi_ms - lat.lo_ms) * u
    elif lat.dist == "lognormal":
        # Inverse CDF instead of rng.lognormvariate: one draw per call, whatever the value,
        # so the draw count never depends on the distribution.
        mu = math.log(lat.p50_ms)
        sigma = (math.log(lat.p99_ms) - mu) / _Z99
        ms = math.exp(mu + sigma * _NORMAL.inv_cdf(min(max(u, 1e-12), 1 - 1e-12)))
    else:
        ms = lat.lo_ms
    return ms / 1000.0


def _rate_limited(
    calls: int, per_seconds: float, now: datetime, recent: Sequence[datetime]
) -> float | None:
    """Seconds until a call at `now` would be admitted, or None if it is admitted now.

    Sliding window: a call counts while it started less than `per_seconds` ago. The wait is
    rounded up to whole seconds (HTTP Retry-After is an integer), so a caller that waits it
    out is always admitted.
    """
    ages = sorted(((now - t).total_seconds() for t in recent), reverse=True)
    inside = [a for a in ages if a < per_seconds]  # oldest first
    if len(inside) < calls:
        return None
    if calls <= 0:
        return float(max(1, math.ceil(per_seconds)))
    # Admitted once at most calls-1 remain: the (n-calls+1)-th oldest must leave the window.
    age = inside[len(inside) - calls]
    return float(max(1, math.ceil(per_seconds - age - 1e-9)))


def created_field(record: RecordSpec) -> str | None:
    """The datetime field `not_found_if_newer_than` compares with: the first datetime field
    whose name contains "created", else "placed", else ends in "_at", else the first datetime
    field at all (faultbench 0.1 always took the first one). None when the record has no
    datetime field."""
    fields = [f.name for f in record.fields if f.kind == "datetime"]
    for test in (
        lambda n: "created" in n,
        lambda n: "placed" in n,
        lambda n: n.endswith("_at"),
        lambda n: True,
    ):
        for name in fields:
            if test(name):
                return name
    return None


# ---------------------------------------------------------------------------------------------
# What the agent reads. Modelled on the status lines and bodies real HTTP APIs and gateways
# return, so an agent's error handling is exercised the way production exercises it.
# ---------------------------------------------------------------------------------------------


def _secs(s: float) -> str:
    return f"{s:g}s"


def fault_message(
    decision: FaultDecision,
    op: OperationSpec,
    rule: FaultRule,
    *,
    record: RecordSpec | None = None,
    target_id: str | None = None,
) -> str:
    name = op.qualname
    kind = decision.kind
    if kind in _TIMEOUT_KINDS:
        return f"504 Gateway Timeout: {name} did not answer within {_secs(decision.timeout_s)}"
    if kind == "http_500":
        return f"500 Internal Server Error: {name} failed with an unexpected error"
    if kind == "http_502":
        return f"502 Bad Gateway: the upstream server for {name} sent an invalid response"
    if kind == "http_503":
        return f"503 Service Unavailable: {name} is temporarily unavailable; try again later"
    if kind == "http_429":
        return (
            f"429 Too Many Requests: {name} is rate limited; "
            f"retry after {_secs(decision.retry_after_s or DEFAULT_RETRY_AFTER_S)}"
        )
    if kind == "rate_limit":
        rl = rule.rate_limit
        assert rl is not None
        return (
            f"429 Too Many Requests: rate limit of {rl.calls} calls per "
            f"{_secs(rl.per_seconds)} exceeded for {name}; "
            f"retry after {_secs(decision.retry_after_s or 0)}"
        )
    if kind == "not_found":
        return not_found_text(name, record.name if record is not None else op.record, target_id)
    raise AssertionError(f"no message for success kind {kind!r}")
