"""The MCP server in-process, through the official `mcp.Client`, in both protocol modes and
under both asyncio and trio: what an agent sees."""

from __future__ import annotations

import json
from types import SimpleNamespace

import mcp
import pytest

import faultbench
from faultbench.serve import WorldServer, build_server

from .serve_helpers import SHOP, nested

pytestmark = pytest.mark.anyio

MODES = ["auto", "legacy"]


@pytest.fixture(params=MODES)
def mode(request):
    return request.param


def client(world, mode: str, **kw) -> mcp.Client:
    """The official client on `world`'s server with `--debug-meta` (these tests read the
    call id and fault kind it names; test_telltales.py proves the default names none)."""
    kw.setdefault("debug", True)
    return mcp.Client(build_server(world, **kw), mode=mode)


def structured(result, mode: str):
    """structuredContent: any JSON value at 2026-07-28, an object before (lists wrapped)."""
    value = result.structured_content
    if mode == "legacy" and isinstance(value, dict) and set(value) == {"result"}:
        return value["result"]
    return value


# --- tools -------------------------------------------------------------------------------------


async def test_lists_every_operation_with_the_kernels_schema_and_description(shop, mode):
    async with client(shop, mode) as c:
        listed = {t.name: t for t in (await c.list_tools()).tools}
    assert list(listed) == [t.name for t in shop.tools]
    for tool in shop.tools:
        mt = listed[tool.name]
        assert mt.input_schema == tool.input_schema
        assert mt.input_schema["type"] == "object"
        assert "$ref" not in mt.input_schema
        assert mt.description == tool.description
    # A custom handler's docstring is its description.
    assert listed["return_order"].description.startswith("Mark a delivered order as returned")
    assert listed["get_order"].annotations.read_only_hint is True
    assert listed["delete_order"].annotations.destructive_hint is True
    assert listed["return_order"].annotations.destructive_hint is True  # custom: conservative


def test_build_server_is_a_low_level_mcp_server(shop):
    server = build_server(shop, debug=True)
    assert isinstance(server, WorldServer)
    assert isinstance(server, mcp.server.Server)
    assert server.world is shop


# --- each kind of operation --------------------------------------------------------------------


async def test_get_answers_the_record_as_json_text_and_structured_content(shop, mode):
    async with client(shop, mode) as c:
        result = await c.call_tool("get_order", {"id": "1"})
    assert not result.is_error
    assert len(result.content) == 1
    record = shop.orders.get("1").to_dict()
    assert json.loads(result.content[0].text) == record
    assert result.structured_content == record
    call = shop.trace.calls[-1]
    assert result.content[0].text == call.text
    assert result.meta["call_id"] == call.call_id
    assert result.meta["started_at"] == "2025-01-01T00:00:00Z"
    assert result.meta["finished_at"] == "2025-01-01T00:00:00Z"
    assert "fault" not in result.meta


async def test_list_answers_one_json_array(shop, mode):
    async with client(shop, mode) as c:
        result = await c.call_tool("list_orders", {"status": "delivered"})
    assert not result.is_error
    assert len(result.content) == 1
    rows = [r.to_dict() for r in shop.orders.where(status="delivered")]
    assert rows
    assert json.loads(result.content[0].text) == rows
    assert structured(result, mode) == rows
    if mode == "legacy":  # 2025-11-25 requires an object
        assert result.structured_content == {"result": rows}


async def test_create_update_delete_change_the_world(shop, mode):
    async with client(shop, mode) as c:
        created = await c.call_tool("create_order", {"status": "placed", "total": 12.5})
        new_id = created.structured_content["id"]
        assert shop.orders.get(new_id).total == 12.5

        updated = await c.call_tool("update_order", {"id": new_id, "status": "delivered"})
        assert updated.structured_content["status"] == "delivered"
        assert shop.orders.get(new_id).status == "delivered"

        deleted = await c.call_tool("delete_order", {"id": new_id})
        assert not deleted.is_error
        assert shop.orders.get(new_id) is None
    assert shop.trace.count(ok=True) == 3


async def test_custom_handler_result_and_refusal(shop, mode):
    async with client(shop, mode) as c:
        ok = await c.call_tool("return_order", {"id": "2", "reason": "too big"})
        assert not ok.is_error
        assert ok.structured_content["status"] == "returned"
        assert shop.orders.get("2").status == "returned"
        # The handler raises ValueError: a clean tool error with its message.
        refused = await c.call_tool("return_order", {"id": "2"})
    assert refused.is_error
    assert refused.content[0].text == shop.trace.calls[-1].text
    assert "only delivered orders can be returned" in refused.content[0].text
    assert refused.meta["error_kind"] == "handler_error"


async def test_record_not_found_is_a_tool_error(shop, mode):
    async with client(shop, mode) as c:
        result = await c.call_tool("get_order", {"id": "99"})
    assert result.is_error
    assert result.structured_content is None
    assert result.meta["error_kind"] == "not_found"
    assert result.content[0].text == shop.trace.calls[-1].error


# --- faults, as the agent sees them ------------------------------------------------------------

REFUND = {"order_id": "1", "amount": 5.0}


async def test_each_scripted_fault_reaches_the_agent(faulty_shop, mode):
    world = faulty_shop
    seen = []
    async with client(world, mode) as c:
        for _ in range(10):
            try:
                seen.append(await c.call_tool("issue_refund", REFUND))
            except RuntimeError as exc:  # the client checks answers against outputSchema
                seen.append(exc)
    calls = world.trace.calls_to("issue_refund")
    assert len(calls) == 10
    # malformed_json (no structuredContent) and empty_result (`{}`) break the create's
    # output schema: the SDK's client refuses them, as it would a real server's
    refused = [i for i, r in enumerate(seen) if isinstance(r, RuntimeError)]
    assert refused == [6, 8]
    assert "did not return structured content" in str(seen[6])
    assert "Invalid structured content" in str(seen[8])
    twin = build_server(faultbench.load_world(SHOP), debug=True)  # the direct path: no check
    seen[6] = [await twin.call_direct("issue_refund", REFUND) for _ in range(7)][-1]
    for result, call in zip(seen, calls):
        if isinstance(result, RuntimeError | dict):
            continue
        # The agent reads exactly the kernel's text; the fault kind rides in _meta.
        assert result.content[0].text == call.text
        assert result.is_error is (not call.ok)
        assert result.meta.get("fault") == call.fault
        assert result.meta["call_id"] == call.call_id
    timeout, before_commit, h500, h502, h503, h429, malformed, duplicate, _empty, normal = seen
    assert timeout.is_error
    assert timeout.content[0].text.startswith("504 Gateway Timeout")
    assert timeout.meta["fault"] == "timeout"
    # the timeout fired 30 virtual seconds after the call started
    assert timeout.meta["finished_at"] > timeout.meta["started_at"]
    assert before_commit.is_error
    assert before_commit.meta["fault"] == "timeout_before_commit"
    assert h500.content[0].text.startswith("500 Internal Server Error")
    assert h502.content[0].text.startswith("502 Bad Gateway")
    assert h503.content[0].text.startswith("503 Service Unavailable")
    assert h429.content[0].text.startswith("429 Too Many Requests")
    assert "retry after 12s" in h429.content[0].text
    # malformed_json: a "success" whose text is not JSON, and no clean copy on the side
    # (read on the direct path of a twin world, which does not validate)
    assert not malformed["isError"]
    assert malformed["_meta"]["fault"] == "malformed_json"
    with pytest.raises(ValueError):
        json.loads(malformed["content"][0]["text"])
    assert "structuredContent" not in malformed
    assert not duplicate.is_error
    assert duplicate.meta["fault"] == "duplicate"
    assert calls[8].fault == "empty_result"
    assert calls[8].value == {}
    assert not normal.is_error
    assert "fault" not in normal.meta
    # timeout committed its refund, duplicate wrote two, the normal call one
    assert len(world.refunds.all()) == 4


async def test_read_faults_and_rate_limit(faulty_shop, mode):
    world = faulty_shop
    async with client(world, mode) as c:
        missing = await c.call_tool("get_order", {"id": "1"})
        assert missing.is_error
        assert missing.meta["fault"] == "not_found"
        assert missing.content[0].text.startswith("404 Not Found")
        stale = await c.call_tool("get_order", {"id": "1"})
        assert not stale.is_error
        assert stale.meta["fault"] == "stale_read"
        answers = [await c.call_tool("list_orders", {}) for _ in range(3)]
    assert [a.is_error for a in answers] == [False, False, True]
    assert answers[2].content[0].text.startswith("429 Too Many Requests")


# --- bad input never hurts the server ----------------------------------------------------------

BAD_CALLS = [
    pytest.param("get_order", {"id": 5}, "invalid_arguments", id="wrong-type"),
    pytest.param("create_order", {"status": "placed"}, "invalid_arguments", id="missing-field"),
    pytest.param("get_order", {"id": "1", "extra": True}, "invalid_arguments", id="unknown-field"),
    pytest.param("create_order", {"status": "lost", "total": 1.0}, "invalid_arguments", id="enum"),
    pytest.param("refund_everything", {}, "unknown_tool", id="unknown-tool"),
    pytest.param(
        "create_order", {"status": "x" * 1_000_000, "total": 1.0}, "invalid_arguments", id="1MB"
    ),
    # 254 levels is the deepest the official client serializes; 2,000 goes over the wire
    # in test_http.py and test_stdio.py.
    pytest.param(
        "create_order",
        {"status": "placed", "total": 1.0, "note": nested(254)},
        "invalid_arguments",
        id="deep",
    ),
]


@pytest.mark.parametrize(("tool", "args", "kind"), BAD_CALLS)
async def test_bad_arguments_are_tool_errors_and_change_nothing(shop, mode, tool, args, kind):
    before = shop.to_dict()
    async with client(shop, mode) as c:
        result = await c.call_tool(tool, args)
        assert result.is_error
        assert result.meta["error_kind"] == kind
        assert len(result.content[0].text) < 2_000  # the agent is not sent its megabyte back
        # still serving
        after = await c.call_tool("get_order", {"id": "1"})
    assert not after.is_error
    assert shop.to_dict() == before


async def test_2000_deep_arguments_are_a_tool_error(shop, mode):
    """Deeper than any client serializes (the official one stops at 254 levels, wire parsers
    at ~200), so the payload is handed to the registered tools/call handler directly."""
    server = build_server(shop, debug=True)
    before = shop.to_dict()
    entry = server.get_request_handler("tools/call")
    params = entry.params_type.model_validate(
        {
            "name": "create_order",
            "arguments": {"status": "placed", "total": 1.0, "note": nested(2000)},
        }
    )
    version = "2025-11-25" if mode == "legacy" else "2026-07-28"
    result = await entry.handler(SimpleNamespace(protocol_version=version, request=None), params)
    assert result["isError"] is True
    assert shop.to_dict() == before
    async with mcp.Client(server, mode=mode) as c:
        assert not (await c.call_tool("get_order", {"id": "1"})).is_error
    assert result["_meta"]["error_kind"] == "invalid_arguments"
    assert result["content"][0]["text"] == (
        "invalid arguments for create_order: `note`: expected a string or null, "
        'got {"a":{"a":{"a":{...}}}}'
    )


async def test_an_exception_inside_the_server_is_an_internal_error_result(shop, mode, monkeypatch):
    async def broken(tool, args=None, **kwargs):  # kwargs: the server passes token= (issue 21)
        raise RuntimeError("disk on fire")

    server = build_server(shop, debug=True)
    async with mcp.Client(server, mode=mode) as c:
        monkeypatch.setattr(shop, "acall", broken)
        result = await c.call_tool("get_order", {"id": "1"})
        assert result.is_error
        assert result.meta["error_kind"] == "internal_error"
        assert "RuntimeError: disk on fire" in result.content[0].text
        monkeypatch.undo()
        again = await c.call_tool("get_order", {"id": "1"})
    assert not again.is_error


async def test_a_failure_after_the_call_is_not_answered_as_a_call_that_did_not_run(
    shop, mode, monkeypatch
):
    # "500 ... faultbench failed while running X" tells the agent X did not happen; once the
    # call is in the log, a failure after it (here the webhook pass) must not say so. It is
    # the SDK's own internal error, as for any handler that raises, and the server serves on.
    async def broken(world, **kwargs):
        raise RuntimeError("delivery thread gone")

    server = build_server(shop, debug=True)
    async with mcp.Client(server, mode=mode) as c:
        monkeypatch.setattr(server, "deliver_webhooks", broken)
        with pytest.raises(Exception) as raised:  # the SDK's error: 1.x's or 2.x's class
            await c.call_tool("update_order", {"id": "2", "status": "delivered"})
        assert "faultbench failed while running" not in str(raised.value)
        monkeypatch.undo()
        again = await c.call_tool("get_order", {"id": "2"})
    assert not again.is_error
    assert shop.trace.summary() == "update_order → get_order"
    assert shop.orders.get("2").status == "delivered"


async def test_observer_failure_does_not_cost_the_agent_its_answer(shop, mode):
    server = build_server(shop, debug=True)

    def failing(world, result):
        raise OSError("disk full")

    server.after_call.append(failing)
    async with mcp.Client(server, mode=mode) as c:
        result = await c.call_tool("get_order", {"id": "1"})
    assert not result.is_error


async def test_two_servers_on_forks_do_not_share_writes(shop, mode):
    a, b = shop.fork(), shop.fork()
    async with client(a, mode) as ca, client(b, mode) as cb:
        await ca.call_tool("create_order", {"status": "placed", "total": 1.0})
        listed = await cb.call_tool("list_orders", {})
    assert len(structured(listed, mode)) == 3
    assert len(a.orders.all()) == 4


def test_loads_from_a_path_too():
    world = faultbench.load_world(str(SHOP), faults=False)
    assert {t.name for t in build_server(world).tool_list()} >= {"get_order", "return_order"}


async def test_a_handler_bug_reaches_the_server_log_with_its_traceback(tmp_path, mode, caplog):
    (tmp_path / "buggy.py").write_text(
        "def pay(world, clock, order_id: str):\n    return {}['missing']\n"
    )
    (tmp_path / "w.yaml").write_text(
        "name: w\nservices:\n  s:\n    records: {order: {status: str}}\n"
        "    operations: {pay: {kind: custom, handler: buggy.pay}}\n"
    )
    world = faultbench.load_world(tmp_path / "w.yaml")
    async with mcp.Client(build_server(world, debug=True), mode=mode) as c:
        result = await c.call_tool("pay", {"order_id": "1"})
    assert result.is_error
    assert result.meta["error_kind"] == "internal_error"
    text = result.content[0].text
    assert "KeyError: 'missing'" in text
    assert "Traceback" not in text
    assert "traceback" not in json.dumps(result.meta)
    logged = [r.getMessage() for r in caplog.records if r.name == "faultbench.serve"]
    assert any(
        'File "buggy.py", line 2, in pay' in m and "c1 pay -> internal_error" in m for m in logged
    )
