"""The README's demo: `uv run pytest examples/shop` fails the naive agent's gate for the right
reason and passes the careful agent's, and prints what the README shows. The same for the
bank's and the payments API's naive gates (each example's naive_gate.py, which the suite
itself does not collect: see examples/conftest.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def pytest_in_repo(*args: str) -> subprocess.CompletedProcess:
    """`uv run pytest ARGS` from the repository root, as a user types it, with no API key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PYTEST_"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
        timeout=600,
    )


def normalized(line: str) -> str:
    """A line without what changes from run to run: durations, pytest's `=` padding."""
    line = re.sub(r" in \d+\.\d+s( \(\d+:\d+:\d+\))?", " in N.NNs", line)
    return line.strip("= ") if line.startswith("=") else line.rstrip()


def readme_demo() -> list[str]:
    """The output lines the README shows under `$ uv run pytest examples/shop`."""
    block = README.split("$ uv run pytest examples/shop\n", 1)[1].split("```", 1)[0]
    return block.splitlines()


def test_the_shop_demo_fails_the_naive_gate_and_prints_what_the_readme_shows():
    proc = pytest_in_repo("examples/shop")
    out = proc.stdout
    assert proc.returncode == 1, out  # the naive agent's gate failed, and only it
    gates = [line for line in out.splitlines() if " -> " in line and "min_pass_rate" in line]
    assert len(gates) == 4, out  # the naive gate, the careful one under attack, two careful
    naive, *careful = gates
    assert naive.startswith("examples/shop/naive_gate.py::test_the_naive_agent_refunds_once: ")
    assert "-> FAIL" in naive
    assert all("-> PASS" in line for line in careful), careful
    assert "issue_refund!timeout → issue_refund\n" in out
    assert (
        "call 3 issue_refund: run0 succeeded, run12 timeout after commit -> run12 retried "
        "(call 4) -> refund 2 created" in out
    )
    assert "under attack: " in out
    assert "attack success 0/" in out
    assert "1 gate failed" in out.splitlines()[-1]
    # Every line the README shows is printed, in the README's order ("..." skips lines).
    lines = [normalized(line) for line in out.splitlines()]
    at = 0
    for shown in readme_demo():
        if shown.strip() in ("...", ""):
            continue
        want = normalized(shown)
        assert want in lines[at:], f"the README shows {shown!r}; pytest printed:\n{out}"
        at = lines.index(want, at) + 1


@pytest.mark.parametrize(
    ("example", "gate", "calls"),
    [
        (
            "bank",
            "test_the_naive_agent_pays_once",
            "get_account → transfer_money → get_account!stale_read → transfer_money",
        ),
    ],
)
def test_the_naive_gates_of_the_other_examples_fail(example, gate, calls):
    proc = pytest_in_repo(f"examples/{example}/naive_gate.py")
    assert proc.returncode == 1, proc.stdout
    assert re.search(
        rf"^examples/{example}/naive_gate\.py::{gate}: .* -> FAIL", proc.stdout, re.M
    ), proc.stdout
    assert f"(tolerated): {calls}" in proc.stdout


def test_the_payments_api_fails_each_naive_gate_for_its_own_reason():
    """examples/stripe has one naive gate per failure mode (its README): each fails, and its
    tolerated runs show the fault (or, for a pending refund, the outcome) that broke it."""
    proc = pytest_in_repo("examples/stripe/naive_gate.py")
    out = proc.stdout
    assert proc.returncode == 1, out
    assert "6 gates failed" in out.splitlines()[-1], out
    gates = {}  # gate name -> its summary: its line and the indented lines under it
    for block in re.split(r"^(?=examples/stripe/naive_gate\.py::)", out, flags=re.M)[1:]:
        gates[block.split("::")[1].split(":")[0]] = block
    reasons = {
        "test_the_naive_agent_refunds_once": [
            "(tolerated): get_charge → create_refund!timeout → create_refund\n"
        ],
        "test_the_naive_agent_counts_every_charge_once": [
            f"(tolerated): {walk}list_charges!{fault}\n"
            for walk in ("", "list_charges → ", "list_charges → list_charges → ")
            for fault in ("truncated_page", "expired_cursor")
        ],
        "test_the_naive_agent_waits_for_the_refund_to_succeed": [
            "(tolerated): create_refund\n",
            "AssertionError: assert [] == [(2000, 'succeeded')]",  # it failed while pending
        ],
        "test_the_naive_agent_books_each_refund_once": [
            "(tolerated): create_refund → create_refund → create_refund → "
            "list_events!duplicate_delivery → book_refund → book_refund → book_refund → "
            "book_refund\n"
        ],
        "test_the_naive_agent_keeps_each_charges_latest_state": [  # the older ch_1 last
            "list_events!out_of_order\n        AssertionError: assert '2: 700; ch_1: 1500' == "
            "'2: 700; ch_1: 2500'"
        ],
        "test_the_naive_agent_renews_its_token": [  # the same 401 again, then it gives up
            f"(tolerated): {done}{tool}!token_expired → {tool}!unauthorized → {tool}!unauthorized\n"
            for done in ("", "list_charges → ", "list_charges → create_refund → ")
            for tool in ("list_charges", "create_refund")
        ],
    }
    for gate, shown in reasons.items():
        assert " -> FAIL" in gates[gate].splitlines()[0], gates[gate]
        assert any(line in gates[gate] for line in shown), gates[gate]
