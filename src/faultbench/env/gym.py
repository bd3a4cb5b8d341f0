"""`WorldEnv`: a world as a Gymnasium environment (imports gymnasium, the `gym` extra).

Observations are text: at `reset`, the prompt and the tools as JSON; after a step, what an
MCP client reads for that call. Actions are text too (JSON), or the dicts, `ToolCall`s and
`Reply`s the JSON stands for. The reward is 0 until the episode ends, then the grade of the
whole run (`_episode.grade_of`).
"""

from __future__ import annotations

import copy
import string
from collections.abc import Mapping
from typing import Any, SupportsFloat

try:
    import gymnasium
    from gymnasium import spaces
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "faultbench.env.WorldEnv needs Gymnasium: pip install 'faultbench[gym]'"
    ) from exc

from faultbench.kernel import Checks

from ._episode import Episode, WorldLike, spec_of

__all__ = ["ENV_ID", "AnyText", "WorldEnv", "register"]

ENV_ID = "faultbench/World-v0"

#: the longest observation (an answer's text) and action the spaces admit
MAX_OBSERVATION = 1 << 20
MAX_ACTION = 1 << 16
_SAMPLED = string.ascii_letters + string.digits + string.punctuation + " "


class AnyText(spaces.Text):
    """A `Text` space of any characters (an answer may hold any character a record holds);
    `sample()` draws from printable ASCII."""

    def __init__(self, max_length: int, *, min_length: int = 0, seed: Any = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=_SAMPLED, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"AnyText({self.min_length}, {self.max_length})"


class WorldEnv(gymnasium.Env[str, Any]):
    """A world as a Gymnasium environment (`faultbench/World-v0`).

    `world`: a world file's path, a `WorldSpec` or a `World` (its spec). `reset(seed,
    options)` starts run `options["run"]` (default 0) of the world at `seed` (default: this
    env's `seed`, else the world file's) from the spec's genesis, as the pytest plugin starts
    run i of a test, so the same (seed, run) gives the same seed rows and the same faults.
    `step(action)` takes `{"tool": name, "args": {...}}` (or a `ToolCall`, or that dict as
    JSON) for a tool call and `{"reply": text}` (or a `Reply`) to end the episode.
    `checks`: checks added to the world file's (a `Checks` or a dict of its keys);
    `principal`: who the calls act as in a world with `auth:`. `otel`: export each finished
    episode as OpenTelemetry spans (`faultbench.otel.export_run`) through this
    TracerProvider, or the global one with True.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (Gymnasium's class attribute)

    def __init__(
        self,
        world: WorldLike,
        *,
        prompt: str = "",
        seed: int | None = None,
        faults: bool = True,
        max_steps: int = 50,
        checks: Checks | Mapping[str, Any] | None = None,
        principal: str | None = None,
        otel: Any = None,
    ):
        spec = spec_of(world)
        self.episode = Episode(
            spec,
            prompt=prompt,
            faults=faults,
            max_steps=max_steps,
            checks=checks,
            principal=principal,
            otel=otel,
        )
        self.world_seed = spec.seed if seed is None else int(seed)
        self.observation_space = AnyText(MAX_OBSERVATION)
        self.action_space = AnyText(MAX_ACTION, min_length=1)

    # --- what the episode is at --------------------------------------------------------------

    @property
    def world(self) -> Any:
        """The world of the current episode (None before the first `reset`)."""
        return self.episode.world

    @property
    def prompt(self) -> str:
        return self.episode.prompt

    @property
    def max_steps(self) -> int:
        return self.episode.max_steps

    # --- Gymnasium's API ---------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self.world_seed = int(seed)
        run = (options or {}).get("run", 0)
        if isinstance(run, bool) or not isinstance(run, int) or run < 0:
            raise ValueError(f'Expected options["run"] as an integer >= 0. Instead: {run!r}')
        return self.episode.start(self.world_seed, run)

    def step(self, action: Any) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        s = self.episode.step(action)
        return s.observation, s.reward, s.terminated, s.truncated, s.info

    def fork(self) -> WorldEnv:
        """An env continuing from this exact state, with its own copy of the world: the
        parent is not touched, so a group of rollouts can branch mid-episode."""
        other = WorldEnv.__new__(WorldEnv)
        other.__dict__.update(self.__dict__)
        other.episode = self.episode.fork()
        # its own random generator, in the same state (Gymnasium's np_random)
        if self._np_random is not None:
            other.np_random = copy.deepcopy(self._np_random)
        return other


def register() -> None:
    """Register `faultbench/World-v0` with Gymnasium (done when this module is imported)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="faultbench.env:WorldEnv")


register()
