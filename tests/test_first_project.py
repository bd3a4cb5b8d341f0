"""The README's "In your own project" path, followed as a new user would: a fresh project made
by `uv init` in a temporary folder, faultbench added by path, the README's world and test
files, `uv run pytest`. Then the same with pytest-xdist (`-n 2`) and through the
`mcp_command` fixture (stdio), which must find the same failing runs as in-process.

uv installs from its cache with `UV_OFFLINE=1` (the wheels this checkout's `uv sync` fetched
and the index pages .ci/run resolves once); on a machine whose cache lacks them the commands
run again online, as a user's would.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.test_docs import FENCE

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

STDIO_TEST = """
import pytest

from faultbench.integrations.pydantic_ai import run_agent, scripted_model
from test_refund import PROMPT, blind_retrier


@pytest.mark.world("world.yaml")
@pytest.mark.faults()
@pytest.mark.runs(20)
@pytest.mark.min_pass_rate(0.95)
async def test_blind_retrier_over_stdio(mcp_command):
    run = await run_agent(scripted_model(blind_retrier), PROMPT, mcp=mcp_command)
    assert run.ok, run.error
    assert len(mcp_command.world().refunds.where(order_id="1")) == 1
"""


def _section() -> dict[str, list[str]]:
    text = README.read_text()
    body = text.split("## In your own project\n", 1)[1].split("\n## ", 1)[0]
    found: dict[str, list[str]] = {}
    for m in FENCE.finditer(body):
        found.setdefault(m.group(1), []).append(m.group(3))  # (group 2: the fence's tags)
    return found


def _env(*, offline: bool) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "VIRTUAL_ENV", "UV_PROJECT", "FAULTBENCH_", "COV_"))
    }
    env.update(UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1", NO_COLOR="1")
    env["UV_PYTHON"] = f"{sys.version_info.major}.{sys.version_info.minor}"
    if offline:
        env["UV_OFFLINE"] = "1"
    return env


class Shell:
    """Runs the user's commands in one folder, offline first; keeps how long each took."""

    def __init__(self, cwd: Path):
        self.cwd = cwd
        self.timings: list[tuple[str, float]] = []

    def run(self, command: str, *, check: bool = True) -> subprocess.CompletedProcess[str]:
        start = time.perf_counter()
        before = set(self.cwd.iterdir())
        done = self._run(command, offline=True)
        said = (done.stderr + done.stdout).lower()
        if done.returncode != 0 and (
            "network was disabled" in said or "network connectivity is disabled" in said
        ):
            # A cache that never saw these packages: undo what the offline attempt made (a
            # `uv init` that succeeded before `uv add` failed) and go online.
            for made in set(self.cwd.iterdir()) - before:
                shutil.rmtree(made) if made.is_dir() else made.unlink()
            done = self._run(command, offline=False)
        self.timings.append((command, time.perf_counter() - start))
        if check and done.returncode != 0:
            raise AssertionError(f"{command} -> {done.returncode}\n{done.stdout}\n{done.stderr}")
        return done

    def _run(self, command: str, *, offline: bool) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", f"set -e; {command}"],
            cwd=self.cwd,
            env=_env(offline=offline),
            capture_output=True,
            text=True,
            timeout=600,
        )


def _group(out: str, name: str) -> tuple[str, dict[int, list[str]]]:
    """The gate line of group `name` in pytest's output and its failing runs' lines."""
    lines = out.split("faultbench: pass rate over runs", 1)[1].splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith(name + ": "))
    runs: dict[int, list[str]] = {}
    current = None
    for line in lines[head + 1 :]:
        if not line.startswith("    "):
            break
        found = re.match(r"    run(\d+)\b", line)
        if found:
            current = runs.setdefault(int(found.group(1)), [])
        if current is not None:
            current.append(line)
    return lines[head], runs


def failing_head(out: str, name: str) -> list[str]:
    """The three lines under group `name`'s gate line: its fault figures, its first run."""
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(name + ": "))
    return lines[at + 1 : at + 4]


def _check_failing_runs(runs: dict[int, list[str]], nodeid: str, extra: str = "") -> None:
    assert runs
    for index, shown in runs.items():
        text = "\n".join(shown)
        assert (
            shown[0]
            == f"    run{index} (tolerated): get_order → issue_refund!timeout → issue_refund"
        )
        assert "        AssertionError: assert 2 == 1" in shown
        assert re.search(r"against run\d+ \(closest passing run\)", text)
        assert re.search(
            rf"call 2 issue_refund: run\d+ succeeded, run{index} timeout after commit -> "
            rf"run{index} retried \(call 3\) -> refund 2 created",
            text,
        )
        # the launcher the user ran: a bare `pytest` may be another installation's
        assert f'        Reproduce: uv run pytest "{nodeid}[run{index}]"{extra}' in shown


def test_the_readme_path_from_uv_init_to_a_first_gate(tmp_path):
    blocks = _section()
    setup, run = blocks["console"][:2]
    world_yaml, test_py, retrier_py = blocks["yaml"][0], *blocks["python"][:2]
    shell = Shell(tmp_path)
    commands = [line.removeprefix("$ ") for line in setup.splitlines() if line.startswith("$ ")]
    assert commands[0] == "uv init refunds && cd refunds"
    shell.run(" && ".join(c.replace("/path/to/faultbench", str(ROOT)) for c in commands))
    project = tmp_path / "refunds"
    (project / "tests").mkdir()
    (project / "tests" / "world.yaml").write_text(world_yaml)
    (project / "tests" / "test_refund.py").write_text(test_py)
    shell.cwd = project
    assert run.strip() == "$ uv run pytest"

    # the green first test
    done = shell.run("uv run pytest")
    assert "test_careful_agent_refunds_once: 19/19 passed (100%)" in done.stdout, done.stdout

    careful, _ = _group(done.stdout, "tests/test_refund.py::test_careful_agent_refunds_once")
    assert careful.endswith("-> PASS (outcome decided after 19 runs; 1 skipped)")

    # and the blind retrier fails its gate, each failing run explained (`-k blind`: the
    # careful agent's runs are the ones above)
    (project / "tests" / "test_refund.py").write_text(test_py + "\n\n" + retrier_py)
    done = shell.run("uv run pytest -k blind", check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    blind_id = "tests/test_refund.py::test_blind_retrier_refunds_once"
    blind, failing = _group(done.stdout, blind_id)
    shown = blocks["console"][2].splitlines()  # the README shows this output
    assert blind == shown[0]
    assert shown[1:4] == failing_head(done.stdout, blind_id)
    _check_failing_runs(failing, blind_id)
    assert "1 gate failed" in done.stdout.splitlines()[-1]
    # the printed line, run in the shell as printed, gives the same failure
    index = min(failing)
    line = next(x for x in failing[index] if "Reproduce: " in x).split("Reproduce: ", 1)[1]
    again = shell.run(line, check=False)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "AssertionError: assert 2 == 1" in again.stdout
    assert f"    run{index} (tolerated): get_order → issue_refund!timeout → issue_refund" in (
        again.stdout.splitlines()
    )

    # with pytest-xdist, and through the stdio fixture: the same verdicts and failing runs.
    # The first 11 runs (where the run above stopped), every one of them: early stop is
    # best-effort across workers, and a server process per stdio run costs seconds.
    shell.run("uv add --dev pytest-xdist")
    (project / "tests" / "test_stdio.py").write_text(STDIO_TEST)
    done = shell.run("uv run pytest -n 2 --runs 11 --faultbench-no-early-stop", check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    careful, _ = _group(done.stdout, "tests/test_refund.py::test_careful_agent_refunds_once")
    assert careful.startswith("tests/test_refund.py::test_careful_agent_refunds_once: 11/11 passed")
    assert careful.endswith("-> PASS")
    blind, everywhere = _group(done.stdout, blind_id)
    assert "-> FAIL" in blind
    _check_failing_runs(everywhere, blind_id, extra=" --runs 11")
    stdio_id = "tests/test_stdio.py::test_blind_retrier_over_stdio"
    stdio, over_stdio = _group(done.stdout, stdio_id)
    assert stdio.split(": ", 1)[1] == blind.split(": ", 1)[1]
    _check_failing_runs(over_stdio, stdio_id, extra=" --runs 11")
    assert sorted(over_stdio) == sorted(everywhere) == sorted(failing)
    print("\n".join(f"{seconds:6.1f}s  {command}" for command, seconds in shell.timings))


#: faultbench 0.1's README world: no seed rows, so `pick` finds nothing
OLD_WORLD = """
services:
  orders:
    records: { order: { id: str, status: enum[placed, delivered, returned], total: float } }
    operations: { get_order: { kind: get, record: order } }
  payments:
    records: { refund: { id: str, order_id: str, amount: float } }
    operations: { issue_refund: { kind: create, record: refund } }
faults:
  payments.issue_refund: { errors: { timeout: 0.10 } }
"""

MISTAKES = """
import pytest

from faultbench.integrations import Reply, ToolCall
from faultbench.integrations.pydantic_ai import run_agent, scripted_model

from test_refund import PROMPT, careful


@pytest.mark.world("world.yaml")
@pytest.mark.faults()
@pytest.mark.runs(20)
@pytest.mark.min_pass_rate(0.95)
def test_sync_without_await(world):
    run = run_agent(scripted_model(careful), PROMPT, mcp=world)
    assert run is not None


@pytest.mark.world("world.yaml")
@pytest.mark.runs(20)
@pytest.mark.min_pass_rate(0.95)
async def test_faults_forgotten(world):
    run = await run_agent(scripted_model(careful), PROMPT, mcp=world)
    assert run.ok, run.error


@pytest.mark.world("old_world.yaml")
@pytest.mark.faults()
@pytest.mark.runs(20)
@pytest.mark.min_pass_rate(0.95)
async def test_old_readme(world):
    order = world.orders.pick(status="delivered")
    run = await run_agent(scripted_model(careful), f"Refund order {order.id}", mcp=world)
    assert run.ok
"""

REPEAT = """
import pytest


@pytest.mark.world("world.yaml")
@pytest.mark.repeat(20)
@pytest.mark.min_pass_rate(0.95)
def test_repeated(world):
    pass
"""


def test_common_mistakes_in_a_new_project_get_an_honest_verdict(tmp_path):
    """Issue 39's headline rows in a project made by `uv init`: no green gate from a test that
    never ran its agent, faults left off said, an empty table a set-up problem, a repeat
    marker refused, and the gates in JUnit XML as a CI reads them."""
    blocks = _section()
    setup = blocks["console"][0]
    world_yaml, test_py = blocks["yaml"][0], blocks["python"][0]
    shell = Shell(tmp_path)
    commands = [line.removeprefix("$ ") for line in setup.splitlines() if line.startswith("$ ")]
    shell.run(" && ".join(c.replace("/path/to/faultbench", str(ROOT)) for c in commands))
    project = tmp_path / "refunds"
    tests = project / "tests"
    tests.mkdir()
    (tests / "world.yaml").write_text(world_yaml)
    (tests / "old_world.yaml").write_text(OLD_WORLD)
    (tests / "test_refund.py").write_text(test_py)
    (tests / "test_mistakes.py").write_text(MISTAKES)
    shell.cwd = project

    done = shell.run("uv run pytest tests/test_mistakes.py --junitxml=report.xml", check=False)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    passed = [line for line in out.splitlines() if "-> PASS" in line]
    # the one green gate is the one whose agent ran (fault-free, and it says so)
    assert [line.split(":")[0] for line in passed] == ["tests/test_mistakes.py"]
    assert "::test_faults_forgotten:" in passed[0]
    sync, runs = _group(out, "tests/test_mistakes.py::test_sync_without_await")
    assert "set-up problem in 1 of" in sync
    assert sync.endswith("does not apply until the set-up works)")
    assert "never awaited" in "\n".join(runs[0])
    assert "`async def`" in "\n".join(runs[0])
    lines = out.splitlines()
    after = lines[lines.index(passed[0]) + 1]
    assert after == "    faults: off (world.yaml has 1 rule; add @pytest.mark.faults())"
    old, runs = _group(out, "tests/test_mistakes.py::test_old_readme")
    assert "set-up problem" in old
    text = "\n".join(runs[0])
    assert "the order table is empty" in text
    assert "seed it in the world file" in text
    assert "(tolerated)" not in out

    # JUnit XML as a CI reads it: the failed gates are failures
    import xml.etree.ElementTree as ET

    suite = ET.parse(project / "report.xml").getroot().find("testsuite")
    assert suite is not None
    # the sync test's and the old README's first runs (set-up problems) fail; their two gates,
    # failed by set-up problems rather than by the agent, are errors
    assert (int(suite.get("failures", "0")), int(suite.get("errors", "0"))) == (2, 2)
    gates = {
        c.get("name"): c for c in suite.iter("testcase") if c.get("name", "").endswith("[gate]")
    }
    assert sorted(gates) == [
        "test_faults_forgotten[gate]",
        "test_old_readme[gate]",
        "test_sync_without_await[gate]",
    ]
    assert gates["test_faults_forgotten[gate]"].find("failure") is None
    assert gates["test_sync_without_await[gate]"].find("error") is not None

    (tests / "test_repeat.py").write_text(REPEAT)
    done = shell.run("uv run pytest tests/test_repeat.py", check=False)
    assert done.returncode != 0
    assert "unknown marker @pytest.mark.repeat" in done.stdout
    assert "@pytest.mark.runs(n)" in done.stdout
