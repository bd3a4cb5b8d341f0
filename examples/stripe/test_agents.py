"""The payments API's rules, and its agents one run each with the refund's timeout pinned by
a fault script (`payments.create_refund: {script: {1: timeout}}`): the naive agent refunds
20.00 twice, the careful one, with an idempotency key, once."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

import faultbench
from faultbench.serve import build_server

from ..transports import Reach, run_over
from . import agents

pytestmark = pytest.mark.anyio

WORLD = Path(__file__).parent / "worlds" / "stripe.yaml"
FRAMEWORKS = ["pydantic_ai", "openai_agents"]


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def world():
    world = faultbench.load_world(WORLD)
    world.set_faults({"payments.create_refund": {"script": {1: "timeout"}}})
    return world


def refunded(world) -> list[int]:
    return [r.amount for r in world.refunds.where(charge_id=agents.CHARGE)]


async def run(framework: str, policy, world):
    return (await run_over(Reach(build_server(world), world), framework, policy, agents))[0]


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_naive_agent_refunds_twice_under_a_timeout(framework, world):
    result = await run(framework, agents.naive, world)
    assert result.ok  # it believes it succeeded...
    assert result.trace.summary() == "get_charge → create_refund!timeout → create_refund"
    # ...and two partial refunds of 20.00 fit in the 50.00 charged: the API took both
    assert refunded(world) == [agents.AMOUNT, agents.AMOUNT]
    assert world.charges.get(agents.CHARGE).amount_refunded == 4000


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_careful_agent_refunds_once_with_an_idempotency_key(framework, world):
    result = await run(framework, agents.careful, world)
    assert result.ok
    assert result.trace.summary() == "get_charge → create_refund!timeout → create_refund"
    assert refunded(world) == [agents.AMOUNT]
    _first, second = result.trace.calls_to("create_refund")
    assert second.value["id"] == world.refunds.where(charge_id=agents.CHARGE)[0].id
    assert agents.CHARGE in result.output


# ---------------------------------------------------------------------------------------------
# The rules
# ---------------------------------------------------------------------------------------------


def call(world, tool: str, **args):
    result = world.call(tool, args)
    assert result.ok, result.text
    return result.value


def refused(world, tool: str, **args) -> str:
    result = world.call(tool, args)
    assert not result.ok
    return result.text


def test_partial_refunds_never_exceed_the_charge():
    world = faultbench.load_world(WORLD, faults=False)
    assert "positive number of cents" in refused(world, "create_refund", charge_id="ch_1", amount=0)
    call(world, "create_refund", charge_id="ch_1", amount=2000)
    call(world, "create_refund", charge_id="ch_1", amount=2000)
    assert "Refund amount (2000) is greater than unrefunded amount on charge (1000)" in refused(
        world, "create_refund", charge_id="ch_1", amount=2000
    )
    rest = call(world, "create_refund", charge_id="ch_1")  # no amount: all that is left
    assert rest["amount"] == 1000
    charge = world.charges.get("ch_1")
    assert (charge.amount_refunded, charge.refunded) == (5000, True)
    assert "has already been refunded" in refused(world, "create_refund", charge_id="ch_1")
    assert "No such charge: 'ch_9'" in refused(world, "create_refund", charge_id="ch_9")


def test_an_idempotency_key_returns_the_first_refund():
    world = faultbench.load_world(WORLD, faults=False)
    first = call(world, "create_refund", charge_id="ch_1", amount=1500, idempotency_key="k1")
    again = call(world, "create_refund", charge_id="ch_1", amount=1500, idempotency_key="k1")
    assert again == first
    assert len(world.refunds.all()) == 1
    assert "can only be used with the same parameters" in refused(
        world, "create_refund", charge_id="ch_1", amount=900, idempotency_key="k1"
    )


def test_a_payment_intent_is_charged_when_confirmed():
    world = faultbench.load_world(WORLD, faults=False)
    intent = call(world, "create_payment_intent", customer_id="cus_1", amount=1234)
    assert intent["status"] == "requires_confirmation"
    charge = call(world, "confirm_payment_intent", payment_intent_id=intent["id"])
    assert (charge["amount"], charge["customer_id"]) == (1234, "cus_1")
    assert world.payment_intents.get(intent["id"]).status == "succeeded"
    assert "only one that requires confirmation" in refused(
        world, "confirm_payment_intent", payment_intent_id=intent["id"]
    )


def test_an_invoice_collects_line_items_and_is_paid_by_a_charge():
    world = faultbench.load_world(WORLD, faults=False)
    seeded = call(world, "get_invoice", invoice_id="in_1")
    assert [line["id"] for line in seeded["lines"]] == ["li_1", "li_2"]  # one-to-many by ref
    invoice = call(world, "create_invoice", customer_id="cus_1")
    assert (invoice["status"], invoice["currency"]) == ("draft", "usd")
    assert "has no line items" in refused(world, "finalize_invoice", invoice_id=invoice["id"])
    call(world, "add_line_item", invoice_id=invoice["id"], description="Mug", unit_amount=2500)
    lines = call(
        world, "add_line_item", invoice_id=invoice["id"], description="Tea", unit_amount=450,
        quantity=4,
    )["lines"]  # fmt: skip
    assert [(line["description"], line["quantity"]) for line in lines] == [("Mug", 1), ("Tea", 4)]
    final = call(world, "finalize_invoice", invoice_id=invoice["id"])
    assert (final["status"], final["total"]) == ("open", 2500 + 4 * 450)
    assert "only drafts take new lines" in refused(
        world, "add_line_item", invoice_id=invoice["id"], description="Late", unit_amount=1
    )
    paid = call(world, "pay_invoice", invoice_id=invoice["id"])
    assert paid["status"] == "paid"
    charge = world.charges.get(paid["charge_id"])
    assert (charge.amount, charge.customer_id) == (4300, "cus_1")
    assert [li.invoice_id for li in world.line_items.where(invoice_id=invoice["id"])] == [
        invoice["id"],
        invoice["id"],
    ]


@pytest.mark.skipif(
    not os.environ.get("OPENAI_API_KEY"),
    reason="set OPENAI_API_KEY to run the refund task with a real model (gpt-5-mini)",
)
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_real_model(framework, world):
    module = importlib.import_module(f"faultbench.integrations.{framework}")
    model = "openai:gpt-5-mini" if framework == "pydantic_ai" else "gpt-5-mini"
    result = await module.run_agent(
        model, agents.PROMPT, mcp=build_server(world), system_prompt=agents.SYSTEM_PROMPT
    )
    assert refunded(world) == [agents.AMOUNT], f"{result.trace.summary()}\n{result.output}"
