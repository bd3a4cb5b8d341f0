"""`faultbench.integrations` imports no framework; a missing one names the extra to install."""

from __future__ import annotations

import os
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


@pytest.mark.parametrize(("module", "local"), [("openai_agents", "agents")])
def test_a_local_module_that_shadows_the_framework_is_named_as_such(tmp_path, module, local):
    # an agents.py of the user's beside the tests: the SDK is installed, but not what Python finds
    (tmp_path / f"{local}.py").write_text("HELPERS = 1\n")
    proc = subprocess.run(
        [sys.executable, "-c", f"import faultbench.integrations.{module}"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert proc.returncode == 1
    assert "needs the" not in proc.stderr
    assert (
        f"ImportError: faultbench.integrations: the module {local!r} was imported from "
        f"{tmp_path / (local + '.py')}, a file of your own, not from the 'openai-agents' "
        f"framework, which it shadows"
    ) in proc.stderr
    assert f"Rename {local}.py" in proc.stderr
