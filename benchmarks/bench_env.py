"""faultbench.env's costs, each as a ratio measured in this one run (docs/ENVIRONMENTS.md).

- episodes per CPU-second of the shop's careful policy (4 calls: get_order, create_return,
  issue_refund, then a reply or a refund check) in this process, faults on, graded;
- a `WorldEnv.step` against a bare `World.call` of the same call;
- fork-and-branch: `WorldEnv.fork()` plus one step, against a fresh `reset` plus the steps
  that led to the fork's state;
- Ray's speed-up over local for the same episodes (`--ray`, a local cluster of `--cpus`).

Best of `--repeat` alternated rounds (the machine may be shared: say so when quoting).

    uv run python benchmarks/bench_env.py [--episodes 2000] [--ray --cpus 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from examples.shop import agents  # noqa: E402

import faultbench  # noqa: E402
from faultbench.env import WorldEnv, rollouts  # noqa: E402

SHOP = ROOT / "examples" / "shop" / "worlds" / "shop.yaml"
CHECKS = {"policies": {"at_most_once": {"issue_refund": ["order_id"]}}}
CALL = ("get_order", {"id": "1"})


def cpu(fn, n: int) -> float:
    """CPU seconds per unit of `fn()`, which does `n` units."""
    t = time.process_time()
    fn()
    return (time.process_time() - t) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ray", action="store_true")
    ap.add_argument("--cpus", type=int, default=2)
    a = ap.parse_args()
    n = a.episodes

    def episodes():
        rollouts(SHOP, agents.careful, n, seed=42, checks=CHECKS)

    world = faultbench.load_world(SHOP, faults=False)
    env = WorldEnv(SHOP, faults=False)
    env.reset()
    steps = 5000

    def bare():
        for _ in range(steps):
            world.call(*CALL)

    def stepped():
        for _ in range(steps):
            env.episode.done = False  # stay inside one episode
            env.step({"tool": CALL[0], "args": CALL[1]})

    env.episode.max_steps = 10**9
    base = WorldEnv(SHOP, faults=False)
    base.reset()
    base.step({"tool": "get_order", "args": {"id": "1"}})
    base.step({"tool": "create_return", "args": {"order_id": "1", "reason": "damaged"}})
    branches = 2000
    refund = {"tool": "issue_refund", "args": {"order_id": "1", "amount": 25.0}}

    def forked():
        for _ in range(branches):
            base.fork().step(refund)

    fresh = WorldEnv(SHOP, faults=False)

    def replayed():
        for _ in range(branches):
            fresh.reset()
            fresh.step({"tool": "get_order", "args": {"id": "1"}})
            fresh.step({"tool": "create_return", "args": {"order_id": "1", "reason": "damaged"}})
            fresh.step(refund)

    best: dict[str, float] = {}
    for _ in range(a.repeat):  # alternated rounds, best of each
        for name, fn, units in (
            ("episode", episodes, n),
            ("call", bare, steps),
            ("step", stepped, steps),
            ("fork", forked, branches),
            ("replay", replayed, branches),
        ):
            best[name] = min(best.get(name, float("inf")), cpu(fn, units))
    print(f"machine: {os.cpu_count()} CPUs (shared with other work; best of {a.repeat})")
    print(
        f"episodes per CPU-second (careful, 4 calls, faults on, graded): {1 / best['episode']:,.0f}"
    )
    print(
        f"step vs bare World.call: {best['step'] * 1e6:.1f} us vs {best['call'] * 1e6:.1f} us "
        f"= {best['step'] / best['call']:.2f}x"
    )
    print(
        f"fork + 1 step vs reset + 3 steps: {best['fork'] * 1e6:.1f} us vs "
        f"{best['replay'] * 1e6:.1f} us = {best['replay'] / best['fork']:.2f}x faster"
    )
    if a.ray:
        import ray

        os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
        ray.init(
            num_cpus=a.cpus,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},
        )
        big = n * 4
        rollouts(SHOP, agents.careful, 100, seed=42, backend="ray")  # warm the workers
        t = time.perf_counter()
        rollouts(SHOP, agents.careful, big, seed=42, checks=CHECKS)
        local = time.perf_counter() - t
        t = time.perf_counter()
        rollouts(SHOP, agents.careful, big, seed=42, checks=CHECKS, backend="ray")
        remote = time.perf_counter() - t
        print(
            f"Ray ({a.cpus} CPUs) vs local, {big} episodes wall-clock: {remote:.2f} s vs "
            f"{local:.2f} s = {local / remote:.2f}x speed-up"
        )
        ray.shutdown()


if __name__ == "__main__":
    main()
