"""The payments API as a Stripe App reaches it (worlds/stripe_app.yaml): an OAuth access token
that lives an hour and needs scopes, and both token agents under both frameworks in-process,
with the token's end pinned: by the clock (an hour passes before the run), and by a fault
script (`payments.create_refund: {script: {2: token_expired}}`)."""

from __future__ import annotations

from pathlib import Path

import pytest

import faultbench
from faultbench.serve import build_server

from ..transports import FRAMEWORKS, Reach, run_over
from . import agents_token

pytestmark = pytest.mark.anyio

APP = Path(__file__).parent / "worlds" / "stripe_app.yaml"
GRACE = ["ch_1", "ch_2", "ch_3"]  # cus_1's charges


@pytest.fixture
def anyio_backend():
    return "asyncio"


def app(rules: dict | None = None):
    """The app's world without the file's faults: `rules` instead, or none."""
    world = faultbench.load_world(APP)
    world.set_faults(rules or {})
    return world


async def run(framework: str, policy, world, expire: bool = False):
    server = build_server(world, principal=agents_token.PRINCIPAL)  # the token is issued now
    if expire:
        agents_token.expire_the_token(world)
    return (await run_over(Reach(server, world), framework, policy, agents_token))[0]


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_token_that_outlived_its_hour(framework):
    world = app()
    naive = await run(framework, agents_token.naive, world, expire=True)
    assert naive.trace.summary() == " → ".join(["list_charges!unauthorized"] * 3)
    assert naive.output.startswith("Could not finish: 401 Unauthorized: payments.list_charges")
    assert "the access token has expired" in naive.output
    assert agents_token.unrefunded(world) == GRACE  # nothing was refunded

    world = app()
    careful = await run(framework, agents_token.careful, world, expire=True)
    assert careful.trace.summary() == (
        "list_charges!unauthorized → refresh_token → list_charges → create_refund → "
        "create_refund → create_refund"
    )
    assert careful.output == "Refunded ch_1, ch_2, ch_3 in full."
    assert agents_token.unrefunded(world) == []


SCRIPT = {"payments.create_refund": {"script": {2: "token_expired"}}}


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_token_that_ends_mid_task(framework):
    world = app(SCRIPT)
    naive = await run(framework, agents_token.naive, world)
    assert naive.trace.summary() == (
        "list_charges → create_refund → create_refund!token_expired → "
        "create_refund!unauthorized → create_refund!unauthorized"
    )
    assert "the access token has expired" in naive.output
    assert agents_token.unrefunded(world) == ["ch_2", "ch_3"]  # ch_1 only

    world = app(SCRIPT)
    careful = await run(framework, agents_token.careful, world)
    assert careful.trace.summary() == (
        "list_charges → create_refund → create_refund!token_expired → refresh_token → "
        "create_refund → create_refund"
    )
    assert agents_token.unrefunded(world) == []
    assert [r.charge_id for r in world.refunds.all()] == GRACE  # each once


# ---------------------------------------------------------------------------------------------
# The app's auth
# ---------------------------------------------------------------------------------------------


def test_an_apps_token_needs_its_scopes_and_lives_an_hour():
    world = app()
    refund = {"charge_id": "ch_5"}
    assert world.call("create_refund", refund).error_kind == "unauthorized"  # no token
    reporting = world.issue_token("reporting_app")
    assert world.call("get_charge", {"id": "ch_5"}, token=reporting).ok
    denied = world.call("create_refund", refund, token=reporting)
    assert denied.error_kind == "insufficient_scope"
    assert "'refund_write'" in denied.text
    token = world.issue_token("refunds_app")
    world.clock.advance(59 * 60)
    assert world.call("get_charge", {"id": "ch_5"}, token=token).ok
    world.clock.advance(60)
    expired = world.call("create_refund", refund, token=token)
    assert expired.error_kind == "unauthorized"
    assert "has expired; renew it with the refresh_token tool" in expired.text
    assert world.call("refresh_token", {}, token=token).ok
    assert world.call("create_refund", refund, token=token).ok
    assert world.charges.get("ch_5").refunded
    # every decision is an event, and the run replays to the same state
    outcomes = [e.outcome for e in world.events if type(e).__name__ == "AuthChecked"]
    assert outcomes[:3] == ["missing_token", "allowed", "insufficient_scope"]
    assert faultbench.replay(APP, world.events).state_hash() == world.state_hash()
