"""What the pytest plugin costs a test suite, against pytest on an empty test file, same run.

What is measured, in a temporary directory holding tests/testing/worlds/refund.yaml
(`latency_ms: [50, 200]` on every call, a 10% `timeout` on `issue_refund`) and the scripted
agent of tests/testing/scripted_agent.py (the official `mcp.Client`, ~5 calls a run, blind
retries):

- suite: `pytest test_suite.py`, one test, `@pytest.mark.runs(20)`, driving the agent through
  the in-process `mcp_server` fixture (early stop off, so all 20 runs run). "pytest time" is
  the duration pytest prints on its last line (collection and the 20 runs); "process" is the
  wall time of the whole `python -m pytest` process.
- baseline: `pytest test_empty.py` (a file with no tests) in the same environment, with every
  installed plugin: pytest's own start-up. The plugin's share of it is the same command with
  `-p no:faultbench`.
- `import mcp` in a fresh interpreter, minus a bare interpreter: what any test using the MCP
  client pays once, plugin or not.
- suite, fast exit: the suite with `--faultbench-gc=fast-exit` (docs/TESTING.md), which
  spares the process CPython's final collections at exit.
- suite, mcp imported first: the same suite in a process that imports mcp before it calls
  `pytest.main`, so the test module's `import mcp` (~0.5 s, inside collection, so inside
  pytest's time) is not in the pytest time: what is left is collection and the runs.

Rounds alternate the commands and the best round of each counts, so other processes on a
shared machine do not decide the result. Targets: the 20 runs in < 1 s of pytest time
(issue 9), < 0.3 s (issue 24), and the suite process at most 0.5 s more than the baseline.

`--agents N` (issue 24) adds the shop suites: one test, `@pytest.mark.runs(N)`, the shop
example's careful agent (examples/shop/agents.py) under Pydantic AI and under the Agents SDK
with their scripted models, `run_agent(..., mcp=mcp_server)` (the in-process path the
integrations pick by default), the world file's own faults on (`@pytest.mark.faults`), early
stop off, each without xdist and with `-n 2`; and the Pydantic AI suite again with
`run_agent(..., mcp=world)` and no `mcp_server` fixture, the same direct path without a
server, whose process never imports the MCP SDK. Per suite: the **median** over rounds of the
pytest time, and of the process's CPU time (user + system, children included); the ratio of
the medians without and with `-n 2` is the xdist speed-up; each row also prints the median
wall time of its whole command. The load average is printed before every round: on a loaded
machine, read the CPU times and the ratios, not the seconds.
Targets (issue 24): 1,000 runs under 10 s of pytest time on 2 cores, 20 runs under 0.3 s,
`-n 2` at least 1.7x.

`--plugin N` (issue 24) measures the plugin's own cost per run, apart from any agent: one
test of N runs (`world` of the shop example, its faults, four `world.call`s, no agent),
against the same four calls in a plain `@pytest.mark.parametrize("i", range(N))` test that
makes its world with `World.from_spec(spec, run=i)`, each in its own process; the difference
of the medians of process CPU over rounds, divided by N. Target: under 1 ms.

Bytecode: this machine sets `PYTHONDONTWRITEBYTECODE=1`, so every process compiles every
module it imports, and pytest rewrites the asserts of every plugin module again. A
developer's machine keeps both caches, so by default the measured processes run with
bytecode writing on and `PYTHONPYCACHEPREFIX` in a temporary directory, after one unmeasured
warm-up of each command ("warm"); `--cold` keeps the environment as it is.

    uv run python benchmarks/bench_suite.py [--rounds 5] [--agents 1000 [--only-agents]]
        [--plugin 1000] [--gc 1000] [--cold] [--src OTHER_CHECKOUT/src] [--team] [--halves]

`--gc N` (issue 24) runs the same shop suites of N runs, in one process and with `-n 2`,
alternating `--faultbench-gc=tuned` (the default: `docs/TESTING.md`, "The garbage collector
during runs"), `--faultbench-gc=fast-exit` and `--faultbench-gc=default` (CPython's own
settings), and reports per setting the median over rounds of the pytest time; in one process,
of the seconds the collector ran until the session ended (`gc.callbacks`, recorded by a
conftest; pytest's own `gc.collect()` calls at exit come later and are not counted); with `-n
2`, of the seconds from the controller's `pytest_sessionfinish` to its terminal summary, which
is xdist waiting for the workers to exit; and of the process's exit, from the conftest's
`atexit` handler (registered when the conftest is imported, so the handlers registered
earlier, such as logging's, run after it and are counted) to the end of the process as this
script sees it.

`--team` (with `--agents`) runs every shop suite in two environments, alternated in each round:
this one (the project's development environment) and a venv built for the measurement that
holds only what a team's project testing with faultbench holds: faultbench built from this
checkout, its `pydantic-ai` and `openai-agents` extras, pytest and pytest-xdist, at uv.lock's
versions. The development environment's pytest plugins (hypothesis, schemathesis,
pytest-trio, pytest-asyncio...) load in every pytest process and every xdist worker; the
team's do not. Needs uv.

`--halves` (with `--agents`) adds a row per suite: two processes started at once, each running
one half of the runs (its node IDs in a pytest argument file, `@file`), with nothing between
them. Each pays its own start-up and exit, as an xdist worker does, and neither waits on a
controller, so the two halves' speed-up over one process is about the most `-n 2` could reach
on this machine with this suite (xdist's controller adds its own start-up and its handling
of every report). The speed-ups of this comparison are of wall times of whole commands, from
start to exit, because pytest's own times cover different spans in the three shapes: none
counts the process's start before its session, `-n 2` counts its workers' start and exit,
and one process does not count its exit. A halves row's pytest time is the larger of the
two.

`--src DIR` measures another checkout's faultbench (DIR first on PYTHONPATH of every measured
process; this script and the examples stay this checkout's): run it once per checkout,
alternating, for a before/after.

(`--only-agents` skips the 20-run start-up measurement, also after `--plugin` or `--gc`.)
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SUITE = """
import pytest
from scripted_agent import refund_order

@pytest.mark.world("world.yaml")
@pytest.mark.faults()
@pytest.mark.runs(20)
@pytest.mark.min_pass_rate(0.5)
@pytest.mark.anyio
async def test_refund(world, mcp_server):
    await refund_order(mcp_server, "1")
    assert len(world.refunds.where(order_id="1")) == 1
"""

INI = """[pytest]
asyncio_default_fixture_loop_scope = function
addopts = -p no:cacheprovider
filterwarnings = ignore:Unknown config option. asyncio_default_fixture_loop_scope
"""  # the option is pytest-asyncio's, which `--team`'s environment does not have


AGENT_SUITE = """
import sys
import pytest

sys.path.insert(0, {root!r})
from examples.shop import agents
from faultbench.integrations.{framework} import run_agent, scripted_model


@pytest.mark.world("shop.yaml")
@pytest.mark.faults
@pytest.mark.runs({runs})
@pytest.mark.min_pass_rate(0.5)
async def test_careful({fixtures}):
    run = await run_agent(
        scripted_model(agents.careful), agents.PROMPT, mcp={target},
        system_prompt=agents.SYSTEM_PROMPT,
    )
    assert run.ok, run.error
    assert [r.amount for r in world.refunds.where(order_id=agents.ORDER)] == [agents.AMOUNT]
"""


PLUGIN_SUITE = """
import pytest

@pytest.mark.world("shop.yaml")
@pytest.mark.faults
@pytest.mark.runs({runs})
@pytest.mark.min_pass_rate(0)
def test_calls(world):
    calls(world)
"""

PLAIN_SUITE = """
import pytest
from faultbench.kernel import World
from faultbench.kernel.lowlevel import load_spec

SPEC = load_spec("shop.yaml")

@pytest.mark.parametrize("i", range({runs}))
def test_calls(i):
    calls(World.from_spec(SPEC, run=i))
"""

CALLS = """
def calls(world):
    world.call("get_order", {"id": "1"})
    world.call("create_return", {"order_id": "1", "reason": "damaged"})
    world.call("issue_refund", {"order_id": "1", "amount": 25.0})
    world.call("list_refunds", {"order_id": "1"})
"""

#: pytest in a process that imported mcp first (the 20-run suite's runs, without the import)
MCP_FIRST = [
    sys.executable, "-c", "import mcp, sys, pytest; sys.exit(pytest.main(sys.argv[1:]))",
    "-q", "-W", "ignore::pytest.PytestAssertRewriteWarning",
]  # fmt: skip

#: the environment of the measured processes (`warm` in main: bytecode cached)
ENV: dict[str, str] = dict(os.environ)


def warm_environment(cache: Path) -> None:
    """Bytecode written and read from `cache`, as on a machine without
    PYTHONDONTWRITEBYTECODE (see the module docstring)."""
    ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    ENV["PYTHONPYCACHEPREFIX"] = str(cache)


def timed(args: list[str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False, env=ENV)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1, 5):  # 1: the gate may fail; 5: no tests (empty file)
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return wall, done.stdout


def cpu_timed(args: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall time, CPU time (user + system of the process and its children) and stdout."""
    before = os.times()
    wall, out = timed(args, cwd)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu, out


def pytest_seconds(out: str) -> tuple[float, str]:
    last = out.strip().splitlines()[-1]
    found = re.search(r" in ([\d.]+)s", last)
    assert found, out
    return float(found.group(1)), re.sub(r" in [\d.]+s.*", "", last).strip("= ")


def plugin_cost(runs: int, rounds: int) -> None:
    """`--plugin N`: the plugin's CPU per run, apart from the agent (module docstring)."""
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        shutil.copy(ROOT / "examples/shop/worlds/shop.yaml", d / "shop.yaml")
        shutil.copy(ROOT / "examples/shop/shop_rules.py", d / "shop_rules.py")
        (d / "pytest.ini").write_text(INI)
        (d / "test_plugin.py").write_text(PLUGIN_SUITE.format(runs=runs) + CALLS)
        (d / "test_plain.py").write_text(PLAIN_SUITE.format(runs=runs) + CALLS)
        base = [py, "-m", "pytest", "-q", "--faultbench-no-early-stop", "-p", "no:trio"]
        commands = {"faultbench runs": [*base, "test_plugin.py"], "plain": [*base, "test_plain.py"]}
        for args in commands.values():  # warm-up (bytecode caches), not counted
            cpu_timed(args, d)
        seen: dict[str, list[float]] = {name: [] for name in commands}
        for r in range(rounds):
            print(f"round {r + 1}: load average {os.getloadavg()[0]:.1f}", flush=True)
            for name, args in commands.items():
                _wall, cpu, _out = cpu_timed(args, d)
                seen[name].append(cpu)
    ours, plain = (statistics.median(seen[n]) for n in ("faultbench runs", "plain"))
    print(f"{runs} runs, process CPU, median of {rounds} rounds (faults on, early stop off):")
    print(f"  faultbench runs(N): {ours:6.2f} s   plain parametrize: {plain:6.2f} s")
    print(f"  plugin per run: {(ours - plain) / runs * 1e3:.2f} ms (target < 1 ms)")


def shop_suites(
    d: Path, runs: int, *, on_world: bool = False, python: str = sys.executable
) -> dict[str, list[str]]:
    """Write the shop suite of `runs` runs into `d` for each installed framework; return
    each framework's pytest command (one process, early stop off) run by `python` (the
    frameworks installed in this interpreter's environment: `--team`'s venv has both).
    `on_world`: also the Pydantic AI suite with `mcp=world` (no `mcp_server` fixture, so no
    MCP SDK imported)."""
    shutil.copy(ROOT / "examples/shop/worlds/shop.yaml", d / "shop.yaml")
    shutil.copy(ROOT / "examples/shop/shop_rules.py", d / "shop_rules.py")
    (d / "pytest.ini").write_text(INI)
    suites: dict[str, list[str]] = {}
    # (suite, its file, framework, the test's fixtures, what run_agent gets as mcp=)
    variants = [
        ("pydantic_ai", "test_pydantic_ai.py", "pydantic_ai", "world, mcp_server", "mcp_server"),
        ("openai_agents", "test_openai_agents.py", "openai_agents", "world, mcp_server", "mcp_server"),
    ]  # fmt: skip
    if on_world:
        variants.insert(
            1, ("pydantic_ai (mcp=world)", "test_pydantic_ai_world.py", "pydantic_ai", "world", "world")
        )  # fmt: skip
    for suite, name, framework, fixtures, target in variants:
        if importlib.util.find_spec(framework.replace("openai_agents", "agents")) is None:
            continue
        text = AGENT_SUITE.format(
            root=str(ROOT), framework=framework, runs=runs, fixtures=fixtures, target=target
        )
        (d / name).write_text(text)
        suites[suite] = [
            python, "-m", "pytest", "-q", name, "--faultbench-no-early-stop", "-p", "no:trio",
        ]  # fmt: skip
    return suites


def agent_suites(runs: int, rounds: int, pythons: dict[str, str], *, halves: bool = False) -> None:
    """The shop suites of `--agents`: median pytest time and CPU per framework and -n, in
    each environment of `pythons` (label -> interpreter; the label "" for this one alone).
    `halves`: also each suite as two processes at once, each running one half of the runs
    (the module docstring: the machine's ceiling for `-n 2`)."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        commands: dict[str, list[list[str]]] = {}
        frameworks: list[str] = []
        for env, python in pythons.items():
            for suite, base in shop_suites(d, runs, on_world=True, python=python).items():
                framework = f"{suite} [{env}]" if env else suite
                frameworks.append(framework)
                commands[f"{framework}, 1 process"] = [base]
                commands[f"{framework}, -n 2"] = [[*base, "-n", "2"]]
                if halves:
                    commands[f"{framework}, two halves at once"] = half_commands(d, base, runs)
        seen: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
        outcome: dict[str, str] = {}
        for name, group in commands.items():  # warm-up (bytecode caches), not counted
            if "-n 2" not in name:
                cpu_timed([*group[0], "--co"], d)
        for r in range(rounds):
            print(f"round {r + 1}: load average {os.getloadavg()[0]:.1f}", flush=True)
            for name, group in commands.items():
                wall, cpu, outs = timed_together(group, d)
                parts = [pytest_seconds(out) for out in outs]
                outcome[name] = " + ".join(what for _, what in parts)
                seen[name].append((max(seconds for seconds, _ in parts), cpu, wall))
    print(f"{runs} runs per suite, median of {rounds} rounds (faults on, early stop off)")
    for name, got in seen.items():
        pytest_time = statistics.median(t for t, _, _ in got)
        cpu = statistics.median(c for _, c, _ in got)
        wall = statistics.median(w for _, _, w in got)
        print(
            f"  {name:46} pytest time {pytest_time:7.2f} s   process CPU {cpu:7.2f} s"
            f"   wall {wall:7.2f} s   ({outcome[name]})"
        )

    def median(row: str, at: int) -> float:  # at: 0 pytest time, 2 wall
        return statistics.median(got[at] for got in seen[row])

    for framework in frameworks:
        one, two = median(f"{framework}, 1 process", 0), median(f"{framework}, -n 2", 0)
        print(f"  {framework}: -n 2 speed-up {one / two:.2f}x (target >= 1.7x)")
        if halves:
            one = median(f"{framework}, 1 process", 2)
            ceiling = one / median(f"{framework}, two halves at once", 2)
            xdist = one / median(f"{framework}, -n 2", 2)
            print(
                f"    whole commands' wall: two halves at once {ceiling:.2f}x, -n 2 {xdist:.2f}x"
                f" ({xdist / ceiling:.0%} of the halves')"
            )


def half_commands(d: Path, base: list[str], runs: int) -> list[list[str]]:
    """Two commands, each running one half of the runs of `base`'s test (its node IDs in an
    argument file, which pytest reads from `@file`): together, the whole suite."""
    test = base[base.index("-q") + 1]
    group = []
    for k, indices in enumerate((range(runs // 2), range(runs // 2, runs))):
        ids = d / f"{Path(test).stem}.half{k}"
        ids.write_text("".join(f"{test}::test_careful[run{i}]\n" for i in indices))
        group.append([arg if arg != test else f"@{ids.name}" for arg in base])
    return group


def timed_together(group: list[list[str]], cwd: Path) -> tuple[float, float, list[str]]:
    """Run the commands of `group` at once: the wall time until the last one ends, their
    CPU time (user + system, children included) and each one's stdout. Output goes to
    files, so no process waits on a pipe nobody reads; if this is interrupted, none is left
    running."""
    with tempfile.TemporaryDirectory() as tmp:
        files = [(Path(tmp) / f"{k}.out", Path(tmp) / f"{k}.err") for k in range(len(group))]
        before = os.times()
        start = time.perf_counter()
        procs: list[subprocess.Popen[bytes]] = []
        try:
            for args, (out, err) in zip(group, files, strict=True):
                with out.open("wb") as stdout, err.open("wb") as stderr:
                    procs.append(
                        subprocess.Popen(args, cwd=cwd, stdout=stdout, stderr=stderr, env=ENV)
                    )
            for proc in procs:
                proc.wait()
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        wall = time.perf_counter() - start
        after = os.times()
        outs = []
        for args, proc, (out, err) in zip(group, procs, files, strict=True):
            if proc.returncode not in (0, 1):  # 1: the gate may fail
                raise SystemExit(f"{' '.join(args)} failed:\n{out.read_text()}\n{err.read_text()}")
            outs.append(out.read_text())
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu, outs


GC_CONFTEST = """
import atexit, gc, json, os, time
import pytest

_spent = [0.0, 0]
_start = [0.0]
_finish = [0.0]
_controller = [True]

def pytest_configure(config):
    _controller[0] = not hasattr(config, "workerinput")

def _timed(phase, info):
    if phase == "start":
        _start[0] = time.perf_counter()
    else:
        _spent[0] += time.perf_counter() - _start[0]
        _spent[1] += 1

gc.callbacks.append(_timed)

@atexit.register  # registered before the plugin's handler (fast-exit), so it runs after it
def _last_handler():
    if _controller[0]:
        with open(os.environ["GC_EXIT"], "w") as f:
            f.write(repr(time.time()))

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    _finish[0] = time.perf_counter()

@pytest.hookimpl(tryfirst=True)
def pytest_terminal_summary():
    if _controller[0]:  # from sessionfinish to here: under xdist, waiting for the workers to exit
        with open(os.environ["GC_SPENT"], "w") as f:
            json.dump([*_spent, time.perf_counter() - _finish[0]], f)
"""


def gc_compare(runs: int, rounds: int) -> None:
    """`--gc N`: the shop suites with the collector tuned and as CPython has it (docstring)."""
    import json

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "conftest.py").write_text(GC_CONFTEST)
        spent_file, exit_file = d / "spent.json", d / "exit.txt"
        ENV["GC_SPENT"], ENV["GC_EXIT"] = str(spent_file), str(exit_file)
        commands: dict[str, list[str]] = {}
        for framework, base in shop_suites(d, runs).items():
            for workers in ([], ["-n", "2"]):
                for setting in ("tuned", "fast-exit", "default"):
                    name = f"{framework}, {'-n 2' if workers else '1 process'}, gc {setting}"
                    commands[name] = [*base, *workers, f"--faultbench-gc={setting}"]
        for args in commands.values():  # warm-up (bytecode caches), not counted
            cpu_timed([*args, "--co"], d)
        seen: dict[str, list[tuple[float, ...]]] = {name: [] for name in commands}
        for r in range(rounds):
            print(f"round {r + 1}: load average {os.getloadavg()[0]:.1f}", flush=True)
            for name, args in commands.items():
                spent_file.unlink(missing_ok=True)  # a process that skipped them fails below
                exit_file.unlink(missing_ok=True)
                _wall, _cpu, out = cpu_timed(args, d)
                ended = time.time()
                seconds, _outcome = pytest_seconds(out)
                spent, collections, waited = json.loads(spent_file.read_text())
                exiting = ended - float(exit_file.read_text())
                seen[name].append((seconds, spent, collections, waited, exiting))
    print(f"{runs} runs per suite, median of {rounds} rounds (faults on)")
    for name, got in seen.items():
        median = [statistics.median(g[i] for g in got) for i in range(5)]
        collecting = (
            f"collecting {median[1]:5.2f} s ({median[2]:4.0f} collections)"
            if "1 process" in name
            else f"waiting for the workers to exit {median[3]:4.2f} s"
        )
        print(
            f"  {name:40} pytest time {median[0]:6.2f} s   {collecting}"
            f"   process exit {median[4]:4.2f} s"
        )


def team_python(where: Path) -> str:
    """A venv in `where` holding what a team's project that tests with faultbench holds:
    faultbench built from this checkout, its `pydantic-ai` and `openai-agents` extras,
    pytest and pytest-xdist, every version as uv.lock has it; none of this project's
    development tools, whose pytest plugins (hypothesis, schemathesis, pytest-trio,
    pytest-asyncio...) load in every pytest process of its own environment. Needs uv."""
    import tomllib

    uv = shutil.which("uv")
    if uv is None:
        raise SystemExit("--team needs uv on PATH (python -m pip install uv)")
    venv = where / "team"
    python = str(venv / "bin" / "python")
    subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(venv)], check=True)
    requirements = subprocess.run(
        [uv, "export", "--frozen", "--no-dev", "--no-emit-project", "--no-hashes",
         "--extra", "pydantic-ai", "--extra", "openai-agents"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    (where / "requirements.txt").write_text(requirements)
    locked = {
        p["name"]: p["version"] for p in tomllib.loads((ROOT / "uv.lock").read_text())["package"]
    }
    runner = [f"{name}=={locked[name]}" for name in ("pytest", "pytest-xdist", "execnet")]
    install = [uv, "pip", "install", "-q", "--python", python]
    subprocess.run([*install, "-r", str(where / "requirements.txt"), *runner], check=True)
    subprocess.run([*install, "--no-deps", str(ROOT)], check=True)
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--agents", type=int, metavar="N", default=None)
    parser.add_argument("--only-agents", action="store_true")
    parser.add_argument("--plugin", type=int, metavar="N", default=None)
    parser.add_argument("--gc", type=int, metavar="N", default=None)
    parser.add_argument("--cold", action="store_true", help="keep PYTHONDONTWRITEBYTECODE")
    parser.add_argument("--src", type=Path, default=None, help="another checkout's src/")
    parser.add_argument(
        "--team",
        action="store_true",
        help="--agents also in a venv holding only faultbench, its framework extras, pytest "
        "and pytest-xdist (uv.lock's versions), alternated with this environment",
    )
    parser.add_argument(
        "--halves",
        action="store_true",
        help="--agents also as two processes at once, each running half the runs: the "
        "machine's ceiling for -n 2",
    )
    opts = parser.parse_args()
    if opts.team and opts.src is not None:
        parser.error("--team measures this checkout (built into the venv): drop --src")
    if opts.team and opts.agents is None:
        parser.error("--team measures the shop suites: add --agents N")
    if opts.halves and (opts.agents is None or opts.agents < 2):
        parser.error("--halves measures the shop suites in two halves: add --agents N, N >= 2")
    if opts.team and ENV.pop("PYTHONPATH", None) is not None:
        print("PYTHONPATH unset for the measured processes: the venv runs its own faultbench")
    if opts.src is not None:
        ENV["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(opts.src.resolve()), ENV.get("PYTHONPATH", "")) if p
        )
    where = subprocess.run(
        [sys.executable, "-c", "import faultbench; print(faultbench.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        env=ENV,
    ).stdout.strip()
    print("faultbench measured:", where)
    cache = tempfile.TemporaryDirectory()
    if not opts.cold:
        warm_environment(Path(cache.name))
    print("bytecode:", "as the environment has it (cold)" if opts.cold else "cached (warm)")
    if opts.gc is not None:
        gc_compare(opts.gc, opts.rounds)
        if opts.only_agents:
            return
    if opts.plugin is not None:
        plugin_cost(opts.plugin, opts.rounds)
        if opts.only_agents:
            return
    if opts.agents is not None:
        pythons = {"": sys.executable}
        if opts.team:
            team_dir = tempfile.TemporaryDirectory()
            pythons = {"dev env": sys.executable, "team env": team_python(Path(team_dir.name))}
            plugins = subprocess.run(
                [pythons["team env"], "-c", "import importlib.metadata as m; "
                 "print(sorted(e.name for e in m.entry_points(group='pytest11')))"],
                capture_output=True, text=True, check=True,
            ).stdout.strip()  # fmt: skip
            print("team env: pytest plugins", plugins)
        agent_suites(opts.agents, opts.rounds, pythons, halves=opts.halves)
        if opts.only_agents:
            return

    py = sys.executable
    pytest = [py, "-m", "pytest", "-q"]
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        shutil.copy(ROOT / "tests/testing/worlds/refund.yaml", d / "world.yaml")
        shutil.copy(ROOT / "tests/testing/scripted_agent.py", d / "scripted_agent.py")
        (d / "test_suite.py").write_text(SUITE)
        (d / "test_empty.py").write_text("")
        (d / "pytest.ini").write_text(INI)
        (d / "conftest.py").write_text(
            "import pytest\n\n@pytest.fixture\ndef anyio_backend():\n    return 'trio'\n"
        )
        commands = {
            "baseline": [*pytest, "test_empty.py"],
            "baseline without the plugin": [*pytest, "test_empty.py", "-p", "no:faultbench"],
            "suite": [*pytest, "test_suite.py", "--faultbench-no-early-stop"],
            "suite, fast exit": [
                *pytest,
                "test_suite.py",
                "--faultbench-no-early-stop",
                "--faultbench-gc=fast-exit",
            ],
            # the same suite with mcp imported before pytest starts its clock: the runs' own part
            # (anyio's pytest plugin is then imported already, hence the warning filter)
            "suite, mcp imported first": [
                *MCP_FIRST,
                "test_suite.py",
                "--faultbench-no-early-stop",
            ],
            "bare interpreter": [py, "-c", "pass"],
            "import mcp": [py, "-c", "import mcp"],
        }
        best: dict[str, float] = {}
        pytest_time: dict[str, float] = {}
        outcome = ""
        for args in commands.values():  # warm-up (bytecode caches), not counted
            timed(args, d)
        for _ in range(opts.rounds):
            for name, args in commands.items():
                wall, out = timed(args, d)
                best[name] = min(best.get(name, wall), wall)
                if name.startswith("suite"):
                    seconds, got = pytest_seconds(out)
                    pytest_time[name] = min(pytest_time.get(name, seconds), seconds)
                    outcome = got if name == "suite" else outcome

    extra = best["suite"] - best["baseline"]
    plugin = best["baseline"] - best["baseline without the plugin"]
    mcp = best["import mcp"] - best["bare interpreter"]
    print(f"Python {platform.python_version()} on {platform.machine()}, best of {opts.rounds}")
    print(f"suite: {outcome}")
    print(f"20 runs, pytest time:              {pytest_time['suite']:6.2f} s   (target < 1 s)")
    own = pytest_time["suite, mcp imported first"]
    print(f"  the same, mcp imported first:     {own:6.2f} s   (target < 0.3 s, issue 24)")
    print(f"suite process:                     {best['suite']:6.2f} s")
    print(f"baseline (pytest, empty file):     {best['baseline']:6.2f} s")
    print(f"suite - baseline:                  {extra:+6.2f} s   (target <= +0.5 s)")
    fast = best["suite, fast exit"] - best["baseline"]
    print(f"  the same, --faultbench-gc=fast-exit: {fast:+6.2f} s")
    print(f"  of which import mcp (any client): {mcp:+6.2f} s")
    print(f"plugin's share of pytest start-up: {plugin:+6.2f} s")


if __name__ == "__main__":
    main()
