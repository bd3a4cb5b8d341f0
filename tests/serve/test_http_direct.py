"""2026-07-28 tool calls over streamable HTTP are answered by `_http_calls.ModernCalls` in front of
the SDK's app, not by the SDK's modern entry: the same status, headers and body bytes, and
the same event log, as the SDK gives; every other request still goes to the SDK, with its
body replayed."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from mcp_types import PROTOCOL_VERSION_META_KEY

import faultbench
from faultbench.kernel import encode_events
from faultbench.serve import _http_calls, build_server, serve_in_thread
from faultbench.serve._server import WorldServer

from .serve_helpers import SHOP, WORLDS
from .test_stdio_direct import META, MODERN, call, request

HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": MODERN,
}


#: (body, extra headers, answered by ModernCalls)
REQUESTS = [
    *[(call(i, "issue_refund", {"order_id": "1", "amount": 5}), {}, True) for i in range(1, 11)],
    (call("g1", "get_order", {"id": "1"}), {}, True),
    *[(call(20 + i, "list_orders", {}), {}, True) for i in range(3)],
    (call(30, "get_order", {"id": 5}), {}, True),  # a bad argument: a tool error
    (call(31, "drop_tables", {}), {}, True),  # no such tool: a tool error
    (
        call(32, "create_order", {"status": "placed", "total": 1.5, "note": "ünïcode ✓ \u2028"}),
        {},
        True,
    ),
    (call(33, "update_order", {"id": "2", "status": None}), {}, True),
    (call(34, "return_order", {"id": "2", "reason": "too big"}), {}, True),
    # what the SDK answers itself
    (request(40, "tools/call", {"arguments": {}}), {}, False),  # no name
    (request(41, "tools/list"), {}, False),
    (call(42, "get_order", {"id": "1"}), {"mcp-protocol-version": "2025-11-25"}, False),
    (call(43, "get_order", {"id": "1"}), {"mcp-method": "tools/list"}, False),  # disagrees
    # no parameter declares `x-mcp-header`: the SDK ignores an Mcp-Param header, and so do we
    (call(44, "get_order", {"id": "1"}), {"mcp-param-id": "2"}, True),
    (call(45, "get_order", {"id": "1"}), {"content-type": "text/plain"}, False),
    (call(46, "get_order", {"id": "1"}), {"accept": "text/html"}, False),
    (
        request(47, "tools/call", {"name": "get_order", "arguments": {"id": "1"}}, meta={}),
        {},
        False,
    ),
    (  # a version that is not a string: the SDK's error, not a 500 from the fast path
        request(
            50,
            "tools/call",
            {"name": "get_order"},
            meta={**META, PROTOCOL_VERSION_META_KEY: [MODERN]},
        ),
        {},
        False,
    ),
    (
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {},
        False,
    ),
    ([call(48, "get_order", {"id": "1"})], {}, False),  # a batch
    (b'{"jsonrpc": "2.0", "id": 49, "method": ', {}, False),  # not JSON
]


def routing(body) -> dict[str, str]:
    """The routing headers a 2026-07-28 client sends with `body` (its method, a tool's name)."""
    if not isinstance(body, dict) or "method" not in body:
        return {}
    name = (body.get("params") or {}).get("name")
    return {"mcp-method": body["method"], **({"mcp-name": name} if isinstance(name, str) else {})}


def post(url, body, extra):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {**HEADERS, **routing(body), **extra}
    req = urllib.request.Request(url, data=data, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            status, headers, payload = resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as exc:
        status, headers, payload = exc.code, exc.headers, exc.read()
    kept = sorted(
        (k.lower(), "<random>" if k.lower() == "mcp-session-id" else v)
        for k, v in headers.items()
        if k.lower() not in ("date", "server")
    )
    return status, kept, payload


def counting(answered: list[str]):
    """`WorldServer.answer_modern` noting each tool it answers in `answered`."""
    original = WorldServer.answer_modern

    async def counted(self, version, params, request=None):
        answered.append(params.name)
        return await original(self, version, params, request)

    return counted


def serve_all(monkeypatch, *, fast: bool):
    """Every request of REQUESTS against a fresh shop world, fast path on or off: the raw
    answers, the event log, and the tools `ModernCalls` answered."""
    answered: list[str] = []
    with monkeypatch.context() as m:
        m.setattr(WorldServer, "answer_modern", counting(answered))
        if not fast:
            m.setattr(_http_calls, "http_call_checks", lambda: None)
        world = faultbench.load_world(SHOP, seed=7)
        with serve_in_thread(build_server(world)) as url:
            answers = [post(url, body, extra) for body, extra, _ in REQUESTS]
    return answers, encode_events(world.events), answered


def test_modern_tool_calls_over_http_are_answered_as_the_sdk_does(monkeypatch):
    fast, fast_log, fast_answered = serve_all(monkeypatch, fast=True)
    sdk, sdk_log, sdk_answered = serve_all(monkeypatch, fast=False)
    for (body, extra, _), ours, theirs in zip(REQUESTS, fast, sdk, strict=True):
        assert ours == theirs, (body, extra)
    assert fast_log == sdk_log  # the same event log, byte for byte
    assert sdk_answered == []
    expected = [body["params"]["name"] for body, _, taken in REQUESTS if taken]
    assert fast_answered == expected
    statuses = {status for status, _, _ in sdk}
    assert {200, 202, 400, 406} <= statuses  # the refusals are refusals, not answers


def test_a_world_with_auth_reads_the_bearer_token_on_the_fast_path(monkeypatch):
    seen = {}
    for fast in (True, False):
        answered: list[str] = []
        with monkeypatch.context() as m:
            m.setattr(WorldServer, "answer_modern", counting(answered))
            if not fast:
                m.setattr(_http_calls, "http_call_checks", lambda: None)
            world = faultbench.load_world(WORLDS / "auth_desk.yaml")
            writer, reader = world.issue_token("support_agent"), world.issue_token("readonly_bot")
            update = call(1, "update_ticket", {"id": "T-1", "status": "solved"})
            with serve_in_thread(build_server(world)) as url:
                seen[fast] = [
                    post(url, update, {"authorization": f"Bearer {reader}"}),  # 403: scope
                    post(url, update, {}),  # 401: no token
                    post(url, update, {"authorization": f"Bearer {writer}"}),
                    post(
                        url,
                        call(2, "get_ticket", {"id": "T-1"}),
                        {"authorization": f"Bearer {writer}"},
                    ),
                ]
            seen[fast].append(encode_events(world.events))
        assert len(answered) == (4 if fast else 0)
    assert seen[True] == seen[False]
    assert b"solved" in seen[True][3][2]


def test_a_handler_that_raises_gets_the_sdks_error_answer(monkeypatch):
    # `_on_call_tool` turns failures into tool errors; what escapes it anyway (a bug) must be
    # the SDK's JSON-RPC error, not a 500 with no body.
    async def broken(self, ctx, params):
        raise RuntimeError("a bug")

    seen = {}
    for fast in (True, False):
        with monkeypatch.context() as m:
            m.setattr(WorldServer, "_on_call_tool", broken)
            if not fast:
                m.setattr(_http_calls, "http_call_checks", lambda: None)
            with serve_in_thread(build_server(faultbench.load_world(SHOP))) as url:
                seen[fast] = post(url, call(1, "get_order", {"id": "1"}), {})
    assert seen[True] == seen[False]
    assert b'"code":-32603' in seen[True][2]
