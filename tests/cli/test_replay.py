"""`faultbench replay EVENTS.jsonl (--world WORLD | --world-beside-log)`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import faultbench
from faultbench.cli import main
from faultbench.kernel import encode_events

SHOP = """\
name: shop
services:
  orders:
    records:
      order: { status: "enum[placed, delivered, returned]", total: float, placed_at: datetime? }
    seed:
      order:
        rows:
          - { id: "1", status: delivered, total: 30.0, placed_at: 2025-05-01T09:30:00Z }
          - { id: "2", status: placed, total: 12.5 }
    operations:
      get_order: { kind: get, record: order }
      update_order: { kind: update, record: order }
  payments:
    records:
      refund: { order_id: str, amount: float }
    operations:
      issue_refund: { kind: create, record: refund }
"""


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, Path, str]:
    """A world file, the event log of a short session in it, and the live state hash."""
    world_file = tmp_path / "shop.yaml"
    world_file.write_text(SHOP)
    world = faultbench.load_world(world_file)
    world.call("get_order", {"id": "1"})
    world.call("issue_refund", {"order_id": "1", "amount": 30.0})
    world.call("get_order", {"id": "9"})
    world.call("update_order", {"id": "1", "status": "returned"})
    world.clock.advance(90)
    log = tmp_path / "events.jsonl"
    log.write_bytes(encode_events(world.events))
    return world_file, log, world.state_hash()


def test_replay_prints_state_and_hash(recorded, capsys):
    _, log, live_hash = recorded
    assert main(["replay", str(log), "--world-beside-log"]) == 0
    out = capsys.readouterr().out
    assert "order (2 records)\n" in out
    assert '  1 {status: "returned", total: 30.0, placed_at: 2025-05-01T09:30:00Z}\n' in out
    assert '  2 {status: "placed", total: 12.5, placed_at: None}\n' in out
    assert 'refund (1 record)\n  1 {order_id: "1", amount: 30.0}\n' in out
    assert "calls: 4 (1 failed)" in out
    assert f"state hash: {live_hash}\n" in out


def test_expected_hash_verified_or_exit_1(recorded, capsys):
    _, log, live_hash = recorded
    assert main(["replay", str(log), "--world-beside-log", "--expect-hash", live_hash]) == 0
    assert "hash verified: --expect-hash" in capsys.readouterr().out
    assert main(["replay", str(log), "--world-beside-log", "--expect-hash", "0" * 64]) == 1
    err = capsys.readouterr().err
    assert f"hash mismatch. Expected {'0' * 64} (from --expect-hash)." in err
    assert f"Instead, the replay gives: {live_hash}" in err


def test_json_output(recorded, capsys):
    world_file, log, live_hash = recorded
    assert (
        main(["replay", "--json", str(log), "--world", str(world_file), "--expect-hash", live_hash])
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["state_hash"] == live_hash
    assert data["verified"] is True
    assert data["world"] == str(world_file)
    assert data["tables"]["order"][0]["placed_at"] == "2025-05-01T09:30:00Z"
    assert data["tables"]["refund"] == [{"id": "1", "order_id": "1", "amount": 30.0}]


def test_table_filter(recorded, capsys):
    _, log, _ = recorded
    assert main(["replay", str(log), "--world-beside-log", "--table", "refund"]) == 0
    out = capsys.readouterr().out
    assert "refund (1 record)" in out
    assert "order (" not in out
    assert main(["replay", str(log), "--world-beside-log", "--table", "refunds"]) == 2
    assert "Instead, received: 'refunds'" in capsys.readouterr().err


def test_the_world_comes_from_the_command_line_never_from_the_log(recorded, tmp_path, capsys):
    world_file, log, live_hash = recorded
    assert main(["replay", str(log)]) == 2
    err = capsys.readouterr().err
    assert "Expected --world WORLD" in err
    assert "--world-beside-log to use the file of that name in the log's folder" in err
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    (moved / "shop.yaml").write_text(SHOP)
    world_file.unlink()
    assert main(["replay", str(log), "--world-beside-log"]) == 2
    assert "which is not in the log's folder" in capsys.readouterr().err
    assert main(["replay", str(log), "--world", str(moved / "shop.yaml")]) == 0
    assert f"state hash: {live_hash}" in capsys.readouterr().out


def test_a_changed_world_file_does_not_replay(recorded, capsys):
    world_file, log, _ = recorded
    world_file.write_text(SHOP.replace("total: 12.5", "total: 13.5"))
    assert main(["replay", str(log), "--world-beside-log"]) == 1
    err = capsys.readouterr().err
    assert f"{log}:1: does not replay:" in err
    assert "changed since" in err


def test_bad_input_exits_2_naming_file_and_line(recorded, tmp_path, capsys):
    _, log, _ = recorded
    assert main(["replay", str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl: no such file" in capsys.readouterr().err

    bad = tmp_path / "bad.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    bad.write_bytes(b"".join([*lines[:3], b"not json\n", *lines[3:]]))
    assert main(["replay", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:4: Expected one event as a JSON object" in err
    assert "'not json'" in err

    headless = tmp_path / "headless.jsonl"
    headless.write_bytes(b"".join(lines[1:]))
    assert main(["replay", str(headless)]) == 2
    assert "Expected the log to start with a WorldCreated event" in capsys.readouterr().err


def test_a_log_with_a_torn_last_line_is_refused_unless_partial(recorded, tmp_path, capsys):
    world_file, log, _ = recorded
    data = log.read_bytes()
    lines = data.splitlines(keepends=True)
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(b"".join(lines[:-1]) + lines[-1][:15])  # killed mid-write
    assert main(["replay", str(torn), "--world", str(world_file)]) == 2
    err = capsys.readouterr().err
    assert f"{torn}:{len(lines)}: the log breaks off here: its last line is cut short" in err
    assert "pass --partial" in err
    assert main(["replay", str(torn), "--world", str(world_file), "--partial"]) == 0
    captured = capsys.readouterr()
    assert "replaying what comes before (--partial)" in captured.err
    prefix_hash = faultbench.replay(world_file, faultbench.decode_events(b"".join(lines[:-1])))
    assert f"state hash: {prefix_hash.state_hash()}" in captured.out


def test_a_log_cut_inside_a_call_is_refused_unless_partial(recorded, tmp_path, capsys):
    world_file, log, _ = recorded
    lines = log.read_bytes().splitlines(keepends=True)
    started = [i for i, line in enumerate(lines) if b'"CallStarted"' in line][-1]
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[: started + 1]))  # whole lines, but the call has no end
    assert main(["replay", str(cut), "--world", str(world_file)]) == 2
    err = capsys.readouterr().err
    assert f"{cut}:{started + 1}: the log breaks off inside call c4" in err
    assert main(["replay", str(cut), "--world", str(world_file), "--partial"]) == 0
    assert "calls: 3 (1 failed)" in capsys.readouterr().out


def test_runs_as_a_command(recorded):
    _, log, live_hash = recorded
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "faultbench.cli",
            "replay",
            str(log),
            "--world-beside-log",
            "--expect-hash",
            live_hash,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"state hash: {live_hash}" in proc.stdout


def test_a_faulty_forked_world_replays_to_its_hash(tmp_path, capsys):
    world_file = tmp_path / "shop.yaml"
    world_file.write_text(
        SHOP
        + "faults:\n"
        + "  default: { latency_ms: [5, 80] }\n"
        + "  payments.issue_refund: { script: { 1: timeout, 3: duplicate } }\n"
    )
    world = faultbench.load_world(world_file, seed=4)
    world.call("issue_refund", {"order_id": "1", "amount": 30.0})
    fork = world.fork(run=2)
    for _ in range(3):
        fork.call("issue_refund", {"order_id": "2", "amount": 12.5})
    log = tmp_path / "fork.jsonl"
    log.write_bytes(encode_events(fork.events))
    assert main(["replay", str(log), "--world-beside-log", "--expect-hash", fork.state_hash()]) == 0
    out = capsys.readouterr().out
    assert "refund (5 records)" in out  # the timeout committed one, then 3 calls, one duplicated
    assert "hash verified" in out
