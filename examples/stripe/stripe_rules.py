"""Business rules of the example payments API: the custom operations of worlds/stripe.yaml.

Amounts are integer cents. The messages follow Stripe's. A refund may be partial, several
partial refunds may follow each other, and together they never exceed what was charged. A
refund that carries an `idempotency_key` already used returns the first refund instead of
acting twice, as Stripe's `Idempotency-Key` header does: the world file declares it
(`idempotency:` on `create_refund`), no handler code does it.

A refund is `pending` when it is made and settles later in virtual time, as Stripe's do: it
succeeds 30 s to 5 min later, or fails (`REFUND_FAILURE_RATE`, a fact of the world, not a
fault). `create_refund` schedules that change with `world.schedule(...)`, drawn from the
world's seed, the run index and the refund's id, so a run replays and forks as it ran.
"""

from __future__ import annotations

import random
from typing import Literal

REFUND_FAILURE_RATE = 0.2  # a refund that stays pending, then fails (the bank refused it)
SETTLES_AFTER = (30, 300)  # seconds of virtual time from pending to succeeded or failed

Currency = Literal["usd", "eur"]
RefundReason = Literal["duplicate", "fraudulent", "requested_by_customer"]


def _get(table, kind: str, ident: str):
    row = table.get(ident)
    if row is None:
        raise LookupError(f"No such {kind}: '{ident}'")
    return row


def _positive(amount: int) -> None:
    if amount <= 0:
        raise ValueError(f"Amount must be a positive number of cents; got {amount}")


def create_payment_intent(
    world,
    clock,
    customer_id: str,
    amount: int,
    currency: Currency = "usd",
    description: str | None = None,
) -> dict:
    """Start a payment of `amount` cents by a customer; confirm it to charge them.

    Args:
        customer_id: id of the paying customer (cus_...).
        amount: how much, in integer cents (2550 is 25.50); more than zero.
        currency: usd or eur.
        description: what the payment is for.
    """
    _get(world.customers, "customer", customer_id)
    _positive(amount)
    return world.payment_intents.insert(
        customer_id=customer_id,
        amount=amount,
        currency=currency,
        status="requires_confirmation",
        description=description,
        created_at=clock.now(),
    ).to_dict()


def _charge(world, clock, intent) -> dict:
    charge = world.charges.insert(
        payment_intent_id=intent.id,
        customer_id=intent.customer_id,
        amount=intent.amount,
        currency=intent.currency,
        created_at=clock.now(),
    )
    world.payment_intents.update(intent.id, status="succeeded")
    return charge.to_dict()


def confirm_payment_intent(world, clock, payment_intent_id: str) -> dict:
    """Confirm a payment intent: the customer is charged. Returns the charge.

    Args:
        payment_intent_id: id of a payment intent whose status is requires_confirmation.
    """
    intent = _get(world.payment_intents, "payment_intent", payment_intent_id)
    if intent.status != "requires_confirmation":
        raise ValueError(
            f"This PaymentIntent's status is {intent.status}; only one that requires "
            "confirmation can be confirmed"
        )
    return _charge(world, clock, intent)


def create_refund(
    world,
    clock,
    charge_id: str,
    amount: int | None = None,
    reason: RefundReason = "requested_by_customer",
) -> dict:
    """Refund all or part of a charge. Partial refunds may follow each other until the whole
    charge is refunded, never beyond it. The refund is `pending`: it succeeds or fails within
    a few minutes (look it up again with get_refund; a failed one can be sent again).

    Args:
        charge_id: id of the charge to refund (ch_...).
        amount: how much to refund, in integer cents; leave it out to refund all that is left.
        reason: why: duplicate, fraudulent or requested_by_customer.

    Its `idempotency_key` argument is the world file's declaration (`idempotency:`), not code
    here: the kernel answers a repeated key with the first refund.
    """
    charge = _get(world.charges, "charge", charge_id)
    left = charge.amount - _refunded(world, charge_id)
    if left == 0:
        raise ValueError(f"Charge {charge_id} has already been refunded.")
    if amount is None:
        amount = left
    _positive(amount)
    if amount > left:
        raise ValueError(
            f"Refund amount ({amount}) is greater than unrefunded amount on charge ({left})"
        )
    refund = world.refunds.insert(
        charge_id=charge_id,
        amount=amount,
        reason=reason,
        status="pending",
        created_at=clock.now(),
    )
    refunded = charge.amount - left + amount
    world.charges.update(charge_id, amount_refunded=refunded, refunded=refunded == charge.amount)
    draw = random.Random(f"{world.seed}:{world.run}:{refund.id}")
    outcome = "failed" if draw.random() < REFUND_FAILURE_RATE else "succeeded"
    world.schedule(
        after=draw.randint(*SETTLES_AFTER), record="refund", id=refund.id, set={"status": outcome}
    )
    return refund.to_dict()


def _refunded(world, charge_id: str) -> int:
    """What the refunds of a charge take from it: pending and succeeded ones, not failed ones
    (so a failed refund may be sent again; the charge's `amount_refunded` follows at the next
    refund)."""
    refunds = world.refunds.where(charge_id=charge_id)
    return sum(r.amount for r in refunds if r.status != "failed")


def wait(world, clock, seconds: int) -> dict:
    """Wait before the next call: refunds settle while you wait. Returns the time after it.

    Args:
        seconds: how long to wait, 1 to 3600 seconds.
    """
    if not 1 <= seconds <= 3600:
        raise ValueError(f"Wait between 1 and 3600 seconds; got {seconds}")
    return {"now": clock.advance(seconds).isoformat()}


# ---------------------------------------------------------------------------------------------
# Invoices: a draft collects line items; finalizing fixes its total; paying charges it.
# ---------------------------------------------------------------------------------------------


def _invoice_with_lines(world, invoice) -> dict:
    lines = world.line_items.where(invoice_id=invoice.id)
    return {**invoice.to_dict(), "lines": [line.to_dict() for line in lines]}


def create_invoice(world, clock, customer_id: str, currency: Currency | None = None) -> dict:
    """Open a draft invoice for a customer; add line items, then finalize it.

    Args:
        customer_id: id of the customer billed (cus_...).
        currency: usd or eur; leave it out to use the customer's.
    """
    customer = _get(world.customers, "customer", customer_id)
    return world.invoices.insert(
        customer_id=customer_id,
        status="draft",
        currency=currency or customer.currency,
        created_at=clock.now(),
    ).to_dict()


def add_line_item(
    world, clock, invoice_id: str, description: str, unit_amount: int, quantity: int = 1
) -> dict:
    """Add a line to a draft invoice. Returns the invoice with all its lines.

    Args:
        invoice_id: id of a draft invoice (in_...).
        description: what the line is for.
        unit_amount: price of one unit, in integer cents; more than zero.
        quantity: how many units; at least 1.
    """
    invoice = _get(world.invoices, "invoice", invoice_id)
    if invoice.status != "draft":
        raise ValueError(f"Invoice {invoice_id} is {invoice.status}; only drafts take new lines")
    _positive(unit_amount)
    if quantity < 1:
        raise ValueError(f"Quantity must be at least 1; got {quantity}")
    world.line_items.insert(
        invoice_id=invoice_id, description=description, quantity=quantity, unit_amount=unit_amount
    )
    return _invoice_with_lines(world, invoice)


def finalize_invoice(world, clock, invoice_id: str) -> dict:
    """Finalize a draft invoice: its total is fixed from its lines and it can be paid.

    Args:
        invoice_id: id of a draft invoice with at least one line.
    """
    invoice = _get(world.invoices, "invoice", invoice_id)
    if invoice.status != "draft":
        raise ValueError(f"Invoice {invoice_id} is {invoice.status}; only drafts can be finalized")
    lines = world.line_items.where(invoice_id=invoice_id)
    if not lines:
        raise ValueError(f"Invoice {invoice_id} has no line items")
    total = sum(line.quantity * line.unit_amount for line in lines)
    invoice = world.invoices.update(invoice_id, status="open", total=total)
    return _invoice_with_lines(world, invoice)


def pay_invoice(world, clock, invoice_id: str) -> dict:
    """Charge the customer an open invoice's total. Returns the paid invoice.

    Args:
        invoice_id: id of an open (finalized) invoice.
    """
    invoice = _get(world.invoices, "invoice", invoice_id)
    if invoice.status != "open":
        raise ValueError(
            f"Invoice {invoice_id} is {invoice.status}; only open invoices can be paid"
        )
    intent = world.payment_intents.insert(
        customer_id=invoice.customer_id,
        amount=invoice.total,
        currency=invoice.currency,
        status="requires_confirmation",
        description=f"invoice {invoice_id}",
        created_at=clock.now(),
    )
    charge = _charge(world, clock, intent)
    invoice = world.invoices.update(invoice_id, status="paid", charge_id=charge["id"])
    return _invoice_with_lines(world, invoice)


def get_invoice(world, clock, invoice_id: str) -> dict:
    """Look up one invoice with its line items.

    Args:
        invoice_id: id of the invoice (in_...).
    """
    return _invoice_with_lines(world, _get(world.invoices, "invoice", invoice_id))
