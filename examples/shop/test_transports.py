"""Both agents under both frameworks over in-process, stdio and HTTP, at run 12 of the shop's
own faults: the first refund times out after it was written (as in run 12 of the gates)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..transports import FRAMEWORKS, run_over
from . import agents

pytestmark = pytest.mark.anyio

WORLD = Path(__file__).parent / "worlds" / "shop.yaml"
RUN = 12


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_naive_agent_refunds_twice(framework, reach):
    result, world = await run_over(reach, framework, agents.naive, agents)
    assert result.trace.summary() == (
        "get_order → create_return → issue_refund!timeout → issue_refund"
    )
    assert [r.amount for r in world.refunds.where(order_id=agents.ORDER)] == [25.0, 25.0]


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_careful_agent_refunds_once(framework, reach):
    result, world = await run_over(reach, framework, agents.careful, agents)
    assert result.ok, result.error
    assert result.trace.summary() == (
        "get_order → create_return → issue_refund!timeout → list_refunds"
    )
    assert [r.amount for r in world.refunds.where(order_id=agents.ORDER)] == [25.0]
