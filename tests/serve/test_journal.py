"""`serve --events`: the journal is the acknowledgement. A call or control action the journal
cannot write (disk full, too many open files, the file deleted) is not made, answered with a
server error naming the cause, logged once; the world takes changes again once the journal
can be written; after SIGKILL every acknowledged write is in the file."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import logging
import os
import resource
import signal
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import faultbench
from faultbench.kernel import decode_events, encode_events
from faultbench.serve import JournalError, Journals, build_server, connect_in_process
from tests.soak.test_kill import mcp_call, open_session, request

from .serve_helpers import SHOP, ServeProcess

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "trio"


class Disk:
    """A disk the test fills and frees: files opened through it fail writes past `space`
    bytes with ENOSPC, after writing what fits (a real partial write)."""

    def __init__(self):
        self.space: int | None = None  # None: plenty

    def open(self, path: Path) -> io.RawIOBase:
        disk = self

        class File(io.FileIO):
            def write(self, data):
                if disk.space is not None and len(data) > disk.space:
                    if disk.space:
                        super().write(bytes(data[: disk.space]))
                        disk.space = 0
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                if disk.space is not None:
                    disk.space -= len(data)
                return super().write(data)

        return File(path, "wb")


def rule_free_shop():
    world = faultbench.load_world(SHOP)
    world.set_faults({})
    return world


async def test_a_call_the_journal_cannot_write_is_not_made_and_says_why(tmp_path, caplog):
    world, disk, path = rule_free_shop(), Disk(), tmp_path / "events.jsonl"
    Journals(path, world, opener=disk.open)
    server = build_server(world, debug=True)  # the answers name their error kind
    caplog.set_level(logging.WARNING, logger="faultbench.serve")
    async with connect_in_process(server) as client:
        ok = await client.call_tool("update_order", {"id": "1", "total": 1.0})
        assert not ok.isError if hasattr(ok, "isError") else not ok.is_error
        before = (world.state_hash(), encode_events(world.events))
        for space in (0, 40, 0):  # nothing fits, a part of a line fits, nothing again
            disk.space = space
            result = await client.call_tool("update_order", {"id": "2", "total": 2.0})
            text = result.content[0].text
            assert (result.meta or {})["error_kind"] == "journal_error"
            assert text.startswith("503 Service Unavailable")
            assert "No space left on device (ENOSPC)" in text
            assert str(path) in text
            assert (world.state_hash(), encode_events(world.events)) == before
            data = path.read_bytes()
            assert data.endswith(b"\n")
            assert encode_events(decode_events(data)) == before[1]
        # said once, without a traceback, however many calls were refused
        errors = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert len(errors) == 1
        assert errors[0].exc_info is None
        assert "ENOSPC" in errors[0].getMessage()
        disk.space = None  # space freed: the world takes changes again
        again = await client.call_tool("update_order", {"id": "2", "total": 2.0})
    assert (again.meta or {}).get("error_kind") is None
    assert world.orders.get("2")["total"] == 2.0
    assert encode_events(decode_events(path.read_bytes())) == encode_events(world.events)
    assert any("written again" in r.getMessage() for r in caplog.records)


def test_control_actions_and_direct_writes_are_refused_too(tmp_path):
    world, disk, path = rule_free_shop(), Disk(), tmp_path / "events.jsonl"
    Journals(path, world, opener=disk.open)
    snap = world.snapshot()
    world.call("update_order", {"id": "1", "status": "delivered"})
    before = (world.state_hash(), encode_events(world.events))
    disk.space = 0
    for change in (
        world.reset,
        lambda: world.restore(snap),
        lambda: world.clock.advance(5),
        lambda: world.set_faults({"orders.get_order": {"errors": {"timeout": 1.0}}}),
    ):
        with pytest.raises(JournalError, match="ENOSPC"):
            change()
        assert (world.state_hash(), encode_events(world.events)) == before
    disk.space = None
    world.reset()
    assert encode_events(decode_events(path.read_bytes())) == encode_events(world.events)


def test_a_deleted_journal_is_written_whole_again(tmp_path):
    world, path = rule_free_shop(), tmp_path / "events.jsonl"
    Journals(path, world)
    world.call("update_order", {"id": "1", "total": 3.0})
    path.unlink()
    with pytest.raises(JournalError, match="deleted"):
        world.call("update_order", {"id": "1", "total": 4.0})
    assert world.orders.get("1")["total"] == 3.0
    world.call("update_order", {"id": "1", "total": 5.0})
    assert encode_events(decode_events(path.read_bytes())) == encode_events(world.events)


def test_fsync_journals_the_same_bytes(tmp_path):
    logs = []
    for fsync in (False, True):
        world, path = rule_free_shop(), tmp_path / f"{fsync}.jsonl"
        Journals(path, world, fsync=fsync)
        world.call("update_order", {"id": "1", "total": 3.0})
        world.reset()
        logs.append(path.read_bytes())
    assert logs[0] == logs[1]


# --- real processes: a tiny disk, a low file limit, SIGKILL ------------------------------------


def replayed(path: Path):
    """The world the journal holds (a torn last line, the write in flight, is dropped)."""
    data = path.read_bytes()
    whole = data[: data.rfind(b"\n") + 1]
    return faultbench.replay(SHOP, decode_events(whole))


def try_call(base: str, session: dict, i: int) -> dict:
    answer = mcp_call(base, session, i, "create_order", {"status": "placed", "total": float(i)})
    return answer["result"]


@pytest.fixture
def tiny_disk(tmp_path):
    """A 512 KiB tmpfs (root only); the test is skipped where it cannot be mounted: the
    fault-injecting `Disk` above covers the same path everywhere."""
    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(where)],
        capture_output=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(where: Path) -> Path:
    filler = where / "filler"
    with open(filler, "wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"x" * 4096)
    with open(filler, "ab", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"x")
    return filler


def test_a_full_disk_loses_no_acknowledged_write_after_sigkill(tiny_disk):
    events = tiny_disk / "events.jsonl"
    server = ServeProcess(
        str(SHOP), "--http", "--port", "0", "--no-faults", "--events", str(events)
    )
    acked: set[float] = set()
    refused = 0
    codes: list[int] = []  # of the resets the disk could not take
    try:
        session = open_session(server.base)
        i = 0
        for _round in range(3):
            for _ in range(15):
                i += 1
                if not try_call(server.base, session, i)["isError"]:
                    acked.add(float(i))
            filler = fill(tiny_disk)
            for _ in range(10):
                i += 1
                hash_before = request(server.base, "GET", "state")["hash"]
                result = try_call(server.base, session, i)
                if result["isError"]:
                    refused += 1
                    assert result["content"][0]["text"].startswith("503 Service Unavailable")
                    assert "ENOSPC" in result["content"][0]["text"]
                else:  # what was left of the file's last page took it
                    acked.add(float(i))
            # a control action too big for what is left: 503, naming the cause, not made
            script = {str(k): "timeout" for k in range(1, 300)}
            with pytest.raises(urllib.error.HTTPError) as refusal:
                request(server.base, "PUT", "faults", {"orders.get_order": {"script": script}})
            assert refusal.value.code == 503
            assert "ENOSPC" in json.loads(refusal.value.read())["error"]
            assert request(server.base, "GET", "faults") == {"faults": {}}
            assert request(server.base, "GET", "state")["hash"] == hash_before or not refused
            try:  # a reset is small: it may fit, and then it is acknowledged
                request(server.base, "POST", "reset")
                acked.clear()
            except urllib.error.HTTPError as exc:
                codes.append(exc.code)
            filler.unlink()
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(10)
    finally:
        server.kill()
    assert refused >= 20
    assert set(codes) <= {503}
    totals = {r["total"] for r in replayed(events).orders.all()}
    assert acked <= totals, f"acknowledged but not in the journal: {sorted(acked - totals)}"
    assert "Traceback" not in server.stderr
    assert server.stderr.count("ENOSPC") == 3  # one line per episode, not per refusal


def limit_files(n: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))

    return apply


def test_sessions_whose_journal_cannot_be_opened_are_refused_at_creation(tmp_path):
    """At `ulimit -n 40`, --isolate --events: sessions past what the limit allows get 503
    naming EMFILE, never a world that no file records; after SIGKILL every acknowledged write
    of every session is in its file."""
    events = tmp_path / "events.jsonl"
    server = ServeProcess(
        str(SHOP), "--http", "--port", "0", "--no-faults", "--isolate", "--events", str(events),
        preexec_fn=limit_files(40),
    )  # fmt: skip
    acked: dict[str, set[float]] = {}
    refusals = []
    codes: list[int] = []
    try:
        for attempt in range(60):
            try:
                session = open_session(server.base)
            except urllib.error.HTTPError as exc:
                codes.append(exc.code)
                refusals.append(json.loads(exc.read())["error"]["message"])
                continue
            sid = session["mcp-session-id"]
            result = try_call(server.base, session, attempt)
            assert not result["isError"], result
            acked.setdefault(sid, set()).add(float(attempt))
        assert request(server.base, "GET", "sessions")["sessions"] == sorted(acked)
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(10)
    finally:
        server.kill()
    assert refusals, "the file limit was never reached"
    assert acked
    assert set(codes) == {503}
    assert all("Too many open files (EMFILE)" in m for m in refusals)
    for sid, totals in acked.items():
        logged = {r["total"] for r in replayed(tmp_path / f"events.{sid}.jsonl").orders.all()}
        assert totals <= logged
    assert "Traceback" not in server.stderr


async def test_a_refused_session_is_ended_in_the_sdk_too(tmp_path):
    """The SDK opened the session before the journal refused it: it is ended there as well
    (a DELETE), so it holds nothing until it idles out, and its id is unknown afterwards."""
    import httpx2

    from faultbench.serve import build_app, serve_http

    main = tmp_path / "events.jsonl"
    tried: list[Path] = []

    def opener(path: Path):
        if path != main:
            tried.append(path)
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        return open(path, "wb", buffering=0)

    import trio

    world = rule_free_shop()
    server = build_server(world, isolate=True)
    journals = Journals(main, world, opener=opener).attach(server)
    app = build_app(server, journal=journals)
    stop = trio.Event()
    headers = {"accept": "application/json, text/event-stream"}
    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: serve_http(
            app, port=0, shutdown=stop.wait, task_status=task_status))  # fmt: skip
        async with httpx2.AsyncClient(timeout=10) as http:
            init = await http.post(url, headers=headers, json={
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "0"}}})  # fmt: skip
            refused_id = tried[0].name.split(".")[1]
            ping = await http.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                headers={**headers, "mcp-session-id": refused_id,
                         "mcp-protocol-version": "2025-11-25"})  # fmt: skip
        stop.set()
    assert init.status_code == 503
    assert init.headers.get("mcp-session-id") is None
    assert "Too many open files (EMFILE)" in init.json()["error"]["message"]
    assert ping.status_code == 404
    assert server.sessions == {}
