"""Two scripted agents that add up every charge of the account, paging through
`list_charges` (10 a page, Stripe's `limit` / `starting_after` / `has_more`).

The world's faults break the walk as real APIs do (`payments.list_charges` in
worlds/stripe.yaml): `truncated_page` answers a full page with `has_more: false` one page
early, `expired_cursor` refuses a cursor with `400 ... cursor expired; start again`.

- `naive`: trusts `has_more: false`, and gives up on an error, reporting what it has: a
  truncated page or an expired cursor loses a page or two of charges.
- `careful`: checks a full last page by asking once more from its last record's id (Stripe's
  `starting_after` takes an id), starts again on an expired cursor, and counts each charge
  id once.
"""

from __future__ import annotations

from collections.abc import Sequence

from faultbench.integrations import Reply, Seen, ToolCall

LIMIT = 10
PROMPT = (
    "How much was charged on the account, all charges together? Page through list_charges "
    "and answer with the number of charges and the total in cents."
)
SYSTEM_PROMPT = (
    "You are a finance assistant with a Stripe-like payments API. Amounts are integer cents. "
    "A total must count every charge once."
)


def answer(charges: dict[str, int]) -> str:
    """The reply both agents give, so a gate can compare it with the truth."""
    return f"{len(charges)} charges, {sum(charges.values())} cents in all."


def _charges(pages: Sequence[Seen]) -> dict[str, int]:
    return {c["id"]: c["amount"] for page in pages if page.ok for c in page.value["data"]}


def _page(after: str | None) -> ToolCall:
    args: dict[str, object] = {"limit": LIMIT}
    if after is not None:
        args["starting_after"] = after
    return ToolCall("list_charges", args)


def naive(seen: Sequence[Seen]) -> ToolCall | Reply:
    """Follows `next_cursor` while `has_more` is true; stops at the first error."""
    pages = [s for s in seen if s.tool == "list_charges"]
    if not pages:
        return _page(None)
    last = pages[-1]
    if not last.ok or not last.value["has_more"]:
        return Reply(answer(_charges(pages)))
    return _page(last.value["next_cursor"])


def careful(seen: Sequence[Seen]) -> ToolCall | Reply:
    """Does not trust a full page that says it is the last, nor give up on a cursor."""
    pages = [s for s in seen if s.tool == "list_charges"]
    if not pages:
        return _page(None)
    if len(pages) > 20:
        return Reply(f"Could not list every charge: {pages[-1].text}")
    last = pages[-1]
    if not last.ok:
        if "cursor expired" in last.text:
            return _page(None)  # a fresh walk; the ids seen already are counted once
        return ToolCall(last.tool, last.args)  # a passing failure: the same page again
    page = last.value
    if page["has_more"]:
        return _page(page["next_cursor"])
    if len(page["data"]) == last.args["limit"]:  # a full "last" page: is it really?
        return _page(page["data"][-1]["id"])
    return Reply(answer(_charges(pages)))


def expected(world) -> str:
    """What a right answer says: every charge of the world, counted once."""
    return answer({c.id: c.amount for c in world.charges.all()})
