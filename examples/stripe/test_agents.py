"""The payments API's rules, and its agents one run each with their failure pinned: the
refund's timeout by a fault script (`payments.create_refund: {script: {1: timeout}}`): the
naive agent refunds 20.00 twice, the careful one, with an idempotency key, once; a truncated
page, an expired cursor, a duplicated feed event the same way, and a refund that fails later
by the run index whose draw fails it (run 0)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

import faultbench
from faultbench.serve import build_server

from ..transports import Reach, run_over
from . import agents, agents_feed, agents_order, agents_pages, agents_pending

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
# The other failure modes, one pinned run each (the gates run them under the file's faults)
# ---------------------------------------------------------------------------------------------


def pinned(rules: dict, run: int = 0):
    world = faultbench.load_world(WORLD, run=run)
    world.set_faults(rules)
    return world


PAGES = {  # the naive walk, and how many of the 24 charges it counts
    "truncated_page": ("list_charges → list_charges!truncated_page", 20),  # page 3 is lost
    "expired_cursor": ("list_charges → list_charges!expired_cursor", 10),  # gives up
}


@pytest.mark.parametrize("fault", PAGES)
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_broken_page_walk(framework, fault):
    world = pinned({"payments.list_charges": {"script": {2: fault}}})
    naive = await run(framework, agents_pages.naive, world)
    calls, counted = PAGES[fault]
    assert naive.trace.summary() == calls
    assert naive.output.startswith(f"{counted} charges, ")

    world = pinned({"payments.list_charges": {"script": {2: fault}}})
    careful = await run(framework, agents_pages.careful, world)
    assert careful.output == agents_pages.expected(world)
    assert careful.output.startswith("24 charges, ")
    # after a truncated page 2, page 3 from its last id; after an expired cursor, three pages
    again = 3 if fault == "expired_cursor" else 1
    assert careful.trace.summary() == " → ".join([calls, *["list_charges"] * again])


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_refund_that_fails_while_pending(framework):
    # Run 0 draws failures for refunds 1 and 2 (create_refund in stripe_rules.py); no faults.
    world = pinned({})
    naive = await run(framework, agents_pending.naive, world)
    assert naive.output == f"Refunded 2000 cents of ch_1 ({world.refunds.all()[0].id})."
    assert agents_pending.settled(world) == []  # it failed: the customer has nothing

    world = pinned({})
    careful = await run(framework, agents_pending.careful, world)
    assert careful.trace.summary() == " → ".join(["create_refund → wait → get_refund"] * 3)
    *failed, last = world.refunds.all()
    assert [r.status for r in [*failed, last]] == ["failed", "failed", "succeeded"]
    assert careful.output == f"The customer has 2000 cents back ({last.id} succeeded)."
    assert agents_pending.settled(world) == [(2000, "succeeded")]


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_duplicated_feed_event(framework):
    rules = {"payments.list_events": {"script": {1: "duplicate_delivery"}}}
    world = pinned(rules)
    agents_feed.refund_some(world)
    naive = await run(framework, agents_feed.naive, world)
    assert naive.trace.summary().startswith("list_events!duplicate_delivery → book_refund")
    assert len(naive.trace.calls_to("book_refund")) == 4  # three refunds, one twice
    assert agents_feed.booked(world) != agents_feed.REFUNDS

    world = pinned(rules)
    agents_feed.refund_some(world)
    careful = await run(framework, agents_feed.careful, world)
    assert len(careful.trace.calls_to("book_refund")) == 3
    assert agents_feed.booked(world) == agents_feed.REFUNDS
    assert len({e.event_id for e in world.ledger_entries.all()}) == 3


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_reordered_feed_event(framework):
    rules = {"payments.list_events": {"script": {1: "out_of_order"}}}  # the first two swapped
    world = pinned(rules)
    agents_order.refund_some(world)
    naive = await run(framework, agents_order.naive, world)
    assert naive.trace.summary() == "list_events!out_of_order"
    assert naive.output == "2: 700; ch_1: 1500"  # ch_1's older state came last, and stayed
    assert agents_order.expected(world) == "2: 700; ch_1: 2500"

    world = pinned(rules)
    agents_order.refund_some(world)
    careful = await run(framework, agents_order.careful, world)
    assert careful.trace.summary() == "list_events!out_of_order"
    assert careful.output == agents_order.expected(world) == "2: 700; ch_1: 2500"


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


def test_the_readme_shows_the_files_faults():
    import yaml

    readme = (Path(__file__).parent / "README.md").read_text()
    shown = readme.split("```yaml\n", 1)[1].split("```", 1)[0]
    block = "faults:" + WORLD.read_text().split("\nfaults:", 1)[1]  # the file's last block
    assert yaml.safe_load(shown) == yaml.safe_load(block)
