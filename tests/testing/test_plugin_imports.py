"""The plugin loads in every pytest run: it must not import mcp, trio or anyio unless a test
uses a fixture that serves a world. Checked in a fresh process (pytest-trio and anyio's own
plugins, which import trio and anyio, are turned off there so the check sees ours)."""

from __future__ import annotations

import faultbench.testing

CHECK = """
import sys
import pytest

HEAVY = {"mcp", "trio", "anyio", "hypercorn", "faultbench.serve"}
# nor the parts of faultbench.testing a test did not use: the simulation API, the HTML report
UNUSED = {"faultbench.testing._simulation", "faultbench.testing._artifacts._html"}

@pytest.mark.world("world.yaml")
@pytest.mark.faults()
@pytest.mark.runs(2)
def test_world_without_a_server(world, trace, clock, faults, faultbench_run):
    world.call("get_order", {"id": "1"})
    assert HEAVY.isdisjoint(sys.modules), sorted(HEAVY & set(sys.modules))
    assert UNUSED.isdisjoint(sys.modules), sorted(UNUSED & set(sys.modules))

@pytest.mark.world("world.yaml")
def test_z_server_imports_them_when_asked(mcp_server):
    assert {"mcp", "faultbench.serve"} <= set(sys.modules)
"""


def test_the_plugin_imports_no_server_library_unless_a_fixture_needs_one(fb):
    fb.makepyfile(test_imports=CHECK)
    # (LangSmith's plugin, installed with LangChain in the mcp 1.x environment, imports anyio.)
    result = fb.runpytest_subprocess(
        "-p",
        "no:trio",
        "-p",
        "no:anyio",
        "-p",
        "no:asyncio",
        "-p",
        "no:langsmith_plugin",
        "-p",
        "no:schemathesis",
    )
    result.assert_outcomes(passed=3)


def test_public_names():
    assert sorted(faultbench.testing.__all__) == [
        "ADVERSARIAL_USER",
        "AgentReply",
        "AgentResult",
        "AgentTrace",
        "CONFUSED_USER",
        "COOPERATIVE_USER",
        "Conversation",
        "DEFAULT_BUDGET",
        "Expectation",
        "FRIENDLY_USER",
        "Faults",
        "Gate",
        "Injected",
        "InjectedError",
        "LLMUser",
        "LiveTrace",
        "Message",
        "MockTool",
        "MockToolRegistry",
        "Paired",
        "Persona",
        "Probe",
        "ProbeError",
        "RepeatResult",
        "Run",
        "RunInfo",
        "RunOutcome",
        "ScenarioConfig",
        "ScenarioResult",
        "ScriptedUser",
        "ShrinkResult",
        "SimulatedUser",
        "Step",
        "TraceBuilder",
        "Turn",
        "current_run",
        "decide",
        "derive_seed",
        "expect",
        "fault_inject",
        "mock_tool",
        "paired_runs",
        "pass_hat_k",
        "probe_pytest",
        "read_session",
        "repeat",
        "required_passes",
        "runs_for_margin",
        "scenario",
        "shrink",
        "spec_of",
        "wilson_interval",
        "write_report",
    ]
    for name in faultbench.testing.__all__:
        assert getattr(faultbench.testing, name) is not None
