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
"""

from ._agentresult import AgentResult as AgentResult
from ._agentresult import AgentTrace as AgentTrace
from ._agentresult import Step as Step
from ._agentresult import TraceBuilder as TraceBuilder
from ._expect import Expectation as Expectation
from ._expect import expect as expect
from ._handles import Faults as Faults
from ._handles import LiveTrace as LiveTrace
from ._inject import Injected as Injected
from ._inject import InjectedError as InjectedError
from ._inject import fault_inject as fault_inject
from ._mocks import MockTool as MockTool
from ._mocks import MockToolRegistry as MockToolRegistry
from ._mocks import mock_tool as mock_tool
from ._personas import ADVERSARIAL_USER as ADVERSARIAL_USER
from ._personas import CONFUSED_USER as CONFUSED_USER
from ._personas import COOPERATIVE_USER as COOPERATIVE_USER
from ._personas import FRIENDLY_USER as FRIENDLY_USER
from ._personas import LLMUser as LLMUser
from ._personas import Persona as Persona
from ._personas import ScriptedUser as ScriptedUser
from ._personas import SimulatedUser as SimulatedUser
from ._repeat import RepeatResult as RepeatResult
from ._repeat import Run as Run
from ._repeat import RunOutcome as RunOutcome
from ._repeat import current_run as current_run
from ._repeat import repeat as repeat
from ._runs import RunInfo as RunInfo
from ._runs import derive_seed as derive_seed
from ._scenario import AgentReply as AgentReply
from ._scenario import Conversation as Conversation
from ._scenario import Message as Message
from ._scenario import ScenarioResult as ScenarioResult
from ._scenario import Turn as Turn
from ._scenario import scenario as scenario
from ._stats import Gate as Gate
from ._stats import decide as decide
from ._stats import pass_hat_k as pass_hat_k
from ._stats import required_passes as required_passes
from ._stats import wilson_interval as wilson_interval
from ._turns import ScenarioConfig as ScenarioConfig

__all__ = [
    "ADVERSARIAL_USER",
    "CONFUSED_USER",
    "COOPERATIVE_USER",
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
    "Persona",
    "RepeatResult",
    "Run",
    "RunInfo",
    "RunOutcome",
    "ScenarioConfig",
    "ScenarioResult",
    "ScriptedUser",
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
    "pass_hat_k",
    "repeat",
    "required_passes",
    "scenario",
    "wilson_interval",
]
