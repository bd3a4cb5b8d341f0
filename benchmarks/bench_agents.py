"""Wall time of one agent run in-process, per framework, with a scripted model.

Frameworks: those of this environment with a `run_agent` (the main one: Pydantic AI, the
Agents SDK; the mcp 1.x one: LangGraph, smolagents, the Agents SDK). smolagents' MCP client
takes no in-process session, so its "in-process" run serves the world over HTTP from a thread
(as `run_agent` does). Run it in both environments:

    uv run python benchmarks/bench_agents.py [N]
    UV_PROJECT_ENVIRONMENT=.venv-mcp1 uv run --no-sync python benchmarks/bench_agents.py [N]

What is measured: `run_agent(scripted_model(careful), PROMPT, mcp=build_server(world))` from
examples/shop (get_order, create_return, a refund that times out after commit, list_refunds,
the reply: 4 tool calls, 5 model turns), on a fresh world each run, so connecting the
framework's MCP client to the in-process server is part of every run. Reported: median and
p90 wall time per run over N runs after warm-up.

In-process, Pydantic AI and the Agents SDK run each way they can reach a `WorldServer`
(issue 24): `transport="mcp"` (an MCP session per run) and `transport="direct"` (the
default: the server's handler, no session), in alternating batches of 10 runs, each run in
its own event loop as a pytest run is; reported per transport are the median wall time and
the median CPU time (`time.process_time`) per run, and the ratio of the CPU medians, which
a loaded machine moves least.

    uv run python benchmarks/bench_agents.py [N]
"""

from __future__ import annotations

import asyncio
import importlib
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from examples.shop import agents  # noqa: E402

import faultbench  # noqa: E402
from faultbench.serve import MCP_VERSION, build_server  # noqa: E402

WORLD = ROOT / "examples" / "shop" / "worlds" / "shop.yaml"


def fresh_world():
    world = faultbench.load_world(WORLD)
    world.set_faults({"payments.issue_refund": {"script": {1: "timeout"}}})
    return world


async def bench(framework: str, n: int) -> list[float]:
    module = importlib.import_module(f"faultbench.integrations.{framework}")
    times = []
    for i in range(n + 3):
        world = fresh_world()
        started = time.perf_counter()
        run = await module.run_agent(
            module.scripted_model(agents.careful), agents.PROMPT, mcp=build_server(world)
        )
        elapsed = time.perf_counter() - started
        if not run.ok or run.trace.count() != 4:
            raise SystemExit(f"unexpected run: {run}")
        if i >= 3:  # warm-up: imports, first connections
            times.append(elapsed)
    return times


FRAMEWORKS = ("pydantic_ai", "openai_agents", "langgraph", "smolagents")
#: the frameworks whose run_agent takes `transport=` for a WorldServer
TRANSPORTS = ("pydantic_ai", "openai_agents")


def one_run(module, transport: str) -> tuple[float, float]:
    """Wall and CPU seconds of one run in a fresh event loop (as a pytest run has)."""
    world = fresh_world()
    wall, cpu = time.perf_counter(), time.process_time()
    run = asyncio.run(
        module.run_agent(
            module.scripted_model(agents.careful),
            agents.PROMPT,
            mcp=build_server(world),
            transport=transport,
        )
    )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if not run.ok or run.trace.count() != 4:
        raise SystemExit(f"unexpected run: {run}")
    return wall, cpu


def compare_transports(framework: str, n: int) -> None:
    module = importlib.import_module(f"faultbench.integrations.{framework}")
    got: dict[str, list[tuple[float, float]]] = {"mcp": [], "direct": []}
    for transport in got:  # warm-up
        for _ in range(3):
            one_run(module, transport)
    while len(got["direct"]) < n:
        for transport, runs in got.items():
            runs.extend(one_run(module, transport) for _ in range(10))
    medians = {
        t: (statistics.median(w for w, _ in r) * 1000, statistics.median(c for _, c in r) * 1000)
        for t, r in got.items()
    }
    for t, (wall, cpu) in medians.items():
        print(f"  {framework:14} transport={t:6} median {wall:6.1f} ms wall, {cpu:6.1f} ms CPU")
    ratio = medians["mcp"][1] / medians["direct"][1]
    print(f"  {framework:14} CPU per run, mcp / direct: {ratio:.2f}x")


def installed(framework: str) -> bool:
    try:
        importlib.import_module(f"faultbench.integrations.{framework}")
    except ImportError:
        return False
    return True


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    print(f"mcp {MCP_VERSION}, Python {sys.version.split()[0]}")
    for framework in [f for f in FRAMEWORKS if installed(f)]:
        times = sorted(asyncio.run(bench(framework, n)))
        median = statistics.median(times) * 1000
        p90 = times[int(len(times) * 0.9) - 1] * 1000
        print(f"{framework:14} {n} runs: median {median:6.1f} ms, p90 {p90:6.1f} ms per run")
    print(f"transports, {n} runs each (load average {os.getloadavg()[0]:.1f}):")
    for framework in [f for f in TRANSPORTS if installed(f)]:
        compare_transports(framework, n)


if __name__ == "__main__":
    main()
