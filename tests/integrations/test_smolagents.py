"""smolagents (`ToolCallingAgent`) through mcpadapt, smolagents' MCP client: the tools it
builds, how a fault reaches the agent (with faultbench's error marker, and without it), and
the world afterwards. Runs in the mcp 1.x environment (mcpadapt imports 1.x-only names).
Transports: tests/integrations/test_transports.py."""

from __future__ import annotations

import pytest

import faultbench
from faultbench.integrations import Reply, ToolCall
from faultbench.integrations.smolagents import load_tools, run_agent, scripted_model
from faultbench.serve import build_server, serve_in_thread

from .conftest import SHOP

pytestmark = pytest.mark.anyio


@pytest.fixture
def timing_out():
    """The shop whose first refund times out after it was written."""
    world = faultbench.load_world(SHOP)
    world.set_faults({"payments.issue_refund": {"script": {1: "timeout"}}})
    return world


def refund_once(seen):
    if not seen:
        return ToolCall("issue_refund", {"order_id": "1", "amount": 5.0})
    return Reply(f"refund answered ok={seen[-1].ok}: {seen[-1].text[:40]}")


def test_the_tools_carry_the_worlds_schemas_and_optional_arguments_stay_optional(shop):
    with load_tools(build_server(shop)) as tools:
        by_name = {t.name: t for t in tools}
    assert sorted(by_name) == sorted(t.name for t in shop.tools)
    schema = next(t.input_schema for t in shop.tools if t.name == "issue_refund")
    inputs = by_name["issue_refund"].inputs
    assert set(inputs) == set(schema["properties"])
    assert inputs["amount"]["type"] == "number"
    # required arguments are required; an optional one is `nullable`, smolagents' "optional"
    assert not inputs["order_id"].get("nullable")
    assert inputs["currency"]["nullable"] is True
    assert inputs["currency"]["type"] == "string"  # its `anyOf` [string, null] unwrapped


def test_mcpadapts_own_tools_make_every_argument_required(shop):
    # What faultbench's adapter mends: mcpadapt drops the schema's `required` list.
    with serve_in_thread(shop) as url, load_tools(url, error_marker=False) as tools:
        refund = next(t for t in tools if t.name == "issue_refund")
    assert not refund.inputs["currency"].get("nullable")


async def test_a_fault_reaches_the_agent_as_a_failed_tool_step(timing_out):
    shop = timing_out
    run = await run_agent(scripted_model(refund_once), "refund", mcp=build_server(shop))
    assert run.ok, run.error
    errors = [s["error"] for s in run.result.steps if s.get("error")]
    assert errors[0]["type"] == "AgentToolExecutionError"
    assert "MCPToolError: 504 Gateway Timeout: payments.issue_refund" in errors[0]["message"]
    assert run.output == "refund answered ok=False: 504 Gateway Timeout: payments.issue_refu"
    assert [r.amount for r in shop.refunds.where(order_id="1")] == [5.0]
    assert run.trace.summary() == "issue_refund!timeout"


async def test_without_the_marker_an_error_is_an_observation_like_any_answer(timing_out):
    shop = timing_out

    def refund_in_euros(seen):  # mcpadapt's own tools require every argument
        if not seen:
            return ToolCall("issue_refund", {"order_id": "1", "amount": 5.0, "currency": "EUR"})
        return refund_once(seen)

    run = await run_agent(
        scripted_model(refund_in_euros), "refund", mcp=build_server(shop), error_marker=False
    )
    assert run.ok, run.error
    assert not [s for s in run.result.steps if s.get("error")]
    observed = [s["observations"] for s in run.result.steps if s.get("observations")]
    assert observed[0].startswith("504 Gateway Timeout")
    # the scripted policy only knows it failed because the text is not JSON
    assert run.output.startswith("refund answered ok=False")


async def test_running_out_of_steps_is_a_failed_run_not_an_exception(shop):
    forever = scripted_model(lambda seen: ToolCall("get_order", {"id": "1"}))
    run = await run_agent(forever, "loop", mcp=build_server(shop), max_steps=3)
    assert not run.ok
    assert type(run.error).__name__ == "AgentMaxStepsError"
    assert run.trace.summary() == "get_order → get_order → get_order"


# --- model faults (the kinds under every framework: tests/integrations/test_model_faults.py) --


def looks_up_order(seen):
    if not seen:
        return ToolCall("get_order", {"id": "1"})
    return Reply(f"ok={seen[-1].ok}")


def test_your_own_agent_wraps_its_model():
    from smolagents import ToolCallingAgent
    from smolagents.memory import ActionStep
    from smolagents.monitoring import LogLevel
    from smolagents.utils import AgentGenerationError, AgentParsingError

    from faultbench.integrations.smolagents import FaultyModel, ModelHTTPError

    world = faultbench.load_world(SHOP, seed=3)
    world.set_faults({"model": {"script": {1: "empty_completion", 3: "http_429"}}})
    model = FaultyModel(scripted_model(looks_up_order), world)
    with load_tools(build_server(world)) as tools:
        agent = ToolCallingAgent(tools=tools, model=model, verbosity_level=LogLevel.OFF)
        with pytest.raises(AgentGenerationError) as raised:
            agent.run("go")
    # an empty answer is an error step the model reads; a 429 ends the run
    steps = [s for s in agent.memory.steps if isinstance(s, ActionStep)]
    assert isinstance(steps[0].error, AgentParsingError)
    assert isinstance(raised.value.__cause__, ModelHTTPError)
    assert raised.value.__cause__.retry_after == 1.0
    assert [m.kind for m in world.trace.model_calls] == ["empty_completion", None, "http_429"]
    assert [(u.k, u.model) for u in world.trace.model_usage] == [
        (1, "faultbench-scripted"),
        (2, "faultbench-scripted"),
    ]
