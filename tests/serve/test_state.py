"""`faultbench serve WORLD --state FILE`: one world shared by stdio servers started one per call
(or several at once), through the official client of whichever SDK is installed (1.x or 2.x:
`tests/mcp_client.py`). The file is an event log like `--events`', and the world it holds is
the one a single process serving every call would have made, byte for byte."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import faultbench
from faultbench.kernel import encode_events

from ..mcp_client import open_client
from .serve_helpers import SHOP, WORLDS

pytestmark = pytest.mark.anyio


def serve_argv(state, *extra: str) -> list[str]:
    return [sys.executable, "-m", "faultbench", "serve", str(SHOP), "--state", str(state), *extra]


def rows(result) -> list:
    value = result.structured_content
    return value["result"] if isinstance(value, dict) else value  # 2025: a list is wrapped


def one_process(calls) -> bytes:
    """The log of one world that made `calls` itself, in order."""
    world = faultbench.load_world(SHOP)
    for name, args in calls:
        world.call(name, args)
    return encode_events(world.events)


async def test_two_servers_in_a_row_share_one_world(tmp_path):
    state = tmp_path / "state.jsonl"
    async with open_client(serve_argv(state)) as client:
        created = await client.call_tool("create_order", {"status": "placed", "total": 12.5})
        assert not created.is_error
        # the shop scripts issue_refund's first call to time out after committing
        refund = await client.call_tool("issue_refund", {"order_id": "1", "amount": 3.0})
        assert refund.is_error
        assert refund.content[0].text.startswith("504")
    # A second server, started as a client that starts one per call does: the refund the
    # first one wrote is there, the order it created too, and the fault plan runs on.
    async with open_client(serve_argv(state)) as client:
        assert [r["amount"] for r in rows(await client.call_tool("list_refunds", {}))] == [3.0]
        placed = rows(await client.call_tool("list_orders", {"status": "placed"}))
        assert 12.5 in [o["total"] for o in placed]
        again = await client.call_tool("issue_refund", {"order_id": "2", "amount": 1.0})
        # the second issue_refund of the run: timeout_before_commit, as in one process
        assert again.is_error
        assert again.content[0].text.startswith("504")
    # The third server sees that the second refund was never written.
    async with open_client(serve_argv(state)) as client:
        assert len(rows(await client.call_tool("list_refunds", {}))) == 1

    calls = [
        ("create_order", {"status": "placed", "total": 12.5}),
        ("issue_refund", {"order_id": "1", "amount": 3.0}),
        ("list_refunds", {}),
        ("list_orders", {"status": "placed"}),
        ("issue_refund", {"order_id": "2", "amount": 1.0}),
        ("list_refunds", {}),
    ]
    assert state.read_bytes() == one_process(calls)
    # and the file replays like any event log
    done = subprocess.run(
        [sys.executable, "-m", "faultbench", "replay", str(state), "--world", str(SHOP)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [r.amount for r in faultbench.replay(SHOP, state).refunds.all()] == [3.0]


async def test_two_servers_at_once_stay_one_world(tmp_path):
    state = tmp_path / "state.jsonl"
    argv = serve_argv(state, "--no-faults")
    calls = []
    async with open_client(argv) as a, open_client(argv) as b:
        for i in range(4):
            writer, reader = (a, b) if i % 2 == 0 else (b, a)
            args = {"order_id": "1", "amount": float(i + 1)}
            assert not (await writer.call_tool("issue_refund", args)).is_error
            seen = rows(await reader.call_tool("list_refunds", {}))
            assert [r["amount"] for r in seen] == [float(k + 1) for k in range(i + 1)]
            calls += [("issue_refund", args), ("list_refunds", {})]
        # ids come from one sequence: no two servers handed out the same one
        ids = [r["id"] for r in rows(await a.call_tool("list_refunds", {}))]
        calls.append(("list_refunds", {}))
        assert len(set(ids)) == 4
    world = faultbench.load_world(SHOP)
    world.set_faults({})
    for name, args in calls:
        world.call(name, args)
    assert state.read_bytes() == encode_events(world.events)


def serve_once(state, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        serve_argv(state, *extra), input="", capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"not json at all\n", "is not a faultbench event log"),
        (b'{"type": "RecordCreated"}\n', "is not a faultbench event log"),
    ],
)
def test_a_foreign_file_is_refused_and_left_alone(tmp_path, content, says):
    state = tmp_path / "state.jsonl"
    state.write_bytes(content)
    done = serve_once(state)
    assert done.returncode == 2
    assert says in done.stderr
    assert str(state) in done.stderr
    assert state.read_bytes() == content


def test_another_worlds_log_or_other_options_are_refused(tmp_path):
    other = tmp_path / "other.jsonl"
    world = faultbench.load_world(WORLDS / "auth_desk.yaml")
    other.write_bytes(encode_events(world.events))
    before = other.read_bytes()
    done = serve_once(other)
    assert done.returncode == 2
    assert "holds the world 'auth_desk'" in done.stderr
    assert other.read_bytes() == before

    state = tmp_path / "state.jsonl"
    assert serve_once(state).returncode == 0  # a new file: the world's first events
    begun = state.read_bytes()
    done = serve_once(state, "--seed", "3")
    assert done.returncode == 2
    assert "same --seed and --run" in done.stderr
    done = serve_once(state, "--faults", json.dumps({"orders.get_order": {"errors": {}}}))
    assert done.returncode == 2
    assert "other fault options" in done.stderr
    assert state.read_bytes() == begun
    assert serve_once(state).returncode == 0  # the same options resume it
    assert state.read_bytes() == begun


def test_a_line_cut_short_is_refused_not_dropped(tmp_path):
    state = tmp_path / "state.jsonl"
    assert serve_once(state).returncode == 0
    cut = state.read_bytes() + b'{"type":"CallStarted","seq":'
    state.write_bytes(cut)
    done = serve_once(state)
    assert done.returncode == 2
    assert "cut short" in done.stderr
    assert "--partial" in done.stderr
    assert state.read_bytes() == cut


@pytest.mark.parametrize("flag", [["--http"], ["--events", "x.jsonl"]])
def test_state_is_for_stdio_servers(tmp_path, flag):
    done = serve_once(tmp_path / "state.jsonl", *flag)
    assert done.returncode == 2
    assert "exclude each other" in done.stderr
    assert not (tmp_path / "state.jsonl").exists()


async def test_python_m_faultbench_serves_over_stdio():
    """`python -m faultbench serve WORLD`: the command form for clients that start only some
    executables (Agno), through the official client (docs/INTEGRATIONS.md)."""
    argv = [sys.executable, "-m", "faultbench", "serve", str(SHOP), "--no-faults"]
    async with open_client(argv) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "issue_refund" in names
        got = await client.call_tool("get_order", {"id": "1"})
        assert not got.is_error
        assert got.structured_content["id"] == "1"
