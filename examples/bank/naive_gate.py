"""The naive agent's gate: 20 runs of the bank's own faults; every run must pass.

It fails, as it should: a balance read is stale 5% of the time, and after a stale read the
naive agent pays again. Collected only by `uv run pytest examples/bank` (see
examples/conftest.py); tests/test_demo.py checks the failure.
"""

from __future__ import annotations

import pytest

from ..transports import Reach, run_over
from . import agents

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.world("worlds/bank.yaml")
@pytest.mark.faults  # the file's faults: 5% of balance reads are stale
@pytest.mark.runs(20)
@pytest.mark.min_pass_rate(1.0)
async def test_the_naive_agent_pays_once(world, mcp_server):
    await run_over(Reach(mcp_server, world), "pydantic_ai", agents.naive, agents)
    paid = [
        t.amount for t in world.transfers.where(from_account=agents.PAYER, to_account=agents.PAYEE)
    ]
    assert paid == [agents.AMOUNT], f"paid {paid}"
