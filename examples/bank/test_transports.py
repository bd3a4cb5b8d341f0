"""Both agents under both frameworks over in-process, stdio and HTTP, at run 18 of the bank's
own faults: the balance read right after the transfer is stale (as in run 18 of the gates)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..transports import FRAMEWORKS, run_over
from . import agents

pytestmark = pytest.mark.anyio

WORLD = Path(__file__).parent / "worlds" / "bank.yaml"
RUN = 18

# agent -> (its calls, what ACC-1 paid ACC-2)
AGENTS = {
    "naive": (
        "get_account → transfer_money → get_account!stale_read → transfer_money → get_account",
        [agents.AMOUNT, agents.AMOUNT],
    ),
    "careful": (
        "get_account → transfer_money → get_account!stale_read → list_transfers",
        [agents.AMOUNT],
    ),
}


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_agents(framework, agent, reach):
    result, world = await run_over(reach, framework, getattr(agents, agent), agents)
    calls, paid = AGENTS[agent]
    assert result.trace.summary() == calls
    transfers = world.transfers.where(from_account=agents.PAYER, to_account=agents.PAYEE)
    assert [t.amount for t in transfers] == paid
