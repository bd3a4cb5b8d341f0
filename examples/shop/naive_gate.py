"""The naive agent's gate: 20 runs of the shop's own faults, at least 95% must pass.

It fails, as it should: `issue_refund` times out after the refund was written in about one
call in ten, and the naive agent refunds again. Collected only by `uv run pytest
examples/shop` (see examples/conftest.py); tests/test_demo.py checks the failure.
"""

from __future__ import annotations

import pytest

from ..transports import FRAMEWORKS, Reach, run_over
from . import agents

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.world("worlds/shop.yaml")
@pytest.mark.faults  # the file's faults: issue_refund times out after commit 10% of the time
@pytest.mark.runs(20)
@pytest.mark.min_pass_rate(0.95)
async def test_the_naive_agent_refunds_once(world, mcp_server):
    await run_over(Reach(mcp_server, world), FRAMEWORKS[0], agents.naive, agents)
    refunds = [r.amount for r in world.refunds.where(order_id=agents.ORDER)]
    assert refunds == [agents.AMOUNT], f"refunded {refunds}"
