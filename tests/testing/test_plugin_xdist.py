"""pytest-xdist: the same groups, counts, summary and exit status as without it."""

from __future__ import annotations

import re

import pytest

MIXED = """
import pytest
from naive import naive

@pytest.mark.world("world.yaml")
@pytest.mark.faults({"payments.issue_refund": {"errors": {"timeout": 0.3}}})
@pytest.mark.runs(12)
@pytest.mark.min_pass_rate(0.9)
def test_refund(world):
    naive(world)
    assert len(world.refunds.where(order_id="1")) == 1

@pytest.mark.parametrize("case", ["a", "b"])
@pytest.mark.world("world.yaml")
@pytest.mark.runs(4)
@pytest.mark.min_pass_rate(0.5)
def test_cases(world, faultbench_run, case):
    assert case == "a" or faultbench_run.index % 2 == 0
"""


def summary(output: str) -> list[str]:
    """The faultbench section and pytest's last line, timing cut."""
    section = output.split("faultbench: pass rate over runs", 1)[1]
    lines = [line for line in section.splitlines()[1:] if not line.startswith("=")]
    # The line is padded with "=" to the terminal width around its text, whose length changes
    # with the duration ("in 9.8s" / "in 13.8s"): compare the text alone.
    last = re.sub(r" in [\d.]+s", "", output.strip().splitlines()[-1]).strip("= ")
    return [line for line in lines if line and "short test summary" not in line] + [last]


@pytest.mark.parametrize("early_stop", [False, True], ids=["all-runs", "early-stop"])
def test_xdist_gives_the_same_summary_and_exit_status(fb, early_stop):
    fb.makepyfile(test_mixed=MIXED)
    args = [] if early_stop else ["--faultbench-no-early-stop"]
    alone = fb.runpytest_subprocess(*args, "-p", "no:randomly")
    spread = fb.runpytest_subprocess(*args, "-n", "2")
    assert alone.ret == spread.ret == 1
    assert "test_mixed.py::test_refund:" in alone.stdout.str()
    if early_stop:  # best-effort under xdist: the verdicts agree, counts may not
        verdicts = [
            re.findall(r"^(\S+): .*-> (PASS|FAIL)", r.stdout.str(), re.M) for r in (alone, spread)
        ]
        assert verdicts[0] == verdicts[1]
        assert len(verdicts[0]) == 3
    else:
        assert summary(alone.stdout.str()) == summary(spread.stdout.str())
