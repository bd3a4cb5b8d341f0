"""`faultbench check WORLD`: a summary and exit 0, or every problem and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples" / "shop" / "worlds" / "shop.yaml"


def faultbench(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "faultbench.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
    )


def test_check_summarizes_a_valid_world():
    proc = faultbench("check", "examples/shop/worlds/shop.yaml")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out = proc.stdout
    assert out.startswith("world shop (examples/shop/worlds/shop.yaml)\n")
    assert "4 services, 4 records (43 seed rows), 9 tools, 4 fault rules" in out
    assert "service customers: Who buys from the shop.\n" in out
    assert "  record customer: 12 rows (world.customer, world.customers)\n" in out
    assert "  record refund: 0 rows (world.refund, world.refunds)\n" in out
    assert "tier: enum[standard, gold] = 'standard'" in out
    # tools with their arguments, kind and record or handler
    assert "  tool get_order(id: str)  [get order]\n      Look up one order by its id.\n" in out
    assert "  tool list_orders(customer_id?: ref, status?: enum)  [list order]\n" in out
    assert (
        "  tool issue_refund(order_id: str, amount: float, currency?: str)"
        "  [custom -> shop_rules.issue_refund]\n"
    ) in out
    assert "reason?: damaged|wrong_item|not_needed|other" in out
    # the fault rule each tool sees after merging default, payments.* and the tool's own
    assert (
        "      faults: latency p50 300 ms, p99 2500 ms; http_503 2%; timeout 10% (after 30s); "
        "http_500 3%\n"
    ) in out
    assert "      faults: latency 40-250 ms; http_503 2%\n" in out
    assert "      faults: latency 40-250 ms; not_found if newer than 2h\n" in out
    assert out.endswith("OK: examples/shop/worlds/shop.yaml is a valid world\n")


def test_check_a_world_without_faults_or_descriptions(tmp_path):
    path = tmp_path / "mini.yaml"
    path.write_text(
        "services:\n  s:\n    records: { thing: { n: int } }\n"
        "    seed: { count: 1 }\n"
        "    operations: { add_thing: { kind: create, record: thing } }\n"
    )
    proc = faultbench("check", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "1 service, 1 record (1 seed row), 1 tool, 0 fault rules" in proc.stdout
    assert "  tool add_thing(n: int, id?: str)  [create thing]\n      faults: none\n" in proc.stdout


def test_check_prints_every_problem_and_exits_2(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text(
        "services:\n"
        "  orders:\n"
        "    records: { order: { status: strng } }\n"
        "    operations: { get_order: { kind: get, record: ordr } }\n"
        "faults:\n"
        "  orders.get_order: { errors: { timeot: 0.1 } }\n"
    )
    proc = faultbench("check", str(path))
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert [line.split(": ")[0] for line in lines] == [
        f"{path}:3:33",
        f"{path}:4:51",
        f"{path}:6:33",
    ]
    assert lines[0].endswith("did you mean 'str'?")
    assert lines[1].endswith("did you mean 'order'?")
    assert lines[2].endswith("did you mean 'timeout'?")
    assert "Traceback" not in proc.stderr


def test_check_a_yaml_syntax_error_exits_2_without_traceback(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("services:\n  orders: [\n")
    proc = faultbench("check", str(path))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"{path}:3:1: invalid YAML:")
    assert "Traceback" not in proc.stderr


def test_check_a_missing_file(tmp_path):
    proc = faultbench("check", "no/such/world.yaml")
    assert proc.returncode == 2
    assert proc.stderr == "no/such/world.yaml: no such file\n"
    proc = faultbench("check", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr == f"{tmp_path}: is a directory; expected a world file (YAML)\n"


def test_check_the_bank_and_legacy_worlds():
    for world in ("examples/bank/worlds/bank.yaml", "tests/worlds/legacy.yaml"):
        proc = faultbench("check", world)
        assert proc.returncode == 0, proc.stderr
    proc = faultbench("check", "tests/worlds/legacy.yaml")
    assert "  record orders: 20 rows (world.orders)\n" in proc.stdout
    assert "rate limit 5 calls per 1m" in proc.stdout
