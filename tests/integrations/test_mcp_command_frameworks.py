"""The shop's careful agent under each framework of this environment (Pydantic AI and the
Agents SDK under mcp 2.x; LangGraph and smolagents under 1.x) over stdio through the pytest
plugin's `mcp_command` fixture: the server serves each run's own world (its seed, run index
and the world file's faults), and the world the agent left is read back from its journal.
(Here, not in examples/shop: `uv run pytest examples/shop` is the README's demo.)"""

from __future__ import annotations

import importlib

import pytest
from examples.shop import agents
from examples.transports import FRAMEWORKS


@pytest.mark.world("../../examples/shop/worlds/shop.yaml")
@pytest.mark.faults
@pytest.mark.runs(3)
@pytest.mark.min_pass_rate(1.0)
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_careful_agent_over_mcp_command(framework, mcp_command):
    module = importlib.import_module(f"faultbench.integrations.{framework}")
    result = await module.run_agent(
        module.scripted_model(agents.careful),
        agents.PROMPT,
        mcp=mcp_command,
        system_prompt=agents.SYSTEM_PROMPT,
    )
    assert result.ok, result.error
    served = mcp_command.world()
    assert [r.amount for r in served.refunds.where(order_id=agents.ORDER)] == [25.0]
    assert mcp_command.trace().count("issue_refund") >= 1
