"""Worlds as environments for agent training and large evals (docs/ENVIRONMENTS.md).

- `WorldEnv(world, *, prompt="", seed=None, faults=True, max_steps=50)`: a Gymnasium
  environment (`faultbench/World-v0`; the `gym` extra) whose observations are what an MCP
  client reads and whose reward is the graded run;
- `rollouts(world, policy, episodes, ...)`: a scripted or learned policy over runs
  0..episodes-1, in this process, a process pool or a Ray cluster (the `ray` extra), the same
  episodes on each; `Rollouts` and `EpisodeResult` are what it returns;
- `openenv_app(spec, ...)`: OpenEnv's protocol over a world (WebSocket sessions, its HTTP
  routes, JSON-RPC `/mcp`), one fresh world per episode, what `faultbench serve --openenv`
  serves (`OpenEnvServer` holds its sessions; needs Starlette, which mcp brings).

Importing this package imports neither Gymnasium nor Ray. `WorldEnv` lives in
`faultbench.env.gym`, which imports Gymnasium and registers `faultbench/World-v0`: it is
imported when `WorldEnv` is first named, by `gymnasium.make("faultbench.env.gym:faultbench/
World-v0")`, and with this package when Gymnasium is already imported.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from faultbench._lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from ._openenv import OpenEnvServer as OpenEnvServer
    from ._openenv import openenv_app as openenv_app
    from ._rollouts import EpisodeResult as EpisodeResult
    from ._rollouts import Rollouts as Rollouts
    from ._rollouts import rollouts as rollouts
    from .gym import WorldEnv as WorldEnv

__all__ = ["EpisodeResult", "OpenEnvServer", "Rollouts", "WorldEnv", "openenv_app", "rollouts"]

_LAZY = {
    "WorldEnv": ".gym",
    "EpisodeResult": "._rollouts",
    "Rollouts": "._rollouts",
    "rollouts": "._rollouts",
    "openenv_app": "._openenv",
    "OpenEnvServer": "._openenv",
}


__getattr__, __dir__ = _lazy_names(__name__, globals(), _LAZY)

if "gymnasium" in sys.modules:  # then registering costs nothing
    from . import gym as gym
