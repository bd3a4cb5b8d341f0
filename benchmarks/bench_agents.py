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

`--floor` (issue 24) asks what is left of a run that is faultbench's at all. In one process,
in alternating batches of 10 runs, each in its own event loop, it runs the same scripted
careful agent two ways per framework (Pydantic AI, the Agents SDK), and reports the median CPU
time per run of each and their ratio:

- `faultbench`: `run_agent(scripted_model(careful), PROMPT, mcp=world)`, the default direct
  path, on a world forked from a base world per run (13 us here; the pytest plugin's
  `World.from_spec` per run costs about the same), faults on, the refund's first call a
  timeout after commit;
- `bare`: the framework alone: an agent built per run, as `run_agent` builds one, with the
  same scripted model and four plain Python tools (built once) that answer like the world's
  (the first refund is written, then fails with a timeout's text). No faultbench code runs
  on the tool side, and no world is made.

    uv run python benchmarks/bench_agents.py --floor [N]
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
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


# --- the framework's floor (--floor) ---------------------------------------------------------


class _Shop:
    """The four tools' state, reset before each bare run: order 1 and the refunds written."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.refunds: list[dict] = []

    def get_order(self, id: str) -> dict:
        return {"id": id, "customer_id": "1", "status": "delivered", "total": 75.0, "note": ""}

    def create_return(self, order_id: str, reason: str) -> dict:
        return {"id": "1", "order_id": order_id, "reason": reason, "status": "requested"}

    def issue_refund(self, order_id: str, amount: float) -> dict | None:
        """Writes the refund; the first one then times out (None), as the world's does."""
        refund = {"id": str(len(self.refunds) + 1), "order_id": order_id, "amount": amount}
        self.refunds.append(refund)
        return refund if len(self.refunds) > 1 else None

    def list_refunds(self, order_id: str) -> list[dict]:
        return [r for r in self.refunds if r["order_id"] == order_id]


_SHOP = _Shop()
_TIMEOUT = "timeout: payments.issue_refund took longer than 30s"


def _bare_pydantic_ai():
    """A bare Pydantic AI run (an `Agent` per run over a `FunctionToolset` made once)."""
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.toolsets import FunctionToolset

    from faultbench.integrations.pydantic_ai import scripted_model

    async def get_order(id: str) -> dict:
        return _SHOP.get_order(id)

    async def create_return(order_id: str, reason: str) -> dict:
        return _SHOP.create_return(order_id, reason)

    async def issue_refund(order_id: str, amount: float) -> dict:
        refund = _SHOP.issue_refund(order_id, amount)
        if refund is None:
            raise ModelRetry(_TIMEOUT)
        return refund

    async def list_refunds(order_id: str) -> list[dict]:
        return _SHOP.list_refunds(order_id)

    tools = FunctionToolset([get_order, create_return, issue_refund, list_refunds])

    async def run() -> str:
        _SHOP.reset()
        agent = Agent(scripted_model(agents.careful), toolsets=[tools])
        return (await agent.run(agents.PROMPT)).output

    return run


def _bare_openai_agents():
    """A bare Agents SDK run (an `Agent` per run over `function_tool`s made once)."""
    import json

    from agents import Agent, RunConfig, Runner, function_tool

    from faultbench.integrations.openai_agents import scripted_model

    # The SDK answers the model with a tool's string; the world's results are JSON text.
    @function_tool
    async def get_order(id: str) -> str:
        return json.dumps(_SHOP.get_order(id))

    @function_tool
    async def create_return(order_id: str, reason: str) -> str:
        return json.dumps(_SHOP.create_return(order_id, reason))

    @function_tool
    async def issue_refund(order_id: str, amount: float) -> str:
        refund = _SHOP.issue_refund(order_id, amount)
        return _TIMEOUT if refund is None else json.dumps(refund)

    @function_tool
    async def list_refunds(order_id: str) -> str:
        return json.dumps(_SHOP.list_refunds(order_id))

    tools = [get_order, create_return, issue_refund, list_refunds]
    config = RunConfig(tracing_disabled=True)

    async def run() -> str:
        _SHOP.reset()
        agent = Agent(name="agent", model=scripted_model(agents.careful), tools=tools)
        result = await Runner.run(agent, agents.PROMPT, run_config=config)
        return result.final_output

    return run


def _faultbench(module):
    base = fresh_world()
    runs = itertools.count()

    async def run() -> str:
        world = base.fork(run=next(runs))
        got = await module.run_agent(
            module.scripted_model(agents.careful), agents.PROMPT, mcp=world
        )
        if not got.ok or got.trace.count() != 4:
            raise SystemExit(f"unexpected run: {got}")
        return got.output

    return run


def _cpu(run) -> float:
    started = time.process_time()
    output = asyncio.run(run())
    if "Refunded" not in str(output):
        raise SystemExit(f"unexpected output: {output!r}")
    return time.process_time() - started


def floor(framework: str, n: int) -> None:
    module = importlib.import_module(f"faultbench.integrations.{framework}")
    bare = {"pydantic_ai": _bare_pydantic_ai, "openai_agents": _bare_openai_agents}[framework]
    ways = {"faultbench": _faultbench(module), "bare": bare()}
    got: dict[str, list[float]] = {way: [] for way in ways}
    for run in ways.values():  # warm-up
        for _ in range(5):
            _cpu(run)
    while len(got["bare"]) < n:
        for way, run in ways.items():
            got[way].extend(_cpu(run) for _ in range(10))
    medians = {way: statistics.median(cpu) * 1000 for way, cpu in got.items()}
    for way, cpu in medians.items():
        print(f"  {framework:14} {way:10} median {cpu:6.2f} ms CPU per run ({len(got[way])} runs)")
    print(f"  {framework:14} faultbench / bare: {medians['faultbench'] / medians['bare']:.3f}x")


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--floor"]
    n = int(args[0]) if args else 50
    if "--floor" in sys.argv[1:]:
        print(f"floor, {n} runs a way, load average {os.getloadavg()[0]:.1f}:")
        for framework in [f for f in TRANSPORTS if installed(f)]:
            floor(framework, n)
        return
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
