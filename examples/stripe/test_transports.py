"""Both agents under both frameworks over in-process, stdio and HTTP, at run 2 of the payments
API's own faults: the first refund times out after it was written (as in run 2 of the gates)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..transports import FRAMEWORKS, run_over
from . import agents

pytestmark = pytest.mark.anyio

WORLD = Path(__file__).parent / "worlds" / "stripe.yaml"
RUN = 2


@pytest.fixture
def anyio_backend():
    return "asyncio"


# The naive agent refunds twice; the careful one sends the same idempotency key again and
# gets the first refund back.
AGENTS = {"naive": [2000, 2000], "careful": [2000]}


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_agents(framework, agent, reach):
    result, world = await run_over(reach, framework, getattr(agents, agent), agents)
    assert result.ok, result.error
    assert result.trace.summary() == "get_charge → create_refund!timeout → create_refund"
    assert [r.amount for r in world.refunds.where(charge_id=agents.CHARGE)] == AGENTS[agent]
