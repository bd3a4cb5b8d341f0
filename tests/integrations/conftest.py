from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import faultbench
from faultbench.integrations import Reply, ToolCall
from faultbench.serve import MCP_VERSION

from ..serve.serve_helpers import ServeProcess

MCP_MAJOR = int(MCP_VERSION.split(".", 1)[0])

SHOP = Path(__file__).resolve().parents[2] / "examples" / "shop" / "worlds" / "shop.yaml"

# Each framework is tested in the environment it installs in (pyproject.toml, [tool.uv]
# conflicts): the main one (mcp 2.x) and .venv-mcp1 (mcp 1.x); .ci/run runs both, and
# tests/test_environments.py checks that each has its frameworks. The Agents SDK takes either.
if MCP_MAJOR >= 2:
    FRAMEWORKS = ["pydantic_ai", "openai_agents"]
    collect_ignore = ["test_langgraph.py", "test_smolagents.py", "test_google_adk.py"]
    # Strands pins mcp<2.2: .ci/mcp-range runs its tests with the mcp 2.x it resolves to.
    if importlib.util.find_spec("strands") is None:
        collect_ignore.append("test_strands.py")
else:
    FRAMEWORKS = ["openai_agents", "langgraph", "smolagents"]
    collect_ignore = [
        "test_pydantic_ai.py",
        "test_cassettes.py",
        "test_llamaindex.py",
    ]


@pytest.fixture(autouse=True, scope="session")
def _no_openai_tracing():
    """Never upload traces from tests, whatever run_agent is asked."""
    if importlib.util.find_spec("agents") is not None:
        import agents

        agents.set_tracing_disabled(True)


@pytest.fixture
def anyio_backend():
    return "asyncio"  # both frameworks run on asyncio only


@pytest.fixture
def shop():
    return faultbench.load_world(SHOP, faults=False)


def stdio_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "faultbench.cli", "serve", str(SHOP), *args]


@pytest.fixture
def http_server():
    servers: list[ServeProcess] = []

    def start(*args: str, world: Path = SHOP) -> ServeProcess:
        server = ServeProcess(str(world), "--http", "--port", "0", *args)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.kill()


def cancel_first_placed(seen):
    """A scripted agent: find a placed order, cancel it, read it back, say which one."""
    if not seen:
        return ToolCall("list_orders", {"status": "placed"})
    if len(seen) == 1:
        return ToolCall("cancel_order", {"order_id": seen[0].value[0]["id"]})
    if len(seen) == 2:
        return ToolCall("get_order", {"id": seen[0].value[0]["id"]})
    return Reply(f"cancelled order {seen[2].value['id']}: {seen[2].value['status']}")


class FailsThenFinds:
    """A scripted agent that asks for a missing order, then order 1; keeps what it saw."""

    def __init__(self):
        self.seen = []

    def __call__(self, seen):
        self.seen = list(seen)
        if not seen:
            return ToolCall("get_order", {"id": "nope"})
        if len(seen) == 1:
            return ToolCall("get_order", {"id": "1"})
        return Reply("ok")
