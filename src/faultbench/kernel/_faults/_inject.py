"""Fault decisions for calls that are not tools of a world file: `fault_inject`'s plan.

`faultbench.testing.fault_inject` wraps any Python callable. Its decisions come from the same
`FaultPlan` as a world's, over a `FaultTarget` (a name, no `OperationSpec`), so they follow
the same rules: the k-th call's fault is a pure function of (seed, run, target, k) and the
rule; latency is drawn from the same generator; the kinds, their defaults and what the caller
reads come from the one registry (`_kinds.py`). Only kinds that fail the call fit a
plain function (there is no record to read stale, no write to duplicate).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from .._errors import InjectedFault
from ._kinds import KINDS
from ._plan import FaultDecision, FaultPlan, FaultTarget
from ._types import ErrorRule, FaultRule, Latency

__all__ = ["INJECTABLE_KINDS", "InjectionPlan"]

#: The kinds a plain function can be given: the configurable ones that fail the call.
INJECTABLE_KINDS: tuple[str, ...] = tuple(k.name for k in KINDS if k.configurable and k.fails)


class InjectionPlan:
    """The faults of one wrapped callable, named `target` ("service.name").

    `errors`: kind -> probability per call (summing to at most 1); `latency_ms`: (lo, hi),
    drawn uniformly per call. `decide(k, seed=, run=, now=)` is the k-th (1-based) call's
    decision, or None for a call that runs untouched."""

    __slots__ = ("_plans", "_rules", "target")

    def __init__(
        self,
        target: str,
        *,
        errors: Mapping[str, float],
        latency_ms: tuple[float, float] | None = None,
    ) -> None:
        service, _, name = target.rpartition(".")
        if not name or not service:
            raise ValueError(
                f"Expected a target named service.name (e.g. 'weather.lookup'). Instead, "
                f"received: {target!r}"
            )
        self.target = FaultTarget(service=service, name=name, kind="custom")
        rules: list[ErrorRule] = []
        for kind, p in errors.items():
            if kind not in INJECTABLE_KINDS:
                raise ValueError(
                    f"Expected an error kind that fails a call ({', '.join(INJECTABLE_KINDS)}). "
                    f"Instead, received: {kind!r}"
                )
            if isinstance(p, bool) or not isinstance(p, int | float) or not 0 <= p <= 1:
                raise ValueError(
                    f"Expected a probability 0 <= p <= 1 for {kind}. Instead, received: {p!r}"
                )
            if p > 0:
                rules.append(ErrorRule(kind=kind, p=float(p)))
        total = sum(e.p for e in rules)
        if total > 1 + 1e-9:
            raise ValueError(
                "Expected error probabilities summing to at most 1 (they are the chances of "
                f"mutually exclusive outcomes of one call). Instead, they sum to {total:g}."
            )
        latency = None
        if latency_ms is not None:
            lo, hi = (float(x) for x in latency_ms)
            if not 0 <= lo <= hi:
                raise ValueError(
                    f"Expected latency bounds 0 <= lo <= hi (ms). Instead, received: {latency_ms!r}"
                )
            if hi > 0:
                latency = Latency("uniform", lo_ms=lo, hi_ms=hi)
        self._rules = {self.target.qualname: FaultRule(latency=latency, errors=tuple(rules))}
        self._plans: dict[tuple[int, int], FaultPlan] = {}

    def decide(self, k: int, *, seed: int, run: int, now: datetime) -> FaultDecision | None:
        plan = self._plans.get((seed, run))
        if plan is None:
            plan = self._plans[(seed, run)] = FaultPlan(self._rules, seed, run)
        return plan.decide(self.target, k, now=now)

    def error(self, decision: FaultDecision) -> InjectedFault:
        """The exception a failing decision raises: the kind, and the message a world's tool
        would answer with."""
        return InjectedFault(decision.message, kind=decision.kind)
