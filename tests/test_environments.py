"""Each test environment holds the frameworks its tests need, so that no framework's tests
vanish because it is missing: the main one (mcp 2.x) and .venv-mcp1 (mcp 1.x), both built by
.ci/run from one lock (pyproject.toml, [tool.uv] conflicts)."""

from __future__ import annotations

import importlib.util
from importlib.metadata import version

from faultbench.serve import MCP_VERSION

MAIN = ["pydantic_ai", "agents", "llama_index.tools.mcp"]
MCP1 = [
    "langchain_mcp_adapters",
    "langchain",
    "langgraph",
    "smolagents",
    "mcpadapt",
    "strands",
    "google.adk",
    "agents",
]


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def test_this_environment_has_its_frameworks():
    expected = MCP1 if MCP_VERSION.startswith("1.") else MAIN
    assert [m for m in expected if not installed(m)] == []
    assert version("mcp") == MCP_VERSION


def test_the_mcp_1x_frameworks_are_not_in_the_2x_environment():
    # They would pull mcp<2 (or break on 2.x): the environments are kept apart on purpose.
    if not MCP_VERSION.startswith("1."):
        assert not installed("langchain_mcp_adapters")
        assert not installed("mcpadapt")
