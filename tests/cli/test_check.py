"""`faultbench check WORLD`: a summary and exit 0, or every problem and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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
    # filters show what the agent passes: every enum value, a ref as the id text
    assert (
        "  tool list_orders(customer_id?: str, status?: placed|shipped|delivered|returned|"
        "cancelled)  [list order]\n"
    ) in out
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


def test_check_shows_the_arguments_of_every_tool_kind(tmp_path):
    (tmp_path / "rules.py").write_text(
        "from datetime import datetime\n"
        "from typing import Literal\n\n"
        "def act(world, clock, when: datetime, tags: list, extra: dict, anything,\n"
        "        mode: Literal['a', 'b', 'c', 'd', 'e'] = 'a', note: str | None = None):\n"
        "    pass\n"
    )
    path = tmp_path / "kinds.yaml"
    path.write_text(
        "services:\n"
        "  s:\n"
        "    records:\n"
        "      owner: { name: str }\n"
        "      thing:\n"
        "        owner_id: ref[owner]\n"
        "        state: enum[new, open, held, done, gone]\n"
        "        size: { type: int, optional: true }\n"
        "        label: { type: str, default: null }\n"
        "        flag: { type: bool, default: false }\n"
        "    operations:\n"
        "      get_thing: { kind: get, record: thing }\n"
        "      list_things: { kind: list, record: thing, filter: [owner_id, state, size] }\n"
        "      add_thing: { kind: create, record: thing }\n"
        "      edit_thing: { kind: update, record: thing }\n"
        "      drop_thing: { kind: delete, record: thing }\n"
        "      act: { kind: custom, handler: rules.act }\n"
    )
    proc = faultbench("check", str(path))
    assert proc.returncode == 0, proc.stderr
    tools = [line for line in proc.stdout.splitlines() if line.startswith("  tool ")]
    state = "new|open|held|done|gone"
    assert tools == [
        "  tool get_thing(id: str)  [get thing]",
        f"  tool list_things(owner_id?: str, state?: {state}, size?: int)  [list thing]",
        f"  tool add_thing(owner_id: str, state: {state}, id?: str, size?: int, label?: str, "
        "flag?: bool)  [create thing]",
        f"  tool edit_thing(id: str, owner_id?: str, state?: {state}, size?: int, label?: str, "
        "flag?: bool)  [update thing]",
        "  tool drop_thing(id: str)  [delete thing]",
        "  tool act(when: datetime, tags: list, extra: dict, anything: any, mode?: a|b|c|d|e, "
        "note?: str)  [custom -> rules.act]",
    ]
    # long-form optional fields read like `int?`; defaults are shown as YAML values
    assert (
        "      id: str, owner_id: ref[owner], state: enum[new, open, held, done, gone], "
        "size: int?,\n      label: str? = null, flag: bool = false\n"
    ) in proc.stdout


OPS = "services:\n  s:\n    records: { a: { x: str } }\n    operations: { get_a: { kind: get, record: a } }\n"
BROKEN = {
    "yaml syntax": ("services:\n  s: { records: {}\n", "3:1: invalid YAML"),
    "unknown key": ("services:\n  s: { recrds: {} }\n", "2:8: unknown key 'recrds'"),
    "duplicate key": ("services:\n  s: {}\n  s: {}\n", "3:3: duplicate key 's'"),
    "field type": ("services:\n  s: { records: { a: { x: strr } } }\n", "2:27: unknown field"),
    "empty enum": ("services:\n  s: { records: { a: { x: enum[] } } }\n", "2:27: empty enum"),
    "dangling ref": ("services:\n  s: { records: { a: { x: ref[b] } } }\n", "2:27: 'ref[b]'"),
    "ref to the wrong service": (
        "services:\n  s: { records: { a: { x: ref[s.b] } } }\n  t: { records: { b: {} } }\n",
        "2:27: 'ref[s.b]': record 'b' belongs to service 't'",
    ),
    "unknown record": (
        "services:\n  s: { operations: { g: { kind: get, record: a } } }\n",
        "2:46: operation 'g' names an unknown record 'a'",
    ),
    "same tool twice": (
        OPS + "  t:\n    records: { b: {} }\n    operations: { get_a: { kind: get, record: b } }\n",
        "7:19: tool 'get_a' is already defined",
    ),
    "fault target": (OPS + "faults: { s.get_b: {} }\n", "5:11: fault key 's.get_b'"),
    "fault kind": (OPS + "faults: { default: { errors: { oops: 0.1 } } }\n", "5:32: unknown error"),
    "probabilities": (
        OPS
        + "faults:\n  default: { errors: { timeout: 0.6 } }\n  s.*: { errors: { http_500: 0.6 } }\n",
        "7:3: error probabilities for s.get_a add up to 1.2",
    ),
    "duration": (OPS + "faults: { default: { timeout_s: 2 hours } }\n", "5:33: invalid duration"),
    "handler import": (
        "services:\n  s: { operations: { go: { kind: custom, handler: raising.op } } }\n",
        "2:51: handler 'raising.op': importing 'raising'",
    ),
    "handler kwargs": (
        "services:\n  s: { operations: { go: { kind: custom, handler: kw.op } } }\n",
        "2:51: handler 'kw.op': its signature is (world, clock, **kwargs)",
    ),
    "empty file": ("", "1:1: the world file is empty"),
    "list at the top": ("- services\n", "1:1: the world file is a list"),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00", "1:1: not UTF-8 text: byte 0x89"),
    "control characters": (b"services: {}\x00\x00\n", "1:13: invalid YAML: non-printable"),
}


@pytest.mark.parametrize("case", BROKEN, ids=list(BROKEN))
def test_every_kind_of_mistake_exits_2_with_a_position_and_no_traceback(tmp_path, case):
    text, expected = BROKEN[case]
    (tmp_path / "raising.py").write_text("raise RuntimeError('boom')\n")
    (tmp_path / "kw.py").write_text("def op(world, clock, **kwargs):\n    pass\n")
    path = tmp_path / "world.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    proc = faultbench("check", str(path))
    assert proc.returncode == 2, proc.stdout
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith(f"{path}:{expected}"), first
    assert "expected" in first


def test_check_accepts_refs_across_services_and_ref_cycles(tmp_path):
    path = tmp_path / "cycle.yaml"
    path.write_text(
        "services:\n"
        "  people:\n"
        "    records: { person: { best_order: ref[order] } }\n"
        "    seed: { count: 3 }\n"
        "  shop:\n"
        "    records: { order: { buyer_id: ref[people.person], previous: ref[order]? } }\n"
        "    seed: { count: 4 }\n"
    )
    proc = faultbench("check", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "  record person: 3 rows (world.person, world.people)\n" in proc.stdout
    assert "      id: str, best_order: ref[order]\n" in proc.stdout


def test_check_shows_only_the_faults_that_can_happen_to_each_tool(tmp_path):
    # A `default:` rule may name kinds some operations cannot have; check shows each tool
    # what the fault plan can do to it, with the defaults it applies written out.
    path = tmp_path / "faulty.yaml"
    path.write_text(
        "services:\n"
        "  s:\n"
        "    records: { thing: { n: int, created_at: datetime } }\n"
        "    operations:\n"
        "      get_thing: { kind: get, record: thing }\n"
        "      list_things: { kind: list, record: thing }\n"
        "      update_thing: { kind: update, record: thing }\n"
        "faults:\n"
        "  default:\n"
        "    errors: { stale_read: 0.1, duplicate: 0.05, timeout: 0.1, http_429: 0.01 }\n"
        "    not_found_if_newer_than: 1h\n"
        "    script: { 2: duplicate, 3: stale_read }\n"
    )
    proc = faultbench("check", str(path))
    assert proc.returncode == 0, proc.stderr
    faults = [line.strip() for line in proc.stdout.splitlines() if "faults:" in line]
    assert faults == [
        "faults: stale_read 10% (1m behind); timeout 10% (after 30s); "
        "http_429 1% (retry after 1s); not_found if newer than 1h; script: call 3 stale_read "
        "(1m behind)",
        "faults: stale_read 10% (1m behind); timeout 10% (after 30s); "
        "http_429 1% (retry after 1s); script: call 3 stale_read (1m behind)",
        "faults: duplicate 5% (1 extra); timeout 10% (after 30s); "
        "http_429 1% (retry after 1s); not_found if newer than 1h; script: call 2 duplicate "
        "(1 extra)",
    ]


def test_check_summarizes_auth_scopes_and_idempotency(tmp_path):
    world = tmp_path / "desk.yaml"
    world.write_text(
        "auth:\n"
        "  principals: { agent: { scopes: [tickets:write] }, bot: { scopes: [] } }\n"
        "  token_ttl: 30m\n"
        "services:\n"
        "  desk:\n"
        "    records: { ticket: { subject: str, version: version } }\n"
        "    operations:\n"
        "      open_ticket:\n"
        "        { kind: create, record: ticket, scopes: [tickets:write],\n"
        "          idempotency: { key: request_id, window: 2h } }\n"
        "      edit_ticket: { kind: update, record: ticket }\n"
    )
    proc = faultbench("check", str(world))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "auth: 2 principals, tokens live 30m (tool refresh_token renews them)\n" in out
    assert "  principal agent: tickets:write\n  principal bot: no scopes\n" in out
    assert "  tool open_ticket(subject: str, id?: str, request_id?: str)" in out
    assert "      needs scopes: tickets:write\n" in out
    assert "      idempotent: key argument request_id, remembered 2h\n" in out
    assert "  tool edit_ticket(id: str, subject?: str, expected_version?: int)" in out


LATER = """\
name: refunds
services:
  payments:
    records:
      refund: { id: str, amount: int, status: "enum[pending, succeeded, failed]" }
    operations:
      issue_refund:
        kind: create
        record: refund
        set: { status: pending }
        then: { after: [30s, 5m], set: { status: succeeded }, or: { p: 0.05, set: { status: failed } } }
events:
  refund.updated: { record: refund, on: [update] }
"""


def test_check_summarizes_effects_that_happen_later_and_the_event_feed(tmp_path):
    (tmp_path / "w.yaml").write_text(LATER)
    proc = faultbench("check", "w.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "  tool issue_refund(amount: int, id?: str)  [create refund]\n" in out
    assert "      sets: status=pending\n" in out
    assert "      then: after 30s-5m, status=succeeded; or 5%: status=failed\n" in out
    assert "  tool list_events(limit?: int, starting_after?: str, since?: datetime, " in out
    assert "events (1 type, listed by list_events)\n  refund.updated: refund update\n" in out


def test_check_summarizes_webhooks_and_their_faults(tmp_path):
    hooks = (
        "webhooks: { secret: s, url: 'http://127.0.0.1:8787/hooks', retries: 2, backoff: 1m }\n"
        "faults:\n  payments.webhooks: { errors: { dropped: 0.1 } }\n"
    )
    (tmp_path / "w.yaml").write_text(LATER + hooks)
    proc = faultbench("check", "w.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (
        "webhooks: every type POSTed to http://127.0.0.1:8787/hooks, signed; 2 retries from "
        "1m doubling, timeout 10s\n  faults (payments.webhooks): dropped 10%\n"
    ) in proc.stdout


def test_check_reports_a_then_on_a_read_at_its_line(tmp_path):
    text = LATER.replace(
        "events:",
        "      get_refund: { kind: get, record: refund, then: { after: 1m, set: { status: failed } } }\nevents:",
    )
    (tmp_path / "w.yaml").write_text(text)
    proc = faultbench("check", "w.yaml", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("w.yaml:12:48: 'then' is only for kind: create or update")


def test_check_summarises_nested_fields_and_list_operations():
    nested = faultbench("check", "tests/worlds/nested_shop.yaml")
    assert nested.returncode == 0, nested.stderr
    assert "address: {line1: str, city: str, postal_code: str?}" in nested.stdout
    assert "lines: list[{description: str, amount: int, quantity: int, at: datetime?}]" in (
        nested.stdout
    )
    paged = faultbench("check", "tests/worlds/paged_shop.yaml")
    assert paged.returncode == 0, paged.stderr
    lines = paged.stdout.splitlines()
    assert (
        "      list: filter status eq|in, amount gt|gte|lt|lte, created_at gte|lt, email "
        "eq|prefix|contains; sort created_at|-amount (default created_at); cursor pages of 10 "
        "(at most 100)"
    ) in lines
    assert "      list: filter status eq; id order; offset pages of 7 (at most 100)" in lines
    assert "status_in?: list[enum[pending, succeeded, failed]]" in paged.stdout
