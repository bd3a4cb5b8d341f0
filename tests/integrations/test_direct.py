"""The direct in-process paths against the MCP one: the agent cannot tell them apart.

`run_agent(..., mcp=build_server(world))` calls the server's tool handler without an MCP
session (`transport="direct"`, the default); `run_agent(..., mcp=world)` calls the same
handler with no server at all (`WorldCalls`: no MCP SDK); `transport="mcp"` opens a framework
MCP session on a server. For each framework, the same scripted calls over the three paths, on the same
world (same seed and run) under many fault kinds: every model turn must see the same tool
definitions (name, description, JSON Schema, MCP annotations) and the same messages (tool
results, tool errors, retry prompts), the runs must end the same, and the worlds' event logs
must be equal byte for byte.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import faultbench
from faultbench.integrations import Reply, ToolCall
from faultbench.kernel import encode_events
from faultbench.serve import WorldCalls, build_server

from ..test_webhooks import WORLD as HOOKS_WORLD
from ..test_webhooks import receiver  # noqa: F401 (a fixture)
from .conftest import FRAMEWORKS, SHOP
from .test_transports import AUTH_DESK, solve_ticket

pytestmark = pytest.mark.anyio

#: every tool-level fault kind the shop's operations can meet, often
FAULTS = {
    "default": {
        "latency_ms": [10, 900],
        "errors": {
            "http_500": 0.06,
            "http_503": 0.06,
            "http_429": 0.06,
            "timeout": 0.06,
            "timeout_before_commit": 0.06,
            "malformed_json": 0.08,
            "empty_result": 0.06,
            "not_found": 0.06,
            "duplicate": 0.06,
        },
    },
    "orders.get_order": {
        "errors": {"stale_read": {"p": 0.2, "lag_s": 300}, "malformed_json": 0, "empty_result": 0}
    },
    # a CRUD tool's malformed or empty answer breaks its outputSchema, and the SDK's client
    # session raises for it (so would the direct paths: `WorldCalls.check_output`), which
    # ends a framework's run: those two kinds stay on the custom tools, which declare none
    **{
        key: {
            "latency_ms": [10, 900],
            "errors": {
                "http_500": 0.06,
                "http_503": 0.06,
                "http_429": 0.06,
                "timeout": 0.06,
                "timeout_before_commit": 0.06,
                "not_found": 0.06,
                "malformed_json": 0,
                "empty_result": 0,
            },
        }
        for key in (
            "orders.list_orders",
            "payments.list_refunds",
            "customers.find_customers",
            "customers.get_customer",
            "returns.get_return",
        )
    },
}

#: calls made whatever the answers: reads, lists (a list result), writes, custom handlers, a
#: missing record, bad arguments (a validation error), last an unknown tool (no world call:
#: Pydantic AI answers a retry prompt, the Agents SDK ends the run with ModelBehaviorError)
SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("get_order", {"id": "1"}),
    ("list_orders", {"status": "placed"}),
    ("create_return", {"order_id": "1", "reason": "damaged"}),
    ("issue_refund", {"order_id": "1", "amount": 25.0}),
    ("list_refunds", {"order_id": "1"}),
    ("get_order", {"id": "nope"}),
    ("get_customer", {"id": "2"}),
    ("find_customers", {"city": "nowhere"}),
    ("cancel_order", {"order_id": "2"}),
    ("get_order", {"id": 7}),
    ("issue_refund", {"order_id": "1", "amount": 25.0}),
    ("get_return", {"id": "R-1"}),
    ("no_such_tool", {}),
]

RUNS = range(8)

#: how `run_agent` reaches the world: "world" (a bare `World`: `WorldCalls`, no server),
#: "direct" (a `WorldServer` called without a session), "mcp" (a session on a `WorldServer`)
PATHS_IN_PROCESS = ("mcp", "direct", "world")


def _mcp(world: faultbench.World, path: str) -> dict[str, Any]:
    """`run_agent`'s `mcp=` and `transport=` for `path`."""
    if path == "world":
        return {"mcp": world}
    return {"mcp": build_server(world), "transport": path}


def _world(run: int) -> faultbench.World:
    world = faultbench.load_world(SHOP, run=run)
    world.set_faults(FAULTS)
    return world


def _scrub(value: Any) -> Any:
    """Messages as data, without what differs between any two runs (wall-clock times, run
    ids): the rest must be equal."""
    if isinstance(value, dict):
        return {
            k: _scrub(v)
            for k, v in value.items()
            if k not in ("timestamp", "run_id", "conversation_id", "provider_response_id")
        }
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


# --- Pydantic AI -------------------------------------------------------------------------------


async def _pydantic_ai(path: str, run: int) -> tuple[list[Any], Any, bytes]:
    from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from faultbench.integrations.pydantic_ai import run_agent

    seen: list[Any] = []
    ids = itertools.count(1)

    async def respond(messages: list[Any], info: Any) -> ModelResponse:
        dumped = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
        seen.append((_scrub(dumped), list(info.function_tools)))
        if len(seen) > len(SCRIPT):
            return ModelResponse(parts=[TextPart("done")])
        tool, args = SCRIPT[len(seen) - 1]
        return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id=f"c{next(ids)}")])

    world = _world(run)
    result = await run_agent(FunctionModel(respond), "go", **_mcp(world, path), retries=20)
    ending = (result.ok, result.output, type(result.error).__name__, str(result.error))
    return seen, ending, encode_events(world.events)


# --- the Agents SDK ----------------------------------------------------------------------------


async def _openai_agents(path: str, run: int) -> tuple[list[Any], Any, bytes]:
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    from faultbench.integrations.openai_agents import run_agent

    steps = [
        ModelStep.respond(lambda call, t=tool, a=args, i=i: [function_call(t, a, call_id=f"c{i}")])
        for i, (tool, args) in enumerate(SCRIPT)
    ]
    steps.append(ModelStep.respond(lambda call: [assistant_message("done")]))
    model = ScriptedModel(steps)
    world = _world(run)
    result = await run_agent(model, "go", **_mcp(world, path), max_turns=len(steps) + 1)
    seen = []
    for call in model.calls:
        items = [i if isinstance(i, dict) else i.model_dump(mode="json") for i in call.input]
        tools = [
            (t.name, t.description, t.params_json_schema, t.strict_json_schema) for t in call.tools
        ]
        seen.append((_scrub(items), tools))
    ending = (result.ok, result.output, type(result.error).__name__, str(result.error))
    return seen, ending, encode_events(world.events)


PATHS = {"pydantic_ai": _pydantic_ai, "openai_agents": _openai_agents}


@pytest.mark.parametrize("framework", [f for f in FRAMEWORKS if f in PATHS])
async def test_the_direct_path_is_indistinguishable_from_an_mcp_session(framework):
    path = PATHS[framework]
    kinds: set[str] = set()
    for run in RUNS:
        mcp_seen, mcp_end, mcp_log = await path("mcp", run)
        for how in PATHS_IN_PROCESS[1:]:
            seen, end, log = await path(how, run)
            assert len(seen) == len(mcp_seen) >= len(SCRIPT)
            for turn, (over_mcp, direct) in enumerate(zip(mcp_seen, seen, strict=True)):
                where = f"{how}, run {run}, turn {turn}"
                assert direct[1] == over_mcp[1], f"{where}: tool definitions differ"
                assert direct[0] == over_mcp[0], f"{where}: messages differ"
            assert end == mcp_end, how
            assert log == mcp_log, how
        world = faultbench.replay(SHOP, faultbench.decode_events(mcp_log))
        kinds |= {c.fault for c in world.trace if c.fault}
    # the runs met the faults they were meant to compare under
    assert {"malformed_json", "timeout", "http_500", "not_found", "empty_result"} <= kinds


@pytest.mark.parametrize("framework", [f for f in FRAMEWORKS if f in PATHS])
async def test_a_bad_transport_is_a_clear_error(framework, shop):
    import importlib

    module = importlib.import_module(f"faultbench.integrations.{framework}")
    with pytest.raises(ValueError, match=r'transport="direct".*Instead, received: \'grpc\''):
        await module.run_agent(
            module.scripted_model(lambda seen: ToolCall("get_order", {"id": "1"})),
            "go",
            mcp=build_server(shop),
            transport="grpc",
        )


@pytest.mark.skipif("openai_agents" not in FRAMEWORKS, reason="the Agents SDK is not installed")
async def test_the_agents_sdk_servers_answer_the_same_models():
    """What the Agents SDK hands on (a `tool_custom_data_extractor` reads the whole result,
    `_meta` included): `WorldDirectServer` answers the models `WorldMCPServer`'s session does."""
    from faultbench.integrations.openai_agents import WorldDirectServer, WorldMCPServer

    for run in range(4):
        answers = []
        for cls in (WorldMCPServer, WorldDirectServer):
            server = cls(build_server(_world(run)))
            async with server:
                tools = [t.model_dump(mode="json") for t in await server.list_tools()]
                results = [
                    (await server.call_tool(tool, args)).model_dump(mode="json")
                    for tool, args in SCRIPT
                ]
            answers.append((tools, results))
        assert answers[0] == answers[1]


@pytest.mark.parametrize("framework", [f for f in FRAMEWORKS if f in PATHS])
async def test_a_principal_acts_the_same_with_or_without_a_server(framework):
    """`WorldCalls(world, principal=)` calls as that principal, directly or (a `WorldServer`
    made for it, with the token already issued) over an MCP session, as a `WorldServer` with
    the same principal does; a bare world has no principal and gets the API's 401."""
    import importlib

    fw = importlib.import_module(f"faultbench.integrations.{framework}")
    logs = []
    for how, transport in (("calls", "direct"), ("calls", "mcp"), ("server", "mcp")):
        world = faultbench.load_world(AUTH_DESK, faults=False)
        where = (WorldCalls if how == "calls" else build_server)(world, principal="support_agent")
        run = await fw.run_agent(
            fw.scripted_model(solve_ticket), "go", mcp=where, transport=transport
        )
        assert run.ok, (how, transport, run.error)
        assert run.trace.count("update_ticket", ok=True) == 1, (how, transport)
        logs.append(encode_events(world.events))
    assert logs[0] == logs[1] == logs[2]
    world = faultbench.load_world(AUTH_DESK, faults=False)
    with pytest.warns(UserWarning, match=r"auth: block, and a bare World calls as nobody") as w:
        bare = await fw.run_agent(fw.scripted_model(solve_ticket), "go", mcp=world)
    assert w[0].filename == __file__  # the warning points at the caller's line
    assert "401 Unauthorized" in bare.output
    assert world.tickets.get("T-1").status == "open"


@pytest.mark.parametrize("framework", [f for f in FRAMEWORKS if f in PATHS])
async def test_hooks_and_webhooks_run_on_every_path(framework, receiver):  # noqa: F811
    """A `WorldCalls`' after-call hooks and webhook URL hold whether it is called directly or
    through the `WorldServer` made for it (transport="mcp"), and as a `WorldServer`'s do."""
    import importlib

    from faultbench.kernel.lowlevel import load_spec

    fw = importlib.import_module(f"faultbench.integrations.{framework}")

    def refund(seen):
        return ToolCall("issue_refund", {"amount": 5}) if len(seen) < 2 else Reply("done")

    outcomes = []
    for how, transport in (("calls", "direct"), ("calls", "mcp"), ("server", "direct")):
        world = faultbench.World.from_spec(load_spec("<hooks>", text=HOOKS_WORLD))
        make = WorldCalls if how == "calls" else build_server
        where = make(world, webhook_url=receiver.url)
        hooked: list[str] = []
        where.after_call.append(lambda w, result, hooked=hooked: hooked.append(result.call_id))
        run = await fw.run_agent(fw.scripted_model(refund), "go", mcp=where, transport=transport)
        assert run.ok, (how, transport, run.error)
        assert hooked == [c.call_id for c in run.trace], (how, transport)
        assert where.wait_webhooks(10)  # sent off the calls' path: wait for the attempts
        attempts = [
            (e.delivery, e.outcome) for e in world.events if type(e).__name__ == "WebhookAttempted"
        ]
        outcomes.append(attempts)
    assert (
        outcomes[0]
        == outcomes[1]
        == outcomes[2]
        == [
            ("dlv_1", "succeeded"),
            ("dlv_2", "succeeded"),
        ]
    )
    assert len(receiver.events()) == 6


@pytest.mark.skipif("pydantic_ai" not in FRAMEWORKS, reason="Pydantic AI is not installed")
async def test_a_toolset_gets_copies_of_the_world_schemas(shop):
    """A toolset that edits its definitions in place (a `prepare` function may) changes the
    copy it was given, as over an MCP session, and never the world's compiled tools."""
    from faultbench.integrations.pydantic_ai import WorldToolset

    before = repr(shop.tool("get_order").input_schema)
    toolset = WorldToolset(shop)
    for definition in (t.tool_def for t in (await toolset.get_tools(_Ctx())).values()):
        definition.parameters_json_schema["properties"]["injected"] = {"type": "string"}
        definition.parameters_json_schema["required"] = ["injected"]
    assert repr(shop.tool("get_order").input_schema) == before
    assert (
        "injected" not in faultbench.load_world(SHOP).tool("get_order").input_schema["properties"]
    )


class _Ctx:
    max_retries = 1


@pytest.mark.skipif("pydantic_ai" not in FRAMEWORKS, reason="Pydantic AI is not installed")
def test_a_pydantic_ai_run_on_a_world_imports_no_mcp(tmp_path):
    """The point of `mcp=world`: a process that runs Pydantic AI agents on worlds in-process
    never imports the MCP SDK (nor fastmcp, nor an HTTP server), at import or at run time."""
    import subprocess
    import sys

    script = tmp_path / "run.py"
    script.write_text(
        "import asyncio, sys\n"
        "import faultbench\n"
        "from faultbench.integrations import Reply, ToolCall\n"
        "from faultbench.integrations.pydantic_ai import run_agent, scripted_model, toolset\n"
        "def policy(seen):\n"
        "    return Reply('done') if seen else ToolCall('list_orders', {})\n"
        "async def main():\n"
        f"    world = faultbench.load_world({str(SHOP)!r}, run=3)\n"
        "    run = await run_agent(scripted_model(policy), 'go', mcp=world)\n"
        "    assert run.ok and run.trace.count('list_orders') == 1, run\n"
        "    toolset(world)\n"
        "asyncio.run(main())\n"
        "loaded = sorted(m for m in sys.modules\n"
        "    if m.split('.')[0] in ('mcp', 'mcp_types', 'fastmcp', 'starlette', 'hypercorn'))\n"
        "print(loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.skipif("pydantic_ai" not in FRAMEWORKS, reason="Pydantic AI is not installed")
def test_a_faultbench_test_handing_its_agent_the_world_imports_no_mcp(tmp_path):
    """The same in a pytest process: the plugin, the `world` fixture and 3 runs of a Pydantic AI
    agent on it import no MCP SDK, and taking `mcp_server` instead does (the check can fail)."""
    import shutil
    import subprocess
    import sys

    shutil.copy(SHOP, tmp_path / "shop.yaml")
    shutil.copy(SHOP.parent.parent / "shop_rules.py", tmp_path / "shop_rules.py")
    (tmp_path / "conftest.py").write_text(
        "import sys\n"
        "def pytest_sessionfinish(session):\n"
        "    loaded = sorted({m.split('.')[0] for m in sys.modules} &\n"
        "        {'mcp', 'mcp_types', 'fastmcp', 'starlette', 'hypercorn'})\n"
        "    with open('loaded.txt', 'w') as f:\n"
        "        f.write(' '.join(loaded))\n"
    )
    test = (
        "import pytest\n"
        "from faultbench.integrations import Reply, ToolCall\n"
        "from faultbench.integrations.pydantic_ai import run_agent, scripted_model\n"
        "def policy(seen):\n"
        "    return Reply('done') if seen else ToolCall('get_order', {'id': '1'})\n"
        "@pytest.mark.world('shop.yaml')\n"
        "@pytest.mark.faults\n"
        "@pytest.mark.runs(3)\n"
        "@pytest.mark.min_pass_rate(0)\n"
        "async def test_agent(world, FIXTURE):\n"
        "    run = await run_agent(scripted_model(policy), 'go', mcp=FIXTURE)\n"
        "    assert run.trace.count('get_order') == 1\n"
    )
    loaded = {}
    for fixture in ("world", "mcp_server"):
        (tmp_path / "test_agent.py").write_text(
            test.replace(
                "world, FIXTURE", "world" if fixture == "world" else "world, mcp_server"
            ).replace("mcp=FIXTURE", f"mcp={fixture}")
        )
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_agent.py"],
            cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "3 passed" in done.stdout
        loaded[fixture] = (tmp_path / "loaded.txt").read_text()
    assert loaded["world"] == ""
    assert "mcp" in loaded["mcp_server"].split()
