"""The careful agent's pass-rate gate: 20 runs of the bank's own faults, under Pydantic AI
in-process and under the OpenAI Agents SDK over streamable HTTP. Paying twice is never
acceptable, so every run must pass. (The naive agent's gate, which fails, is naive_gate.py.)"""

from __future__ import annotations

import pytest

from ..transports import run_gated
from . import agents

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.world("worlds/bank.yaml")
@pytest.mark.faults  # balances: 503 3% and stale 5% of reads; transfers time out 10%
@pytest.mark.runs(20)
@pytest.mark.min_pass_rate(1.0)
async def test_the_careful_agent_pays_once(world, gated, trace):
    await run_gated(gated, agents.careful, agents)  # a lost answer is no failure of ours
    paid = [
        t.amount for t in world.transfers.where(from_account=agents.PAYER, to_account=agents.PAYEE)
    ]
    assert paid == [agents.AMOUNT], trace.summary()
