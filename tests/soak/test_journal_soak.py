"""Soak of issue 25: the journal is the acknowledgement, under a disk that fails at random, a
full tmpfs with SIGKILL, and a file limit with racing clients. Small in CI;
`FAULTBENCH_SLOW=1 uv run pytest -s tests/soak/test_journal_soak.py` runs the full sizes and
prints the figures (operations, refusals, kills, lost writes, tracebacks, hangs)."""

from __future__ import annotations

import random
import signal
import threading
import urllib.error

import pytest

from faultbench.kernel import decode_events, encode_events
from faultbench.serve import JournalError, Journals
from tests.serve.serve_helpers import SHOP, ServeProcess
from tests.serve.test_journal import (
    Disk,
    fill,
    limit_files,
    replayed,
    rule_free_shop,
    tiny_disk,  # noqa: F401  (a fixture)
    try_call,
)

from .conftest import SLOW, size
from .test_kill import open_session, request


def test_a_disk_failing_at_random_never_leaves_the_journal_behind_the_world(tmp_path):
    rng = random.Random(25)
    world, disk, path = rule_free_shop(), Disk(), tmp_path / "events.jsonl"
    Journals(path, world, opener=disk.open)
    snaps = [world.snapshot()]
    ops = size(400, 20_000)
    check_every = size(1, 25)  # the whole file is read back: every change in CI
    done = refused = lost = 0
    foreign: list[str] = []
    for i in range(ops):
        disk.space = rng.choice([None, None, None, 0, rng.randrange(1, 400)])
        before = (world.state_hash(), encode_events(world.events))
        op = rng.randrange(7)
        try:
            if op <= 2:
                world.call("create_order", {"status": "placed", "total": float(i)})
            elif op == 3:
                world.clock.advance(rng.randrange(1, 60))
            elif op == 4:
                snaps.append(world.snapshot())
                world.restore(rng.choice(snaps))
            elif op == 5:
                world.reset()
            else:
                world.set_faults({} if rng.random() < 0.5 else {"orders.get_order": {}})
            done += 1
        except JournalError:
            refused += 1
            lost += (world.state_hash(), encode_events(world.events)) != before
        except Exception as exc:  # anything else is a bug
            foreign.append(f"{type(exc).__name__}: {exc}")
        if i % check_every == 0 or i == ops - 1:
            data = path.read_bytes()  # what a SIGKILL now would leave
            lost += not data.endswith(b"\n")
            lost += encode_events(decode_events(data)) != encode_events(world.events)
    print(
        f"\nrandom disk failures: {ops} changes, {done} made, {refused} refused, journal "
        f"behind or torn: {lost}, foreign exceptions: {len(foreign)}"
    )
    assert refused > ops // 10
    assert lost == 0
    assert not foreign, foreign[:3]


def test_full_disk_kills_lose_no_acknowledged_write(tiny_disk):  # noqa: F811
    rng = random.Random(26)
    trials = size(2, 12)
    calls = acked_total = lost = tracebacks = hangs = refused = 0
    for trial in range(trials):
        events = tiny_disk / f"events{trial}.jsonl"
        server = ServeProcess(
            str(SHOP), "--http", "--port", "0", "--no-faults", "--events", str(events)
        )
        acked: set[float] = set()
        filler = None
        try:
            session = open_session(server.base)
            fill_at = rng.randrange(5, 40)
            for i in range(rng.randrange(45, 80)):
                if i == fill_at:
                    filler = fill(tiny_disk)
                if filler is not None and rng.random() < 0.1:
                    filler.unlink()
                    filler = None
                calls += 1
                try:
                    result = try_call(server.base, session, trial * 1000 + i)
                except TimeoutError:
                    hangs += 1
                    continue
                if result["isError"]:
                    refused += 1
                else:
                    acked.add(float(trial * 1000 + i))
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait(10)
        finally:
            server.kill()
            if filler is not None:
                filler.unlink()
        acked_total += len(acked)
        logged = {r["total"] for r in replayed(events).orders.all()}
        lost += len(acked - logged)
        tracebacks += server.stderr.count("Traceback")
        events.unlink()
    print(
        f"\nfull-disk kills: {trials}, calls: {calls}, acknowledged: {acked_total}, refused: "
        f"{refused}, lost acknowledged writes: {lost}, tracebacks: {tracebacks}, hangs: {hangs}"
    )
    assert refused > 0
    assert lost == tracebacks == hangs == 0


@pytest.mark.parametrize("limit", [40, 64])
def test_racing_sessions_at_the_file_limit_lose_nothing(tmp_path, limit):
    events = tmp_path / "events.jsonl"
    server = ServeProcess(
        str(SHOP), "--http", "--port", "0", "--no-faults", "--isolate", "--events", str(events),
        preexec_fn=limit_files(limit),
    )  # fmt: skip
    acked: dict[str, set[float]] = {}
    counts = {"sessions": 0, "refused": 0, "calls": 0, "other": 0}
    lock = threading.Lock()
    clients = 30
    per_client = size(3, 20)

    def client(c: int) -> None:
        for j in range(per_client):
            try:
                session = open_session(server.base)
            except urllib.error.HTTPError as exc:
                with lock:
                    counts["refused" if exc.code == 503 else "other"] += 1
                continue
            except Exception:
                with lock:
                    counts["other"] += 1
                continue
            total = float(c * 1000 + j)
            result = try_call(server.base, session, c * 1000 + j)
            with lock:
                counts["sessions"] += 1
                counts["calls"] += 1
                if not result["isError"]:
                    acked.setdefault(session["mcp-session-id"], set()).add(total)

    try:
        threads = [threading.Thread(target=client, args=(c,), daemon=True) for c in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        hangs = sum(t.is_alive() for t in threads)
        live = request(server.base, "GET", "sessions")["sessions"]
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(10)
    finally:
        server.kill()
    lost = 0
    for sid, totals in acked.items():
        logged = {r["total"] for r in replayed(tmp_path / f"events.{sid}.jsonl").orders.all()}
        lost += len(totals - logged)
    tracebacks = server.stderr.count("Traceback")
    print(
        f"\nulimit -n {limit}, {clients} racing clients: sessions opened {counts['sessions']}, "
        f"refused (503) {counts['refused']}, other errors {counts['other']}, open at the end "
        f"{len(live)}, acknowledged writes {sum(map(len, acked.values()))}, lost {lost}, "
        f"tracebacks {tracebacks}, hangs {hangs}"
    )
    assert counts["refused"] > 0
    assert lost == tracebacks == hangs == counts["other"] == 0, server.stderr[-4000:]
    assert not SLOW or counts["sessions"] > 0
