"""The statistics of the pass-rate gate: a Wilson interval, pass^k, and when an outcome is
decided. Pure functions of counts; nothing here knows about pytest.

A run either passed or failed; `min_pass_rate` r over n planned runs asks for at least
`required_passes(r, n)` passes. Runs skipped by early stop still count as planned: they were
skipped because their outcome could not change the gate's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Gate", "decide", "decided", "pass_hat_k", "required_passes", "wilson_interval"]

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
        return self.passed >= required_passes(self.min_pass_rate, self.planned)

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
        parts.append(f"min_pass_rate={_pct(self.min_pass_rate)} -> {'PASS' if self.ok else 'FAIL'}")
        line = " ".join(parts)
        if self.stopped:
            line += f" (outcome decided after {_runs(self.ran)}; {self.stopped} skipped)"
        return line


def decide(
    passed: int, failed: int, stopped: int, min_pass_rate: float | None, errors: int = 0
) -> Gate:
    """The gate for these counts; no `min_pass_rate` means every run must pass, and a run
    with a set-up problem (`errors`) fails it whatever the rate."""
    return Gate(passed, failed, stopped, 1.0 if min_pass_rate is None else min_pass_rate, errors)


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
