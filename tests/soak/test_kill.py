"""`kill -9` of `faultbench serve --http --events` in the middle of a reset or a restore: the
file keeps every acknowledged write (it only grows), and replays to the state of the last
answer, or of the action in flight.

    FAULTBENCH_SLOW=1 uv run pytest -s tests/soak/test_kill.py   # 25 kills, a 200k-row world
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.request

from tests.serve.serve_helpers import ServeProcess

from .conftest import SLOW, size

WORLD = """\
name: big
seed: 7
clock: {{ start: 2025-06-01T00:00:00Z }}
services:
  orders:
    records:
      order: {{ status: "enum[placed, shipped]", total: float }}
    seed: {{ order: {rows} }}
    operations:
      get_order: {{ kind: get, record: order }}
      update_order: {{ kind: update, record: order }}
"""


def request(base: str, method: str, path: str, body=None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        f"{base}/faultbench/{path}", data=data, method=method,
        headers={"content-type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(req, timeout=30) as answer:
        return json.loads(answer.read())


def mcp_call(base: str, session: dict, i: int, name: str, args: dict) -> dict:
    body = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": name, "arguments": args}}  # fmt: skip
    req = urllib.request.Request(
        f"{base}/mcp", data=json.dumps(body).encode(), method="POST", headers=session
    )
    with urllib.request.urlopen(req, timeout=30) as answer:
        return json.loads(answer.read())


def open_session(base: str) -> dict:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2025-11-25"}  # fmt: skip
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "kill", "version": "0"}}}  # fmt: skip
    req = urllib.request.Request(
        f"{base}/mcp", data=json.dumps(init).encode(), method="POST", headers=headers
    )
    with urllib.request.urlopen(req, timeout=30) as answer:
        session = answer.headers.get("mcp-session-id")
    if session:
        headers["mcp-session-id"] = session
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    req = urllib.request.Request(
        f"{base}/mcp", data=json.dumps(note).encode(), method="POST", headers=headers
    )
    urllib.request.urlopen(req, timeout=30).close()
    return headers


def replay_hash(world, events) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "faultbench.cli", "replay", str(events), "--world", str(world),
         "--partial", "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        return proc.returncode, proc.stderr
    return 0, json.loads(proc.stdout)["state_hash"]


def test_kill_during_reset_or_restore_loses_no_acknowledged_write(tmp_path):
    rows = 200_000 if SLOW else 5_000
    trials = size(3, 25)
    world = tmp_path / "big.yaml"
    world.write_text(WORLD.format(rows=rows))
    rng = random.Random(14)
    lost = acked_total = torn = 0
    for trial in range(trials):
        events = tmp_path / f"run{trial}.jsonl"
        server = ServeProcess(str(world), "--http", "--port", "0", "--events", str(events))
        try:
            base = server.base
            session = open_session(base)
            genesis = request(base, "POST", "reset")["hash"]
            for i in range(20):
                answer = mcp_call(base, session, i, "update_order",
                                  {"id": str(i + 1), "status": "shipped", "total": float(i)})  # fmt: skip
                assert not answer["result"]["isError"]
                acked_total += 1
            fork = request(base, "POST", "fork")
            for i in range(20, 40):
                mcp_call(base, session, i, "update_order", {"id": str(i + 1), "total": 1.0})
                acked_total += 1
            last = request(base, "GET", "state")["hash"]
            action = "restore" if trial % 2 else "reset"
            after = fork["hash"] if action == "restore" else genesis
            body = {"snapshot": fork["snapshot"]} if action == "restore" else None
            done = threading.Event()

            def act(action=action, body=body, done=done, base=base):
                try:
                    request(base, "POST", action, body)
                except Exception:
                    pass  # killed mid-request
                done.set()

            threading.Thread(target=act, daemon=True).start()
            time.sleep(rng.uniform(0, 0.6 if SLOW else 0.05))
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait(10)
        finally:
            server.kill()
        data = events.read_bytes()
        torn += bool(data) and not data.endswith(b"\n")
        status, got = replay_hash(world, events)
        if status != 0 or got not in (last, after):
            lost += 1
            print(f"trial {trial}: {action} lost: {status} {got!r:.300}")
    print(
        f"\nkills during reset/restore: {trials} ({rows:_} rows), acknowledged writes: "
        f"{acked_total}, trials that lost any: {lost}, torn last lines: {torn}"
    )
    assert lost == 0
