"""Paired comparison of two agents on the same runs, and how many runs a question needs.

Run k of agent A and run k of agent B meet the same faults (the plan draws from (seed, run,
operation, k), whoever the agent is): common random numbers. So the runs pair up, and the
comparison counts the pairs, not two separate pass rates:

    both pass (a)   only A passes (b)   only B passes (c)   both fail (d)

The difference in pass rate (B - A) is (c - b) / n. Its 95% interval is Newcombe's hybrid
score interval for paired proportions (Newcombe 1998, method 10: the two Wilson intervals
joined with the pairs' phi correlation); the exact McNemar p-value is the two-sided binomial
tail of the discordant pairs, min(1, 2 P(X <= min(b, c))) with X ~ Binomial(b + c, 1/2),
computed with `math.comb` (no scipy).

`runs_for_margin` is the smallest n whose Wilson interval around an observed `rate` reaches at
most `margin` from it on either side; `paired_runs` the pairs needed to detect a difference `diff` given the share of
discordant pairs (Connor 1987), at 95% confidence and 80% power.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist

from ._stats import wilson_interval as wilson

__all__ = ["Paired", "mcnemar_exact", "newcombe_interval", "paired_runs", "runs_for_margin"]

_Z95 = NormalDist().inv_cdf(0.975)
_Z80 = NormalDist().inv_cdf(0.80)


def mcnemar_exact(b: int, c: int) -> float:
    """The two-sided exact McNemar p-value of b and c discordant pairs."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / float(2**n))


def newcombe_interval(a: int, b: int, c: int, d: int, z: float = _Z95) -> tuple[float, float]:
    """95% interval of p_B - p_A, with p_A = (a + b) / n and p_B = (a + c) / n."""
    n = a + b + c + d
    if n == 0:
        return (-1.0, 1.0)
    p1, p2 = (a + c) / n, (a + b) / n  # p1: B, p2: A; the difference is p1 - p2
    l1, u1 = wilson(a + c, n, z)
    l2, u2 = wilson(a + b, n, z)
    denom = (a + b) * (c + d) * (a + c) * (b + d)
    phi = (a * d - b * c) / math.sqrt(denom) if denom else 0.0
    theta = p1 - p2
    delta = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    eps = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return (max(-1.0, theta - delta), min(1.0, theta + eps))


@dataclass(frozen=True)
class Paired:
    """The paired result of baseline A and candidate B over the same runs."""

    both_pass: int
    only_a: int
    only_b: int
    both_fail: int

    @classmethod
    def of(cls, a: Mapping[int, bool], b: Mapping[int, bool]) -> Paired:
        """From each agent's outcome (passed?) by run index; runs only one side has are
        left out (they have no pair)."""
        keys = sorted(set(a) & set(b))
        return cls(
            sum(a[k] and b[k] for k in keys),
            sum(a[k] and not b[k] for k in keys),
            sum(b[k] and not a[k] for k in keys),
            sum(not a[k] and not b[k] for k in keys),
        )

    @property
    def n(self) -> int:
        return self.both_pass + self.only_a + self.only_b + self.both_fail

    @property
    def difference(self) -> float:
        """p_B - p_A."""
        return (self.only_b - self.only_a) / self.n if self.n else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return newcombe_interval(self.both_pass, self.only_a, self.only_b, self.both_fail)

    @property
    def p_value(self) -> float:
        return mcnemar_exact(self.only_a, self.only_b)

    def not_worse(self, margin: float) -> bool | None:
        """The gate "B is not worse than A by more than `margin`": True when the interval's
        lower end is above -margin, False when its upper end is below it (B is worse), None
        when the interval straddles it (the runs cannot tell)."""
        lo, hi = self.interval
        if lo > -margin:
            return True
        if hi < -margin:
            return False
        return None

    def lines(self, a: str = "A", b: str = "B", margin: float | None = None) -> list[str]:
        lo, hi = self.interval
        out = [
            f"{self.n} paired runs: both pass {self.both_pass}, only {a} {self.only_a}, "
            f"only {b} {self.only_b}, both fail {self.both_fail}",
            f"pass rate {b} - {a}: {self.difference:+.1%} [95% CI {lo:+.1%} to {hi:+.1%}], "
            f"exact McNemar p = {self.p_value:.4g}",
        ]
        if margin is not None:
            verdict = self.not_worse(margin)
            word = {True: "PASS", False: "FAIL", None: "UNDECIDED"}[verdict]
            out.append(f"gate: {b} not worse than {a} by more than {margin:.1%} -> {word}")
            if verdict is None:
                discordant = (self.only_a + self.only_b) / self.n if self.n else 0.5
                need = paired_runs(margin, max(discordant, margin))
                out.append(
                    f"the {self.n} runs cannot tell; about {need} paired runs would "
                    f"(discordant share {max(discordant, margin):.0%}, 80% power)"
                )
        return out


def runs_for_margin(rate: float, margin: float, z: float = _Z95) -> int:
    """The fewest runs n for which the Wilson 95% interval of an observed rate `rate` lies
    within `margin` of it on both sides, so that a rate `rate` is told apart from a
    threshold `margin` away (above or below) with 95% confidence."""
    if not (0 <= rate <= 1) or not (0 < margin < 1):
        raise ValueError(f"expected 0 <= rate <= 1 and 0 < margin < 1; got {rate}, {margin}")
    if wilson_reach(rate, MAX_PLANNED_RUNS, z) > margin:
        raise ValueError(
            f"a margin of {margin:g} at a rate of {rate:g} needs more than {MAX_PLANNED_RUNS:,} "
            f"runs; expected a margin of at least {_smallest_margin(rate, z):.2g}"
        )
    # The reach shrinks as n grows: step through the first runs (where it is not quite
    # monotone at the ends), then bisect, so a small margin costs ~25 steps, not millions.
    n = 1
    while n < _STEPPED and wilson_reach(rate, n, z) > margin:
        n += 1
    if n < _STEPPED:
        return n
    lo, hi = _STEPPED - 1, MAX_PLANNED_RUNS  # reach(lo) > margin >= reach(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if wilson_reach(rate, mid, z) > margin:
            lo = mid
        else:
            hi = mid
    return hi


#: the most runs `runs_for_margin` plans (a margin needing more is an error, not a wait)
MAX_PLANNED_RUNS = 10_000_000
_STEPPED = 1_000


def _smallest_margin(rate: float, z: float) -> float:
    return wilson_reach(rate, MAX_PLANNED_RUNS, z)


def wilson_reach(p: float, n: int, z: float = _Z95) -> float:
    """How far the Wilson interval at observed rate p over n runs reaches from p: the larger
    of p - lower and upper - p (the interval leans towards 1/2, so the two differ)."""
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(p - (centre - half), centre + half - p)


def paired_runs(diff: float, discordant: float, power: float = 0.8) -> int:
    """Pairs needed for a two-sided 5% McNemar test to detect a difference `diff` in pass
    rate with `power`, when a share `discordant` of the pairs differ (Connor 1987)."""
    if not (0 < diff <= discordant <= 1):
        raise ValueError(
            f"expected 0 < diff <= discordant <= 1; got diff {diff}, discordant {discordant}"
        )
    zb = NormalDist().inv_cdf(power)
    n = (_Z95 * math.sqrt(discordant) + zb * math.sqrt(discordant - diff * diff)) ** 2 / diff**2
    return math.ceil(n)
