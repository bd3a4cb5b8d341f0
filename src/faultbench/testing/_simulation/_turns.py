"""A `scenario` without a simulated user: Attest's style, turn by turn.

`@scenario(persona=..., mock_tools=..., fault_error_rate=..., fault_latency_jitter_ms=...,
max_turns=..., seed=...)` over a function that takes no `Conversation` (Attest's
`def test(persona)`): the function is called once per turn, with `persona=` as a keyword when
the scenario has one, in the scenario's fresh world (the current world, with `mock_tools` as
its tools). Each turn gives one `AgentResult` (`ScenarioResult.results`).

Turn-level faults are decided before each turn from (seed, run, turn) alone: latency moves
the world's virtual clock (never a sleep); an error fails that turn with an `InjectedError`
(a RuntimeError, as Attest's) without calling the function, and the next turn runs. A turn
whose function raises fails the same way. So a faulted scenario always completes its
`max_turns` turns, and a `repeat` around it always completes its runs, each failed turn
saying why.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from faultbench.kernel import CallResult, World, using_world
from faultbench.kernel.lowlevel import InjectionPlan

from ._agentresult import AgentResult
from ._inject import InjectedError
from ._personas import Persona
from ._repeat import fails_one_run, not_awaited

__all__ = ["ScenarioConfig", "TurnFaults"]


@dataclass(frozen=True)
class ScenarioConfig:
    """What a `scenario` was configured with (`ScenarioResult.config`), with Attest's
    parameters and defaults."""

    persona: Persona | None = None
    mock_tools: dict[str, Callable[..., Any]] = field(default_factory=dict)
    #: chance (0-1) that a turn fails with an injected RuntimeError
    fault_error_rate: float = 0.0
    #: each turn takes up to this many milliseconds of virtual time more
    fault_latency_jitter_ms: int = 0
    max_turns: int = 1
    seed: int | None = None


class TurnFaults:
    """The turn-level faults of one scenario: `before(world, seed, turn)` charges the turn's
    latency to the world's clock and returns the error that fails it, or None."""

    def __init__(self, error_rate: float, jitter_ms: float, name: str):
        for what, value in (
            ("fault_error_rate", error_rate),
            ("fault_latency_jitter_ms", jitter_ms),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"Expected {what}: a number. Instead, received: {value!r}")
        if not 0 <= error_rate <= 1:
            raise ValueError(
                f"Expected 0 <= fault_error_rate <= 1. Instead, received: {error_rate!r}"
            )
        if jitter_ms < 0:
            raise ValueError(
                f"Expected fault_latency_jitter_ms >= 0. Instead, received: {jitter_ms!r}"
            )
        self.name = name
        self.active = bool(error_rate or jitter_ms)
        self.plan = InjectionPlan(
            f"scenario.{name}",
            errors={"http_500": float(error_rate)} if error_rate else {},
            latency_ms=(0.0, float(jitter_ms)) if jitter_ms else None,
        )

    def before(self, world: World, seed: int, turn: int, of: int) -> BaseException | None:
        if not self.active:
            return None
        decision = self.plan.decide(turn + 1, seed=seed, run=world.run, now=world.clock.now())
        if decision is None:
            return None
        if decision.duration_s:
            world.clock.advance(decision.duration_s)
        if decision.kind is None:
            return None
        return InjectedError(f"Injected fault in {self.name} (turn {turn + 1} of {of})")


def mock_map(tools: Any) -> dict[str, Callable[..., Any]]:
    """`mock_tools` as ScenarioConfig shows it: tool name -> function."""
    if tools is None:
        return {}
    if isinstance(tools, Mapping):
        return dict(tools)
    return {t.name: t.fn for t in tools}


# ---------------------------------------------------------------------------------------------
# Running the turns
# ---------------------------------------------------------------------------------------------


class _Turns:
    """One scenario run in progress (shared by the sync and async loops). `setup` is the
    scenario's `_Setup`; `turn_type` and `result_type` its `Turn` and `ScenarioResult`
    (handed in: `_scenario.py` imports this module)."""

    def __init__(self, setup: Any, fn: Callable[..., Any], turn_type: Any, result_type: Any):
        self.setup = setup
        self.turn_type = turn_type
        self.result_type = result_type
        self.world, self.seed = setup.new_world()
        self.fault_seed = setup.seed if setup.seed is not None else self.seed
        self.fn = fn
        self.results: list[AgentResult] = []
        self.turns: list[Any] = []
        self.before = 0

    def start(self, turn: int, kwargs: dict[str, Any]) -> BaseException | None:
        """Before a turn: its fault (None: run the function), and its keyword arguments."""
        self.before = len(self.world.trace)
        if self.setup.persona is not None:
            kwargs.setdefault("persona", self.setup.persona)
        fault: BaseException | None = self.setup.turn_faults.before(
            self.world, self.fault_seed, turn, self.setup.max_turns
        )
        return fault

    def end(self, turn: int, value: Any, error: BaseException | None) -> None:
        calls: list[CallResult] = self.world.trace.calls[self.before :]
        result = AgentResult.of(value, turn=turn, calls=calls)
        if error is not None:
            result = AgentResult(result.trace, passed=False, error=error, turn=turn)
        self.results.append(result)
        reply = result.output if error is None else None
        self.turns.append(self.turn_type(turn, "", reply, list(calls), error))

    def result(self) -> Any:
        failed = [r for r in self.results if not r.passed]
        error = next((r.error for r in failed if r.error is not None), None)
        return self.setup.finish(
            self.result_type(
                turns=self.turns,
                transcript=[],
                world=self.world,
                persona=self.setup.persona,
                seed=self.seed,
                run=self.world.run,
                ended_by="max_turns",
                error=error,
                passed=not failed,
                config=self.setup.config,
                turn_results=self.results,
            )
        )


def run_turns(setup: Any, fn: Callable[..., Any], args: Any, kwargs: Any, *types: Any) -> Any:
    s = _Turns(setup, fn, *types)
    with using_world(s.world):
        for turn in range(setup.max_turns):
            kw = dict(kwargs)
            error = s.start(turn, kw)
            value = None
            if error is None:
                try:
                    value = fn(*args, **kw)
                except BaseException as exc:
                    if not fails_one_run(exc):
                        raise
                    error = exc
                if inspect.isawaitable(value):
                    raise not_awaited(fn, value)
            s.end(turn, value, error)
    return s.result()


async def arun_turns(
    setup: Any, fn: Callable[..., Any], args: Any, kwargs: Any, *types: Any
) -> Any:
    s = _Turns(setup, fn, *types)
    with using_world(s.world):
        for turn in range(setup.max_turns):
            kw = dict(kwargs)
            error = s.start(turn, kw)
            value = None
            if error is None:
                try:
                    value = await fn(*args, **kw)
                except BaseException as exc:
                    if not fails_one_run(exc):
                        raise
                    error = exc
            s.end(turn, value, error)
    return s.result()
