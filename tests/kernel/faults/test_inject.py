"""`InjectionPlan` (fault decisions without a world file) and the current world."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime

import pytest

import faultbench
from faultbench import current_world, using_world
from faultbench.kernel.lowlevel import INJECTABLE_KINDS, InjectionPlan

NOW = datetime(2025, 6, 1, tzinfo=UTC)


def test_decisions_are_a_function_of_seed_run_target_and_k():
    plan = InjectionPlan("weather.lookup", errors={"http_500": 0.3}, latency_ms=(0, 200))
    a = [plan.decide(k, seed=42, run=0, now=NOW) for k in range(1, 50)]
    again = InjectionPlan("weather.lookup", errors={"http_500": 0.3}, latency_ms=(0, 200))
    assert a == [again.decide(k, seed=42, run=0, now=NOW) for k in range(1, 50)]
    assert a != [plan.decide(k, seed=42, run=1, now=NOW) for k in range(1, 50)]
    kinds = [d.kind for d in a if d is not None]
    assert "http_500" in kinds
    assert all(0 <= d.latency_s <= 0.2 for d in a if d is not None)


def test_errors_carry_the_kind_and_the_registry_message():
    plan = InjectionPlan("weather.lookup", errors={"timeout": 1.0})
    decision = plan.decide(1, seed=0, run=0, now=NOW)
    assert decision.commit
    assert decision.timeout_s == 30.0
    err = plan.error(decision)
    assert isinstance(err, faultbench.InjectedFault)
    assert err.kind == "timeout"
    assert str(err) == "504 Gateway Timeout: weather.lookup did not answer within 30s"


def test_only_failing_kinds_and_valid_probabilities():
    assert "http_500" in INJECTABLE_KINDS
    assert "stale_read" not in INJECTABLE_KINDS
    with pytest.raises(ValueError, match="stale_read"):
        InjectionPlan("a.b", errors={"stale_read": 0.1})
    with pytest.raises(ValueError, match=r"sum to 1\.5"):
        InjectionPlan("a.b", errors={"http_500": 0.7, "http_503": 0.8})
    with pytest.raises(ValueError, match=r"service\.name"):
        InjectionPlan("lookup", errors={})


def test_using_world_sets_and_restores_the_current_world():
    world = faultbench.load_world("examples/readme/world.yaml")
    assert current_world() is None
    with using_world(world):
        assert current_world() is world
        with using_world(None):
            assert current_world() is None
        assert current_world() is world
    assert current_world() is None
    with pytest.raises(TypeError, match="Expected a faultbench World"), using_world("w.yaml"):
        pass


def test_the_current_world_follows_tasks_and_to_thread_but_not_bare_threads():
    world = faultbench.load_world("examples/readme/world.yaml")

    async def main():
        seen = await asyncio.gather(asyncio.to_thread(current_world), asyncio.sleep(0, None))
        return seen[0]

    with using_world(world):
        assert asyncio.run(main()) is world
        box = []
        t = threading.Thread(target=lambda: box.append(current_world()))
        t.start()
        t.join()
        assert box == [None]  # a plain thread starts with an empty context, as Python says
