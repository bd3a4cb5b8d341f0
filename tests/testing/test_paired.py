"""Paired comparison and run planning: figures checked against values computed by hand here
(binomial tails with math.comb, the Wilson and Newcombe formulas written out)."""

from __future__ import annotations

import math

import pytest

from faultbench.cli import main
from faultbench.testing import Paired, paired_runs, runs_for_margin
from faultbench.testing._artifacts._sessionfile import write_session
from faultbench.testing._gate._report import Group, Run

Z = 1.959963984540054


def wilson(x, n):
    p = x / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


def test_counts_difference_and_exact_mcnemar_by_hand():
    a = {k: k < 12 for k in range(20)}  # A passes runs 0..11
    b = {k: 2 <= k < 19 for k in range(20)}  # B passes runs 2..18
    p = Paired.of(a, b)
    assert (p.both_pass, p.only_a, p.only_b, p.both_fail) == (10, 2, 7, 1)
    assert p.difference == (7 - 2) / 20
    # 9 discordant pairs, 2 on the smaller side: 2 * (C(9,0) + C(9,1) + C(9,2)) / 2^9
    assert p.p_value == 2 * (1 + 9 + 36) / 512 == 0.1796875
    assert Paired(0, 0, 0, 5).p_value == 1.0
    assert Paired(0, 0, 6, 0).p_value == 2 / 64


def test_newcombe_interval_by_hand_and_against_the_published_example():
    a, b, c, d = 10, 2, 7, 1
    n = 20
    pb, pa = (a + c) / n, (a + b) / n
    (l1, u1), (l2, u2) = wilson(a + c, n), wilson(a + b, n)
    phi = (a * d - b * c) / math.sqrt((a + b) * (c + d) * (a + c) * (b + d))
    delta = math.sqrt((pb - l1) ** 2 - 2 * phi * (pb - l1) * (u2 - pa) + (u2 - pa) ** 2)
    eps = math.sqrt((u1 - pb) ** 2 - 2 * phi * (u1 - pb) * (pa - l2) + (pa - l2) ** 2)
    lo, hi = Paired(a, b, c, d).interval
    assert lo == pytest.approx(pb - pa - delta, abs=1e-12)
    assert hi == pytest.approx(pb - pa + eps, abs=1e-12)
    # Newcombe (1998), Table II, example 36/12/2/0, method 10: 0.0569 to 0.3404 for the
    # first proportion minus the second, which is A - B here
    lo, hi = Paired(36, 12, 2, 0).interval
    assert (round(-hi, 4), round(-lo, 4)) == (0.0569, 0.3404)


def test_the_not_worse_gate_decides_or_says_it_cannot():
    assert Paired(18, 0, 1, 1).not_worse(0.2) is True
    assert Paired(2, 15, 0, 3).not_worse(0.05) is False
    undecided = Paired(10, 2, 1, 1)
    assert undecided.not_worse(0.05) is None
    lines = undecided.lines("base", "cand", margin=0.05)
    assert lines[0] == "14 paired runs: both pass 10, only base 2, only cand 1, both fail 1"
    assert lines[2] == "gate: cand not worse than base by more than 5.0% -> UNDECIDED"
    need = paired_runs(0.05, 3 / 14)
    assert lines[3].startswith(f"the 14 runs cannot tell; about {need} paired runs would")


def test_runs_for_margin_is_the_first_n_whose_wilson_interval_fits():
    def reach(p, n):
        lo, hi = wilson(p * n, n)  # the Wilson formula at a continuous observed rate
        return max(p - lo, hi - p)

    n = runs_for_margin(0.95, 0.05)
    assert reach(0.95, n) <= 0.05 < reach(0.95, n - 1)
    assert n == 139
    # at 100% the lower end is n / (n + z^2): within 5% from n = 19 z^2 on, so 73 runs
    assert runs_for_margin(1.0, 0.05) == math.ceil(19 * Z * Z) == 73
    assert runs_for_margin(0.5, 0.1) == 93
    assert reach(0.5, 93) <= 0.1 < reach(0.5, 92)


def test_paired_runs_is_connors_formula():
    # (1.96 sqrt(0.2) + 0.8416 sqrt(0.2 - 0.01))^2 / 0.01
    z80 = 0.8416212335729143
    expected = math.ceil((Z * math.sqrt(0.2) + z80 * math.sqrt(0.19)) ** 2 / 0.01)
    assert paired_runs(0.1, 0.2) == expected == 155
    with pytest.raises(ValueError):
        paired_runs(0.3, 0.2)


def test_faultbench_plan(capsys):
    assert main(["plan", "--rate", "0.95", "--margin", "0.05"]) == 0
    assert capsys.readouterr().out.startswith("139 runs: at a pass rate of 95.0%")
    assert main(["plan", "--diff", "0.1", "--discordant", "0.2"]) == 0
    assert capsys.readouterr().out.startswith("155 paired runs:")
    assert main(["plan", "--rate", "0.95"]) == 2
    assert "--rate and --margin go together" in capsys.readouterr().err


def session(directory, name, passed):
    group = Group(name, len(passed), None)
    for i, ok in enumerate(passed):
        group.runs[i] = Run(f"{name}[run{i}]", i, outcome="passed" if ok else "failed")
    write_session(directory, [group], lambda nodeid: f"pytest {nodeid}")


def test_faultbench_compare_from_two_folders(tmp_path, capsys):
    a = [k < 12 for k in range(20)]
    b = [2 <= k < 19 for k in range(20)]
    session(tmp_path / "a", "test_x.py::test_base", a)
    session(tmp_path / "b", "test_x.py::test_cand", b)
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "test_x.py::test_base (A) vs test_x.py::test_cand (B)"
    assert out[1] == "  20 paired runs: both pass 10, only A 2, only B 7, both fail 1"
    lo, hi = Paired(10, 2, 7, 1).interval
    assert out[2] == (
        f"  pass rate B - A: +25.0% [95% CI {lo:+.1%} to {hi:+.1%}], exact McNemar p = 0.1797"
    )
    # B is better: not worse by more than 5% holds (exit 0); A against B does not (exit 1)
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--margin", "0.05"]) == 0
    assert main(["compare", str(tmp_path / "b"), str(tmp_path / "a"), "--margin", "0.05"]) == 1


def test_the_example_of_docs_testing():
    assert Paired(10, 2, 7, 1).lines("A", "B", margin=0.05) == [
        "20 paired runs: both pass 10, only A 2, only B 7, both fail 1",
        "pass rate B - A: +25.0% [95% CI -3.5% to +49.0%], exact McNemar p = 0.1797",
        "gate: B not worse than A by more than 5.0% -> PASS",
    ]


def test_a_gate_whose_interval_holds_its_threshold_says_how_many_runs_would_tell(pytester):
    from pathlib import Path

    world = Path(__file__).parent / "shop" / "world.yaml"
    pytester.makefile(".yaml", world=world.read_text())
    pytester.makepyfile(
        test_g="""
import pytest

@pytest.mark.world("world.yaml")
@pytest.mark.runs(10)
@pytest.mark.min_pass_rate(0.5)
def test_g(world, faultbench_run):
    assert faultbench_run.index >= 4
"""
    )
    out = pytester.runpytest("-p", "no:cacheprovider").stdout.str()
    # 5 of 9 runs passed (early stop after the 5th pass): 55.6% against 50%, 5.56 points apart
    n = runs_for_margin(5 / 9, 5 / 9 - 0.5)
    assert n > 9
    assert (
        f"    the 9 runs cannot tell 55.6% from min_pass_rate=0.5 with 95% confidence; about "
        f"{n} runs would (faultbench plan --rate 0.556 --margin 0.0556)" in out
    )


COMPARE_SUITE = """
import pytest

# baseline fails runs 0..7, candidate runs 0..1: 8 pairs only the candidate passes
FAILS = {"baseline": range(8), "candidate": range(2)}


@pytest.mark.world("world.yaml")
@pytest.mark.runs(12)
@pytest.mark.min_pass_rate(0)
@pytest.mark.compare(A, B, margin=MARGIN)
@pytest.mark.parametrize("agent", ["baseline", "candidate"])
def test_agents(world, agent, faultbench_run):
    assert faultbench_run.index not in FAILS[agent]
"""


@pytest.mark.parametrize(
    ("a", "b", "margin", "verdict", "ret"),
    [
        ("baseline", "candidate", 0.05, "PASS", 0),
        ("baseline", "candidate", None, None, 0),
        ("candidate", "baseline", 0.05, "FAIL", 1),
    ],
)
def test_the_compare_marker_pairs_the_runs_and_gates(pytester, a, b, margin, verdict, ret):
    from pathlib import Path

    world = Path(__file__).parent / "shop" / "world.yaml"
    pytester.makefile(".yaml", world=world.read_text())
    suite = COMPARE_SUITE.replace("MARGIN", repr(margin)).replace("A, B", f"{a!r}, {b!r}")
    pytester.makepyfile(test_cmp=suite)
    result = pytester.runpytest("-p", "no:cacheprovider")
    out = result.stdout.str()
    # runs 8..11 both pass; 2..7 only the candidate; 0 and 1 neither
    only_a, only_b = (0, 6) if a == "baseline" else (6, 0)
    paired = Paired(4, only_a, only_b, 2)
    lo, hi = paired.interval
    assert f"test_cmp.py::test_agents: {b} against {a}" in out
    assert (
        f"    12 paired runs: both pass 4, only {a} {only_a}, only {b} {only_b}, both fail 2" in out
    )
    sign = "+" if b == "candidate" else "-"
    assert (
        f"    pass rate {b} - {a}: {sign}50.0% [95% CI {lo:+.1%} to {hi:+.1%}], "
        f"exact McNemar p = {2 / 64:.4g}" in out
    )
    if verdict is not None:
        assert f"gate: {b} not worse than {a} by more than 5.0% -> {verdict}" in out
    assert result.ret == ret


def test_the_report_shows_the_discordant_runs_side_by_side(pytester):
    """Runs 2..7: the candidate passes where the baseline fails, under the same faults; the
    report lists exactly those, each side with its outcome, call line and assertion, linked
    to its run (the groups' rids: group 0 is the baseline's, 1 the candidate's)."""
    import json
    import re
    from pathlib import Path

    world = Path(__file__).parent / "shop" / "world.yaml"
    pytester.makefile(".yaml", world=world.read_text())
    suite = COMPARE_SUITE.replace("MARGIN", "0.05").replace("A, B", "'baseline', 'candidate'")
    pytester.makepyfile(test_cmp=suite)
    pytester.runpytest("-p", "no:cacheprovider", "--faultbench-report", "out")
    html = (pytester.path / "out" / "faultbench-report.html").read_text()
    found = re.search(r'<script type="application/json" id="faultbench-data">(.*?)</script>', html)
    assert found is not None
    (comparison,) = json.loads(found.group(1))["comparisons"]
    assert comparison["name"] == "test_cmp.py::test_agents"
    assert (comparison["a"], comparison["b"]) == ("baseline", "candidate")
    assert comparison["lines"][0] == (
        "12 paired runs: both pass 4, only baseline 0, only candidate 6, both fail 2"
    )
    assert comparison["lines"][-1].endswith("-> PASS")
    rows = comparison["discordant"]
    assert [r["run"] for r in rows] == [2, 3, 4, 5, 6, 7]
    assert rows[0]["a"]["rid"] == "0-2"
    assert rows[0]["b"]["rid"] == "1-2"
    assert rows[0]["a"]["outcome"] == "failed"
    assert rows[0]["b"]["outcome"] == "passed"
    assert "assert 2 not in range(0, 8)" in rows[0]["a"]["message"]
    assert rows[0]["b"]["message"] is None
    assert '<script type="application/json" id="run-1-2">' in html  # the linked run is there
