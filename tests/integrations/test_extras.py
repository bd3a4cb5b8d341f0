"""`faultbench.integrations` imports no framework; a missing one names the extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest

from faultbench.integrations import Seen


def python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)


def test_the_package_imports_no_framework():
    proc = python(
        "import sys, faultbench.integrations\n"
        "print(sorted(m for m in ('pydantic_ai', 'agents', 'fastmcp', 'langchain_mcp_adapters', "
        "'langgraph', 'smolagents', 'mcpadapt') if m in sys.modules))"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("openai_agents", "agents", "openai-agents"),
        ("langgraph", "langchain_mcp_adapters", "langgraph"),
        ("smolagents", "smolagents", "smolagents"),
    ],
)
def test_a_missing_framework_names_the_extra(module, blocked, extra):
    proc = python(
        f"import sys; sys.modules[{blocked!r}] = None\nimport faultbench.integrations.{module}"
    )
    assert proc.returncode == 1
    assert f"ImportError: faultbench.integrations needs the '{extra}' extra: " in proc.stderr
    assert f"pip install 'faultbench[{extra}]'" in proc.stderr


def test_seen_is_what_a_scripted_agent_reads():
    seen = Seen(tool="get_order", args={"id": "1"}, text='{"id": "1"}', ok=True, value={"id": "1"})
    assert seen.value["id"] == "1"
