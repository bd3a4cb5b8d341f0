"""What each framework's agent sees when the tool list changes during a run (tool-surface
faults, docs/FAULTS.md "What the frameworks see"). A scripted model records the tools the
framework offers it on every turn: the change is seen when the framework lists the tools
again, which depends on the framework, its cache and the MCP protocol era it speaks."""

from __future__ import annotations

import itertools

import pytest

import faultbench
from faultbench.serve import build_server

from ..mcp_client import MCP_MAJOR

pytestmark = pytest.mark.anyio

WORLD = """\
name: surface
seed: 3
services:
  orders:
    records:
      order: {status: enum[placed, shipped], total: float}
    seed: {order: 3}
    operations:
      get_order: {kind: get, record: order}
      list_orders: {kind: list, record: order}
faults:
  orders.get_order:
    script:
      1: tool_added
      2: {kind: rug_pull, payload: PULLED}
"""

#: what the model is offered on each of its three turns, when the framework lists again
SEES_CHANGES = [
    ["get_order", "list_orders"],
    ["get_order", "get_order_v2", "list_orders"],
    ["get_order", "get_order_v2", "list_orders", "PULLED"],
]
#: ... and when it keeps the list it read first
KEEPS_FIRST = [["get_order", "list_orders"]] * 3


@pytest.fixture
def world_file(tmp_path):
    path = tmp_path / "surface.yaml"
    path.write_text(WORLD)
    return path


@pytest.fixture(params=["world", "in_process", "stdio", "http"])
def reach(request, world_file, http_server):
    import sys

    if request.param == "world":  # a bare World: no server at all
        return request.param, faultbench.load_world(world_file)
    if request.param == "in_process":
        return request.param, build_server(faultbench.load_world(world_file))
    if request.param == "stdio":
        return request.param, [sys.executable, "-m", "faultbench.cli", "serve", str(world_file)]
    return request.param, http_server(world=world_file).url


def offered(turns: list[dict[str, str]]) -> list[list[str]]:
    return [
        sorted(tools) + (["PULLED"] if "PULLED" in tools.get("get_order", "") else [])
        for tools in turns
    ]


def _pydantic_ai_model(turns: list[dict[str, str]]):
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    def respond(messages, info):
        turns.append({t.name: t.description or "" for t in info.function_tools})
        n = len(turns)
        if n <= 2:
            return ModelResponse(
                parts=[ToolCallPart("get_order", {"id": str(n)}, tool_call_id=f"c{n}")]
            )
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond)


def _agents_sdk_model(turns: list[dict[str, str]]):
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    def respond(call):
        turns.append({t.name: getattr(t, "description", "") or "" for t in call.tools})
        n = len(turns)
        if n <= 2:
            return [function_call("get_order", {"id": str(n)}, call_id=f"c{n}")]
        return [assistant_message("done")]

    return ScriptedModel([ModelStep.respond(respond) for _ in range(5)])


@pytest.mark.skipif(MCP_MAJOR < 2, reason="Pydantic AI needs mcp 2.x (its own environment)")
async def test_pydantic_ai_keeps_its_cached_list(reach):
    """fastmcp 4 speaks protocol 2026-07-28, where a change notification reaches only a
    `subscriptions/listen` stream, and it opens none: the cached list stays for the run."""
    from faultbench.integrations.pydantic_ai import run_agent

    _how, target = reach
    turns: list[dict[str, str]] = []
    run = await run_agent(_pydantic_ai_model(turns), "go", mcp=target)
    assert run.ok, run.error
    assert run.trace.summary() == "get_order!tool_added → get_order!rug_pull"
    assert offered(turns) == KEEPS_FIRST


@pytest.mark.skipif(MCP_MAJOR < 2, reason="Pydantic AI needs mcp 2.x (its own environment)")
@pytest.mark.parametrize("serve", [True, False], ids=["server", "world"])
async def test_pydantic_ai_without_the_cache_lists_every_step(world_file, serve):
    from pydantic_ai import Agent

    from faultbench.integrations.pydantic_ai import toolset

    turns: list[dict[str, str]] = []
    world = faultbench.load_world(world_file)
    where = build_server(world) if serve else world
    agent = Agent(_pydantic_ai_model(turns), toolsets=[toolset(where, cache_tools=False)])
    result = await agent.run("go")
    assert result.output == "done"
    assert offered(turns) == SEES_CHANGES


async def test_the_agents_sdk_lists_every_turn(reach):
    """The Runner lists each server's tools every turn. In-process there is no cache; over
    stdio and HTTP `mcp_server` caches the list and drops it on `tools/list_changed`, which
    arrives in the 2025 handshake protocol (mcp 1.x) but not at 2026-07-28, the protocol the
    SDK's client speaks on mcp 2.x, where it opens no `subscriptions/listen` stream."""
    from faultbench.integrations.openai_agents import run_agent

    how, target = reach
    turns: list[dict[str, str]] = []
    run = await run_agent(_agents_sdk_model(turns), "go", mcp=target)
    assert run.ok, run.error
    assert run.trace.summary() == "get_order!tool_added → get_order!rug_pull"
    expected = SEES_CHANGES if how in ("world", "in_process") or MCP_MAJOR < 2 else KEEPS_FIRST
    assert offered(turns) == expected


def _agents_sdk_recorder(offered_tools: list[list]):
    """A scripted Agents SDK model that keeps the tool objects offered on each turn."""
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    def respond(call):
        offered_tools.append(list(call.tools))
        n = len(offered_tools)
        if n <= 2:
            return [function_call("get_order", {"id": str(n)}, call_id=f"c{n}")]
        return [assistant_message("done")]

    return ScriptedModel([ModelStep.respond(respond) for _ in range(5)])


def _same_objects(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _definitions(turns: list[list]) -> list[list[tuple]]:
    return [
        [(t.name, t.description, t.params_json_schema, t.strict_json_schema) for t in tools]
        for tools in turns
    ]


@pytest.mark.parametrize("surface", ["steady", "changing"])
async def test_the_agents_sdk_run_converts_each_list_once(world_file, surface):
    """`run_agent`'s agent converts a tool list to function tools once and offers the same
    objects while the list holds; a tool-surface fault gives a new list, converted again. On
    every turn the model is offered what a plain SDK `Agent` (which converts on every turn)
    offers it over the same server."""
    from agents import Agent, RunConfig, Runner

    from faultbench.integrations.openai_agents import WorldDirectServer, run_agent

    def world():
        w = faultbench.load_world(world_file)
        if surface == "steady":
            w.set_faults({})
        return w

    cached: list[list] = []
    run = await run_agent(_agents_sdk_recorder(cached), "go", mcp=world())
    assert run.ok, run.error

    plain: list[list] = []
    async with WorldDirectServer(build_server(world())) as server:
        agent = Agent(name="agent", model=_agents_sdk_recorder(plain), mcp_servers=[server])
        await Runner.run(agent, "go", run_config=RunConfig(tracing_disabled=True))

    assert len(cached) == len(plain) == 3
    assert _definitions(cached) == _definitions(plain)
    same_objects = [_same_objects(t0, t1) for t0, t1 in itertools.pairwise(cached)]
    fresh_objects = [_same_objects(t0, t1) for t0, t1 in itertools.pairwise(plain)]
    assert fresh_objects == [False, False]  # the SDK's own agent converts on every turn
    if surface == "steady":
        assert same_objects == [True, True]
        assert _definitions(cached)[0] == _definitions(cached)[2]
    else:
        assert same_objects == [False, False]
        assert offered([{t[0]: t[1] or "" for t in d} for d in _definitions(cached)]) == (
            SEES_CHANGES
        )
