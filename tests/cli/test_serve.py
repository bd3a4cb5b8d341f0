"""`faultbench serve` flags that are refused before anything is served (the serving itself is
tested in tests/serve/)."""

from __future__ import annotations

import json
import os
import pty
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHOP = str(ROOT / "tests" / "serve" / "worlds" / "shop.yaml")


def serve(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "faultbench.cli", "serve", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def test_non_loopback_host_needs_a_token():
    proc = serve(SHOP, "--http", "--host", "0.0.0.0", "--port", "0")
    assert proc.returncode == 2
    assert "Expected --token with the non-loopback --host '0.0.0.0'" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--isolate"], "--isolate only applies with --http"),
        (["--port", "9000"], "--port only applies with --http"),
        (["--host", "localhost"], "--host only applies with --http"),
        (["--token", "s3cret"], "--token only applies with --http"),
        (["--http", "--port", "70000"], "Expected --port between 0 and 65535"),
    ],
)
def test_flags_that_do_not_fit(flags, message):
    proc = serve(SHOP, *flags)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_a_port_in_use_is_one_clear_line_and_exit_1(tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_text("an earlier run's log\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = serve(SHOP, "--http", "--port", str(port), "--events", str(events))
    assert proc.returncode == 1
    assert proc.stderr == (
        f"faultbench serve: cannot listen on 127.0.0.1:{port}: the port is in use (another "
        "server, perhaps another faultbench serve). Expected a free port: pick another with "
        "--port PORT, or --port 0 for a free one.\n"
    )
    # a server that never ran leaves the --events file of the last one alone
    assert events.read_text() == "an earlier run's log\n"


def test_a_host_that_is_not_this_machines_is_refused():
    # 192.0.2.1 is TEST-NET-1 (RFC 5737): never an address of this machine, no DNS involved
    proc = serve(SHOP, "--http", "--port", "0", "--host", "192.0.2.1", "--token", "t")
    assert proc.returncode == 1
    assert proc.stderr.startswith("faultbench serve: cannot listen on 192.0.2.1:0: ")
    assert "Expected --host to be an address of this machine" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_world_that_does_not_load_exits_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("services:\n  orders:\n    records: { order: { id: strng } }\n")
    proc = serve(str(bad))
    assert proc.returncode == 2
    assert f"{bad}:3:" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--faults", "[1]"], "Expected --faults to be a JSON object. Instead, received: '[1]'"),
        (["--faults", "{"], "Expected --faults to be a faults: block as JSON"),
        (["--faults", '{"payments.nope": {}}'], "unknown operation 'nope' of service 'payments'"),
        (["--faults", "{}", "--no-faults"], "--faults and --no-faults exclude each other"),
    ],
)
def test_a_faults_block_that_does_not_fit_exits_2(flags, message):
    proc = serve(SHOP, *flags)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_a_faults_block_is_in_force_and_logged_from_the_start(tmp_path):
    from faultbench.kernel import FaultsChanged, decode_events

    events = tmp_path / "events.jsonl"
    block = {"payments.issue_refund": {"script": {"1": "timeout"}}}
    proc = serve(SHOP, "--faults", json.dumps(block), "--events", str(events))
    assert proc.returncode == 0, proc.stderr
    changed = [e for e in decode_events(events.read_bytes()) if isinstance(e, FaultsChanged)]
    assert len(changed) == 1
    assert changed[0].rules["payments.issue_refund"]["script"] == {"1": "timeout"}


def test_stdio_exits_when_stdin_closes():
    # stdin is /dev/null: EOF at once, a clean exit and nothing on stdout
    proc = serve(SHOP)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""


def test_help_lists_every_flag():
    proc = subprocess.run(
        [sys.executable, "-m", "faultbench.cli", "serve", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    for flag in (
        "--http",
        "--host",
        "--port",
        "--seed",
        "--run",
        "--no-faults",
        "--faults",
        "--events",
        "--isolate",
        "--token",
        "--verbose",
    ):
        assert flag in proc.stdout


def test_the_environments_token_is_ignored_without_http():
    """FAULTBENCH_TOKEN set for HTTP servers does not stop a stdio one."""
    proc = serve(SHOP, env={**os.environ, "FAULTBENCH_TOKEN": "s3cret"})
    assert proc.returncode == 0, proc.stderr


def test_stdio_on_a_terminal_says_what_it_waits_for():
    """Run by hand, `faultbench serve` prints one line instead of looking hung; piped (as an
    MCP client runs it), it prints nothing."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "faultbench", "serve", SHOP],
        stdin=terminal,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.wait(30)
        os.close(controller)
        os.close(terminal)
    assert line == (
        "faultbench: serving shop (9 tools) over stdio: waiting for an MCP client on stdin "
        "(Ctrl-C to stop; --http serves http://127.0.0.1:8000/mcp instead)\n"
    )
    assert proc.stderr.read() == ""
    piped = serve(SHOP)
    assert (piped.returncode, piped.stderr) == (0, "")


def test_version_and_python_dash_m():
    from faultbench import __version__

    for command in (["-m", "faultbench", "--version"], ["-m", "faultbench.cli", "--version"]):
        proc = subprocess.run(
            [sys.executable, *command], capture_output=True, text=True, check=False, timeout=60
        )
        assert (proc.returncode, proc.stdout) == (0, f"faultbench {__version__}\n"), proc.stderr
