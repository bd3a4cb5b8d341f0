"""2026-07-28 tool calls over stdio are answered by faultbench's stdio loop itself, not by the
SDK's pipeline (`_stdio.py`, "Tool calls at 2026-07-28"): byte for byte the same answers and
the same event log as the SDK gives; every other line still goes to the SDK."""

from __future__ import annotations

import json
import select
import subprocess
import sys
from types import SimpleNamespace

import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from faultbench.kernel import decode_events
from faultbench.serve._stdio import _LineReader

from .serve_helpers import SHOP

MODERN = max(MODERN_PROTOCOL_VERSIONS)
META = {
    PROTOCOL_VERSION_META_KEY: MODERN,
    CLIENT_CAPABILITIES_META_KEY: {},
    CLIENT_INFO_META_KEY: {"name": "raw", "version": "0"},
}
#: `faultbench serve` with the stdio loop passing every line to the SDK
SDK_ONLY = (
    "import sys; from faultbench.serve._stdio import _LineReader; "
    "_LineReader._answered = lambda self, message: False; "
    "from faultbench.cli import main; sys.exit(main(sys.argv[1:]))"
)


def request(i, method, params=None, meta=META):
    return {
        "jsonrpc": "2.0",
        "id": i,
        "method": method,
        "params": {**(params or {}), "_meta": meta},
    }


def call(i, name, arguments):
    return request(i, "tools/call", {"name": name, "arguments": arguments})


LINES = [
    request(0, "server/discover"),
    *[call(i, "issue_refund", {"order_id": "1", "amount": 5}) for i in range(1, 11)],
    call("g1", "get_order", {"id": "1"}),
    call("g2", "get_order", {"id": "1"}),
    *[call(20 + i, "list_orders", {}) for i in range(3)],
    call(30, "get_order", {"id": 5}),
    call(31, "drop_tables", {}),
    call(32, "create_order", {"status": "placed", "total": 1.5, "note": "ünïcode ✓ \u2028"}),
    call(33, "update_order", {"id": "2", "status": "delivered"}),
    call(34, "return_order", {"id": "2", "reason": "too big"}),
    request(35, "tools/call", {"arguments": {}}),  # no name: the SDK's INVALID_PARAMS
    request(36, "tools/call", {"name": "get_order"}, meta={}),  # no envelope
    {"jsonrpc": "2.0", "id": 37, "method": "tools/call", "params": {"name": "get_order"}},
    request(38, "tools/list"),
    # a version that is not a string: the SDK's error, not a crash of the fast path
    request(
        39, "tools/call", {"name": "get_order"}, meta={**META, PROTOCOL_VERSION_META_KEY: [MODERN]}
    ),
]


def answers(*prefix: str, events) -> list[bytes]:
    """The server's stdout lines for LINES, one request at a time."""
    return exchange([*prefix, "serve", str(SHOP), "--events", str(events)], LINES)


def exchange(argv: list[str], lines: list) -> list[bytes]:
    """Start `argv` (a stdio server), send `lines` one at a time, return its answers."""
    proc = subprocess.Popen(
        argv, bufsize=0, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    out = []
    try:
        for message in lines:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            ready, _, _ = select.select([proc.stdout], [], [], 30)
            assert ready, f"no answer to {message}"
            out.append(proc.stdout.readline())
        proc.stdin.close()
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    return out


def test_the_stdio_loop_answers_as_the_sdk_does_byte_for_byte(tmp_path):
    ours = answers(sys.executable, "-m", "faultbench.cli", events=tmp_path / "ours.jsonl")
    sdk = answers(sys.executable, "-c", SDK_ONLY, events=tmp_path / "sdk.jsonl")
    assert len(ours) == len(LINES)
    for mine, theirs, message in zip(ours, sdk, LINES):
        assert mine == theirs, message
    assert (tmp_path / "ours.jsonl").read_bytes() == (tmp_path / "sdk.jsonl").read_bytes()
    by_id = {json.loads(line)["id"]: json.loads(line) for line in ours}
    assert by_id["g1"]["result"]["isError"]  # the faults were on, as the log says
    logged = decode_events((tmp_path / "ours.jsonl").read_bytes())
    assert "not_found" in {e.kind for e in logged if type(e).__name__ == "FaultInjected"}
    assert by_id[35]["error"]["code"] == -32602
    assert len(decode_events((tmp_path / "ours.jsonl").read_bytes())) > 20


class Nursery:
    def __init__(self):
        self.started = []

    def start_soon(self, fn, *args):
        self.started.append(args)


def reader() -> tuple[_LineReader, Nursery]:
    line_reader = _LineReader(stream=None)  # type: ignore[arg-type]  # not read from here
    line_reader.nursery = nursery = Nursery()

    async def answer(version, params):  # pragma: no cover - never awaited here
        return {}

    line_reader.answer = answer
    line_reader.reply = SimpleNamespace()  # type: ignore[assignment]
    return line_reader, nursery


def test_only_tool_calls_on_a_modern_connection_are_taken_after_its_opening_request():
    line_reader, nursery = reader()
    assert not line_reader._answered({"jsonrpc": "2.0", "method": "notifications/x"})
    assert line_reader.modern is None  # a notification decides nothing
    assert not line_reader._answered(call(1, "get_order", {"id": "1"}))  # opens: the SDK's
    assert line_reader.modern is True
    assert line_reader._answered(call(2, "get_order", {"id": "1"}))
    assert nursery.started == [(2, MODERN, nursery.started[0][2])]
    assert nursery.started[0][2].name == "get_order"
    for refused in (
        request(3, "tools/list"),
        request(4, "tools/call", {"arguments": {}}),
        request(5, "tools/call", {"name": "x"}, meta={PROTOCOL_VERSION_META_KEY: MODERN}),
        {**call(6, "x", {}), "extra": 1},
        {**call(7, "x", {}), "id": True},
        {**call(8, "x", {}), "jsonrpc": "1.0"},
        request(9, "tools/call", {"name": "x", "arguments": [1]}),
    ):
        assert not line_reader._answered(refused), refused
    assert len(nursery.started) == 1


@pytest.mark.parametrize(
    "opening",
    [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"_meta": META}},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
    ],
)
def test_a_handshake_connection_is_all_the_sdks(opening):
    line_reader, nursery = reader()
    line_reader._answered(opening)
    assert line_reader.modern is False
    assert not line_reader._answered(call(2, "get_order", {"id": "1"}))
    assert nursery.started == []


BROKEN = (
    "from faultbench.serve._server import WorldServer\n"
    "async def broken(self, ctx, params):\n"
    "    raise RuntimeError('a bug')\n"
    "WorldServer._on_call_tool = broken\n"
)


def test_a_handler_that_raises_gets_the_sdks_error_and_the_server_lives():
    # `_on_call_tool` turns failures into tool errors; a bug that escapes it anyway must be
    # answered as the SDK answers it, and must not take the stdio loop down.
    lines = [request(0, "server/discover"), *[call(i, "get_order", {"id": "1"}) for i in (1, 2)]]
    fast = BROKEN + "import sys\nfrom faultbench.cli import main\nsys.exit(main(sys.argv[1:]))"
    sdk = BROKEN + SDK_ONLY.replace("; ", "\n")
    seen = {
        way: exchange([sys.executable, "-c", code, "serve", str(SHOP)], lines)
        for way, code in (("fast", fast), ("sdk", sdk))
    }
    assert seen["fast"] == seen["sdk"]
    assert all(b'"code":-32603' in line for line in seen["fast"][1:])
