"""The simulation API (`repeat`, `fault_inject`, `mock_tool`, personas, `scenario`): one test
per defect measured on Attest's runtime (attest-ai 0.9.0), each shown absent, sync and async.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

import faultbench
from faultbench import InjectedFault, current_world, using_world
from faultbench.testing import (
    ADVERSARIAL_USER,
    CONFUSED_USER,
    COOPERATIVE_USER,
    FRIENDLY_USER,
    AgentReply,
    LLMUser,
    MockToolRegistry,
    Persona,
    RepeatResult,
    ScenarioResult,
    current_run,
    fault_inject,
    mock_tool,
    repeat,
    scenario,
)

SHOP = "examples/shop/worlds/shop.yaml"


@pytest.fixture
def no_sleep(monkeypatch):
    """Any real sleep fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("slept in real time")

    monkeypatch.setattr(time, "sleep", refuse)
    monkeypatch.setattr(asyncio, "sleep", refuse)


# --- defect 1: latency really slept (Attest: 100 calls at 200 ms jitter took 8.2 s) --------


def test_latency_moves_the_virtual_clock_and_never_sleeps(no_sleep):
    @fault_inject(latency_jitter_ms=200, seed=42)
    def lookup(city):
        return city

    world = faultbench.load_world("examples/readme/world.yaml")
    before = world.clock.now()
    started = time.perf_counter()
    with using_world(world):
        assert [lookup(i) for i in range(100)] == list(range(100))
    assert time.perf_counter() - started < 1.0
    charged = (world.clock.now() - before).total_seconds()
    assert lookup.injected.calls == 100
    assert 5 < charged == pytest.approx(lookup.injected.virtual_s)  # ~10 s at 100 ms mean
    after = world.clock.now()
    lookup(0)  # without a current world: counted, never slept, no world's clock moved
    assert lookup.injected.calls == 101
    assert world.clock.now() == after


def test_latency_of_async_functions_never_sleeps(no_sleep):
    @fault_inject(latency_jitter_ms=200, seed=42)
    async def lookup(city):
        return city

    async def main():
        return [await lookup(i) for i in range(100)]

    world = faultbench.load_world("examples/readme/world.yaml")
    started = time.perf_counter()
    with using_world(world):
        assert asyncio.run(main()) == list(range(100))
    assert time.perf_counter() - started < 1.0
    assert len(world.trace.faults()) == 0
    assert world.events[-1].to > world.events[1].at


# --- defect 2: every repeat of a seeded scenario drew the identical faults -----------------


def _kinds(fn, n=10):
    out = []
    for _ in range(n):
        try:
            fn()
            out.append(None)
        except InjectedFault as e:
            out.append(e.kind)
    return tuple(out)


def test_each_repeat_run_draws_its_own_faults_reproducibly():
    flaky = fault_inject(error_rate=0.3, seed=42)(lambda: "ok")

    @repeat(20, seed=1)
    def batch():
        return (current_run().index, _kinds(flaky))

    first = batch()
    sequences = [v[1] for v in first.results]
    assert len(set(sequences)) > 10  # runs differ...
    assert [v[1] for v in batch().results] == sequences  # ...and the batch reproduces
    assert [r.seed for r in first.runs] == [r.seed for r in batch().runs]
    assert len({r.seed for r in first.runs}) == 20


def test_each_async_repeat_run_draws_its_own_faults_and_scenario_worlds_differ():
    @repeat(20, seed=1)
    @scenario(
        user=["refund order 1"],
        world="examples/readme/world.yaml",
        faults={"payments.issue_refund": {"errors": {"http_503": 0.5}}},
    )
    async def agent(conv):
        conv.world.orders.insert(status="delivered", total=5.0)
        result = await conv.acall("issue_refund", {"order_id": "1", "amount": 5.0})
        return "refunded" if result.ok else "sorry"

    result = asyncio.run(agent())
    replies = [r.transcript[-1].text for r in result.results]
    assert {"refunded", "sorry"} <= set(replies)
    assert [r.run for r in result.results] == list(range(20))
    assert replies == [r.transcript[-1].text for r in asyncio.run(agent()).results]


# --- defect 3: the first injected error aborted the whole repeat ----------------------------


def test_an_injected_error_fails_one_run_and_the_batch_goes_on():
    @repeat(20, seed=3)
    @fault_inject(error_rate=0.3, seed=5)
    def call():
        return True

    result = call()
    assert isinstance(result, RepeatResult)
    assert result.count == 20
    assert 0 < len(result.failures) < 20
    failure = result.failures[0]
    assert isinstance(failure.error, InjectedFault)
    assert failure.seed == result.runs[failure.index].seed
    assert result.pass_rate == result.passed / 20
    lo, hi = result.wilson_interval()
    assert lo < result.pass_rate < hi
    assert result.pass_hat_k(3) == pytest.approx(
        (result.passed * (result.passed - 1) * (result.passed - 2)) / (20 * 19 * 18)
    )
    assert str(result).startswith(f"{result.passed}/20 passed")


def test_an_async_run_that_raises_fails_alone():
    @repeat(5)
    async def flaky():
        if current_run().index % 2:
            raise ValueError("odd run")
        return "fine"

    result = asyncio.run(flaky())
    assert result.count == 5
    assert result.passed == 3
    assert [f.index for f in result.failures] == [1, 3]
    assert result.results == ["fine", None, "fine", None, "fine"]


def test_the_pass_decision_reads_bools_and_passed_attributes():
    values = iter([True, False, ScenarioResultLike(False), ScenarioResultLike(True), 0])

    @repeat(5)
    def run():
        return next(values)

    assert [r.passed for r in run().runs] == [True, False, False, True, True]
    with pytest.raises(ValueError, match="n >= 1"):
        repeat(0)


class ScenarioResultLike:
    def __init__(self, passed):
        self.passed = passed


# --- defect 4: async functions came back as un-awaited coroutines ---------------------------


def test_async_functions_are_awaited_everywhere():
    @fault_inject(latency_jitter_ms=10, seed=1)
    async def fetch(x):
        await asyncio.sleep(0)
        return x * 2

    @repeat(3)
    async def run():
        return await fetch(current_run().index)

    result = asyncio.run(run())
    assert result.results == [0, 2, 4]
    assert result.all_passed

    def sync_but_returns_a_coroutine():
        return fetch(1)

    with pytest.raises(TypeError, match="not an async function"):
        repeat(2)(sync_but_returns_a_coroutine)()


# --- defect 5: mock tools only rewrote a trace and never reached the agent -----------------


registry = MockToolRegistry(service="weather")


@registry.tool()
def forecast(city: str, days: int = 1) -> dict:
    """The weather forecast for a city."""
    return {"city": city, "days": days, "sky": "clear"}


def test_mock_tools_are_tools_the_agent_calls_and_the_trace_records():
    @scenario(user=["weather in Oslo?"], mock_tools=registry)
    def agent(conv):
        result = conv.call("forecast", {"city": "Oslo"})
        return f"{result.value['sky']} in {result.value['city']}"

    out = agent()
    assert out.passed
    assert out.transcript[-1].text == "clear in Oslo"
    assert out.turns[0].tools == ["forecast"]
    assert out.trace.tool_call_count("forecast", exactly=1) == 1
    assert [t.name for t in out.world.tools] == ["forecast"]


def test_mock_tools_get_faults_and_are_served_over_mcp():
    mcp = pytest.importorskip("mcp")
    from faultbench.serve import build_server

    world = registry.world(faults={"weather.forecast": {"script": {2: "http_502"}}})

    async def agent():
        async with mcp.Client(build_server(world)) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            ok = await client.call_tool("forecast", {"city": "Rome", "days": 2})
            bad = await client.call_tool("forecast", {"city": "Rome"})
            return listed, ok, bad

    listed, ok, bad = asyncio.run(agent())
    assert listed == ["forecast"]
    assert ok.structured_content == {"city": "Rome", "days": 2, "sky": "clear"}
    assert bad.is_error
    assert bad.content[0].text.startswith("502 Bad Gateway: the upstream")
    assert world.trace.summary() == "forecast → forecast!http_502"
    again = faultbench.replay(registry.spec(), world.events)
    assert again.state_hash() == world.state_hash()


def test_mock_tool_decorator_keeps_the_function_callable():
    @mock_tool("geo")
    def locate(place: str) -> dict:
        return {"place": place}

    assert locate("x") == {"place": "x"}
    assert locate.name == "geo"
    with MockToolRegistry([locate]) as world:
        assert current_world() is world
        assert world.call("geo", {"place": "y"}).value == {"place": "y"}
    assert current_world() is None


# --- defect 6: mocks were lost across threads ------------------------------------------------


def test_tools_and_the_current_world_reach_to_thread_workers():
    anyio = pytest.importorskip("anyio")

    def in_thread():
        return current_world().call("forecast", {"city": "Lima"}).value["city"]

    async def main():
        a = await asyncio.to_thread(in_thread)
        b = await anyio.to_thread.run_sync(in_thread)
        return a, b

    with registry as world:
        assert asyncio.run(main()) == ("Lima", "Lima")
        assert anyio.run(anyio.to_thread.run_sync, in_thread) == "Lima"
    assert world.trace.tool_call_count("forecast") == 3


# --- defect 7: only RuntimeError -------------------------------------------------------------


def test_injected_errors_are_typed_kinds_with_the_messages_of_world_faults():
    def call(kind):
        @fault_inject(errors={kind: 1.0}, name="payments.charge")
        def charge():
            return "charged"

        with pytest.raises(InjectedFault) as err:
            charge()
        return err.value

    timeout = call("timeout")
    assert timeout.kind == "timeout"
    assert not isinstance(timeout, RuntimeError)
    assert str(timeout) == "504 Gateway Timeout: payments.charge did not answer within 30s"
    assert isinstance(timeout, faultbench.ToolCallError)
    assert str(call("http_429")) == (
        "429 Too Many Requests: payments.charge is rate limited; retry after 1s"
    )
    assert call("http_503").kind == "http_503"
    with pytest.raises(ValueError, match="duplicate"):
        fault_inject(errors={"duplicate": 0.1})
    with pytest.raises(ValueError, match="either error_rate"):
        fault_inject(error_rate=0.1, errors={"http_500": 0.1})


def test_a_timeout_commits_then_fails_as_a_world_timeout_does():
    done = []

    @fault_inject(errors=["timeout"], error_rate=1.0, name="payments.refund")
    async def refund():
        done.append(1)

    @fault_inject(errors="timeout_before_commit", error_rate=1.0)
    def refund_before():
        done.append(2)

    with pytest.raises(InjectedFault):
        asyncio.run(refund())
    with pytest.raises(InjectedFault):
        refund_before()
    assert done == [1]
    assert refund.injected.faults == [(1, "timeout")]
    assert refund.injected.virtual_s == 30.0


# --- defect 8: personas were prompt holders that no code used -------------------------------


def _scripted_model(seen):
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel

    lines = iter(["My order 3 never arrived.", "Please refund it.", "<done>"])

    def user_model(messages, info):
        seen.append((info.instructions, info.model_settings, len(messages)))
        return ModelResponse(parts=[TextPart(next(lines))])

    return FunctionModel(user_model)


def test_an_llm_user_plays_the_persona_with_its_prompt_and_temperature():
    pytest.importorskip("pydantic_ai")
    seen = []

    @scenario(persona=CONFUSED_USER, user=LLMUser(_scripted_model(seen)), max_turns=5)
    def agent(conv):
        return f"noted: {conv.message}"

    result = agent()
    assert [m.text for m in result.transcript] == [
        "My order 3 never arrived.",
        "noted: My order 3 never arrived.",
        "Please refund it.",
        "noted: Please refund it.",
    ]
    assert result.ended_by == "user"
    assert result.passed
    instructions, settings, _ = seen[0]
    assert CONFUSED_USER.system_prompt in instructions
    assert settings["temperature"] == CONFUSED_USER.temperature
    assert [n for _, _, n in seen] == [1, 3, 5]  # the whole conversation, each turn


def test_an_async_llm_user_with_its_own_persona():
    pytest.importorskip("pydantic_ai")
    seen = []
    calm = Persona("calm", "You are calm and brief.", "calm", temperature=0.1)

    @scenario(user=LLMUser(_scripted_model(seen), calm, goal="get a refund"), max_turns=2)
    async def agent(conv):
        return AgentReply("ok", end=conv.turn == 1)

    result = asyncio.run(agent())
    assert len(result.turns) == 2
    assert result.ended_by == "agent"
    assert "You are calm and brief." in seen[0][0]
    assert "get a refund" in seen[0][0]
    assert seen[0][1]["temperature"] == 0.1


def test_the_built_in_personas_are_distinct_and_frozen():
    personas = [FRIENDLY_USER, ADVERSARIAL_USER, CONFUSED_USER, COOPERATIVE_USER]
    assert len({p.system_prompt for p in personas}) == 4
    assert len({p.style for p in personas}) == 4
    with pytest.raises(AttributeError):
        FRIENDLY_USER.temperature = 1.0
    with pytest.raises(ValueError, match="temperature"):
        Persona("hot", "x", "x", temperature=5)


# --- a real multi-turn conversation ----------------------------------------------------------


def shop_agent(conv):
    """A scripted support agent over the shop world's tools."""
    if conv.turn == 0:
        order = conv.call("get_order", {"id": "5"})
        return f"Order 5 is {order.value['status']}." if order.ok else order.text
    if conv.turn == 1:
        ret = conv.call("create_return", {"order_id": "5", "reason": "damaged"})
        return "I opened a return." if ret.ok else f"That failed: {ret.text}"
    conv.end()
    return "Glad to help."


def test_a_three_turn_scenario_with_a_scripted_persona_against_the_shop_world():
    run = scenario(
        persona=FRIENDLY_USER,
        user=["Where is my order 5?", "It arrived damaged, I want to send it back.", "Thanks!"],
        world=SHOP,
        max_turns=3,
        check=lambda r: r.trace.required_tools("get_order", "create_return"),
    )(shop_agent)
    result = run()
    assert result.transcript[1].text == "Order 5 is delivered."
    assert result.transcript[3].text == "I opened a return."
    assert result.world.return_requests.where(order_id="5")[0].reason == "damaged"
    assert isinstance(result, ScenarioResult)
    assert result.passed, result
    assert [t.index for t in result.turns] == [0, 1, 2]
    assert [t.tools for t in result.turns] == [["get_order"], ["create_return"], []]
    assert [m.role for m in result.transcript] == ["user", "agent"] * 3
    assert result.ended_by == "agent"
    assert result.persona is FRIENDLY_USER
    result.trace.tools_called_in_order("get_order", "create_return")
    assert "Scenario passed: 3 turn(s)" in str(result)


def test_scenarios_compose_with_repeat_and_failures_are_counted():
    @repeat(10, seed=11)
    @scenario(
        user=["Where is my order 5?", "Return it please.", "Bye"],
        world=SHOP,
        faults={"default": {"errors": {"http_500": 0.3}, "latency_ms": [0, 200]}},
        max_turns=3,
        check=lambda r: "failed" not in r.transcript[3].text,
    )
    def agent(conv):
        return shop_agent(conv)

    result = agent()
    assert result.count == 10
    assert 0 < result.passed < 10
    worlds = [r.world for r in result.results]
    assert len({id(w) for w in worlds}) == 10
    assert [w.run for w in worlds] == list(range(10))
    assert all(w.clock.now() > worlds[0].spec.clock_start for w in worlds)


def test_the_agent_raising_fails_the_conversation_not_the_caller():
    @scenario(user=["hi", "again"], max_turns=2)
    def agent(conv):
        raise KeyError("bug")

    result = agent()
    assert not result.passed
    assert isinstance(result.error, KeyError)
    assert result.ended_by == "error"
    assert len(result.turns) == 1


def test_a_user_function_of_the_transcript_and_scenario_errors():
    def user(transcript):
        return None if len(transcript) >= 4 else f"message {len(transcript)}"

    result = scenario(user=user, max_turns=10)(lambda conv: conv.message.upper())()
    assert [m.text for m in result.transcript] == [
        "message 0",
        "MESSAGE 0",
        "message 2",
        "MESSAGE 2",
    ]
    assert result.ended_by == "user"
    # without a user, Attest's style: the function is called once per turn with the persona
    seen = []
    turns = scenario(persona=FRIENDLY_USER, max_turns=2)(lambda persona: seen.append(persona))()
    assert seen == [FRIENDLY_USER, FRIENDLY_USER]
    assert len(turns.results) == 2
    with pytest.raises(ValueError, match="max_turns"):
        scenario(user=["x"], max_turns=0)


# --- outside pytest ---------------------------------------------------------------------------


def test_the_simulation_api_imports_and_runs_without_pytest():
    code = (
        "import sys\n"
        "from faultbench.testing import repeat, scenario, fault_inject, MockToolRegistry\n"
        "r = repeat(3)(scenario(user=['hi'])(lambda conv: 'hello'))()\n"
        "assert r.all_passed, r\n"
        "bad = [m for m in ('pytest', 'mcp', 'trio', 'anyio', 'pydantic_ai') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.world("../../examples/readme/world.yaml")
def test_the_world_fixture_is_the_current_world(world):
    assert current_world() is world

    @fault_inject(latency_jitter_ms=100, seed=1)
    def step():
        return 1

    before = world.clock.now()
    step()
    assert world.clock.now() > before
