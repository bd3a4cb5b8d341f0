"""The HTTP app's own CPU per 2026-07-28 `tools/call`, without a network or an HTTP server.

What is measured: `faultbench.serve._http.build_app` of the shop world (examples/shop, faults
off), its lifespan running, called directly as an ASGI app with one complete POST of
`get_order {"id": "1"}` (the headers `mcp.Client` sends at 2026-07-28), under trio as
`faultbench serve --http` runs it. Two ways, alternated in rounds of 300 calls: `fast`, the
call answered by `_http_calls.ModernCalls` (the default), and `sdk`, `ModernCalls` passing every
request to the SDK's modern entry (as before it existed). Reported: process CPU per call,
median over rounds. What it leaves out, Hypercorn, h11, the socket and the client, is most of
a served call's CPU (`bench_serve.py --only http`: ~0.9-1.3 ms a call here), so this is the
part of a call the fast path can change, not the whole.

    uv run python benchmarks/bench_http_app.py [--rounds 7] [--calls 300]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import anyio
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

import faultbench
from faultbench.serve import build_server
from faultbench.serve._http import build_app
from faultbench.serve._http_calls import ModernCalls, http_call_checks

ROOT = Path(__file__).resolve().parents[1]
VERSION = "2026-07-28"


def request() -> tuple[dict[str, Any], bytes]:
    meta = {
        PROTOCOL_VERSION_META_KEY: VERSION,
        CLIENT_CAPABILITIES_META_KEY: {},
        CLIENT_INFO_META_KEY: {"name": "bench", "version": "0"},
    }
    params = {"name": "get_order", "arguments": {"id": "1"}, "_meta": meta}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", VERSION.encode()),
        (b"mcp-method", b"tools/call"),
        (b"mcp-name", b"get_order"),
        (b"content-length", str(len(body)).encode()),
    ]
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "headers": headers,
        "query_string": b"",
        "scheme": "http",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 1234),
        "http_version": "1.1",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
    }
    return scope, body.encode()


async def measure(rounds: int, calls: int) -> dict[str, list[float]]:
    world = faultbench.load_world(ROOT / "examples/shop/worlds/shop.yaml", faults=False)
    app = build_app(build_server(world))
    modern = app.app.app  # type: ignore[attr-defined]  # _Guard -> SessionTracker -> ModernCalls
    assert isinstance(modern, ModernCalls)
    starlette = modern.app
    scope, body = request()
    answers: list[bytes] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            answers.append(message["body"])

    checks = http_call_checks()
    seen: dict[str, list[float]] = {"fast": [], "sdk": []}
    async with starlette.router.lifespan_context(starlette):  # type: ignore[attr-defined]
        for _ in range(rounds):
            for way in seen:
                modern.checks = checks if way == "fast" else None
                start = time.process_time()
                for _ in range(calls):
                    await app(dict(scope), receive, send)
                seen[way].append((time.process_time() - start) / calls * 1e6)
    assert all(b'"result"' in a for a in answers), answers[-1]
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=300)
    opts = parser.parse_args()
    seen = anyio.run(measure, opts.rounds, opts.calls, backend="trio")
    fast, sdk = (statistics.median(seen[w]) for w in ("fast", "sdk"))
    print(
        f"HTTP app CPU per tools/call at {VERSION}, median of {opts.rounds} rounds of {opts.calls}:"
    )
    print(f"  ModernCalls (default): {fast:7.1f} us")
    print(f"  the SDK's modern entry: {sdk:7.1f} us   ({fast / sdk:.2f}x)")


if __name__ == "__main__":
    main()
