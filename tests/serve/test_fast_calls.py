"""`tools/call` on mcp 2.x goes through `_sdk.FastToolCalls` (a server middleware) instead of
the SDK's whole per-request pipeline: the agent must not be able to tell. The same calls give
the same results, field for field and in the same key order, and the same event log; what
the SDK would refuse it still refuses."""

from __future__ import annotations

import json
from types import SimpleNamespace

import mcp
import pytest
from mcp_types import SERVER_INFO_META_KEY
from mcp_types import methods as sdk_methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

import faultbench
from faultbench.kernel import encode_events
from faultbench.serve import build_server, to_wire
from faultbench.serve._calls import error_result, render_result
from faultbench.serve._sdk import FastToolCalls, shape_result

from .serve_helpers import SHOP

pytestmark = pytest.mark.anyio

MODERN = max(MODERN_PROTOCOL_VERSIONS)
LEGACY = "2025-11-25"

#: a run through the shop's scripted faults, bad calls and a list
CALLS = [
    *[("issue_refund", {"order_id": "1", "amount": 5})] * 10,
    *[("get_order", {"id": "1"})] * 2,
    *[("list_orders", {})] * 3,
    ("get_order", {"id": 5}),
    ("drop_tables", {}),
    ("create_order", {"status": "placed", "total": 1.5, "note": "ünïcode ✓"}),
    ("update_order", {"id": "2", "status": "delivered"}),
    ("return_order", {"id": "2", "reason": "too big"}),
]


def sdk_shape(out: dict, version: str) -> dict:
    """What 2.x's server runner makes of a handler's result: the per-version dump, then the
    server's identity in `_meta` at 2026-07-28 (its documented rule)."""
    shaped = sdk_methods.serialize_server_result("tools/call", version, out)
    if version in MODERN_PROTOCOL_VERSIONS:
        shaped["_meta"] = {**shaped.get("_meta", {}), SERVER_INFO_META_KEY: {"name": "x"}}
    return shaped


@pytest.mark.parametrize("version", [MODERN, LEGACY])
def test_a_result_has_the_shape_the_sdk_gives_it(version):
    world = faultbench.load_world(SHOP)
    results = [world.call(tool, args) for tool, args in CALLS]
    # with --debug-meta (its _meta), and without (no _meta at all)
    debug = [render_result(r, version, MODERN_PROTOCOL_VERSIONS, debug=True) for r in results]
    debug.append(error_result("no such session", kind="no_session", debug=True))
    kinds = {(o["isError"], "structuredContent" in o, o["_meta"].get("fault")) for o in debug}
    assert len(kinds) >= 8  # ok, errors, faults, lists, malformed_json: every shape
    plain = [render_result(r, version, MODERN_PROTOCOL_VERSIONS) for r in results]
    plain.append(error_result("no such session", kind="no_session"))
    assert not any("_meta" in o for o in plain)
    outs = debug + plain
    stamp = {"name": "x"} if version in MODERN_PROTOCOL_VERSIONS else None
    for out in outs:
        ours = json.dumps(shape_result(out, version, stamp), ensure_ascii=False)
        assert ours == json.dumps(sdk_shape(out, version), ensure_ascii=False)


def without_fast_path(world):
    server = build_server(world)
    server.middleware = [m for m in server.middleware if not isinstance(m, FastToolCalls)]
    return server


class Spy:
    """A server middleware inside `FastToolCalls`: sees the requests the SDK's pipeline runs."""

    def __init__(self):
        self.methods: list[str] = []

    async def __call__(self, ctx, call_next):
        self.methods.append(ctx.method)
        return await call_next(ctx)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_sees_the_same_with_and_without_the_fast_path(mode):
    seen = {}
    for way in ("fast", "sdk"):
        world = faultbench.load_world(SHOP, seed=7)
        server = build_server(world) if way == "fast" else without_fast_path(world)
        spy = Spy()
        server.middleware.append(spy)
        async with mcp.Client(server, mode=mode) as client:
            results = []
            for t, a in CALLS:
                try:
                    results.append(to_wire(await client.call_tool(t, a)))
                except RuntimeError as exc:  # an answer that breaks the tool's outputSchema
                    results.append(str(exc))
        seen[way] = (results, encode_events(world.events), spy.methods.count("tools/call"))
    assert seen["fast"][0] == seen["sdk"][0]
    assert seen["fast"][1] == seen["sdk"][1]  # the same log, byte for byte
    assert (seen["fast"][2], seen["sdk"][2]) == (0, len(CALLS))  # the fast path answered


class Passed(Exception):
    pass


async def refuse(ctx):
    raise Passed


def context(params, *, version=LEGACY, initialized=True, method="tools/call"):
    return SimpleNamespace(
        method=method,
        params=params,
        protocol_version=version,
        request=None,
        session=SimpleNamespace(client_params=object() if initialized else None),
    )


@pytest.mark.parametrize(
    "ctx",
    [
        pytest.param(context({"arguments": {}}), id="no-name"),
        pytest.param(context({"name": "get_order", "arguments": [1]}), id="arguments-list"),
        pytest.param(context({"name": 3}), id="name-not-a-string"),
        pytest.param(context(None), id="no-params"),
        pytest.param(context({"name": "get_order"}, version=MODERN), id="modern-without-meta"),
        pytest.param(context({"name": "get_order"}, initialized=False), id="before-initialize"),
        pytest.param(context({"name": "x"}, method="tools/list"), id="another-method"),
    ],
)
async def test_what_the_sdk_would_refuse_goes_the_sdks_way(ctx):
    fast = FastToolCalls(build_server(faultbench.load_world(SHOP)), None)
    with pytest.raises(Passed):
        await fast(ctx, refuse)


async def test_with_tracing_on_every_call_goes_the_sdks_way(monkeypatch):
    from faultbench.serve import _sdk

    server = build_server(faultbench.load_world(SHOP, faults=False))
    fast = next(m for m in server.middleware if isinstance(m, FastToolCalls))
    ctx = context({"name": "get_order", "arguments": {"id": "1"}})
    answer = await fast(ctx, refuse)
    assert answer["isError"] is False, answer
    monkeypatch.setattr(_sdk, "_tracing", lambda: True)
    with pytest.raises(Passed):
        await fast(ctx, refuse)
