"""Business rules of the example bank: the custom operation of worlds/bank.yaml.

Money is in integer cents (25000 is 250.00), as payment systems keep it: no rounding.
"""

from __future__ import annotations


def transfer(
    world, clock, from_account: str, to_account: str, amount: int, memo: str | None = None
) -> dict:
    """Move money between two active accounts of the same currency.

    Refused when an account is missing, frozen or closed, both are the same account, or
    the sender cannot cover it.

    Args:
        from_account: id of the account the money leaves.
        to_account: id of the account it goes to; not the same account.
        amount: how much, in integer cents (2550 is 25.50); more than zero.
        memo: a note for both statements.
    """
    if amount <= 0:
        raise ValueError(f"amount must be a positive number of cents, got {amount}")
    if from_account == to_account:
        raise ValueError("cannot transfer money to the same account")
    source = world.accounts.get(from_account)
    target = world.accounts.get(to_account)
    for account_id, account in ((from_account, source), (to_account, target)):
        if account is None:
            raise LookupError(f"account {account_id} not found")
        if account.status != "active":
            raise PermissionError(f"account {account_id} is {account.status}")
    if source.currency != target.currency:
        raise ValueError(f"cannot transfer {source.currency} to a {target.currency} account")
    if source.balance < amount:
        raise ValueError(
            f"insufficient funds: account {from_account} has {source.balance} cents, needs {amount}"
        )
    world.accounts.update(from_account, balance=source.balance - amount)
    world.accounts.update(to_account, balance=target.balance + amount)
    record = world.transfers.insert(
        from_account=from_account,
        to_account=to_account,
        amount=amount,
        memo=memo,
        created_at=clock.now(),
    )
    return record.to_dict()
