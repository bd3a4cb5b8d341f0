"""`faultbench.env.rollouts`: the shop's scripted agents over hundreds of runs, in this
process, a process pool and a local Ray cluster of 2 CPUs: the same episodes on each."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from examples.shop import agents

import faultbench
from faultbench.env import rollouts
from faultbench.integrations import Reply, ToolCall
from faultbench.testing import pass_hat_k, wilson_interval

from .policies import crashing_policy, dies, handler_bug

ROOT = Path(__file__).parents[2]
SHOP = ROOT / "examples" / "shop" / "worlds" / "shop.yaml"
BUGGY = Path(__file__).parent / "worlds" / "buggy.yaml"
ONE_REFUND = {"policies": {"at_most_once": {"issue_refund": ["order_id"]}}}
N = 300


@pytest.fixture(scope="module")
def local():
    return rollouts(SHOP, agents.naive, N, seed=42, checks=ONE_REFUND, prompt=agents.PROMPT)


def test_each_episode_is_the_run_the_plugin_would_start(local):
    assert [e.run for e in local.episodes] == list(range(N))
    for e in local.episodes[:40]:
        world = faultbench.load_world(SHOP, seed=42, run=e.run)  # the plugin's run e.run
        for call in e.calls:
            world.call(call.tool, call.args)
        assert world.state_hash() == e.state_hash
        assert world.trace.summary() == e.summary
    # the naive agent fails exactly where a refund timed out after its commit
    failed = {e.run for e in local.failed}
    assert failed == {e.run for e in local.episodes if "issue_refund!timeout" in e.summary}
    assert 0 < len(failed) < N
    assert all(e.reward == 0.0 for e in local.failed)
    assert all(any("at_most_once" in v for v in e.violations) for e in local.failed)


def test_statistics_are_the_gates(local):
    passed = sum(e.passed for e in local.episodes)
    assert local.passed == passed
    assert local.pass_rate == passed / N
    assert local.interval == wilson_interval(passed, N)
    for k in (1, 3, 8):
        assert local.pass_k(k) == pass_hat_k(passed, N, k)
    assert local.pass_k(N + 1) is None
    assert local.mean_reward == passed / N


def test_failing_episodes_are_the_same_on_every_call(local):
    again = rollouts(SHOP, agents.naive, N, seed=42, checks=ONE_REFUND)
    assert again.keys() == local.keys()
    assert [e.run for e in again.failed] == [e.run for e in local.failed]
    other_seed = rollouts(SHOP, agents.naive, N, seed=7, checks=ONE_REFUND)
    assert other_seed.keys() != local.keys()


def test_the_process_pool_and_ray_give_the_same_episodes(local, ray_cluster):
    pool = rollouts(SHOP, agents.naive, N, seed=42, checks=ONE_REFUND, backend="process", workers=2)
    assert pool.keys() == local.keys()
    on_ray = rollouts(SHOP, agents.naive, N, seed=42, checks=ONE_REFUND, backend="ray")
    assert on_ray.keys() == local.keys()
    assert [e.calls for e in on_ray.episodes] == [e.calls for e in local.episodes]
    # any subset of runs, in any order, gives those runs' episodes
    some = rollouts(SHOP, agents.naive, [250, 3, 77], seed=42, checks=ONE_REFUND, backend="ray")
    assert some.keys() == [local.episodes[r].key for r in (3, 77, 250)]


def test_the_event_log_on_request():
    out = rollouts(SHOP, agents.careful, 3, seed=42, events=True)
    for e in out.episodes:
        assert e.events is not None
        assert e.events[0].run == e.run
    assert rollouts(SHOP, agents.careful, 1).episodes[0].events is None


def test_a_crash_in_the_environment_is_reported_apart_from_the_agents_failures(ray_cluster):
    for backend in ("local", "process", "ray"):
        out = rollouts(BUGGY, handler_bug, 16, backend=backend, workers=2)
        crashed = [e.run for e in out.episodes if e.crashed]
        # where list_items failed (the fault plan's draw for the run), the handler's bug hit
        assert crashed == [e.run for e in out.episodes if e.calls[0].ok is False], backend
        assert 0 < len(crashed) < 16
        assert "a bug in faultbench or the world's handlers" in out.crashed[0].error
        assert out.failed == []
        assert out.pass_rate == 1.0  # over the episodes that ran to their end
        # the policy raising is the agent's failure, not a crash
        out = rollouts(SHOP, crashing_policy, 2, backend=backend, workers=2)
        assert [(e.crashed, e.passed) for e in out.episodes] == [(False, False)] * 2
        assert "the policy raised RuntimeError" in out.episodes[0].error


def test_a_dead_worker_is_a_crash_of_its_episodes_not_a_failure():
    out = rollouts(SHOP, dies, 2, backend="process", workers=1)
    assert all(e.crashed for e in out.episodes)
    assert "worker process failed" in out.episodes[0].error
    assert out.graded == []


def test_bad_arguments_are_refused_before_anything_runs():
    with pytest.raises(ValueError, match="backend"):
        rollouts(SHOP, agents.careful, 1, backend="threads")
    with pytest.raises(ValueError, match="max_steps"):
        rollouts(SHOP, agents.careful, 1, max_steps=0)
    with pytest.raises(ValueError, match="workers"):
        rollouts(SHOP, agents.careful, 1, workers=0)


def test_truncated_episodes_and_replies():
    def loops(seen):
        return ToolCall("list_orders", {}) if len(seen) < 10 else Reply("never")

    out = rollouts(SHOP, loops, 2, max_steps=4)
    assert all(e.truncated and e.steps == 4 and e.reply is None for e in out.episodes)
    out = rollouts(SHOP, agents.careful, 1, seed=42)
    assert not out.episodes[0].truncated
    assert "Refunded" in out.episodes[0].reply


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    # a local cluster of 2 CPUs; its workers import this repository's tests and examples
    # (and use this environment, not one Ray would build for `uv run`)
    before = os.environ.get("RAY_ENABLE_UV_RUN_RUNTIME_ENV")
    os.environ["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] = "0"
    if not ray.is_initialized():
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},
        )
    yield ray
    ray.shutdown()
    if before is None:
        del os.environ["RAY_ENABLE_UV_RUN_RUNTIME_ENV"]
    else:
        os.environ["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] = before
