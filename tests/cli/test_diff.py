"""`faultbench diff A.jsonl B.jsonl`."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from faultbench.cli import main
from faultbench.kernel import (
    CallFailed,
    CallStarted,
    CallSucceeded,
    ClockAdvanced,
    Event,
    FaultInjected,
    RecordCreated,
    WorldCreated,
    encode_events,
)

T0 = datetime(2025, 6, 1, tzinfo=UTC)
REFUND = {"order_id": "1", "amount": 30.0}


def refund_log(*, timeout_first: bool) -> list[Event]:
    events: list[Event] = [WorldCreated(seq=0, at=T0, world="shop", seed=1)]
    now = T0

    def add(cls, **kw):
        events.append(cls(seq=len(events), at=now, **kw))

    add(CallStarted, call_id="c1", tool="issue_refund", args=REFUND, k=1)
    if timeout_first:
        add(FaultInjected, call_id="c1", tool="issue_refund", kind="timeout")
        add(RecordCreated, table="refund", id="1", fields={"id": "1", **REFUND}, call_id="c1")
        later = now + timedelta(seconds=30)
        add(ClockAdvanced, to=later, call_id="c1")
        now = later
        add(CallFailed, call_id="c1", tool="issue_refund", kind="timeout", message="504")
        add(CallStarted, call_id="c2", tool="issue_refund", args=REFUND, k=2)
        add(RecordCreated, table="refund", id="2", fields={"id": "2", **REFUND}, call_id="c2")
        add(CallSucceeded, call_id="c2", tool="issue_refund", value={"id": "2", **REFUND})
    else:
        add(RecordCreated, table="refund", id="1", fields={"id": "1", **REFUND}, call_id="c1")
        add(CallSucceeded, call_id="c1", tool="issue_refund", value={"id": "1", **REFUND})
    return events


@pytest.fixture
def logs(tmp_path: Path) -> tuple[Path, Path]:
    a = tmp_path / "pass.jsonl"
    b = tmp_path / "fail.jsonl"
    a.write_bytes(encode_events(refund_log(timeout_first=False)))
    b.write_bytes(encode_events(refund_log(timeout_first=True)))
    return a, b


def test_differing_logs_exit_1_and_print_the_divergence(logs, capsys):
    a, b = logs
    assert main(["diff", "--events", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"--- {a}\n+++ {b}\nevent logs differ at event 2")
    assert "+ FaultInjected issue_refund timeout" in out
    # JSON Lines sort mapping keys, so fields read back in name order
    assert '+ RecordCreated refund 2 {amount: 30.0, order_id: "1"}' in out
    assert '- CallSucceeded issue_refund -> {amount: 30.0, id: "1", order_id: "1"}' in out


def test_by_default_the_runs_differ_in_words_then_in_end_state(logs, capsys):
    a, b = logs
    assert main(["diff", str(a), str(b)]) == 1
    assert capsys.readouterr().out == (
        f"--- {a} (pass)\n+++ {b} (fail)\n"
        "call 1 issue_refund: pass succeeded, fail timeout after commit -> fail retried (call 2)"
        " -> refund 2 created\n"
        "end state (- pass, + fail):\n"
        '  + refund 2 {amount: 30.0, order_id: "1"}\n'
    )


def test_equal_logs_exit_0(logs, capsys):
    a, _ = logs
    assert main(["diff", "--events", str(a), str(a)]) == 0
    assert "event logs are equal (4 events)" in capsys.readouterr().out
    assert main(["diff", str(a), str(a)]) == 0
    assert "the same calls, outcomes and end state as A" in capsys.readouterr().out


def test_json_output(logs, capsys):
    a, b = logs
    assert main(["diff", "--json", "--events", str(a), str(b)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["equal"] is False
    assert data["first_divergence"]["b"]["kind"] == "timeout"
    assert data["a"] == str(a)
    assert main(["diff", "--json", str(a), str(b)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["equal"] is False
    assert data["sentences"] == [
        "call 1 issue_refund: pass succeeded, fail timeout after commit -> fail retried "
        "(call 2) -> refund 2 created"
    ]
    assert data["state"]["added"][0]["id"] == "2"


def test_context_and_max_lines(logs, capsys):
    a, b = logs
    assert main(["diff", "--events", "-U", "0", "--max-lines", "2", str(a), str(b)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1].endswith(" more lines")
    assert out[-3].startswith("@@ ")


def test_missing_file_exits_2(logs, capsys, tmp_path):
    a, _ = logs
    assert main(["diff", str(a), str(tmp_path / "nope.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "nope.jsonl: no such file" in err


def test_malformed_line_exits_2_naming_file_and_line(logs, capsys, tmp_path):
    a, _ = logs
    bad = tmp_path / "bad.jsonl"
    lines = a.read_bytes().splitlines()
    bad.write_bytes(b"\n".join([lines[0], lines[1], b'{"type": "Nope", "seq": 2}']) + b"\n")
    assert main(["diff", str(a), str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:3: Expected one event as a JSON object" in err
    assert "Nope" in err


def test_runs_as_a_command(logs):
    a, b = logs
    proc = subprocess.run(
        [sys.executable, "-m", "faultbench.cli", "diff", "--events", str(a), str(b)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert "+ FaultInjected issue_refund timeout" in proc.stdout


def test_an_incomplete_last_line_is_dropped_with_a_warning(logs, capsys, tmp_path):
    a, _ = logs
    torn = tmp_path / "torn.jsonl"
    data = a.read_bytes()
    torn.write_bytes(data + data.splitlines()[1][:20])  # a writer killed mid-line
    assert main(["diff", str(a), str(torn)]) == 0
    assert (
        f"{torn}:5: the log breaks off here: its last line is cut short" in capsys.readouterr().err
    )
