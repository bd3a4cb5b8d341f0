"""faultbench's pytest shell: markers, fixtures, N seeded runs and the pass-rate gate.

The plugin (`faultbench.testing.plugin`) is registered through the `pytest11` entry point,
so installing faultbench is enough::

    @pytest.mark.world("world.yaml")
    @pytest.mark.faults()
    @pytest.mark.runs(20)
    @pytest.mark.min_pass_rate(0.9)
    async def test_refund(world, mcp_server): ...

The simulation API (`repeat`, `fault_inject`, `mock_tool`, `MockToolRegistry`, personas and
`scenario`) works outside pytest too; see docs/SIMULATION.md.

The plugin imports pytest and faultbench's kernel only (no mcp, trio or anyio: the fixtures
that serve a world import `faultbench.serve` when a test asks for them); the rest of this
package imports no pytest. See docs/TESTING.md.
"""

from ._gate._stats import Gate as Gate
from ._gate._stats import decide as decide
from ._gate._stats import pass_hat_k as pass_hat_k
from ._gate._stats import required_passes as required_passes
from ._gate._stats import wilson_interval as wilson_interval
from ._plugin._handles import Faults as Faults
from ._plugin._handles import LiveTrace as LiveTrace
from ._plugin._runs import RunInfo as RunInfo
from ._plugin._runs import derive_seed as derive_seed
from ._simulation._inject import Injected as Injected
from ._simulation._inject import fault_inject as fault_inject
from ._simulation._mocks import MockTool as MockTool
from ._simulation._mocks import MockToolRegistry as MockToolRegistry
from ._simulation._mocks import mock_tool as mock_tool
from ._simulation._personas import ADVERSARIAL_USER as ADVERSARIAL_USER
from ._simulation._personas import CONFUSED_USER as CONFUSED_USER
from ._simulation._personas import COOPERATIVE_USER as COOPERATIVE_USER
from ._simulation._personas import FRIENDLY_USER as FRIENDLY_USER
from ._simulation._personas import LLMUser as LLMUser
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
from ._simulation._scenario import Message as Message
from ._simulation._scenario import ScenarioResult as ScenarioResult
from ._simulation._scenario import Turn as Turn
from ._simulation._scenario import scenario as scenario

__all__ = [
    "ADVERSARIAL_USER",
    "CONFUSED_USER",
    "COOPERATIVE_USER",
    "FRIENDLY_USER",
    "AgentReply",
    "Conversation",
    "Faults",
    "Gate",
    "Injected",
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
    "ScenarioResult",
    "ScriptedUser",
    "SimulatedUser",
    "Turn",
    "current_run",
    "decide",
    "derive_seed",
    "fault_inject",
    "mock_tool",
    "pass_hat_k",
    "repeat",
    "required_passes",
    "scenario",
    "wilson_interval",
]
