"""Concurrent runs: how close `--faultbench-concurrency N` gets to N times faster.

What is measured: a pytest suite with one `async def` test, a Pydantic AI agent on the shop
world (tests/testing/shop/world.yaml, its faults on) whose scripted model awaits
`asyncio.sleep(LATENCY)` before each answer (a stand-in for a real model's latency; 3 turns
a run: read the order, refund it, reply). For each number of runs (20, 100) and each
concurrency (1, 5, 20) the suite runs once in a fresh `python -m pytest` process
(`--faultbench-no-early-stop`, so every run runs):

- **runs**: the seconds the run items took (the sum of their set-up, call and teardown
  durations from `--junitxml`), which is the wall time spent running runs, start-up and
  collection left out;
- **wall**: the whole process, start-up included;
- **cpu**: the CPU seconds the process used (user + system, start-up included): the part
  of a run that no concurrency overlaps, so runs time cannot go below about cpu minus
  start-up on one core;
- **ideal**: `runs / N` times one run's time at concurrency 1 (the mean of that row), i.e. N
  runs taking exactly as long as one; **ratio** = runs time / ideal (1.0 is ideal).

Faults on; model latency awaited in real time (the world's latency is virtual and costs
nothing). The figures depend on the machine's load only through the CPU part of a run
(a few ms of agent and kernel work per turn), which concurrency does not overlap.

    uv run python benchmarks/bench_concurrency.py [--runs 20 100] [--concurrency 1 5 20]
        [--latency 0.5] [--rounds 1] [--baseline PYTHON]

`--baseline PYTHON` runs every row also under another interpreter (another checkout's
`.venv/bin/python`, the tree before a change), alternated with this one in each of
`--rounds` rounds, and prints both medians and their ratio (this / baseline).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORLD = ROOT / "tests" / "testing" / "shop" / "world.yaml"

SUITE = """
import asyncio
import os

import pytest
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel

from faultbench.integrations.pydantic_ai import run_agent

LATENCY = float(os.environ["LATENCY"])


def model():
    async def respond(messages, info):
        await asyncio.sleep(LATENCY)
        returns = [
            p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
        ]
        if not returns:
            return ModelResponse(parts=[ToolCallPart("get_order", {"id": "1"}, tool_call_id="c1")])
        if len(returns) == 1:
            args = {"order_id": "1", "amount": 10.0}
            return ModelResponse(parts=[ToolCallPart("issue_refund", args, tool_call_id="c2")])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond)


@pytest.mark.world("world.yaml")
@pytest.mark.faults()
@pytest.mark.runs(int(os.environ["RUNS"]))
@pytest.mark.min_pass_rate(0)
async def test_agent(mcp_server):
    await run_agent(model(), "refund order 1", mcp=mcp_server)
"""


def one(
    folder: Path, runs: int, concurrency: int, latency: float, python: str = sys.executable
) -> tuple[float, float, float, int]:
    """(seconds of the run items, seconds of the process, its CPU seconds, items reported)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    junit = folder / f"junit-{runs}-{concurrency}.xml"
    env = {**os.environ, "RUNS": str(runs), "LATENCY": str(latency)}
    start = time.perf_counter()
    subprocess.run(
        [
            python,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "--faultbench-no-early-stop",
            "--faultbench-concurrency",
            str(concurrency),
            f"--junitxml={junit}",
            "test_agent.py",
        ],
        cwd=folder,
        env=env,
        check=False,
        stdout=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    # the run items (a gate is a test case of its own, `test_agent[gate]`)
    cases = [c for c in ET.parse(junit).getroot().iter("testcase") if "[run" in c.get("name", "")]
    times = [float(case.get("time", "0")) for case in cases]
    return sum(times), wall, cpu, len(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[20, 100])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 5, 20])
    parser.add_argument("--latency", type=float, default=0.5, help="model seconds a turn")
    parser.add_argument("--rounds", type=int, default=1, help="medians over this many")
    parser.add_argument("--baseline", metavar="PYTHON", help="also run under this interpreter")
    options = parser.parse_args()
    print(f"python {platform.python_version()}, {os.cpu_count()} cpus, load {os.getloadavg()}")
    print(f"model latency {options.latency} s a turn, 3 turns a run, faults on")
    print(f"medians of {options.rounds}; ideal = runs / N x one run at N = 1\n")
    pythons = {"this": sys.executable}
    if options.baseline:
        pythons = {"baseline": options.baseline, **pythons}
    print(
        f"{'tree':>8} {'runs':>5} {'N':>4} {'runs s':>8} {'wall s':>8} {'cpu s':>8} "
        f"{'ideal s':>8} {'ratio':>6}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-concurrency-") as tmp:
        folder = Path(tmp)
        (folder / "world.yaml").write_text(WORLD.read_text())
        (folder / "test_agent.py").write_text(SUITE)
        (folder / "pytest.ini").write_text(
            "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
        )
        for runs in options.runs:
            per_run: dict[str, float] = {}
            for n in sorted(options.concurrency):
                rows: dict[str, list[tuple[float, float, float]]] = {k: [] for k in pythons}
                for _ in range(options.rounds):
                    for name, python in pythons.items():  # alternated in each round
                        took, wall, cpu, reported = one(folder, runs, n, options.latency, python)
                        if reported != runs:
                            raise SystemExit(
                                f"expected {runs} run items, the report has {reported}"
                            )
                        rows[name].append((took, wall, cpu))
                medians = {}
                for name, measured in rows.items():
                    took, wall, cpu = (statistics.median(x) for x in zip(*measured))
                    if name not in per_run:
                        if n != 1:
                            raise SystemExit("the ideal needs concurrency 1 measured first")
                        per_run[name] = took / runs
                    ideal = per_run[name] * runs / n
                    medians[name] = took
                    print(
                        f"{name:>8} {runs:>5} {n:>4} {took:>8.2f} {wall:>8.2f} {cpu:>8.2f} "
                        f"{ideal:>8.2f} {took / ideal:>6.2f}",
                        flush=True,
                    )
                if len(medians) == 2:
                    print(f"{'':>8} this / baseline: {medians['this'] / medians['baseline']:.2f}x")


if __name__ == "__main__":
    main()
