"""The careful agents' pass-rate gates: 20 runs of the payments API's own faults each, under
Pydantic AI in-process and under the OpenAI Agents SDK over streamable HTTP (the token gate:
both in-process, see below). One gate per failure mode (README.md); the naive agents' gates,
which fail, are naive_gate.py."""

from __future__ import annotations

import pytest

from ..transports import FRAMEWORKS, Reach, run_gated, run_over
from . import agents, agents_feed, agents_order, agents_pages, agents_pending, agents_token

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.world("worlds/stripe.yaml"),
    pytest.mark.faults,  # the file's own faults: every mode's at once
    pytest.mark.runs(20),
    pytest.mark.min_pass_rate(0.95),
]


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_the_careful_agent_refunds_once(world, gated, trace):
    """A timeout after commit: the retry carries the same idempotency key."""
    run = await run_gated(gated, agents.careful, agents)
    assert run.ok, run.error
    refunds = [r.amount for r in world.refunds.where(charge_id=agents.CHARGE)]
    assert refunds == [agents.AMOUNT], trace.summary()
    assert world.charges.get(agents.CHARGE).amount_refunded == agents.AMOUNT


async def test_the_careful_agent_counts_every_charge_once(world, gated, trace):
    """A truncated page or an expired cursor while paging through list_charges."""
    run = await run_gated(gated, agents_pages.careful, agents_pages)
    assert run.output == agents_pages.expected(world), trace.summary()


async def test_the_careful_agent_waits_for_the_refund_to_succeed(world, gated, trace):
    """A refund that stays pending, then fails."""
    run = await run_gated(gated, agents_pending.careful, agents_pending)
    assert run.ok, run.error
    assert "back" in run.output, run.output
    assert agents_pending.settled(world) == [(agents_pending.AMOUNT, "succeeded")], trace.summary()


async def test_the_careful_agent_books_each_refund_once(world, gated, trace):
    """A duplicated or reordered event on the feed."""
    agents_feed.refund_some(world)
    run = await run_gated(gated, agents_feed.careful, agents_feed)
    assert run.ok, run.error
    assert agents_feed.booked(world) == agents_feed.REFUNDS, trace.summary()


async def test_the_careful_agent_keeps_each_charges_latest_state(world, gated, trace):
    """Two events of one charge swapped on the feed (or one of them twice)."""
    agents_order.refund_some(world)
    run = await run_gated(gated, agents_order.careful, agents_order)
    assert run.output == agents_order.expected(world), trace.summary()


@pytest.mark.world("worlds/stripe_app.yaml")  # the API as a Stripe App reaches it: OAuth
@pytest.mark.principal(agents_token.PRINCIPAL)
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_careful_agent_renews_its_token(framework, world, mcp_server, trace):
    """An access token that expires mid-task (`token_expired`), next to timeouts after commit.
    In-process under both frameworks: the integrations' HTTP clients send no bearer token,
    which a world with `auth:` needs on `/mcp`."""
    run = (await run_over(Reach(mcp_server, world), framework, agents_token.careful, agents_token))[
        0
    ]
    assert run.ok, run.error
    assert agents_token.unrefunded(world) == [], trace.summary()
    assert sorted(r.charge_id for r in world.refunds.all()) == ["ch_1", "ch_2", "ch_3"]
