"""`faultbench show WORLD [--table T] [--seed N]`: seeded records as aligned tables."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BANK = "examples/bank/worlds/bank.yaml"


def faultbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "faultbench.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )


def test_show_prints_every_table_aligned():
    proc = faultbench("show", BANK)
    assert proc.returncode == 0, proc.stderr
    blocks = proc.stdout.split("\n\n")
    assert [b.splitlines()[0] for b in blocks] == [
        "account (service accounts, 10 rows, seed 7)",
        "transfer (service ledger, 5 rows, seed 7)",
    ]
    lines = blocks[0].splitlines()
    header, rule, rows = lines[1], lines[2], lines[3:]
    assert header.split() == ["id", "owner", "balance", "currency", "status", "opened_at"]
    assert len(rows) == 10
    # explicit rows keep their ids and values, and sort after the numeric ids
    assert rows[-2].split()[:5] == ["ACC-1", "Ada", "Lovelace", "25000", "EUR"]
    assert rows[-1].split()[:5] == ["ACC-2", "Alan", "Turing", "2000", "EUR"]
    # columns line up: every row is as wide as the rule, balances are right-aligned
    balance_end = header.index("balance") + len("balance")
    for row in rows:
        assert row[balance_end - 1].isdigit()
        assert row[balance_end] == " "
    assert all(len(r) <= len(rule) for r in rows)


def test_show_one_table_by_name_or_plural_and_seed():
    by_name = faultbench("show", BANK, "--table", "transfer")
    by_plural = faultbench("show", BANK, "--table", "transfers")
    assert by_name.returncode == 0, by_name.stderr
    assert by_name.stdout == by_plural.stdout
    assert by_name.stdout.startswith("transfer (service ledger, 5 rows, seed 7)\n")
    assert "account" not in by_name.stdout.splitlines()[0]

    other = faultbench("show", BANK, "--table", "transfer", "--seed", "8")
    assert other.returncode == 0
    assert other.stdout.startswith("transfer (service ledger, 5 rows, seed 8)\n")
    assert other.stdout.splitlines()[3:] != by_name.stdout.splitlines()[3:]
    again = faultbench("show", BANK, "--table", "transfer", "--seed", "8")
    assert again.stdout == other.stdout


def test_show_unknown_table_exits_2_with_a_suggestion():
    proc = faultbench("show", BANK, "--table", "acount")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == (
        f"{BANK}: no table 'acount'; expected one of account, transfer; did you mean 'account'?\n"
    )


def test_show_empty_tables_and_broken_worlds(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("services:\n  s:\n    records: { thing: { n: int } }\n")
    proc = faultbench("show", str(path))
    assert proc.returncode == 0
    assert proc.stdout == "thing (service s, 0 rows, seed 0)\n  (no rows)\n"

    path.write_text("services:\n  s:\n    records: { thing: { n: integr } }\n")
    proc = faultbench("show", str(path))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"{path}:3:28: unknown field type 'integr'")
    assert faultbench("show", "missing.yaml").stderr == "missing.yaml: no such file\n"


def test_show_spells_nested_fields_out():
    proc = faultbench("show", "tests/worlds/nested_shop.yaml", "--table", "customer")
    assert proc.returncode == 0, proc.stderr
    header, _, first = proc.stdout.splitlines()[1:4]
    # objects become one column per field; lists are written as JSON-like values
    assert header.split() == [
        "id", "email", "tags", "address.line1", "address.city", "address.postal_code",
        "payment_method_ids",
    ]  # fmt: skip
    assert '["' in first
    assert "{'" not in proc.stdout
