"""`faultbench serve WORLD` over stdio: a real subprocess, driven by the official client and by
hand."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import time
from typing import Any

import mcp
import pytest
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client

import faultbench
from faultbench.kernel import decode_events

from .serve_helpers import SHOP

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "trio"


def serve_command(*args: str) -> Any:
    """The stdio transport of `faultbench serve SHOP *args` (the transport itself, not its
    `StdioServerParameters`, which mcp 2.0's `Client` does not take)."""
    return stdio_client(
        StdioServerParameters(
            command=sys.executable, args=["-m", "faultbench.cli", "serve", str(SHOP), *args]
        )
    )


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_official_client_over_stdio(mode, tmp_path):
    events = tmp_path / "events.jsonl"
    params = serve_command("--events", str(events), "-v", "--debug-meta")
    async with mcp.Client(params, mode=mode, read_timeout_seconds=15) as client:
        assert "return_order" in [t.name for t in (await client.list_tools()).tools]
        # The first issue_refund is scripted to time out after committing.
        timeout = await client.call_tool("issue_refund", {"order_id": "1", "amount": 3.0})
        assert timeout.is_error
        assert timeout.content[0].text.startswith("504 Gateway Timeout")
        assert timeout.meta["fault"] == "timeout"
        # The handler prints to stdout: that must not corrupt the protocol stream.
        await client.call_tool("update_order", {"id": "2", "status": "delivered"})
        returned = await client.call_tool("return_order", {"id": "2", "reason": "broken"})
        assert not returned.is_error, returned.content[0].text
        assert returned.structured_content["status"] == "returned"
        bad = await client.call_tool("get_order", {"id": ["1"]})
        assert bad.is_error
        assert bad.meta["error_kind"] == "invalid_arguments"
        refunds = await client.call_tool("list_refunds", {})
        rows = refunds.structured_content
        assert (rows["result"] if mode == "legacy" else rows)[0]["amount"] == 3.0
    # stdin closed: the server exited and its event log replays to the same world
    world = faultbench.replay(SHOP, decode_events(events.read_bytes()))
    assert world.orders.get("2").status == "returned"
    assert len(world.refunds.all()) == 1


class RawServer:
    """The server process, spoken to line by line (2025-11-25 JSON-RPC)."""

    def __init__(self, *args: str):
        # Unbuffered, so select() in receive() sees every line not yet read.
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "faultbench.cli", "serve", str(SHOP), *args],
            bufsize=0,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def send(self, message: dict | str) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        data = memoryview(line.encode() + b"\n")
        while data:  # an unbuffered write may take part of a big message
            data = data[self.proc.stdin.write(data) :]

    def receive(self, timeout: float = 15) -> dict:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "no answer from the server"
        return json.loads(self.proc.stdout.readline())

    def call(self, i: int, name: str, arguments: str) -> dict:
        self.send(
            f'{{"jsonrpc":"2.0","id":{i},"method":"tools/call",'
            f'"params":{{"name":"{name}","arguments":{arguments}}}}}'
        )
        return self.receive()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(5)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            stream.close()


def test_raw_stdio_bad_payloads_and_sigterm(tmp_path):
    events = tmp_path / "events.jsonl"
    server = RawServer("--no-faults", "--events", str(events))
    try:
        server.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            }
        )
        assert server.receive()["result"]["serverInfo"]["name"] == "faultbench-shop"
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

        deep = '{"a":' * 2000 + "{}" + "}" * 2000
        server.send(
            '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_order",'
            f'"arguments":{{"status":"placed","total":1,"note":{deep}}}}}}}'
        )
        # Deeper than the SDK's parser goes: answered all the same (it used to get nothing).
        refused = server.receive()
        assert refused["id"] == 2
        assert refused["error"]["code"] == -32600
        assert "nested deeper than 128 levels" in refused["error"]["message"]
        server.send("this is not JSON")
        # Not JSON: -32700, with no id to answer to (JSON-RPC's null)
        parse = server.receive()
        assert parse["id"] is None
        assert parse["error"]["code"] == -32700
        assert parse["error"]["message"].startswith("Parse error: expected ident at line 1")
        # Requests the SDK's parser refuses are answered by id, not dropped.
        surrogate = server.call(21, "create_order", '{"status": "\\ud800", "total": 1}')
        assert surrogate["id"] == 21
        assert surrogate["error"]["code"] == -32700
        assert "hex escape" in surrogate["error"]["message"]
        digits = server.call(
            22, "create_order", '{"status": "placed", "total": ' + "7" * 4301 + "}"
        )
        assert digits["id"] == 22
        assert digits["error"]["code"] == -32700
        assert "number out of range" in digits["error"]["message"]
        # An unterminated string of \" escapes behind many brackets: answered at once (the
        # nesting check used to take over 90 s on this line).
        hostile = '{"jsonrpc":"2.0","id":23,"method":"tools/call","params":' + "[" * 200 + '"'
        started = time.monotonic()
        server.send(hostile + '\\"' * 100_000)
        answer = server.receive()
        assert time.monotonic() - started < 30  # a hang guard: the quadratic scan took over 90 s
        assert answer["id"] == 23
        assert answer["error"]["code"] == -32600  # 200 levels deep
        big = server.call(3, "create_order", json.dumps({"status": "y" * 1_000_000, "total": 1}))
        assert big["id"] == 3
        assert big["result"]["isError"] is True
        assert len(big["result"]["content"][0]["text"]) < 2_000
        unknown = server.call(4, "drop_tables", "{}")
        assert unknown["result"]["isError"] is True
        ok = server.call(5, "get_order", '{"id": "1"}')
        assert ok["id"] == 5
        assert ok["result"]["isError"] is False
        assert server.proc.poll() is None
        # return_order's handler prints: that text must not reach stdout (receive() would
        # fail to parse it as JSON-RPC).
        assert not server.call(6, "update_order", '{"id": "2", "status": "delivered"}')["result"][
            "isError"
        ]
        returned = server.call(7, "return_order", '{"id": "2", "reason": "too big"}')
        assert returned["id"] == 7
        assert returned["result"]["isError"] is False

        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(30) == 0
        assert time.monotonic() - started < 30  # a hang guard, generous for a loaded machine
        assert server.proc.stdout.read() == b""  # nothing but the answers on stdout
        stderr = server.proc.stderr.read().decode()
    finally:
        server.close()
    # quiet without -v: the handler's print is all there is, and it went to stderr
    assert stderr == "returning order 2: too big\n", stderr
    logged = decode_events(events.read_bytes())
    tools = [e.tool for e in logged if type(e).__name__ == "CallStarted"]
    assert tools == ["create_order", "drop_tables", "get_order", "update_order", "return_order"]
    assert faultbench.replay(SHOP, logged).orders.get("2").status == "returned"
    assert len(faultbench.replay(SHOP, logged).orders.all()) == 3  # nothing bad was created


@pytest.mark.parametrize(
    "line",
    [
        "[" * 200 + '"' + '\\"' * 100_000,  # an unterminated string of escapes
        "[" * 200 + '"\\"' * 70_000,  # many strings, each an escaped quote
        '{"id":1,"a":' + "[" * 100_000 + "]" * 100_000 + "}",  # deep, and terminated
    ],
)
def test_nesting_and_parse_checks_are_linear(line):
    """200 KB hostile lines are classified in milliseconds (quadratic scans took minutes)."""
    from faultbench.serve._stdio import too_deep, unparsable

    assert len(line) >= 200_000
    started = time.perf_counter()
    deep, _ = too_deep(line)
    bad = unparsable(line)
    elapsed = time.perf_counter() - started
    assert elapsed < 20, elapsed  # quadratic scans took minutes
    assert deep
    assert bad is not None


def test_nesting_check_finds_the_id_past_strings():
    from faultbench.serve._stdio import too_deep, unparsable

    line = '{"note":"{[\\"id\\": 9","id":"r-1","x":' + "[" * 150 + "]" * 150 + "}"
    assert too_deep(line) == (True, "r-1")
    assert unparsable('{"id": 7, "x": "\\ud800"}') == (
        "unexpected end of hex escape at line 1 column 23",
        7,
    )
    assert unparsable('{"id": 7}') is None
