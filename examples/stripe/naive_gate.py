"""The naive agents' gates: 20 runs of the payments API's own faults each, at least 95% must
pass. One gate per failure mode (README.md); each fails, as it should:

- refunds: `create_refund` times out after the refund was written in about one call in ten,
  and the naive agent refunds again (two partial refunds fit in the charge);
- pages: a truncated page or an expired cursor ends the walk early, and the total misses
  charges;
- pending: the agent says the money is back while the refund is pending; one in five fails;
- feed: a duplicated `charge.refunded` event is booked twice;
- order: two events of one charge come swapped, and the older state overwrites the newer;
- token: the app's access token expires mid-task (worlds/stripe_app.yaml), the agent retries
  with it, gets the same 401 three times and gives up with charges left unrefunded.

Collected only by `uv run pytest examples/stripe` (see examples/conftest.py);
tests/test_demo.py checks the failures.
"""

from __future__ import annotations

import pytest

from ..transports import Reach, run_over
from . import agents, agents_feed, agents_order, agents_pages, agents_pending, agents_token

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.world("worlds/stripe.yaml"),
    pytest.mark.faults,  # the file's own faults
    pytest.mark.runs(20),
    pytest.mark.min_pass_rate(0.95),
]


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def naive(mcp_server, world, module):
    return (await run_over(Reach(mcp_server, world), "pydantic_ai", module.naive, module))[0]


async def test_the_naive_agent_refunds_once(world, mcp_server):
    await naive(mcp_server, world, agents)
    refunds = [r.amount for r in world.refunds.where(charge_id=agents.CHARGE)]
    assert refunds == [agents.AMOUNT], f"refunded {refunds}"


async def test_the_naive_agent_counts_every_charge_once(world, mcp_server):
    run = await naive(mcp_server, world, agents_pages)
    assert run.output == agents_pages.expected(world)


async def test_the_naive_agent_waits_for_the_refund_to_succeed(world, mcp_server):
    await naive(mcp_server, world, agents_pending)
    assert agents_pending.settled(world) == [(agents_pending.AMOUNT, "succeeded")]


async def test_the_naive_agent_books_each_refund_once(world, mcp_server):
    agents_feed.refund_some(world)
    await naive(mcp_server, world, agents_feed)
    assert agents_feed.booked(world) == agents_feed.REFUNDS


async def test_the_naive_agent_keeps_each_charges_latest_state(world, mcp_server):
    agents_order.refund_some(world)
    run = await naive(mcp_server, world, agents_order)
    assert run.output == agents_order.expected(world)


@pytest.mark.world("worlds/stripe_app.yaml")  # the API as a Stripe App reaches it: OAuth
@pytest.mark.principal(agents_token.PRINCIPAL)
async def test_the_naive_agent_renews_its_token(world, mcp_server):
    await naive(mcp_server, world, agents_token)
    assert agents_token.unrefunded(world) == []
