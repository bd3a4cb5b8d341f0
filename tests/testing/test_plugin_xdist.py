"""pytest-xdist: the same groups, counts, summary and exit status as without it."""

from __future__ import annotations

import re
import shutil

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
    # pytest pads its last line with "=" to the terminal width around a duration that varies
    last = re.sub(r" in [\d.]+s( \([\d:]+\))?", "", output.strip().splitlines()[-1]).strip("= ")
    return [line for line in lines if line and "short test summary" not in line] + [last]


@pytest.mark.parametrize("early_stop", [False, True], ids=["all-runs", "early-stop"])
def test_xdist_gives_the_same_summary_and_exit_status(fb, early_stop):
    fb.makepyfile(test_mixed=MIXED)
    args = [] if early_stop else ["--faultbench-no-early-stop"]
    alone = fb.runpytest_subprocess(*args, "-p", "no:randomly")
    spread = fb.runpytest_subprocess(*args, "-p", "no:randomly", "-n", "2")
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


def test_a_groups_runs_spread_over_two_gateways_get_the_single_process_verdict(fb, tmp_path):
    """`--tx`: two popen gateways, each its own interpreter in its own working directory with
    its own copy of the suite (standing in for two hosts with a checkout each) share out the
    runs of every group; the controller's gate and summary are the one process's, and each
    run's event log is the one process's but for the world file's path on its host."""
    fb.makepyfile(test_mixed=MIXED)
    hosts = [tmp_path / "host-a", tmp_path / "host-b"]
    for host in hosts:
        shutil.copytree(fb.path, host)
    args = ["--faultbench-no-early-stop", "-p", "no:randomly", "-v"]
    alone = fb.runpytest_subprocess(*args, "--faultbench-events", "alone")
    gateways = [a for host in hosts for a in ("--tx", f"popen//chdir={host}")]
    spread = fb.runpytest_subprocess(*args, "-d", *gateways, "--faultbench-events", "spread")
    assert alone.ret == spread.ret == 1
    out = spread.stdout.str()
    assert "2 workers [20 items]" in out

    def here(text: str) -> str:
        for host in hosts:
            text = text.replace(str(host), str(fb.path))
        return text.replace("spread/", "alone/")

    assert summary(alone.stdout.str()) == summary(here(out))
    # both hosts ran runs of the one group
    workers = re.findall(r"\[(gw[01])\] .*test_refund\[run", out)
    assert set(workers) == {"gw0", "gw1"}, out
    alone_logs = {p.name: p.read_text() for p in (fb.path / "alone").glob("*.jsonl")}
    spread_logs = {p.name: here(p.read_text()) for p in (fb.path / "spread").glob("*.jsonl")}
    assert len(alone_logs) == 20
    assert alone_logs == spread_logs
