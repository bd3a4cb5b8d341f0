"""One run of an example's scripted agent through a framework over a transport.

The examples' `test_transports.py` run each agent under both frameworks over the three ways
of reaching a world (in-process, stdio, streamable HTTP) with the world file's own faults at a
fixed run index, so every transport sees the same fault draws: run K of a test's gate,
`faultbench serve WORLD --run K` and `load_world(WORLD, run=K)` are the same world.

`reach` is a fixture (registered in examples/conftest.py): the HTTP server is started before
the test's event loop, as pytest's `mcp_url` fixture does.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import faultbench
from faultbench.serve import MCP_VERSION

# The frameworks of this environment: the main one has mcp 2.x, .venv-mcp1 has mcp 1.x with
# the frameworks that need it (pyproject.toml, [tool.uv] conflicts); .ci/run runs both.
MCP1 = MCP_VERSION.startswith("1.")
FRAMEWORKS = ["langgraph", "smolagents"] if MCP1 else ["pydantic_ai", "openai_agents"]
TRANSPORTS = ["in_process", "stdio", "http"]


@dataclass
class Reach:
    """Where the agent finds the world (`mcp` for run_agent), and the world itself when it
    lives in this process (None for stdio: the run rebuilds it from the server's log)."""

    mcp: Any
    world: Any


@pytest.fixture(params=TRANSPORTS)
def reach(request):
    """The test module's WORLD at its RUN, over each transport in turn."""
    from faultbench.serve import build_server, serve_in_thread

    world_file: Path = request.module.WORLD
    run: int = request.module.RUN
    if request.param == "stdio":
        yield Reach(
            [sys.executable, "-m", "faultbench", "serve", str(world_file), "--run", str(run)], None
        )
        return
    world = faultbench.load_world(world_file, run=run)
    if request.param == "in_process":
        yield Reach(build_server(world), world)
        return
    with serve_in_thread(world) as url:
        yield Reach(url, world)


async def run_over(reach: Reach, framework: str, policy, agents):
    """Returns (the framework's AgentRun, the world after the run)."""
    module = importlib.import_module(f"faultbench.integrations.{framework}")
    kwargs: dict[str, Any] = {"system_prompt": agents.SYSTEM_PROMPT}
    if framework == "pydantic_ai":
        kwargs["retries"] = 3  # the framework's retry budget is not what these tests test
    result = await module.run_agent(
        module.scripted_model(policy), agents.PROMPT, mcp=reach.mcp, **kwargs
    )
    return result, reach.world if reach.world is not None else result.world


GATED = (
    [("langgraph", "mcp_server"), ("smolagents", "mcp_url")]
    if MCP1
    else [("pydantic_ai", "mcp_server"), ("openai_agents", "mcp_url")]
)


@pytest.fixture(
    params=GATED, ids=[f"{f}-{'http' if x == 'mcp_url' else 'in_process'}" for f, x in GATED]
)
def gated(request) -> Reach:
    """For a gate's runs (the plugin's `world`): Pydantic AI (LangGraph on mcp 1.x)
    in-process, then the Agents SDK (smolagents) over HTTP. `Reach.world` holds the
    framework's name here."""
    framework, fixture = request.param
    return Reach(request.getfixturevalue(fixture), framework)


async def run_gated(gated: Reach, policy, agents):
    """One run of a gate: the framework's AgentRun."""
    return (await run_over(Reach(gated.mcp, None), gated.world, policy, agents))[0]
