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

    uv run python benchmarks/bench_agents.py [N]
"""

from __future__ import annotations

import asyncio
import importlib
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


if __name__ == "__main__":
    main()
