"""Gates that could only pass by saying nothing, refused at collection: a `min_pass_rate`
over fewer runs than it takes to tolerate one failure, and a mark from another plugin's
vocabulary (`repeat`, `count`...) on a test that carries faultbench's markers, which pytest
would only warn about while the test runs once."""

from __future__ import annotations

import math
from typing import Any

from ._runs import MARKERS
from ._stats import required_passes

__all__ = ["foreign_mark", "gate_too_small", "least_runs"]

#: marks other plugins repeat a test with; on a faultbench test, `runs` is the one that counts
REPEATS = frozenset({"repeat", "count", "flaky", "iterations", "rerun", "reruns", "retry"})
#: the marks of async plugins: without their plugin, a run says so itself (`_plugin/_async.py`)
ASYNC_MARKS = frozenset({"asyncio", "trio", "anyio"})


def least_runs(rate: float) -> int:
    """The fewest runs over which `min_pass_rate(rate)` tolerates a failing run."""
    return max(2, math.ceil(1 / (1 - rate) - 1e-9))


def gate_too_small(rate: float | None, runs: int) -> str | None:
    """Why a gate of `rate` over `runs` runs decides nothing (every run must pass, as without
    the rate), or None."""
    if rate is None or not 0 < rate < 1 or required_passes(rate, runs) < runs:
        return None
    least = least_runs(rate)
    plural = "s" if runs != 1 else ""
    return (
        f"@pytest.mark.min_pass_rate({rate:g}) over {runs} run{plural}: every run must pass "
        f"({runs} of {runs}), so the rate never tolerates a failure and the gate's figure "
        f"means nothing. It needs at least {least} runs: @pytest.mark.runs({least}) (or "
        f"--runs {least}), or drop min_pass_rate."
    )


def foreign_mark(name: str, registered: set[str], node: Any) -> str | None:
    """Why the unregistered mark `name` on `node` is an error (None: it is not): a test with
    faultbench's markers is one whose runs and gate they decide, and an unknown mark there
    (pytest-repeat's `repeat`, `count`...) silently drops what it asks for."""
    if name in registered or name in MARKERS or name in ASYNC_MARKS:
        return None
    if not any(node.get_closest_marker(ours) is not None for ours in MARKERS):
        return None
    if name in REPEATS:
        return (
            f"unknown marker @pytest.mark.{name}: no plugin registered it, so pytest ignores it "
            "and the test runs once. faultbench runs a test n times with @pytest.mark.runs(n) "
            "(each run a fresh world with its own fault draws, under one gate)."
        )
    return (
        f"unknown marker @pytest.mark.{name} on a test with faultbench's markers: no plugin "
        "registered it, so pytest ignores what it asks for. To run the test n times, use "
        f"@pytest.mark.runs(n); if the mark is your own, register it (markers = {name}: ... "
        "in pytest.ini)."
    )
