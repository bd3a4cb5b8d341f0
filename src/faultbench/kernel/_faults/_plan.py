"""The fault plan: what goes wrong with one call, decided before the call runs.

A `FaultPlan` is pure. Given the world's fault rules, seed and run index, the decision for the
k-th valid call to an operation depends only on::

    (seed, run, "service.operation", k)  +  the merged rule of that operation
    +  the virtual time of the call, the times of that operation's earlier calls (rate limits)
       and the target record's creation time (`not_found_if_newer_than`)

and the last three come from the world's event log, so a replay or a fork sees the same
inputs. Randomness is two uniform draws per call taken from a BLAKE2b digest of the first
four, never `hash()` (randomized per process) and never a shared generator (whose position
would depend on every other operation's calls). So adding a call to `get_order` never changes
what happens to the 3rd `issue_refund`, and a failing run can be replayed with its faults
pinned. The call pipeline (`_pipeline.py`) executes decisions; nothing here touches a world.

What a kind commits, which options it carries and what the agent reads come from the kind
registry (`_kinds.py`); the merged rule comes from `_rules.py`. An operation is an
`OperationSpec` or, for a call without one in a world file, a `FaultTarget`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from statistics import NormalDist
from typing import Any, Protocol

import msgspec

from ._kinds import APPLIES_TO, COMMIT_KINDS, ERROR_KINDS, FAILURE_KINDS, SUCCESS_KINDS
from ._kinds import kind as fault_kind
from ._rules import BY_ID, drawn_rule, effective_rule, fits
from ._types import ErrorRule, FaultRule
from ._window import Window, wait

_LOW64 = (1 << 64) - 1
_UNIT = 1.0 / (1 << 53)  # 53 random bits -> a float in [0, 1), every value as likely

__all__ = [
    "APPLIES_TO",
    "COMMIT_KINDS",
    "FAILURE_KINDS",
    "SUCCESS_KINDS",
    "FaultDecision",
    "FaultPlan",
    "FaultTarget",
    "created_field",
    "effective_rule",
    "fault_message",
]

#: The cumulative error draw walks kinds in this fixed order, not in the order the file lists
#: them (nor the order merging left them in), so reordering keys never changes a run.
_KIND_ORDER = {name: i for i, name in enumerate(ERROR_KINDS)}

# z-score of the 99th percentile of the standard normal: p99 = exp(mu + Z99 * sigma)
_Z99 = 2.3263
_EMPTY_RULE = FaultRule()
_NORMAL = NormalDist()


class FaultTarget(msgspec.Struct, frozen=True):
    """What the plan needs to know of an operation, for calls that have no `OperationSpec`
    from a world file. An `OperationSpec` has the same attributes and works as well."""

    service: str
    name: str
    kind: str  # get, list, create, update, delete, custom
    record: str | None = None  # named in not-found messages

    @property
    def qualname(self) -> str:
        return f"{self.service}.{self.name}"


class Target(Protocol):
    """An operation as the plan sees it: a `FaultTarget`, or an `OperationSpec` of a world
    file, which has the same attributes (the spec is a later stage than faults, so it is not
    named here)."""

    @property
    def service(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def record(self) -> str | None: ...
    @property
    def qualname(self) -> str: ...


class _Field(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...


class RecordShape(Protocol):
    """A record as `not_found_if_newer_than` sees it: its fields' names and kinds (a
    `RecordSpec` of a world file)."""

    @property
    def name(self) -> str: ...
    @property
    def fields(self) -> Sequence[_Field]: ...


class FaultDecision(msgspec.Struct, frozen=True):
    """What the plan decided for one call. `kind is None` means latency only."""

    latency_s: float = 0.0  # virtual duration of the call itself
    kind: str | None = None  # a `_kinds.KINDS` name, or None
    commit: bool = False  # does the operation run (and its writes stay) despite the fault?
    timeout_s: float = 0.0  # timeout kinds: virtual seconds the caller waited in vain
    # The kinds' options (`FaultKind.options`): each is set by the kinds that have it.
    retry_after_s: float | None = None  # http_429 / rate_limit
    lag_s: float | None = None  # stale_read: how old the state answered from is
    times: int = 1  # duplicate: extra applications of the write
    delay_s: float | None = None  # delayed: events younger than this are held back
    field: str | None = None  # inject: where the text goes (None: after the answer's text)
    template: str | None = None  # inject: the template's name
    payload: str | None = None  # inject: the text (None: the template's)
    change: str | None = None  # schema_violation: "missing" (default) or "wrong_type"
    tool: str | None = None  # tool-surface kinds: the tool that changes (None: the one called)
    description: str | None = None  # rug_pull / tool_added: the new description
    arg: str | None = None  # renamed_args: the argument renamed (None: the first)
    to: str | None = None  # renamed_args: its new name
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
        """The parameters worth recording in a `FaultInjected` event: the source, the commit
        and the kind's options."""
        out: dict[str, object] = {"source": self.source, "commit": self.commit}
        if self.kind is not None:
            for option in fault_kind(self.kind).options:
                out[option.name] = getattr(self, option.name)
        return out


class FaultPlan:
    """Decides faults for a world's calls. Pure: no clock reads, no shared random state."""

    __slots__ = ("_active", "_keys", "_merged", "enabled", "rules", "run", "seed")

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
        #: qualname -> the draw key up to k, encoded (`draws`)
        self._keys: dict[str, bytes] = {}

    def rule_for(self, op: Target) -> FaultRule:
        """The rule the plan draws from for one operation: merged (default -> service.* ->
        service.operation), defaults written out, errors in the fixed draw order
        (ERROR_KINDS). It keeps kinds that cannot happen to the operation: their share of
        the draw runs the call normally (see `effective_rule` for what can happen)."""
        rule = self._merged.get(op.qualname)
        if rule is None:
            rule = drawn_rule(self.rules, op)
            errors = tuple(sorted(rule.errors, key=lambda e: _KIND_ORDER[e.kind]))
            if errors != rule.errors:
                rule = msgspec.structs.replace(rule, errors=errors)
            self._merged[op.qualname] = rule
        return rule

    def may_fault(self, op: Target) -> bool:
        """False when the plan surely leaves `op` alone: the plan is off, or the merged rule
        of `op` does nothing (no latency, errors, limits or script). Cheap after the first
        call, so the fault-free path of a call can skip `decide`."""
        if not self.enabled:
            return False
        active = self._active.get(op.qualname)
        if active is None:
            rule = self.rule_for(op)
            active = self._active[op.qualname] = (
                msgspec.structs.replace(rule, loc=None) != _EMPTY_RULE
            )
        return active

    def effective_rule(self, op: Target) -> FaultRule:
        """What can happen to `op` under this plan; see `effective_rule`."""
        return effective_rule(self.rules, op)

    def draws(self, op: Target, k: int) -> tuple[float, float]:
        """The k-th call's two uniform draws in [0, 1) (error, then latency): a function of
        (seed, run, operation, k) only. Both come straight from one 16-byte BLAKE2b digest
        (53 bits of each half, as `random.random()` has), which costs a seventh of seeding a
        `random.Random` per call."""
        return self._draws(op.qualname, k)

    def _draws(self, qualname: str, k: int) -> tuple[float, float]:
        prefix = self._keys.get(qualname)
        if prefix is None:
            key = f"faultbench-fault-v2\x1f{self.seed}\x1f{self.run}\x1f{qualname}\x1f"
            prefix = self._keys[qualname] = key.encode()
        digest = hashlib.blake2b(prefix + b"%d" % k, digest_size=16).digest()
        # bits 127..75 are the top 53 of the first 8 bytes; bits 63..11 those of the last 8
        x = int.from_bytes(digest, "big")
        return (x >> 75) * _UNIT, ((x & _LOW64) >> 11) * _UNIT

    def decide(
        self,
        op: Target,
        k: int,
        *,
        now: datetime,
        recent: Window | Sequence[datetime] = (),
        record_time: datetime | None = None,
        record: RecordShape | None = None,
        target_id: str | None = None,
    ) -> FaultDecision | None:
        """Decide the fault for the k-th (1-based) valid call to `op`, made at virtual `now`.

        `recent`: the earlier calls to `op` that were not answered 429: the state's window
        (a `Window` over `State.admitted[tool]`, see `_window.py`), or their start times as a
        plain sequence (only those inside the rate-limit window matter). `record_time`: creation time of the record a
        get/update/delete targets (see `created_field`), for `not_found_if_newer_than`.
        `record` / `target_id` only make the not-found message precise.

        Precedence: a `script` entry for k decides the fault instead of everything else; then
        the rate limit; then `not_found_if_newer_than`; then the probabilistic `errors`. Both
        random draws (error, then latency) are always taken, so whichever of these decides,
        the latency of call k is the same.
        """
        qualname = op.qualname
        active = self._active.get(qualname) if self.enabled else False
        if active is None:
            active = self.may_fault(op)
        if not active:
            return None
        rule = self._merged[qualname]

        u_error, u_latency = self._draws(qualname, k)
        latency_s = _latency_s(rule, u_latency)

        chosen: ErrorRule | None = None
        source: str | None = None
        kind: str | None = None
        retry_after: float | None = None
        for script_k, entry in rule.script:
            # An entry that cannot happen to this operation (a `default:` script's duplicate,
            # on a read) is no entry: the call goes through the rules as usual.
            if script_k == k and fits(entry.kind, op):
                chosen, source = entry, "script"
                break
        if chosen is None and rule.rate_limit is not None:
            limit = rule.rate_limit
            if isinstance(recent, Window):
                retry_after = wait(recent.head, limit.calls, limit.per_seconds, now)
            else:
                retry_after = _rate_limited(limit.calls, limit.per_seconds, now, recent)
            if retry_after is not None:
                kind, source = "rate_limit", "rate_limit"
        threshold = rule.not_found_if_newer_than_s
        if (
            source is None
            and threshold is not None
            and op.kind in BY_ID
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
            if not fits(kind, op):  # drawn where it cannot happen: the call runs normally
                chosen = kind = source = None
        if kind is None:
            if latency_s == 0.0:
                return None
            return FaultDecision(latency_s=latency_s, k=k)

        spec = fault_kind(kind)
        commit = spec.default_commit
        if chosen is not None and chosen.commit is not None:
            commit = chosen.commit
        # The kind's options come from the rule (rule_for wrote every default out), or, for a
        # kind no rule names (rate_limit), from what the plan computed.
        computed = {"retry_after_s": retry_after}
        options: dict[str, Any] = {
            o.name: getattr(chosen, o.name) if chosen is not None else computed.get(o.name)
            for o in spec.options
        }
        decision = FaultDecision(
            latency_s=latency_s, kind=kind, commit=commit, source=source, k=k, **options
        )
        if spec.fails:
            message = fault_message(decision, op, rule, record=record, target_id=target_id)
            decision = msgspec.structs.replace(decision, message=message)
        return decision


# ---------------------------------------------------------------------------------------------
# Draws and windows
# ---------------------------------------------------------------------------------------------


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


def created_field(record: RecordShape) -> str | None:
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


def fault_message(
    decision: FaultDecision,
    op: Target,
    rule: FaultRule,
    *,
    record: RecordShape | None = None,
    target_id: str | None = None,
) -> str:
    """What the agent reads for a failing decision (`FaultKind.message`)."""
    message = fault_kind(decision.kind).message if decision.kind is not None else None
    if message is None:
        raise AssertionError(f"no message for success kind {decision.kind!r}")
    if record is not None and record.name != op.record:
        op = FaultTarget(op.service, op.name, op.kind, record.name)
    return message(decision, op, rule, target_id)
