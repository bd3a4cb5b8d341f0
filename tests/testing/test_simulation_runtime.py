"""The simulation runtime where Attest's breaks: mock tools called from threads, `async def`
mock tools, `@fault_inject` on a mock tool inside a world, BaseExceptions inside a run, and
fault sequences that depend on the seed and the wrapper's own calls only."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

import faultbench
from faultbench import CallStarted
from faultbench.testing import (
    InjectedError,
    MockToolRegistry,
    fault_inject,
    repeat,
    scenario,
)

THREADS, CALLS = 8, 250


def _registry(calls: list | None = None) -> MockToolRegistry:
    registry = MockToolRegistry()

    @registry.tool()
    def search_web(q: str) -> dict:
        if calls is not None:
            calls.append(q)
        return {"results": [q]}

    @fault_inject(error_rate=0.2, latency_jitter_ms=100, seed=3)
    def fetch_url(url: str) -> dict:
        return {"content": url}

    registry.register("fetch_url", fetch_url)
    return registry


# --- threads -------------------------------------------------------------------------------------


def _hammer(world, worker: int) -> list:
    out = []
    for i in range(CALLS):
        tool = "search_web" if i % 2 else "fetch_url"
        args = {"q": f"{worker}-{i}"} if tool == "search_web" else {"url": f"{worker}-{i}"}
        out.append(world.call(tool, args))
    return out


def _check(registry, world, results) -> None:
    assert len(results) == THREADS * CALLS
    assert len({r.call_id for r in results}) == len(results)
    assert all(r.ok or r.fault == "http_500" for r in results)
    assert len(world.trace) == THREADS * CALLS
    faults = world.trace.faults("fetch_url")
    assert faults
    assert len(faults) == sum(1 for r in results if r.fault)
    ks = [e.k for e in world.events if isinstance(e, CallStarted) and e.tool == "fetch_url"]
    assert ks == list(range(1, len(ks) + 1))
    again = faultbench.replay(registry.spec(), world.events)
    assert again.state_hash() == world.state_hash()


def test_mock_tools_from_eight_threads():
    seen: list = []
    registry = _registry(seen)
    world = registry.world()
    with ThreadPoolExecutor(THREADS) as pool:
        batches = list(pool.map(lambda w: _hammer(world, w), range(THREADS)))
    _check(registry, world, [r for b in batches for r in b])
    assert len(seen) == THREADS * CALLS // 2


def test_mock_tools_through_asyncio_to_thread_in_the_current_world():
    registry = _registry()

    async def main(world) -> list:
        def work(w: int) -> list:
            return _hammer(faultbench.current_world(), w)  # to_thread carries the context

        batches = await asyncio.gather(*(asyncio.to_thread(work, w) for w in range(THREADS)))
        return [r for b in batches for r in b]

    with registry as world:
        results = asyncio.run(main(world))
    _check(registry, world, results)


# --- fault_inject on a mock tool inside a world --------------------------------------------------


def test_fault_inject_on_a_mock_tool_charges_the_call_and_records_the_fault():
    @fault_inject(errors=["timeout", "http_503"], error_rate=0.5, latency_jitter_ms=400, seed=9)
    def lookup(city: str) -> dict:
        return {"city": city}

    registry = MockToolRegistry({"lookup": lookup})
    world = registry.world()
    results = [world.call("lookup", {"city": str(i)}) for i in range(30)]
    kinds = [r.fault for r in results if r.fault]
    assert set(kinds) == {"timeout", "http_503"}
    assert [f.kind for f in world.trace.faults()] == kinds
    assert [(k, kind) for k, kind in lookup.injected.faults] == [
        (i + 1, r.fault) for i, r in enumerate(results) if r.fault
    ]
    took = sum((r.finished_at - r.started_at).total_seconds() for r in results)
    assert took == pytest.approx(lookup.injected.virtual_s)
    elapsed = (world.clock.now() - world.spec.clock_start).total_seconds()
    assert elapsed == pytest.approx(took)
    assert elapsed > 30
    timeout = next(r for r in results if r.fault == "timeout")
    assert (
        timeout.text
        == "504 Gateway Timeout: test_simulation_runtime.lookup did not answer within 30s"
    )
    assert faultbench.replay(registry.spec(), world.events).state_hash() == world.state_hash()


# --- async mock tools ----------------------------------------------------------------------------


def test_async_mock_tools_answer_from_call_acall_and_a_scenario():
    registry = MockToolRegistry()

    @registry.tool()
    async def search_web(q: str) -> dict:
        await asyncio.sleep(0)
        return {"results": [q.upper()]}

    @fault_inject(latency_jitter_ms=500, seed=1)
    async def slow(q: str) -> dict:
        return {"q": q}

    registry.register("slow", slow)
    world = registry.world()
    assert world.call("search_web", {"q": "a"}).value == {"results": ["A"]}

    async def main() -> list:
        return list(
            await asyncio.gather(
                world.acall("search_web", {"q": "b"}), world.acall("slow", {"q": "c"})
            )
        )

    found, slowed = asyncio.run(main())
    assert found.value == {"results": ["B"]}
    assert slowed.value == {"q": "c"}
    assert (slowed.finished_at - slowed.started_at).total_seconds() > 0  # charged, virtually

    @scenario(mock_tools=registry, max_turns=2)
    async def agent():
        return faultbench.current_world().call("search_web", {"q": "d"}).value

    result = asyncio.run(agent())
    assert result.passed
    assert [r.output for r in result.results] == ["{'results': ['D']}"] * 2


# --- BaseExceptions and reasons ------------------------------------------------------------------


def test_base_exceptions_fail_one_run_with_their_message():
    @repeat(n=4)
    def runs():
        from faultbench.testing import current_run

        index = current_run().index
        if index == 0:
            pytest.fail("the agent gave up")
        if index == 1:
            pytest.skip("no network")
        if index == 2:
            sys.exit(3)
        return True

    result = runs()
    assert result.count == 4
    assert result.pass_rate == 0.25
    reasons = [f.reason for f in result.failures]
    assert reasons[0] == "Failed: the agent gave up"
    assert reasons[1] == "Skipped: no network"
    assert reasons[2] == "SystemExit: 3"
    assert "run0 (seed" in result.summary()
    assert "Failed: the agent gave up" in result.summary()


def test_keyboard_interrupt_still_ends_the_batch():
    @repeat(n=3)
    def runs():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runs()


def test_a_failed_scenario_run_carries_its_reason():
    @repeat(n=3, seed=5)
    @scenario(fault_error_rate=0.5, max_turns=4, seed=1)
    def agent():
        return "fine"

    result = agent()
    assert result.failures
    for f in result.failures:
        assert isinstance(f.error, InjectedError)
        assert f.reason.startswith("InjectedError: Injected fault in agent (turn ")
        assert f.reason in result.summary()

    @repeat(n=2)
    @scenario(max_turns=2)
    def exits():
        sys.exit("stopped")

    stopped = exits()
    assert stopped.pass_rate == 0
    assert {f.reason for f in stopped.failures} == {"SystemExit: stopped"}


# --- determinism ---------------------------------------------------------------------------------


def test_reset_restarts_the_fault_sequence():
    @fault_inject(error_rate=0.5, seed=7)
    def tool(x):
        return x

    def pattern():
        out = []
        for i in range(16):
            try:
                tool(i)
            except RuntimeError:
                out.append(i)
        return out

    first = pattern()
    assert pattern() != first  # calls 17-32 draw on
    tool.injected.reset()
    assert pattern() == first
    assert tool.injected.calls == 16


SCRIPT = """
import sys
from faultbench.testing import fault_inject

@fault_inject(error_rate=0.5, seed=11)
def other(x):
    return x

@fault_inject(error_rate=0.5, seed=11)
def tool(x):
    return x

for i in range(int(sys.argv[1])):  # calls to another wrapper first (another test order)
    try:
        other(i)
    except RuntimeError:
        pass
failed = []
for i in range(20):
    try:
        tool(i)
    except RuntimeError:
        failed.append(i)
print(failed)
"""


def test_same_seed_same_faults_across_processes_and_whatever_ran_first():
    outs = {
        subprocess.run(
            [sys.executable, "-c", SCRIPT, str(before)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for before in (0, 7)
    }
    assert len(outs) == 1
    assert outs.pop().strip() not in ("[]", str(list(range(20))))


def test_turn_faults_name_the_function_of_each_decorated_scenario():
    always = scenario(fault_error_rate=1.0, max_turns=1)

    @always
    def first():
        return "never runs"

    @always
    def second():
        return "never runs"

    assert str(first().error) == "Injected fault in first (turn 1 of 1)"
    assert str(second().error) == "Injected fault in second (turn 1 of 1)"
    with pytest.raises(ValueError, match="fault_error_rate"):
        scenario(fault_error_rate=1.5)


def test_every_expect_link_checks_and_names_what_it_expected_and_received():
    from faultbench.testing import TraceBuilder, expect

    builder = TraceBuilder()
    builder.add_tool_call("lookup", args={"id": 1}, result={"ok": True})
    builder.add_llm_call("model")
    builder.add_tool_call("refund", args={"id": 1}, result={"ok": True})
    builder.add_llm_call("model")
    builder.set_output(message="Refund R-42 issued.")
    builder.set_metadata(total_tokens=900, cost_usd=0.01, latency_ms=1200)
    run = builder.build()
    (
        expect(run)
        .output_contains("R-42")
        .output_not_contains("error")
        .output_matches(r"R-\d+")
        .tools_called("lookup", "refund")
        .tools_not_called("delete")
        .tools_called_in_order("lookup", "refund")
        .cost_under(0.05)
        .tokens_under(1000)
        .latency_under(2000)
        .turns_under(3)
    )
    failing = {
        "output_contains": (lambda e: e.output_contains("R-43"), "'Refund R-42 issued.'"),
        "output_matches": (lambda e: e.output_matches(r"^\d+$"), "'Refund R-42 issued.'"),
        "tools_called": (lambda e: e.tools_called("escalate"), "[lookup, refund]"),
        "tools_not_called": (lambda e: e.tools_not_called("refund"), "[lookup, refund]"),
        "in_order": (lambda e: e.tools_called_in_order("refund", "lookup"), "[lookup, refund]"),
        "tokens_under": (lambda e: e.tokens_under(500), "900"),
        "latency_under": (lambda e: e.latency_under(1000), "1200 ms"),
        "turns_under": (lambda e: e.turns_under(2), "2 turns"),
    }
    for name, (link, received) in failing.items():
        with pytest.raises(AssertionError) as caught:
            link(expect(run))
        assert str(caught.value).endswith(f"Instead, received: {received}"), name
    with pytest.raises(AssertionError, match=r"no cost recorded"):
        expect(TraceBuilder().set_output(message="hi").build()).cost_under(1)

    @scenario(mock_tools={"lookup": lambda id: {"id": id}}, max_turns=3)
    def three_turns():
        return faultbench.current_world().call("lookup", {"id": 1}).value

    result = three_turns()
    expect(result).tools_called("lookup").turns_under(4)
    with pytest.raises(AssertionError, match=r"fewer than 3 turns\. Instead, received: 3 turns"):
        expect(result).turns_under(3)
