"""The careful agent's pass-rate gate: 20 runs of the shop's own faults, under Pydantic AI
in-process and under the OpenAI Agents SDK over streamable HTTP; in the mcp 1.x environment,
under LangGraph in-process and smolagents over HTTP (examples/transports.py, `gated`). (The
naive agent's gate, which fails, is naive_gate.py.)"""

from __future__ import annotations

import pytest

from ..transports import run_gated
from . import agents

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.world("worlds/shop.yaml")
@pytest.mark.faults  # issue_refund times out after commit 10% of the time, and more
@pytest.mark.runs(20)
@pytest.mark.min_pass_rate(0.95)
async def test_the_careful_agent_refunds_once(world, gated, trace):
    run = await run_gated(gated, agents.careful, agents)
    assert run.ok, run.error
    refunds = [r.amount for r in world.refunds.where(order_id=agents.ORDER)]
    assert refunds == [agents.AMOUNT], trace.summary()
    assert world.orders.get(agents.ORDER).status == "returned"
