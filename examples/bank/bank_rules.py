"""Business rules of the example bank: the custom operation of worlds/bank.yaml."""

from __future__ import annotations


def transfer(
    world, clock, from_account: str, to_account: str, amount: float, memo: str | None = None
) -> dict:
    """Move money between two active accounts of the same currency.

    Refused when an account is missing, frozen or closed, or the sender cannot cover it.
    """
    if amount <= 0:
        raise ValueError(f"amount must be positive, got {amount}")
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
            f"insufficient funds: account {from_account} has {source.balance:.2f}, "
            f"needs {amount:.2f}"
        )
    world.accounts.update(from_account, balance=round(source.balance - amount, 2))
    world.accounts.update(to_account, balance=round(target.balance + amount, 2))
    record = world.transfers.insert(
        from_account=from_account,
        to_account=to_account,
        amount=round(amount, 2),
        memo=memo,
        created_at=clock.now(),
    )
    return record.to_dict()
