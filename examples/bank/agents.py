"""Two scripted bank agents, runnable under Pydantic AI and the Agents SDK.

The task: pay Alan Turing (ACC-2) 30.00 from Ada Lovelace's account (ACC-1) and confirm it.
Balance reads are sometimes stale (`stale_read` in worlds/bank.yaml: the answer of 30 virtual
seconds ago), so right after a transfer the balance may not show it yet.

- `naive`: reads the balance after paying; if it has not moved, pays again. Under a stale
  read, Alan is paid twice.
- `careful`: when the balance has not moved, looks at the ledger (`list_transfers`), which
  is the record of what was paid, before paying again.
"""

from __future__ import annotations

from collections.abc import Sequence

from faultbench.integrations import Reply, Seen, ToolCall

PAYER, PAYEE, AMOUNT = "ACC-1", "ACC-2", 3000  # cents
PROMPT = f"Pay {AMOUNT} cents from account {PAYER} to account {PAYEE}, once, and confirm it."
SYSTEM_PROMPT = "You are a bank's payment assistant. Amounts are integer cents."

PAY = ToolCall("transfer_money", {"from_account": PAYER, "to_account": PAYEE, "amount": AMOUNT})
READ = ToolCall("get_account", {"id": PAYER})


def _balances(seen: Sequence[Seen]) -> list[int]:
    return [s.value["balance"] for s in seen if s.tool == "get_account" and s.ok]


def _common(seen: Sequence[Seen]) -> ToolCall | Reply | None:
    """Read the balance, pay, read it again; None once the second read is in."""
    if not seen or (not seen[-1].ok and seen[-1].tool == "get_account"):
        return READ  # first read, or a read that failed (503): read again
    if not _balances(seen):
        return READ
    if sum(s.tool == "transfer_money" for s in seen) == 0:
        return PAY
    if seen[-1].tool == "transfer_money":
        return READ if seen[-1].ok else Reply(f"The transfer failed: {seen[-1].text}")
    balances = _balances(seen)
    if balances[-1] == balances[0] - AMOUNT * sum(s.tool == "transfer_money" for s in seen):
        return Reply(f"Paid {AMOUNT} cents to {PAYEE}; {PAYER} now holds {balances[-1]}.")
    return None


def naive(seen: Sequence[Seen]) -> ToolCall | Reply:
    """Trusts the balance: if it has not moved, the payment did not happen."""
    step = _common(seen)
    if step is not None:
        return step
    if sum(s.tool == "transfer_money" for s in seen) < 2:
        return PAY
    return Reply("The balance does not add up; please check the account.")


def careful(seen: Sequence[Seen]) -> ToolCall | Reply:
    """Checks the ledger before paying again."""
    step = _common(seen)
    if step is not None:
        return step
    last = seen[-1]
    if last.tool != "list_transfers" or not last.ok:
        return ToolCall("list_transfers", {"from_account": PAYER, "to_account": PAYEE})
    if any(t["amount"] == AMOUNT for t in last.value):
        return Reply(f"Paid {AMOUNT} cents to {PAYEE} (the ledger shows it; the balance lags).")
    return PAY
