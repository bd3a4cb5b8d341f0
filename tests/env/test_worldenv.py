"""`faultbench.env.WorldEnv`: a world as a Gymnasium environment, stepped by the shop's
scripted agents (examples/shop/agents.py) as the integrations' scripted models step them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest
from examples.shop import agents
from gymnasium.utils.env_checker import check_env

import faultbench
from faultbench.env import WorldEnv
from faultbench.integrations import Reply, ToolCall
from faultbench.serve import WorldCalls

SHOP = Path(__file__).parents[2] / "examples" / "shop" / "worlds" / "shop.yaml"
#: one refund of order 1 took effect, and it exists at the end
ONE_REFUND = {
    "policies": {"at_most_once": {"issue_refund": ["order_id"]}},
    "expect_state": {"refund": [{"where": {"order_id": "1"}, "count": 1}]},
}


def play(env: WorldEnv, policy, run: int = 0, seed: int | None = None):
    """One episode of `policy`: the observations, the final reward and info."""
    obs, info = env.reset(seed=seed, options={"run": run})
    seen = [obs]
    while True:
        action = policy(tuple(env.episode.seen))
        obs, reward, terminated, truncated, info = env.step(action)
        seen.append(obs)
        if terminated or truncated:
            return seen, reward, info


def test_reset_shows_the_prompt_and_the_tools_as_an_agent_sees_them():
    env = WorldEnv(SHOP, prompt=agents.PROMPT)
    obs, info = env.reset(seed=7, options={"run": 3})
    shown = json.loads(obs)
    assert shown["prompt"] == agents.PROMPT
    names = [t["name"] for t in shown["tools"]]
    assert names == [t.name for t in env.world.tools]
    assert shown["tools"] == WorldCalls(env.world).tools_wire()
    assert info["prompt"] == agents.PROMPT
    assert info["tools"] == shown["tools"]
    assert (info["seed"], info["run"]) == (7, 3)
    assert info["state_hash"] == env.world.state_hash()
    assert info["events"] == len(env.world.events)


def test_same_seed_and_actions_give_identical_observations_and_state_hashes():
    actions = [
        {"tool": "get_order", "args": {"id": "1"}},
        ToolCall("create_return", {"order_id": "1", "reason": "damaged"}),
        json.dumps({"tool": "issue_refund", "args": {"order_id": "1", "amount": 25.0}}),
        {"tool": "list_refunds", "args": {"order_id": "1"}},
        Reply("done"),
    ]

    def run(seed: int, run: int):
        env = WorldEnv(SHOP)
        out = [env.reset(seed=seed, options={"run": run})[0]]
        hashes = []
        for a in actions:
            obs, _, _, _, info = env.step(a)
            out.append(obs)
            hashes.append(info["state_hash"])
        return out, hashes

    assert run(5, 11) == run(5, 11)
    assert run(5, 11) != run(6, 11)  # other seed rows
    # over runs the fault draws differ: some run's observations differ from run 0's
    assert any(run(5, r)[0] != run(5, 0)[0] for r in range(1, 30))


def test_a_step_reads_what_an_mcp_client_reads_with_the_plugins_faults():
    """The same (seed, run) as the pytest plugin's run (`World.from_spec(spec, seed, run)`),
    called through the MCP server's handler (`WorldCalls.answer`): the same texts, the same
    faults, the same end state."""
    import trio

    calls = [
        ("get_order", {"id": "1"}),
        ("create_return", {"order_id": "1", "reason": "damaged"}),
        ("issue_refund", {"order_id": "1", "amount": 25.0}),
        ("issue_refund", {"order_id": "1", "amount": 25.0}),
        ("list_refunds", {"order_id": "1"}),
        ("get_order", {"id": "no-such-order"}),
    ]
    for run in range(12):
        env = WorldEnv(SHOP)
        env.reset(seed=42, options={"run": run})
        stepped = [env.step({"tool": t, "args": a}) for t, a in calls]
        served = faultbench.load_world(SHOP, seed=42, run=run)
        handler = WorldCalls(served, debug=True)  # its answers name their faults

        async def over_mcp(handler=handler, served=served):
            return [await handler.answer(served, t, a) for t, a in calls]

        answers = trio.run(over_mcp)
        assert [s[0] for s in stepped] == [a["content"][0]["text"] for a in answers]
        assert [s[4]["is_error"] for s in stepped] == [a["isError"] for a in answers]
        assert [s[4].get("fault") for s in stepped] == [a["_meta"].get("fault") for a in answers]
        assert stepped[-1][4]["state_hash"] == served.state_hash()
        assert stepped[-1][4]["result"].tool == "get_order"


def test_the_careful_agent_gets_1_and_the_blind_one_less_where_the_timeout_fired():
    careful_env = WorldEnv(SHOP, prompt=agents.PROMPT, checks=ONE_REFUND)
    blind_env = WorldEnv(SHOP, prompt=agents.PROMPT, checks=ONE_REFUND)
    timed_out = 0
    for run in range(60):
        _, reward, info = play(careful_env, agents.careful, run)
        assert reward == 1.0, (run, careful_env.world.trace.summary())
        assert info["passed"]
        _, blind, info = play(blind_env, agents.naive, run)
        if "issue_refund!timeout" in blind_env.world.trace.summary():
            timed_out += 1
            assert blind == 0.0
            assert not info["passed"]
            assert any("at_most_once" in v for v in info["violations"])
        else:
            assert blind == 1.0
    assert timed_out >= 2  # the shop's 10% timeout fired in some of the 60 runs


def test_milestones_give_partial_credit_and_a_broken_policy_forces_0():
    checks = {
        "milestones": {
            "looked_up": {"call": "get_order", "args": {"id": "1"}},
            "refunded": {"state": {"refund": {"where": {"order_id": "1"}, "count": 1}}},
        },
        "policies": {"never": {"cancel_order": {}}},
    }
    env = WorldEnv(SHOP, checks=checks, faults=False)
    env.reset()
    env.step({"tool": "get_order", "args": {"id": "1"}})
    _, reward, terminated, truncated, info = env.step({"reply": "looked"})
    assert (reward, terminated, truncated) == (0.5, True, False)
    assert info["score"] == 0.5
    assert info["passed"]

    env.reset()
    env.step({"tool": "get_order", "args": {"id": "1"}})
    env.step({"tool": "cancel_order", "args": {"id": "5"}})
    _, reward, _, _, info = env.step({"reply": "cancelled"})
    assert reward == 0.0
    assert info["score"] == 0.5
    assert not info["passed"]
    assert any("never" in v for v in info["violations"])


def test_without_checks_a_run_that_ends_is_worth_1_and_reward_is_0_until_the_end():
    env = WorldEnv(SHOP, faults=False)
    env.reset()
    _, reward, terminated, _, _ = env.step({"tool": "get_order", "args": {"id": "1"}})
    assert (reward, terminated) == (0.0, False)
    assert env.step({"reply": "ok"})[1] == 1.0


def test_truncated_at_max_steps_and_graded_then():
    env = WorldEnv(SHOP, max_steps=3, checks=ONE_REFUND, faults=False)
    env.reset()
    results = [env.step({"tool": "list_orders", "args": {}}) for _ in range(3)]
    assert [r[2:4] for r in results] == [(False, False), (False, False), (False, True)]
    assert results[-1][1] == 0.0  # no refund: the expectation broke
    with pytest.raises(RuntimeError, match="reset"):
        env.step({"tool": "list_orders", "args": {}})


def test_a_bad_action_is_an_observation_not_an_exception():
    env = WorldEnv(SHOP, faults=False)
    env.reset()
    events = len(env.world.events)
    for bad in ("not json", '{"tool": 3}', {"reply": 1}, ["get_order"]):
        obs, reward, terminated, truncated, info = env.step(bad)
        assert obs.startswith("Expected")
        assert info["error"] == "invalid_action"
        assert (reward, terminated, truncated) == (0.0, False, False)
    assert len(env.world.events) == events  # nothing reached the world
    obs, *_, info = env.step({"tool": "get_order", "args": {"id": "nope"}})
    assert info["is_error"]
    assert info["error"] == "not_found"


def test_a_fork_continues_from_this_exact_state_and_never_writes_to_its_parent():
    env = WorldEnv(SHOP, checks=ONE_REFUND, faults=False)
    env.reset(seed=3)
    env.step({"tool": "get_order", "args": {"id": "1"}})
    env.step({"tool": "create_return", "args": {"order_id": "1", "reason": "damaged"}})
    before = env.world.state_hash()
    group = [env.fork() for _ in range(4)]
    assert all(g.world.state_hash() == before for g in group)
    assert all(g.episode.steps == 2 and len(g.episode.seen) == 2 for g in group)
    # two branches refund once, one twice, one not at all
    for g, times in zip(group, (1, 1, 2, 0)):
        for _ in range(times):
            g.step({"tool": "issue_refund", "args": {"order_id": "1", "amount": 25.0}})
    rewards = [g.step({"reply": "done"})[1] for g in group]
    assert rewards == [1.0, 1.0, 0.0, 0.0]
    assert group[0].world.state_hash() == group[1].world.state_hash()
    assert env.world.state_hash() == before  # the parent is untouched
    assert env.world.refunds.where(order_id="1") == []
    assert env.step({"reply": "done"})[1] == 0.0  # and goes on by itself


def test_passes_gymnasiums_check_env_and_is_registered():
    env = gymnasium.make("faultbench/World-v0", world=SHOP, prompt="p", max_steps=5)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.spec is not None
    assert env.spec.id == "faultbench/World-v0"
    obs, _ = env.reset(seed=1)
    assert env.observation_space.contains(obs)


def test_importing_faultbench_or_faultbench_env_imports_no_gymnasium():
    code = (
        "import sys, faultbench, faultbench.env\n"
        "assert 'gymnasium' not in sys.modules and 'ray' not in sys.modules\n"
        "import gymnasium\n"
        "env = gymnasium.make('faultbench.env.gym:faultbench/World-v0', world=sys.argv[1])\n"
        "print(env.reset(seed=1)[1]['run'])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(SHOP)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "0"
