"""A log is data (issue 41, items 2, 6 and 12): `faultbench report` and `shrink --events`
never import the handlers of a world file a log names, read logs as `replay` does (regular
files, bounded), and say on one line what is wrong with a hostile log; `plan` is bounded in
time."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import faultbench
from faultbench.cli import main
from faultbench.kernel import encode_events

from ..cli.test_replay import SHOP


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, list[dict]]:
    """A run's log in a folder of its own (as `--faultbench-events DIR` writes), and the
    world file it was made with, elsewhere."""
    worlds = tmp_path / "worlds"
    worlds.mkdir()
    world_file = worlds / "shop.yaml"
    world_file.write_text(SHOP)
    world = faultbench.load_world(world_file)
    world.call("issue_refund", {"order_id": "1", "amount": 30.0})
    world.call("update_order", {"id": "1", "status": "returned"})
    rows = [json.loads(line) for line in encode_events(world.events).splitlines()]
    return world_file, rows


def write_log(folder: Path, rows: list[dict], name: str = "test_x.run0.jsonl") -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _evil_world(folder: Path, marker: Path) -> Path:
    """A world file whose loading imports a module that leaves `marker` behind."""
    folder.mkdir(exist_ok=True)
    (folder / "payload_mod.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\ndef op(world, clock):\n    return 1\n"
    )
    world = folder / "shop.yaml"
    world.write_text(SHOP + "      hook: { kind: custom, handler: payload_mod.op }\n")
    return world


# ---------------------------------------------------------------------------------------------
# Item 2: report and shrink --events never load a world file a log chooses
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("beside", [False, True])
def test_report_never_imports_the_handlers_of_a_world_a_log_names(
    recorded, tmp_path, capsys, beside
):
    _, rows = recorded
    marker = tmp_path / "ran"
    evil = _evil_world(tmp_path / "evil", marker)
    logs = tmp_path / "logs"
    rows[0]["path"] = str(evil)  # any folder
    write_log(logs, rows)
    if beside:  # a file of that name beside the log, but not the digest the log records
        _evil_world(logs, marker)
    args = ["report", str(logs), "-o", str(tmp_path / "out")]
    code = main([*args, "--world-beside-log"] if beside else args)
    err = capsys.readouterr().err
    assert code == 0, err
    assert not marker.exists()
    assert (tmp_path / "out" / "faultbench-report.html").exists()
    if beside:
        assert "digest" in err
        assert "nothing of this one was loaded" in err
    else:
        assert "--world WORLD" in err  # the note saying how to show end states


def test_report_with_the_world_shows_the_end_state(recorded, tmp_path, capsys):
    world_file, rows = recorded
    logs = tmp_path / "logs"
    write_log(logs, rows)
    assert main(["report", str(logs), "-o", str(tmp_path / "o"), "--world", str(world_file)]) == 0
    html = (tmp_path / "o" / "faultbench-report.html").read_text()
    run = next(
        json.loads(m.split(">", 1)[1])
        for m in html.split("<script")[1:]
        if 'id="run-' in m.split(">", 1)[0]
        for m in [m.split("</script>")[0]]
    )
    assert ("refund", "1") in [(r["table"], r["id"]) for r in run["state"]["added"]]
    # a world file of another digest shows no state, says why and loads nothing
    marker = tmp_path / "ran"
    other = _evil_world(tmp_path / "other", marker)
    code = main(["report", str(logs), "-o", str(tmp_path / "p"), "--world", str(other)])
    assert code == 0
    assert "digest" in capsys.readouterr().err
    assert not marker.exists()


def test_shrink_events_never_imports_the_handlers_of_a_world_a_log_names(
    recorded, tmp_path, capsys
):
    _, rows = recorded
    marker = tmp_path / "ran"
    evil = _evil_world(tmp_path / "evil", marker)
    rows[0]["path"] = str(evil)
    log = write_log(tmp_path / "logs", rows)
    assert main(["shrink", "test_x.py::test_x", "--events", str(log)]) == 2
    err = capsys.readouterr().err
    assert "--world WORLD" in err
    assert not marker.exists()
    # with the file beside the log, its digest must be the log's
    _evil_world(tmp_path / "logs", marker)
    assert main(["shrink", "t.py::t", "--events", str(log), "--world-beside-log"]) == 2
    assert "nothing of this one was loaded" in capsys.readouterr().err
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------
# Item 12: hostile logs through report are one line
# ---------------------------------------------------------------------------------------------


def _hostile(rows: list[dict], kind: str) -> bytes:
    lines = [json.dumps(r).encode() for r in rows]
    if kind == "torn":
        return b"\n".join(lines)[:-7]
    if kind == "truncated":  # a call started and never answered
        cut = next(i for i, r in enumerate(rows) if r["type"] == "CallStarted")
        lines = lines[: cut + 1]
    elif kind == "nul":
        lines[2] = lines[2][:10] + b"\x00" + lines[2][10:]
    elif kind == "unknown-type":
        lines[2] = lines[2].replace(rows[2]["type"].encode(), b"CallExploded", 1)
    elif kind == "nan":
        lines[3] = lines[3].replace(b'"seq": 3', b'"seq": NaN', 1)
    elif kind == "huge-int":
        lines[3] = lines[3].replace(b'"seq": 3', b'"seq": ' + b"9" * 5000, 1)
    elif kind == "deep":
        lines.append(
            b'{"type":"CallStarted","seq":99,"args":' + b"[" * 50_000 + b"]" * 50_000 + b"}"
        )
    elif kind == "year-10000":
        rows[3]["at"] = "9999-12-31T23:59:59-12:00"
        lines[3] = json.dumps(rows[3]).encode()
    elif kind == "rewound-out-of-range":
        lines.insert(2, json.dumps({"type": "LogRewound", "seq": 99, "at": rows[0]["at"]}).encode())
    elif kind == "not-utf8":
        lines[2] = b"\x80" + lines[2]
    return b"\n".join(lines) + b"\n"


HOSTILE = [
    "torn", "truncated", "nul", "unknown-type", "nan", "huge-int", "deep", "year-10000",
    "rewound-out-of-range", "not-utf8",
]  # fmt: skip


@pytest.mark.parametrize("kind", HOSTILE)
@pytest.mark.parametrize("with_world", [False, True], ids=["no-world", "world"])
def test_report_says_what_is_wrong_with_a_hostile_log_in_one_line(
    recorded, tmp_path, capsys, kind, with_world
):
    world_file, rows = recorded
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "test_x.run0.jsonl").write_bytes(_hostile(rows, kind))
    args = ["report", str(logs), "-o", str(tmp_path / "out")]
    code = main([*args, "--world", str(world_file)] if with_world else args)
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    if kind == "year-10000" and code == 0:
        return  # it decodes (the time is valid RFC 3339): shown, its end state is not
    assert code == 2, out
    line = out.err.strip().splitlines()[-1]
    assert line.startswith("faultbench report: "), out.err
    assert "test_x.run0.jsonl" in line
    assert len(out.err.strip().splitlines()) <= 2  # a warning at most, then the line


def test_report_partial_shows_a_torn_log_up_to_its_last_complete_call(recorded, tmp_path, capsys):
    _, rows = recorded
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "test_x.run0.jsonl").write_bytes(_hostile(rows, "torn"))
    assert main(["report", str(logs), "-o", str(tmp_path / "out"), "--partial"]) == 0
    assert "breaks off" in capsys.readouterr().err


def test_a_session_file_never_points_outside_its_folder(recorded, tmp_path, capsys):
    _, rows = recorded
    logs = tmp_path / "logs"
    write_log(logs, rows)
    (tmp_path / "secret.jsonl").write_text("password: hunter2\n")
    session = {
        "version": 1,
        "groups": [
            {
                "name": "g",
                "total": 1,
                "runs": [
                    {
                        "nodeid": "t[run0]",
                        "index": 0,
                        "outcome": "failed",
                        "events_file": "../secret.jsonl",
                    }
                ],
            }
        ],
    }
    (logs / "faultbench-session.json").write_text(json.dumps(session))
    assert main(["report", str(logs), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "hunter2" not in err
    assert "not a file name in its folder" in err
    (logs / "faultbench-session.json").write_text('{"groups": [{"name": 1}]}')
    assert main(["report", str(logs), "-o", str(tmp_path / "out")]) == 2
    assert "not a session file" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# Item 6: shrink --events and plan are bounded
# ---------------------------------------------------------------------------------------------


def _cli(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "faultbench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_shrink_events_dev_zero_is_refused_not_read():
    proc = _cli("shrink", "t.py::t", "--events", "/dev/zero", "--world", "w.yaml")
    assert proc.returncode == 2
    assert "not a regular file" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_report_of_a_fifo_log_is_refused_without_waiting(recorded, tmp_path):
    import os

    logs = tmp_path / "logs"
    logs.mkdir()
    os.mkfifo(logs / "test_x.run0.jsonl")
    proc = _cli("report", str(logs), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "FIFO" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("margin", ["1e-5", "1e-300", "5e-324"])
def test_plan_with_a_tiny_margin_is_a_quick_clear_error(capsys, margin):
    start = time.perf_counter()
    assert main(["plan", "--rate", "0.9", "--margin", margin]) == 2
    assert time.perf_counter() - start < 2
    err = capsys.readouterr().err
    assert "a margin of" in err
    assert "runs" in err
    assert "Traceback" not in err


def test_plan_with_a_small_margin_still_answers(capsys):
    assert main(["plan", "--rate", "0.9", "--margin", "0.001"]) == 0
    assert "runs" in capsys.readouterr().out
