"""Reproduce lines that reproduce (issue 39): the printed command, run as printed in a shell,
gives the same failure, whichever option shaped the run; and it starts pytest the way the
user did (`uv run pytest`, `python -m pytest`, `hatch run`)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from faultbench.testing._gate._reproduce import launcher, quote

SHAPED = """
import pytest

pytestmark = [pytest.mark.world("world.yaml"), pytest.mark.runs(4)]


def test_faults(world):
    # fails only under the command line's faults: every refund times out after it commits
    for _ in range(2):
        if world.call("issue_refund", {"order_id": "1", "amount": 1.0}).ok:
            break
    assert len(world.refunds.where(order_id="1")) == 1


def test_runs(world, faultbench_run):
    world.call("get_order", {"id": "1"})
    assert faultbench_run.index < 6  # only --runs 8 has a run6


def test_concurrency(world, request):
    world.call("get_order", {"id": "1"})
    assert request.config.getoption("faultbench_concurrency") != 3


@pytest.mark.seed(3)
def test_seed(world, faultbench_run):
    world.call("get_order", {"id": "1"})
    assert (world.seed, faultbench_run.world_seed) != (7, 7)  # the command line's, not 3


def test_plugin(world, shaped_by_plugin):
    world.call("get_order", {"id": "1"})
    assert shaped_by_plugin == "no"
"""

PLUGIN = """
import pytest

@pytest.fixture
def shaped_by_plugin():
    return "yes"
"""

TIMEOUTS = '{"payments.issue_refund": {"errors": {"timeout": {"p": 1.0, "commit": true}}}}'

CASES = {
    "test_faults": ["--faultbench-faults", TIMEOUTS],
    "test_runs": ["--runs", "8"],
    "test_concurrency": ["--faultbench-concurrency", "3"],
    "test_seed": ["--faultbench-seed", "7"],
    "test_plugin": ["-p", "shaping_plugin"],
}
FAILURE = {
    "test_faults": "assert 2 == 1",
    "test_runs": "assert 6 < 6",
    "test_concurrency": "assert 3 != 3",
    "test_seed": "assert (7, 7) != (7, 7)",
    "test_plugin": "AssertionError: assert 'yes' == 'no'",
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_printed_line_run_in_a_shell_gives_the_same_failure(fb, monkeypatch, name):
    fb.makepyfile(test_shaped=SHAPED, shaping_plugin=PLUGIN)
    monkeypatch.delenv("FAULTBENCH_PYTEST")
    monkeypatch.delenv("UV_RUN_RECURSION_DEPTH", raising=False)
    monkeypatch.delenv("HATCH_ENV_ACTIVE", raising=False)
    monkeypatch.setenv("PYTHONPATH", str(fb.path))
    first = fb.run(
        sys.executable, "-m", "pytest", f"test_shaped.py::{name}", *CASES[name],
        "--faultbench-no-early-stop",
    )  # fmt: skip
    out = first.stdout.str()
    assert first.ret == 1, out
    assert FAILURE[name] in out
    lines = re.findall(r"Reproduce: (.*)", out)
    assert lines, out
    line = lines[0]
    assert line.startswith(f'python -m pytest "test_shaped.py::{name}[run')
    for word in CASES[name]:
        assert quote(word) in line
    again = subprocess.run(
        ["bash", "-c", line], cwd=fb.path, capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 1, again.stdout + again.stderr
    assert FAILURE[name] in again.stdout
    assert "1 failed" in again.stdout or "1 gate failed" in again.stdout


def test_faults_json_is_quoted_for_the_shell():
    assert quote(TIMEOUTS) == "'" + TIMEOUTS + "'"
    assert quote("8") == "8"
    assert quote("no:asyncio") == "no:asyncio"


@pytest.mark.parametrize(
    ("env", "argv", "words"),
    [
        ({}, ["/venv/bin/python", "/venv/bin/pytest"], ["pytest"]),
        ({"UV_RUN_RECURSION_DEPTH": "1"}, ["python", "/venv/bin/pytest"], ["uv", "run", "pytest"]),
        ({}, ["python3", "-m", "pytest", "-q"], ["python", "-m", "pytest"]),
        (
            {"UV_RUN_RECURSION_DEPTH": "1"},
            ["python", "-m", "pytest"],
            ["uv", "run", "python", "-m", "pytest"],
        ),
        ({"HATCH_ENV_ACTIVE": "default"}, ["python", "pytest"], ["hatch", "run", "pytest"]),
        ({"HATCH_ENV_ACTIVE": "test"}, ["python", "pytest"], ["hatch", "run", "test:pytest"]),
        ({"FAULTBENCH_PYTEST": "poetry run pytest"}, ["x"], ["poetry", "run", "pytest"]),
    ],
)
def test_the_launcher_is_the_one_the_user_ran(monkeypatch, env, argv, words):
    for name in ("FAULTBENCH_PYTEST", "UV_RUN_RECURSION_DEPTH", "HATCH_ENV_ACTIVE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "orig_argv", argv)
    assert launcher() == words


def test_the_seed_option_reseeds_every_world_and_is_checked(fb):
    fb.makepyfile(
        test_seeded="""
import pytest

pytestmark = [pytest.mark.world("world.yaml"), pytest.mark.runs(2)]


def test_rows(world, faultbench_run):
    print("ROWS", faultbench_run.index, world.seed, sorted(o.total for o in world.orders.where()))
"""
    )

    def rows(*args):
        result = fb.runpytest("-s", *args)
        result.assert_outcomes(passed=2)
        out = result.stdout.lines
        return sorted(line[line.index("ROWS") :].rstrip(".") for line in out if "ROWS" in line)

    default, again, other = rows(), rows("--faultbench-seed", "11"), rows("--faultbench-seed", "12")
    assert all(" 11 " in line for line in again)
    assert rows("--faultbench-seed", "11") == again  # the same seed, the same worlds
    assert again != other
    assert again != default
    bad = fb.runpytest("--faultbench-seed", "-1")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "Expected --faultbench-seed N with N >= 0" in bad.stderr.str()
