"""The statistics of the pass-rate gate: a Wilson interval, pass^k, and when an outcome is
decided. Pure functions of counts; nothing here knows about pytest.

A run either passed or failed; `min_pass_rate` r over n planned runs asks for at least
`required_passes(r, n)` passes. Runs skipped by early stop still count as planned: they were
skipped because their outcome could not change the gate's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "Gate",
    "decide",
    "decided",
    "mean_interval",
    "pass_hat_k",
    "required_passes",
    "t95",
    "wilson_interval",
]

#: z for a two-sided 95% interval
Z95 = 1.959963984540054


def wilson_interval(passed: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for a pass rate of `passed`/`n` (95% by default).

    Unlike the normal approximation it stays inside [0, 1] and is honest for small n and for
    rates near 0 or 1: 20/20 passes give [84%, 100%], not [100%, 100%]. No runs: [0, 1].
    """
    if n <= 0:
        return (0.0, 1.0)
    if not 0 <= passed <= n:
        raise ValueError(f"Expected 0 <= passed <= n. Instead, received: passed={passed}, n={n}")
    p = passed / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


#: two-sided 95% critical values of Student's t, by degrees of freedom 1..30
_T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t95(df: int) -> float:
    """The two-sided 95% critical value of Student's t with `df` degrees of freedom: the
    table for 1..30, then the Cornish-Fisher expansion around z (off by < 0.001 from 31 on)."""
    if df < 1:
        raise ValueError(f"Expected df >= 1. Instead, received: {df}")
    if df <= len(_T95):
        return _T95[df - 1]
    z = Z95
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df * df)


def mean_interval(scores: list[float]) -> tuple[float, float]:
    """The 95% Student-t interval of the mean of per-run scores in [0, 1], clipped to [0, 1]:
    mean ± t(n-1) · s / √n with s the sample standard deviation. One score: [0, 1] (no
    spread to estimate); none: [0, 1]."""
    n = len(scores)
    if n < 2:
        return (0.0, 1.0)
    mean = sum(scores) / n
    s = math.sqrt(sum((x - mean) ** 2 for x in scores) / (n - 1))
    half = t95(n - 1) * s / math.sqrt(n)
    return (max(0.0, mean - half), min(1.0, mean + half))


def pass_hat_k(passed: int, n: int, k: int) -> float | None:
    """pass^k: the chance that k runs in a row all pass, estimated without bias from `passed`
    of `n` runs as C(passed, k) / C(n, k) (tau-bench's estimator). None when n < k.

    pass^1 is the pass rate; pass^k falls fast when runs fail at random, which is what an
    agent that must get it right every time (a refund, a deploy) cares about.
    """
    if k <= 0:
        raise ValueError(f"Expected k >= 1. Instead, received: {k}")
    if n < k:
        return None
    return math.comb(passed, k) / math.comb(n, k)


def required_passes(min_pass_rate: float, planned: int) -> int:
    """The fewest passes out of `planned` runs whose rate is at least `min_pass_rate`."""
    # The epsilon absorbs float error: 0.95 * 20 is 18.999999999999996 and needs 19.
    return max(0, math.ceil(min_pass_rate * planned - 1e-9))


def decided(passed: int, failed: int, planned: int, min_pass_rate: float) -> bool:
    """True when no outcome of the runs still to come can change the gate's verdict."""
    required = required_passes(min_pass_rate, planned)
    return passed >= required or failed > planned - required


@dataclass(frozen=True)
class Gate:
    """The verdict on one group of runs (a test, or one parameter set of it)."""

    passed: int
    failed: int
    #: runs skipped because the outcome was already decided (early stop)
    stopped: int
    min_pass_rate: float
    #: runs that never reached the agent (a set-up problem): any one fails the gate
    errors: int = 0
    #: the milestone scores of the runs that ran (docs/CHECKS.md), and the mean they need
    scores: tuple[float, ...] = ()
    min_mean_score: float | None = None
    #: the group's figures over its `budget(per="group")`, one line each (empty: within it)
    over_budget: tuple[str, ...] = ()

    @property
    def mean_score(self) -> float | None:
        return sum(self.scores) / len(self.scores) if self.scores else None

    @property
    def score_ok(self) -> bool:
        if self.min_mean_score is None:
            return True
        mean = self.mean_score
        return mean is not None and mean >= self.min_mean_score - 1e-9

    @property
    def ran(self) -> int:
        return self.passed + self.failed

    @property
    def planned(self) -> int:
        return self.passed + self.failed + self.stopped

    @property
    def rate(self) -> float:
        return self.passed / self.ran if self.ran else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.passed, self.ran)

    @property
    def ok(self) -> bool:
        if self.errors:
            return False
        return (
            self.passed >= required_passes(self.min_pass_rate, self.planned)
            and self.score_ok
            and not self.over_budget
        )

    def line(self) -> str:
        """`17/20 passed (85%) [95% CI 64%-95%] pass^3=60% min_pass_rate=95% -> FAIL`"""
        if self.errors:
            total = self.planned + self.errors
            return (
                f"set-up problem in {self.errors} of {total} run{'s' if total != 1 else ''} "
                f"-> FAIL (not an agent failure: {'that run' if self.errors == 1 else 'those runs'} "
                f"never reached the agent; {self.passed} passed, {self.failed} failed, "
                f"{self.stopped} skipped; min_pass_rate={_pct(self.min_pass_rate)} does not "
                "apply until the set-up works)"
            )
        lo, hi = self.interval
        parts = [
            f"{self.passed}/{self.ran} passed ({_pct(self.rate)})",
            f"[95% CI {_pct(lo)}-{_pct(hi)}]",
        ]
        if self.ran >= 3:
            p3 = pass_hat_k(self.passed, self.ran, 3)
            parts.append(f"pass^3={_pct(p3 or 0.0)}")
        parts.append(f"min_pass_rate={_pct(self.min_pass_rate)}")
        mean = self.mean_score
        if mean is not None or self.min_mean_score is not None:
            lo_s, hi_s = mean_interval(list(self.scores))
            parts[-1] += ";"
            parts.append(
                f"mean score {mean:.2f} [95% CI {lo_s:.2f}-{hi_s:.2f}]"
                if mean is not None
                else "no milestone scores"
            )
            if self.min_mean_score is not None:
                parts.append(f"min_mean_score={self.min_mean_score:g}")
        if self.over_budget:
            parts[-1] += ";"
            parts.append(f"group over budget: {', '.join(self.over_budget)}")
        parts.append(f"-> {'PASS' if self.ok else 'FAIL'}")
        line = " ".join(parts)
        if self.stopped:
            line += f" (outcome decided after {_runs(self.ran)}; {self.stopped} skipped)"
        return line


def decide(
    passed: int,
    failed: int,
    stopped: int,
    min_pass_rate: float | None,
    errors: int = 0,
    scores: tuple[float, ...] = (),
    min_mean_score: float | None = None,
    over_budget: tuple[str, ...] = (),
) -> Gate:
    """The gate for these counts; no `min_pass_rate` means every run must pass, and a run
    with a set-up problem (`errors`) fails it whatever the rate. With `min_mean_score`, the
    mean of the runs' milestone `scores` must reach it too."""
    rate = 1.0 if min_pass_rate is None else min_pass_rate
    return Gate(passed, failed, stopped, rate, errors, scores, min_mean_score, over_budget)


def _pct(x: float) -> str:
    """A percentage as people write it: 85%, 97.5%, 100%; never 100% for less than 1."""
    value = x * 100
    if value != round(value) and abs(value - round(value)) > 1e-9:
        text = f"{value:.1f}".rstrip("0").rstrip(".")
        if text == "100":
            text = "99.9"
        return text + "%"
    return f"{round(value)}%"


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"
