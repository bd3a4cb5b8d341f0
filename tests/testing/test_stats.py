"""The gate's statistics, against values computed by hand."""

from __future__ import annotations

import math

import pytest

from faultbench.testing import decide, pass_hat_k, required_passes, wilson_interval
from faultbench.testing._gate._stats import decided


def test_wilson_interval_matches_the_textbook_values():
    lo, hi = wilson_interval(17, 20)
    assert (round(lo, 4), round(hi, 4)) == (0.6396, 0.9476)
    lo, hi = wilson_interval(20, 20)  # all passed: the interval still admits failures
    assert round(lo, 4) == 0.8389
    assert hi == 1.0
    assert wilson_interval(0, 10)[0] == 0.0
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="passed=5, n=3"):
        wilson_interval(5, 3)


def test_pass_hat_k_is_the_unbiased_estimator():
    assert pass_hat_k(17, 20, 3) == pytest.approx(math.comb(17, 3) / math.comb(20, 3))
    assert pass_hat_k(20, 20, 3) == 1.0
    assert pass_hat_k(2, 20, 3) == 0.0
    assert pass_hat_k(2, 2, 3) is None
    assert pass_hat_k(7, 10, 1) == pytest.approx(0.7)


def test_required_passes_is_exact_despite_float_error():
    assert required_passes(0.95, 20) == 19  # 0.95 * 20 == 18.999999999999996
    assert required_passes(0.9, 10) == 9
    assert required_passes(1.0, 7) == 7
    assert required_passes(0.0, 7) == 0
    assert required_passes(1 / 3, 3) == 1


def test_decided_when_no_remaining_run_can_change_the_verdict():
    # 10 runs, 50% needed: 5 passes decide it; so do 6 failures; 5 failures do not
    assert decided(5, 0, 10, 0.5)
    assert decided(0, 6, 10, 0.5)
    assert not decided(4, 5, 10, 0.5)
    assert decided(0, 1, 10, 1.0)  # every run must pass: the first failure decides


def test_gate_line():
    gate = decide(17, 3, 0, 0.95)
    assert not gate.ok
    assert gate.line() == (
        "17/20 passed (85%) [95% CI 64%-94.8%] pass^3=59.6% min_pass_rate=95% -> FAIL"
    )
    assert (
        decide(2, 0, 0, None).line()
        == "2/2 passed (100%) [95% CI 34.2%-100%] min_pass_rate=100% -> PASS"
    )
    stopped = decide(5, 0, 5, 0.5)
    assert stopped.ok
    assert stopped.planned == 10
    assert stopped.line().endswith("-> PASS (outcome decided after 5 runs; 5 skipped)")


def test_mean_score_interval_is_the_student_t_interval_by_hand():
    from faultbench.testing._gate._stats import mean_interval, t95

    # scores 1, 1, .5, .5, .75: mean .75, sample sd sqrt(.25 / 4) = .25, t(4) = 2.776
    half = 2.776 * 0.25 / math.sqrt(5)  # 0.310366...
    lo, hi = mean_interval([1.0, 1.0, 0.5, 0.5, 0.75])
    assert lo == pytest.approx(0.75 - half)
    assert lo == pytest.approx(0.439634, abs=1e-6)
    assert hi == 1.0  # .75 + .31 clipped to [0, 1]
    # one score has no spread: the interval says nothing
    assert mean_interval([0.4]) == (0.0, 1.0)
    assert t95(1) == 12.706
    assert t95(30) == 2.042
    assert t95(60) == pytest.approx(2.0003, abs=1e-3)  # the table's 2.000
    assert t95(120) == pytest.approx(1.9799, abs=1e-3)


def test_the_gate_needs_the_mean_score_too():
    scores = (1.0, 1.0, 0.5, 0.5, 0.75)
    gate = decide(5, 0, 0, None, 0, scores, 0.8)
    assert gate.mean_score == pytest.approx(0.75)
    assert not gate.ok
    assert gate.line() == (
        "5/5 passed (100%) [95% CI 56.6%-100%] pass^3=100% min_pass_rate=100%; "
        "mean score 0.75 [95% CI 0.44-1.00] min_mean_score=0.8 -> FAIL"
    )
    assert decide(5, 0, 0, None, 0, scores, 0.75).ok
    assert not decide(5, 0, 0, None, 0, (), 0.5).ok  # no scores: nothing reaches it
