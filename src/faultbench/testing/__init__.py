"""faultbench's pytest shell: markers, fixtures, N seeded runs and the pass-rate gate.

The plugin (`faultbench.testing.plugin`) is registered through the `pytest11` entry point,
so installing faultbench is enough::

    @pytest.mark.world("world.yaml")
    @pytest.mark.faults()
    @pytest.mark.runs(20)
    @pytest.mark.min_pass_rate(0.9)
    async def test_refund(world, mcp_server): ...

The simulation API (`repeat`, `fault_inject`, `mock_tool`, `MockToolRegistry`, personas,
`scenario`, and Attest's `ScenarioConfig`, `AgentResult`, `TraceBuilder` and `expect`) works
outside pytest too; see docs/SIMULATION.md.

The plugin imports pytest and faultbench's kernel only (no mcp, trio or anyio: the fixtures
that serve a world import `faultbench.serve` when a test asks for them); the rest of this
package imports no pytest. See docs/TESTING.md.

Every name here is imported on first use (PEP 562): a pytest run loads this package for its
plugin, and one that uses no simulation name, report or shrinking imports none of them.
"""

import typing as _typing

from faultbench._lazy import lazy_names as _lazy_names

if _typing.TYPE_CHECKING:
    from ._artifacts._html import spec_of as spec_of
    from ._artifacts._html import write_report as write_report
    from ._artifacts._sessionfile import read_session as read_session
    from ._artifacts._shrink import DEFAULT_BUDGET as DEFAULT_BUDGET
    from ._artifacts._shrink import Probe as Probe
    from ._artifacts._shrink import ProbeError as ProbeError
    from ._artifacts._shrink import ShrinkResult as ShrinkResult
    from ._artifacts._shrink import probe_pytest as probe_pytest
    from ._artifacts._shrink import shrink as shrink
    from ._gate._paired import Paired as Paired
    from ._gate._paired import paired_runs as paired_runs
    from ._gate._paired import runs_for_margin as runs_for_margin
    from ._gate._runs import RunInfo as RunInfo
    from ._gate._runs import derive_seed as derive_seed
    from ._gate._stats import Gate as Gate
    from ._gate._stats import decide as decide
    from ._gate._stats import pass_hat_k as pass_hat_k
    from ._gate._stats import required_passes as required_passes
    from ._gate._stats import wilson_interval as wilson_interval
    from ._plugin._handles import Faults as Faults
    from ._plugin._handles import LiveTrace as LiveTrace
    from ._simulation._agentresult import AgentResult as AgentResult
    from ._simulation._agentresult import AgentTrace as AgentTrace
    from ._simulation._agentresult import Step as Step
    from ._simulation._agentresult import TraceBuilder as TraceBuilder
    from ._simulation._expect import Expectation as Expectation
    from ._simulation._expect import expect as expect
    from ._simulation._inject import Injected as Injected
    from ._simulation._inject import InjectedError as InjectedError
    from ._simulation._inject import fault_inject as fault_inject
    from ._simulation._mocks import MockTool as MockTool
    from ._simulation._mocks import MockToolRegistry as MockToolRegistry
    from ._simulation._mocks import mock_tool as mock_tool
    from ._simulation._personas import ADVERSARIAL_USER as ADVERSARIAL_USER
    from ._simulation._personas import CONFUSED_USER as CONFUSED_USER
    from ._simulation._personas import COOPERATIVE_USER as COOPERATIVE_USER
    from ._simulation._personas import FRIENDLY_USER as FRIENDLY_USER
    from ._simulation._personas import LLMUser as LLMUser
    from ._simulation._personas import Message as Message
    from ._simulation._personas import Persona as Persona
    from ._simulation._personas import ScriptedUser as ScriptedUser
    from ._simulation._personas import SimulatedUser as SimulatedUser
    from ._simulation._repeat import RepeatResult as RepeatResult
    from ._simulation._repeat import Run as Run
    from ._simulation._repeat import RunOutcome as RunOutcome
    from ._simulation._repeat import current_run as current_run
    from ._simulation._repeat import repeat as repeat
    from ._simulation._scenario import AgentReply as AgentReply
    from ._simulation._scenario import Conversation as Conversation
    from ._simulation._scenario import ScenarioResult as ScenarioResult
    from ._simulation._scenario import Turn as Turn
    from ._simulation._scenario import scenario as scenario
    from ._simulation._turns import ScenarioConfig as ScenarioConfig

#: public name -> the module it lives in
_LAZY = {
    "ADVERSARIAL_USER": "._simulation._personas",
    "AgentReply": "._simulation._scenario",
    "AgentResult": "._simulation._agentresult",
    "AgentTrace": "._simulation._agentresult",
    "CONFUSED_USER": "._simulation._personas",
    "COOPERATIVE_USER": "._simulation._personas",
    "Conversation": "._simulation._scenario",
    "DEFAULT_BUDGET": "._artifacts._shrink",
    "Expectation": "._simulation._expect",
    "FRIENDLY_USER": "._simulation._personas",
    "Faults": "._plugin._handles",
    "Gate": "._gate._stats",
    "Injected": "._simulation._inject",
    "InjectedError": "._simulation._inject",
    "LLMUser": "._simulation._personas",
    "LiveTrace": "._plugin._handles",
    "Message": "._simulation._personas",
    "MockTool": "._simulation._mocks",
    "MockToolRegistry": "._simulation._mocks",
    "Paired": "._gate._paired",
    "Persona": "._simulation._personas",
    "Probe": "._artifacts._shrink",
    "ProbeError": "._artifacts._shrink",
    "RepeatResult": "._simulation._repeat",
    "Run": "._simulation._repeat",
    "RunInfo": "._gate._runs",
    "RunOutcome": "._simulation._repeat",
    "ScenarioConfig": "._simulation._turns",
    "ScenarioResult": "._simulation._scenario",
    "ScriptedUser": "._simulation._personas",
    "ShrinkResult": "._artifacts._shrink",
    "SimulatedUser": "._simulation._personas",
    "Step": "._simulation._agentresult",
    "TraceBuilder": "._simulation._agentresult",
    "Turn": "._simulation._scenario",
    "current_run": "._simulation._repeat",
    "decide": "._gate._stats",
    "derive_seed": "._gate._runs",
    "expect": "._simulation._expect",
    "fault_inject": "._simulation._inject",
    "mock_tool": "._simulation._mocks",
    "paired_runs": "._gate._paired",
    "pass_hat_k": "._gate._stats",
    "probe_pytest": "._artifacts._shrink",
    "read_session": "._artifacts._sessionfile",
    "repeat": "._simulation._repeat",
    "required_passes": "._gate._stats",
    "runs_for_margin": "._gate._paired",
    "scenario": "._simulation._scenario",
    "shrink": "._artifacts._shrink",
    "spec_of": "._artifacts._html",
    "wilson_interval": "._gate._stats",
    "write_report": "._artifacts._html",
}


__getattr__, __dir__ = _lazy_names(__name__, globals(), _LAZY)

__all__ = [
    "ADVERSARIAL_USER",
    "CONFUSED_USER",
    "COOPERATIVE_USER",
    "DEFAULT_BUDGET",
    "FRIENDLY_USER",
    "AgentReply",
    "AgentResult",
    "AgentTrace",
    "Conversation",
    "Expectation",
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
