"""Faults in the MCP protocol itself (docs/FAULTS.md, "Faults in the MCP protocol"), through
the official client of whichever SDK is installed (`tests/mcp_client.py`, in the handshake
protocol every 1.x client speaks): what the client sees, that the log replays byte for byte
and is the log of the same calls made without MCP, and that each fails a naive scripted agent
where a careful one passes."""

from __future__ import annotations

import json
import sys
import time

import anyio
import pytest

import faultbench
from faultbench.kernel import FaultInjected, encode_events
from faultbench.serve import build_server

from ..mcp_client import MCP_MAJOR, notification_method, open_client
from .serve_helpers import SHOP

pytestmark = pytest.mark.anyio

REFUND = {"order_id": "1", "amount": 5.0}


def shop(kind: str | dict) -> faultbench.World:
    """The shop whose first issue_refund gets `kind`, and nothing else."""
    world = faultbench.load_world(SHOP)
    world.set_faults({"payments.issue_refund": {"script": {1: kind}}})
    return world


def refunds(world) -> int:
    return len(world.refunds.all())


def replays_byte_for_byte(world) -> None:
    log = encode_events(world.events)
    assert encode_events(faultbench.replay(SHOP, log).events) == log
    # and it is the log of the same calls made on a world without MCP: the server's holding,
    # notifications and the client's cancel change nothing the world records
    twin = shop(_first_script(world))
    for ev in world.events:
        if type(ev).__name__ == "CallStarted":
            twin.call(ev.tool, ev.args)
    assert encode_events(twin.events) == log


def _first_script(world):
    fault = next(ev for ev in world.events if isinstance(ev, FaultInjected))
    options = {k: v for k, v in fault.detail.items() if k not in ("source", "commit")}
    return {"kind": fault.kind, **options} if options else fault.kind


async def timed_out(client, *, timeout: float, **kwargs) -> bool:
    try:
        await client.call_tool("issue_refund", REFUND, read_timeout_seconds=timeout, **kwargs)
    except Exception:  # the SDK's own timeout error (McpError / MCPError)
        return True
    return False


# --- the agents: a naive one retries a call that did not answer; a careful one looks first -----


async def naive_refund(client, timeout: float = 0.5) -> None:
    if await timed_out(client, timeout=timeout):
        await client.call_tool("issue_refund", REFUND)  # "it failed": again


async def careful_refund(client, timeout: float = 0.5) -> None:
    if await timed_out(client, timeout=timeout):
        listed = (await client.call_tool("list_refunds", {"order_id": "1"})).structured_content
        listed = listed["result"] if isinstance(listed, dict) else listed
        if not listed:
            await client.call_tool("issue_refund", REFUND)


@pytest.mark.parametrize("kind", ["answer_after_cancel", {"kind": "ignore_cancel", "timeout_s": 2}])
async def test_a_held_answer_fails_the_naive_agent(kind):
    naive, careful = shop(kind), shop(kind)
    async with open_client(build_server(naive), legacy=True) as client:
        await naive_refund(client)
    async with open_client(build_server(careful), legacy=True) as client:
        await careful_refund(client)
    assert refunds(naive) == 2  # the refund was made; the naive agent made it twice
    assert refunds(careful) == 1
    name = kind if isinstance(kind, str) else kind["kind"]
    assert [ev.kind for ev in naive.events if isinstance(ev, FaultInjected)] == [name]
    replays_byte_for_byte(naive)
    replays_byte_for_byte(careful)


async def test_answer_after_cancel_never_answers_a_patient_client():
    world = shop("answer_after_cancel")
    async with open_client(build_server(world), legacy=True) as client:
        started = time.monotonic()
        with anyio.move_on_after(1.5) as scope:
            await client.call_tool("issue_refund", REFUND)
        assert scope.cancelled_caught  # no answer at all, however long it waits
        assert time.monotonic() - started >= 1.5
        # the session still serves: the next call answers at once
        assert not (await client.call_tool("get_refund", {"id": "1"})).is_error
    assert refunds(world) == 1


async def test_ignore_cancel_answers_late_whatever_the_client_does():
    world = shop({"kind": "ignore_cancel", "timeout_s": 1})
    async with open_client(build_server(world), legacy=True) as client:
        started = time.monotonic()
        result = await client.call_tool("issue_refund", REFUND, read_timeout_seconds=10)
        assert not result.is_error
        assert time.monotonic() - started >= 1.0  # held a real second
    # the virtual clock moved by the same second: the kernel decided it
    call = world.trace.calls[0]
    assert (call.finished_at - call.started_at).total_seconds() == 1.0


async def test_progress_that_stalls():
    world = shop({"kind": "progress_stall", "times": 2})
    seen: list[tuple[float, float | None]] = []

    async def progress(done: float, total: float | None, message: str | None = None) -> None:
        seen.append((done, total))

    async with open_client(build_server(world), legacy=True) as client:
        # A naive agent takes progress as a sign of life and waits for the answer: it never
        # comes (the test gives up for it after 1.5 s).
        with anyio.move_on_after(1.5) as naive:
            await client.call_tool("issue_refund", REFUND, progress_callback=progress)
        assert naive.cancelled_caught
        assert seen == [(1.0, 4.0), (2.0, 4.0)]  # half way, then nothing
    careful = shop({"kind": "progress_stall", "times": 2})
    async with open_client(build_server(careful), legacy=True) as client:
        await careful_refund(client)  # its own deadline, then it looks before retrying
    assert refunds(careful) == 1
    replays_byte_for_byte(world)


async def test_a_burst_of_list_changed():
    heard: list[str] = []

    async def handler(message) -> None:
        if notification_method(message) == "notifications/tools/list_changed":
            heard.append("list_changed")

    async def agent(world, careful: bool) -> None:
        async with open_client(build_server(world), message_handler=handler, legacy=True) as c:
            tools = [t.name for t in (await c.list_tools()).tools]
            assert not (await c.call_tool("issue_refund", REFUND)).is_error
            await anyio.sleep(0.2)  # the notifications were sent before the answer
            if heard:
                relisted = [t.name for t in (await c.list_tools()).tools]
                assert relisted == tools  # nothing changed
                if not careful:  # "my tools changed: start over"
                    await c.call_tool("issue_refund", REFUND)

    naive = shop({"kind": "list_changed_burst", "times": 5})
    await agent(naive, careful=False)
    assert heard == ["list_changed"] * 5
    heard.clear()
    careful = shop({"kind": "list_changed_burst", "times": 5})
    await agent(careful, careful=True)
    assert (refunds(naive), refunds(careful)) == (2, 1)
    replays_byte_for_byte(naive)


@pytest.mark.skipif(MCP_MAJOR < 2, reason="2026-07-28 tool calls over stdio are 2.x's")
async def test_a_modern_client_cancels_a_held_call_over_stdio(tmp_path):
    """Over stdio at 2026-07-28 faultbench answers tool calls itself (`_stdio.py`): a
    client's `notifications/cancelled` ends a held call there too, and nothing is answered."""
    events = tmp_path / "events.jsonl"
    faults = json.dumps({"payments.issue_refund": {"script": {1: "answer_after_cancel"}}})
    argv = [sys.executable, "-m", "faultbench", "serve", str(SHOP), "--faults", faults]
    async with open_client([*argv, "--events", str(events)]) as client:
        await naive_refund(client)
        listed = (await client.call_tool("list_refunds", {})).structured_content
    assert len(listed) == 2
    world = faultbench.replay(SHOP, events)
    assert refunds(world) == 2
