"""Verdicts that never lie (issue 39): no gate passes on runs whose agent never ran, set-up
problems apart from agent failures, a gate its runs cannot decide, and a marker from another
plugin's vocabulary (`repeat`) that would silently drop the runs."""

from __future__ import annotations

import pytest

pytest.importorskip("pydantic_ai")

CAREFUL = """
import pytest

from faultbench.integrations import Reply, ToolCall
from faultbench.integrations.pydantic_ai import run_agent, scripted_model

PROMPT = "Order 1 arrived broken. Refund it, exactly once."


def careful(seen):
    if not seen:
        return ToolCall("get_order", {"id": "1"})
    if seen[-1].tool == "get_order":
        return ToolCall("issue_refund", {"order_id": "1", "amount": seen[-1].value["total"]})
    return Reply("Refunded.")
"""


def test_a_sync_test_that_never_awaits_run_agent_fails_its_gate_with_the_fix(fb):
    fb.makepyfile(
        test_sync=CAREFUL
        + """
@pytest.mark.world("world.yaml")
@pytest.mark.runs(20)
@pytest.mark.min_pass_rate(0.95)
def test_refund(world):
    run = run_agent(scripted_model(careful), PROMPT, mcp=world)
    assert run is not None
"""
    )
    result = fb.runpytest("-W", "error::RuntimeWarning")
    assert result.ret == 1
    out = result.stdout.str()
    assert "-> PASS" not in out
    result.stdout.fnmatch_lines(
        [
            "test_sync.py::test_refund: *-> FAIL*",
            "    run0 (set-up problem): (no calls)",
            "        Set-up problem, not an agent failure: pydantic_ai.run_agent(...) was called "
            "once and never awaited, so the agent never ran*Make the test `async def` and "
            "await the call: `run = await run_agent(...)`",
        ]
    )
    # the whole group stops on it: every later run would hit the same
    assert "19 skipped, 1 error, 1 gate failed" in out
    assert "was never awaited" not in out  # Python's warning is replaced by the message


def test_reading_run_ok_of_a_coroutine_is_a_set_up_problem_not_a_tolerated_failure(fb):
    fb.makepyfile(
        test_sync=CAREFUL
        + """
@pytest.mark.world("world.yaml")
@pytest.mark.runs(20)
@pytest.mark.min_pass_rate(0.95)
def test_refund(world):
    run = run_agent(scripted_model(careful), PROMPT, mcp=world)
    assert run.ok
"""
    )
    result = fb.runpytest()
    assert result.ret == 1
    out = result.stdout.str()
    assert "(tolerated)" not in out
    assert "TOLERATED" not in out
    result.stdout.fnmatch_lines(
        ["    run0 (set-up problem): (no calls)", "*never awaited*`async def`*await*"]
    )


def test_the_same_test_awaited_passes(fb):
    fb.makepyfile(
        test_async=CAREFUL
        + """
@pytest.mark.world("world.yaml")
@pytest.mark.runs(20)
@pytest.mark.min_pass_rate(0.95)
async def test_refund(world):
    run = await run_agent(scripted_model(careful), PROMPT, mcp=world)
    assert run.ok
"""
    )
    result = fb.runpytest()
    assert result.ret == 0
    result.stdout.fnmatch_lines(["test_async.py::test_refund: 19/19 passed*-> PASS*"])


def test_an_error_before_the_agents_first_call_is_a_set_up_problem(fb):
    fb.makepyfile(
        test_empty="""
import pytest

@pytest.mark.world("world.yaml")
@pytest.mark.runs(20)
@pytest.mark.min_pass_rate(0.5)
def test_refund(world):
    order = world.orders.where(status="nonexistent")[0]
    world.call("issue_refund", {"order_id": order.id, "amount": 1.0})
"""
    )
    result = fb.runpytest()
    assert result.ret == 1
    out = result.stdout.str()
    assert "(tolerated)" not in out
    result.stdout.fnmatch_lines(
        [
            "    run0 (set-up problem): (no calls)",
            "        Set-up problem, not an agent failure: the test raised before the agent's "
            "first call (the world saw no call): IndexError*",
        ]
    )


def test_an_error_after_the_agents_first_call_stays_an_agent_failure(fb):
    fb.makepyfile(
        test_late="""
import pytest

@pytest.mark.world("world.yaml")
@pytest.mark.runs(4)
@pytest.mark.min_pass_rate(0.5)
def test_refund(world):
    world.call("get_order", {"id": "1"})
    {}["missing"]
"""
    )
    result = fb.runpytest()
    result.stdout.fnmatch_lines(["    run0 (tolerated): get_order", "*KeyError*"])
    assert "set-up problem" not in result.stdout.str()


@pytest.mark.parametrize(("runs", "rate", "least"), [(1, 0.95, 20), (10, 0.95, 20), (3, 0.9, 10)])
def test_a_gate_over_fewer_runs_than_its_rate_can_decide_is_an_error(fb, runs, rate, least):
    fb.makepyfile(
        test_few=f"""
import pytest

@pytest.mark.world("world.yaml")
@pytest.mark.runs({runs})
@pytest.mark.min_pass_rate({rate})
def test_refund(world):
    pass
"""
    )
    result = fb.runpytest()
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        [
            f"*test_few.py::test_refund: @pytest.mark.min_pass_rate({rate:g}) over {runs} "
            f"run{'s' if runs > 1 else ''}*at least {least} runs*@pytest.mark.runs({least})*"
        ]
    )
    assert "-> PASS" not in result.stdout.str()


def test_the_markers_runs_are_checked_not_the_command_lines(fb):
    fb.makepyfile(
        test_few="""
import pytest

@pytest.mark.world("world.yaml")
@pytest.mark.runs(20)
@pytest.mark.min_pass_rate(0.95)
def test_refund(world):
    pass
"""
    )
    fb.runpytest().assert_outcomes(passed=19, skipped=1)  # decided after 19
    # the command line's --runs is the user's choice of the moment: the gate still runs
    fb.runpytest("--runs", "5").assert_outcomes(passed=5)


@pytest.mark.parametrize("mark", ["repeat(20)", "count(20)", "flaky(reruns=3)", "iterations(5)"])
def test_another_plugins_repeat_marker_beside_faultbenchs_is_an_error_naming_runs(fb, mark):
    fb.makepyfile(
        test_repeat=f"""
import pytest

@pytest.mark.world("world.yaml")
@pytest.mark.{mark}
@pytest.mark.min_pass_rate(0)
def test_refund(world):
    pass
"""
    )
    result = fb.runpytest()
    assert result.ret != 0
    name = mark.split("(")[0]
    result.stdout.fnmatch_lines(
        [f"*test_repeat.py::test_refund: unknown marker @pytest.mark.{name}*@pytest.mark.runs(n)*"]
    )


def test_a_marker_a_plugin_registered_is_left_alone(fb):
    fb.makeconftest(
        """
def pytest_configure(config):
    config.addinivalue_line("markers", "repeat(n): my own plugin's")
"""
    )
    fb.makepyfile(
        test_repeat="""
import pytest

@pytest.mark.world("world.yaml")
@pytest.mark.repeat(20)
def test_refund(world):
    pass
"""
    )
    fb.runpytest().assert_outcomes(passed=1)


def test_a_world_files_faults_left_off_are_said_on_the_gate_line(fb):
    fb.makepyfile(
        test_off="""
import pytest

@pytest.mark.world("world.yaml")
@pytest.mark.runs(2)
def test_without_marker(world):
    world.call("get_order", {"id": "1"})

@pytest.mark.world("world.yaml")
@pytest.mark.faults()
@pytest.mark.runs(2)
def test_with_marker(world):
    world.call("get_order", {"id": "1"})
"""
    )
    result = fb.runpytest()
    result.stdout.fnmatch_lines(
        [
            "test_off.py::test_without_marker: 2/2 passed (100%) *-> PASS",
            "    faults: off (world.yaml has 2 rules; add @pytest.mark.faults())",
        ]
    )
    lines = result.stdout.lines
    at = next(i for i, line in enumerate(lines) if "::test_with_marker:" in line)
    assert "faults: off" not in lines[at + 1]


def test_a_run_the_framework_ended_on_its_retry_budget_says_so(fb):
    fb.makepyfile(
        test_budget=CAREFUL
        + """
def persistent(seen):
    if not seen:
        return ToolCall("get_order", {"id": "1"})
    if seen[-1].tool == "issue_refund" and seen[-1].ok:
        return Reply("Refunded.")
    return ToolCall("issue_refund", {"order_id": "1", "amount": 1.0})


@pytest.mark.world("world.yaml")
@pytest.mark.faults({"payments.issue_refund": {"errors": {"http_429": 1.0}}})
@pytest.mark.runs(2)
@pytest.mark.min_pass_rate(0.5)
async def test_refund(world):
    run = await run_agent(scripted_model(persistent), PROMPT, mcp=world)
    assert run.ok, run.error
"""
    )
    result = fb.runpytest()
    result.stdout.fnmatch_lines(
        [
            "    run0 (tolerated): get_order → issue_refund!http_429 → issue_refund!http_429*",
            "        Note: the framework ended this run: Pydantic AI's retry budget for a tool "
            "(Agent(retries=1)) was spent. If the agent was right to keep trying, raise it: "
            "run_agent(..., retries=3)",
        ]
    )


def test_an_awaited_run_whose_agent_never_reached_its_model_is_a_set_up_problem(fb):
    # Pydantic AI: the agent's instructions raise before its first model request; the call
    # was awaited, so it is not "never awaited", and no world call or model call happened
    fb.makepyfile(
        test_instr=CAREFUL
        + """
from pydantic_ai.models.function import FunctionModel, ModelResponse, TextPart

PROMPTS = {}
asked = []


def model(messages, info):
    asked.append(1)
    return ModelResponse(parts=[TextPart("done")])


@pytest.mark.world("world.yaml")
@pytest.mark.runs(4)
@pytest.mark.min_pass_rate(0.5)
async def test_refund(world):
    run = await run_agent(
        FunctionModel(model), PROMPT, mcp=world, instructions=lambda: PROMPTS["refund"]
    )
    assert run.ok
"""
    )
    result = fb.runpytest()
    assert result.ret == 1
    out = result.stdout.str()
    assert "TOLERATED" not in out
    assert "(tolerated)" not in out
    result.stdout.fnmatch_lines(
        [
            "test_instr.py::test_refund: *-> FAIL*",
            "    run0 (set-up problem): (no calls)",
            "        Set-up problem, not an agent failure: pydantic_ai.run_agent(...) was awaited, "
            "but its agent never sent its model a request (0 model requests)*It ended with "
            "KeyError: 'refund'*",
        ]
    )


def test_a_function_model_that_is_reached_is_counted_and_the_gate_passes(fb):
    fb.makepyfile(
        test_reached=CAREFUL
        + """
from pydantic_ai.models.function import FunctionModel, ModelResponse, TextPart


def model(messages, info):
    return ModelResponse(parts=[TextPart("Nothing to do.")])


@pytest.mark.world("world.yaml")
@pytest.mark.runs(2)
async def test_refund(world):
    run = await run_agent(FunctionModel(model), PROMPT, mcp=world)
    assert run.ok
    assert run.output == "Nothing to do."
"""
    )
    result = fb.runpytest()
    assert result.ret == 0
    result.stdout.fnmatch_lines(["test_reached.py::test_refund: 2/2 passed*-> PASS*"])


def test_an_agents_sdk_run_that_never_reached_its_model_does_not_pass_its_gate(fb):
    pytest.importorskip("agents")
    # max_turns=0: the Runner stops before the first turn and run_agent returns a failed run;
    # the test's assert holds (no refund was made) and, uncounted, the gate would read PASS
    fb.makepyfile(
        test_turns="""
import pytest

from faultbench.integrations import Reply
from faultbench.integrations.openai_agents import run_agent, scripted_model


@pytest.mark.world("world.yaml")
@pytest.mark.runs(3)
async def test_no_double_refund(world):
    run = await run_agent(
        scripted_model(lambda seen: Reply("done")), "Refund order 1", mcp=world, max_turns=0
    )
    assert world.trace.count("issue_refund") <= 1
"""
    )
    result = fb.runpytest()
    assert result.ret == 1
    out = result.stdout.str()
    assert "-> PASS" not in out
    result.stdout.fnmatch_lines(
        [
            "test_turns.py::test_no_double_refund: *-> FAIL*",
            "    run0 (set-up problem): (no calls)",
            "        Set-up problem, not an agent failure: openai_agents.run_agent(...) was "
            "awaited, but its agent never sent its model a request*MaxTurnsExceeded*",
        ]
    )


def test_an_agents_sdk_run_that_reached_its_model_passes(fb):
    pytest.importorskip("agents")
    fb.makepyfile(
        test_turns="""
import pytest

from faultbench.integrations import Reply
from faultbench.integrations.openai_agents import run_agent, scripted_model


@pytest.mark.world("world.yaml")
@pytest.mark.runs(2)
async def test_no_double_refund(world):
    run = await run_agent(scripted_model(lambda seen: Reply("done")), "Refund order 1", mcp=world)
    assert run.ok
    assert world.trace.count("issue_refund") <= 1
"""
    )
    result = fb.runpytest()
    assert result.ret == 0
    result.stdout.fnmatch_lines(["test_turns.py::test_no_double_refund: 2/2 passed*-> PASS*"])


def test_runs_on_the_command_line_below_the_rates_least_make_the_gate_stricter(fb):
    fb.makepyfile(
        test_few="""
import pytest

@pytest.mark.world("world.yaml")
@pytest.mark.runs(20)
@pytest.mark.min_pass_rate(0.95)
def test_refund(world, faultbench_run):
    world.call("get_order", {"id": "1"})
    assert faultbench_run.index != 3
"""
    )
    # 20 runs tolerate run3's failure; 5 runs cannot: ceil(0.95 * 5) = 5 must pass
    assert fb.runpytest("--faultbench-no-early-stop").ret == 0
    result = fb.runpytest("--runs", "5", "--faultbench-no-early-stop")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["test_few.py::test_refund: 4/5 passed*min_pass_rate=95%*-> FAIL*"])
