"""Hostile event logs (issue 14): a log is data. It never picks the code that runs, never
makes an error print another file, and an edited event is named, not folded silently."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

import faultbench
from faultbench.cli import main
from faultbench.kernel import decode_events, encode_events

from .test_replay import SHOP


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, Path, list[dict]]:
    world_file = tmp_path / "shop.yaml"
    world_file.write_text(SHOP)
    world = faultbench.load_world(world_file)
    world.call("issue_refund", {"order_id": "1", "amount": 30.0})
    world.call("update_order", {"id": "1", "status": "returned"})
    world.clock.advance(90)
    world.call("get_order", {"id": "2"})
    log = tmp_path / "events.jsonl"
    log.write_bytes(encode_events(world.events))
    return world_file, log, [json.loads(line) for line in log.read_text().splitlines()]


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_log_naming_another_file_neither_loads_nor_prints_it(recorded, tmp_path, capsys):
    _, _, rows = recorded
    secret = tmp_path / "secret.txt"
    secret.write_text("password: hunter2\n")
    rows[0]["path"] = "../../" * 10 + str(secret)
    crafted = write(tmp_path / "crafted.jsonl", rows)
    assert main(["replay", str(crafted)]) == 2  # no --world: refused
    assert "hunter2" not in capsys.readouterr().err
    # beside the log there is a file of that name, but not the digest the log records
    assert main(["replay", str(crafted), "--world-beside-log"]) == 1
    err = capsys.readouterr().err
    assert "hunter2" not in err
    assert "nothing of this one was loaded" in err


def test_a_log_never_imports_the_handlers_of_a_file_with_another_digest(recorded, tmp_path):
    _, _, rows = recorded
    evil = tmp_path / "evil"
    evil.mkdir()
    marker = tmp_path / "ran"
    (evil / "payload.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\ndef op(world, clock):\n    return 1\n"
    )
    (evil / "shop.yaml").write_text(
        SHOP + "  extra:\n    operations:\n      op: { kind: custom, handler: payload.op }\n"
    )
    log = write(evil / "events.jsonl", rows)  # the log's digest is the real shop's
    assert main(["replay", str(log), "--world-beside-log"]) == 1
    assert not marker.exists()


def _edit(rows: list[dict], kind: str) -> list[dict]:
    def first(type_: str, **match) -> dict:
        return next(
            r for r in rows if r["type"] == type_ and all(r.get(k) == v for k, v in match.items())
        )

    if kind == "wrong-type":
        first("RecordCreated", table="order")["fields"]["total"] = "thirty"
    elif kind == "unknown-field-in-record":
        first("RecordCreated", table="order")["fields"]["admin"] = True
    elif kind == "unknown-field-in-event":
        first("CallStarted")["sudo"] = True
    elif kind == "clock-back":
        first("ClockAdvanced")["to"] = "2000-01-01T00:00:00Z"
    elif kind == "event-time":
        first("CallSucceeded")["at"] = "2031-01-01T00:00:00Z"
    elif kind == "tampered-old":
        first("RecordUpdated")["old"] = {"status": "placed"}
    elif kind == "update-id":
        first("RecordUpdated")["changes"]["id"] = "7"
    elif kind == "gap":
        rows.pop(3)
    elif kind == "second-world":
        rows.insert(2, {**rows[0], "seq": 2})
        for i, r in enumerate(rows):
            r["seq"] = i
    elif kind == "unknown-type":
        first("CallSucceeded")["type"] = "CallExploded"
    elif kind == "changed-seed-row":
        first("RecordCreated", table="order")["fields"]["total"] += 1.0
    elif kind == "bad-rewind":
        rows.insert(2, {"type": "LogRewound", "seq": 99, "at": rows[0]["at"]})
    return rows


EDITS = {
    "wrong-type": (1, "sets total to 'thirty', not a value of its type (float)"),
    "unknown-field-in-record": (1, "sets 'admin', which is not a field it may set"),
    "unknown-field-in-event": (2, "unknown field `sudo`"),
    "clock-back": (1, "expected a later time: the clock only moves forward"),
    "event-time": (1, "but the clock was at"),
    "tampered-old": (1, "says the old values were {'status': 'placed'}"),
    "update-id": (1, "sets 'id', which is not a field it may set"),
    "gap": (1, "Gap in the event log"),
    "second-world": (1, "WorldCreated may only be event 0"),
    "unknown-type": (2, "Expected one event as a JSON object"),
    "bad-rewind": (2, "LogRewound to seq 99"),
    "changed-seed-row": (1, "is not the seed row that seed"),
}


@pytest.mark.parametrize("kind", list(EDITS))
def test_an_edited_log_is_refused_at_its_first_bad_line(recorded, tmp_path, capsys, kind):
    world_file, _, rows = recorded
    status, message = EDITS[kind]
    edited = write(tmp_path / "edited.jsonl", _edit(rows, kind))
    assert main(["replay", str(edited), "--world", str(world_file)]) == status
    err = capsys.readouterr().err
    assert message in err
    assert f"{edited}:" in err  # names the file (and the line)
    assert "Traceback" not in err


def test_a_deeply_nested_line_exits_2(recorded, tmp_path, capsys):
    world_file, log, _ = recorded
    deep = tmp_path / "deep.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    nested = b'{"type":"CallStarted","seq":1,"args":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    deep.write_bytes(lines[0] + nested)
    assert main(["replay", str(deep), "--world", str(world_file)]) == 2
    assert f"{deep}:2: Expected one event" in capsys.readouterr().err


def test_a_changed_seed_is_refused_where_the_seed_made_the_rows(tmp_path, capsys):
    shop = Path(__file__).parents[2] / "examples" / "shop" / "worlds" / "shop.yaml"
    world = faultbench.load_world(shop, seed=3)
    world.call("list_orders", {})
    rows = [json.loads(line) for line in faultbench.encode_events(world.events).splitlines()]
    rows[0]["seed"] = 4  # the rows that follow were made by seed 3
    edited = write(tmp_path / "edited.jsonl", rows)
    assert main(["replay", str(edited), "--world", str(shop)]) == 1
    assert "is not the seed row that seed 4 gives" in capsys.readouterr().err


@pytest.mark.parametrize("event", ["WorldCreated", "ClockAdvanced", "RecordCreated"])
def test_a_time_past_9999_in_utc_is_refused_by_line(recorded, tmp_path, capsys, event):
    """`9999-12-31T23:59:59-12:00` is the year 10000 in UTC: an error, never an OverflowError."""
    world_file, _, rows = recorded
    late = "9999-12-31T23:59:59-12:00"
    if event == "WorldCreated":
        rows[0]["at"] = late
    elif event == "ClockAdvanced":
        next(r for r in rows if r["type"] == "ClockAdvanced")["to"] = late
    else:
        next(r for r in rows if r["type"] == "RecordCreated")["at"] = late
    edited = write(tmp_path / "late.jsonl", rows)
    assert main(["replay", str(edited), "--world", str(world_file)]) == 1
    err = capsys.readouterr().err
    assert f"{edited}:" in err
    assert "Traceback" not in err
    assert "Overflow" not in err
    assert ("outside the calendar in UTC" in err) or (f"is stamped {late}" in err)


# --- issue 25: replay that cannot be steered, and reads only what it should -------------------


@pytest.mark.parametrize("digest", ["", None, "not-a-digest", "0" * 63])
def test_beside_the_log_needs_the_digest_the_log_carries(recorded, tmp_path, capsys, digest):
    world_file, _, rows = recorded
    marker = tmp_path / "ran"
    (tmp_path / "payload.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\ndef op(world, clock):\n    return 1\n"
    )
    world_file.write_text(
        world_file.read_text() + "      hook: { kind: custom, handler: payload.op }\n"
    )
    if digest is None:
        del rows[0]["digest"]
    else:
        rows[0]["digest"] = digest
    crafted = write(tmp_path / "crafted.jsonl", rows)
    assert main(["replay", str(crafted), "--world-beside-log"]) == 2
    err = capsys.readouterr().err
    assert "carries no SHA-256 digest" in err
    assert "--world WORLD" in err
    assert not marker.exists()  # the file beside the log was never loaded


def test_a_log_naming_a_secret_without_digest_never_prints_it(recorded, tmp_path, capsys):
    _, _, rows = recorded
    (tmp_path / "secret.txt").write_text("password: hunter2\n")
    rows[0]["path"] = "secret.txt"
    rows[0]["digest"] = ""
    crafted = write(tmp_path / "crafted.jsonl", rows)
    assert main(["replay", str(crafted), "--world-beside-log"]) == 2
    assert "hunter2" not in capsys.readouterr().err


def test_a_world_name_past_255_bytes_is_a_clean_refusal(recorded, tmp_path, capsys):
    _, _, rows = recorded
    rows[0]["path"] = "w" * 300 + ".yaml"
    crafted = write(tmp_path / "crafted.jsonl", rows)
    assert main(["replay", str(crafted), "--world-beside-log"]) == 2
    assert "longer than 255 bytes" in capsys.readouterr().err
    assert main(["replay", str(crafted), "--world", "w" * 300]) == 2
    assert "no such world file" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["in a key", "at the start"])
def test_invalid_utf8_in_a_log_is_named_by_line(recorded, tmp_path, capsys, where):
    world_file, log, _ = recorded
    data = log.read_bytes().splitlines(keepends=True)
    if where == "in a key":
        data[2] = data[2].replace(b'"', b'"\xff\xfe', 1)
    else:  # msgspec raised UnicodeDecodeError here, a traceback
        data[2] = b"\x80" + data[2]
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(data))
    assert main(["replay", str(bad), "--world", str(world_file)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:3:" in err
    assert "Traceback" not in err
    with pytest.raises(msgspec.DecodeError, match="line 3"):
        decode_events(bad.read_bytes())


@pytest.mark.parametrize("kind", ["fifo", "dev_zero", "directory"])
def test_logs_and_world_files_that_are_not_regular_files_are_refused(
    recorded, tmp_path, capsys, kind
):
    import os

    world_file, log, _ = recorded
    if kind == "fifo":
        special = tmp_path / "special"
        os.mkfifo(special)  # no writer ever comes: reading it would block forever
    elif kind == "dev_zero":
        special = Path("/dev/zero")  # read whole, it never ends
    else:
        special = tmp_path
    refused = "is a directory" if kind == "directory" else "not a regular file"
    assert main(["replay", str(special), "--world", str(world_file)]) == 2
    assert refused in capsys.readouterr().err
    assert main(["replay", str(log), "--world", str(special)]) == 2
    assert "not a regular file" in capsys.readouterr().err
    assert main(["check", str(special)]) == 2
    assert refused in capsys.readouterr().err


def test_a_log_over_the_size_limit_is_refused_before_it_is_read(recorded, tmp_path, capsys):
    world_file, log, _ = recorded
    big = tmp_path / "big.jsonl"
    with open(big, "wb") as fh:
        fh.write(log.read_bytes())
        fh.truncate(2 * 2**20)  # sparse: 2 MiB of NUL bytes after the log
    assert main(["replay", str(big), "--world", str(world_file), "--max-size", "1"]) == 2
    assert "larger than 1 MiB" in capsys.readouterr().err
