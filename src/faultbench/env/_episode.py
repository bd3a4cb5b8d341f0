"""One episode of a world, stepped one call at a time: what `WorldEnv` and `rollouts` share.

`Episode` holds a world started at (seed, run), the tools as the agent sees them, and the
run's checks. `step` answers a tool call through `WorldCalls.answer_now`, the MCP server's
call handler without an event loop, so the text an agent reads is the text an MCP client
would read for the same call (faults, auth, the error texts). The episode ends with a reply
or after `max_steps` steps; its reward is then the grade of the whole run (`grade_of`).

Seeds: a run's world is `World.from_spec(spec, seed=S, run=i)`, as the pytest plugin starts
run i of a test at world seed S; so the same (S, i) gives the same seed rows and the same
fault decisions here and under pytest, and nothing else decides them.

No Gymnasium here: `rollouts` steps episodes without it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from faultbench.integrations import Reply, Seen, ToolCall
from faultbench.integrations._script import seen_result
from faultbench.kernel import CallResult, Checks, World, WorldSpec
from faultbench.kernel.lowlevel import SURFACE_KINDS
from faultbench.serve import WorldCalls

if TYPE_CHECKING:
    from faultbench.kernel import Grade

__all__ = ["Episode", "Graded", "as_action", "grade_of", "spec_of", "world_checks"]

WorldLike = str | os.PathLike[str] | WorldSpec | World


def spec_of(world: WorldLike) -> WorldSpec:
    """The spec of a world file's path, a parsed spec, or a world (its spec: episodes start
    from the spec's genesis, never from the world's current state)."""
    if isinstance(world, World):
        return world.spec
    if isinstance(world, WorldSpec):
        return world
    if isinstance(world, str | os.PathLike):
        from faultbench.kernel.lowlevel import load_spec

        return load_spec(world)
    raise TypeError(
        f"Expected a world file's path, a WorldSpec or a World. Instead, received: {world!r}"
    )


def world_checks(spec: WorldSpec, checks: Checks | Mapping[str, Any] | None) -> Checks:
    """The world file's checks, with `checks` (a `Checks`, or the world file's top-level keys
    as a dict, as `@pytest.mark.checks` takes them) added."""
    if checks is None:
        return spec.checks
    if not isinstance(checks, Checks):
        tables = {name: [f.name for f in r.fields] for name, r in spec.records.items()}
        checks = Checks.parse(checks, tools=list(spec.operations), tables=tables)
    return spec.checks.merged(checks)


@dataclass(frozen=True)
class Graded:
    """A finished run's grade as a reward: `passed` when no expectation or policy broke;
    `reward` the milestone score (0 when something broke), or 1/0 by `passed` without
    milestones; `grade` the kernel's `Grade` (None: the run had no checks, so it passed)."""

    reward: float
    passed: bool
    score: float | None = None
    grade: Grade | None = None

    @property
    def violations(self) -> tuple[str, ...]:
        return () if self.grade is None else tuple(v.message for v in self.grade.violations)


def grade_of(world: World, checks: Checks) -> Graded:
    """The run of `world` graded on `checks` (the kernel's `Trace.grade`, as the pytest
    plugin grades a run)."""
    if not checks:
        return Graded(1.0, True)
    g = world.trace.grade(checks)
    return Graded(g.reward, g.ok, g.score, g)


class ActionError(ValueError):
    """An action that is neither a tool call nor a reply."""


def as_action(action: Any) -> ToolCall | Reply:
    """A `ToolCall` or `Reply` from what `step` takes: one of them, a dict (`{"tool": name,
    "args": {...}}` or `{"reply": text}`), or that dict as JSON text (the action space)."""
    if isinstance(action, ToolCall | Reply):
        return action
    if isinstance(action, str | bytes):
        try:
            action = json.loads(action)
        except ValueError as exc:
            raise ActionError(
                'Expected an action as JSON: {"tool": "<name>", "args": {...}} or '
                f'{{"reply": "<text>"}}. Instead, received text that is not JSON ({exc}).'
            ) from None
    if isinstance(action, Mapping):
        if set(action) <= {"tool", "args"} and isinstance(action.get("tool"), str):
            args = action.get("args") or {}
            if isinstance(args, Mapping):
                return ToolCall(action["tool"], dict(args))
        elif set(action) == {"reply"} and isinstance(action["reply"], str):
            return Reply(action["reply"])
    shown = repr(action)
    shown = shown if len(shown) <= 200 else shown[:197] + "..."
    raise ActionError(
        'Expected {"tool": "<name>", "args": {...}} (or a ToolCall) for a tool call, or '
        f'{{"reply": "<text>"}} (or a Reply) to end the episode. Instead, received: {shown}'
    )


@dataclass
class Step:
    """What one step returns, before Gymnasium's shape."""

    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any] = field(default_factory=dict)


class Episode:
    """One run of a world as an episode. `start(seed, run)` begins it; `step(action)` plays
    one action; `fork()` is an independent copy from this exact state."""

    def __init__(
        self,
        spec: WorldSpec,
        *,
        prompt: str = "",
        faults: bool = True,
        max_steps: int = 50,
        checks: Checks | Mapping[str, Any] | None = None,
        principal: str | None = None,
        otel: Any = None,
    ):
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"Expected max_steps >= 1. Instead, received: {max_steps!r}")
        self.spec = spec
        self.prompt = prompt
        self.faults = bool(faults)
        self.max_steps = max_steps
        self.checks = world_checks(spec, checks)
        self.principal = principal
        #: export each finished episode as OpenTelemetry spans (`faultbench.otel`): a
        #: TracerProvider, or True for the global one
        self.otel = otel
        self.world: World | None = None
        self.calls: WorldCalls | None = None
        self.seen: list[Seen] = []
        self.steps = 0
        self.done = False
        self.graded: Graded | None = None
        self.reply: str | None = None

    # --- start ------------------------------------------------------------------------------

    def start(self, seed: int, run: int) -> tuple[str, dict[str, Any]]:
        """Run `run` of the world at `seed`, from the spec's genesis: its first observation
        (the prompt and the tools as JSON text) and info."""
        self.world = World.from_spec(self.spec, seed=seed, run=run, faults=self.faults)
        self.calls = WorldCalls(self.world, principal=self.principal)
        self.seen = []
        self.steps = 0
        self.done = False
        self.graded = None
        self.reply = None
        tools = self.calls.tools_wire()
        observation = json.dumps({"prompt": self.prompt, "tools": tools}, ensure_ascii=False)
        info = {"prompt": self.prompt, "tools": tools, "seed": seed, "run": run}
        return observation, self._stamp(info)

    def _stamp(self, info: dict[str, Any]) -> dict[str, Any]:
        world = self._world()
        info["state_hash"] = world.state_hash()
        info["events"] = len(world.events)
        return info

    def _world(self) -> World:
        if self.world is None:
            raise RuntimeError("Expected reset() before step(); the episode has not started")
        return self.world

    # --- steps ------------------------------------------------------------------------------

    def step(self, action: Any) -> Step:
        world = self._world()
        assert self.calls is not None
        if self.done:
            raise RuntimeError(
                "Expected reset() after the episode ended (a reply, or max_steps reached); "
                "step() was called again"
            )
        self.steps += 1
        info: dict[str, Any] = {"step": self.steps}
        try:
            act = as_action(action)
        except ActionError as exc:
            observation = str(exc)
            info["error"] = "invalid_action"
            info["result"] = None
        else:
            if isinstance(act, Reply):
                self.reply = act.text
                return self._end(act.text, info, terminated=True)
            out, outcome = self.calls.answer_now(world, act.tool, act.args)
            result = outcome if isinstance(outcome, CallResult) else None
            observation = out["content"][0]["text"]
            failed = bool(out.get("isError"))
            info["result"] = result
            info["is_error"] = failed
            if failed:
                info["error"] = (
                    result.error_kind if result is not None else getattr(outcome, "kind", None)
                )
            if result is not None and result.fault is not None:
                info["fault"] = result.fault
                if result.fault in SURFACE_KINDS:
                    info["tools"] = self.calls.tools_wire()
            self.seen.append(seen_result(act.tool, act.args, observation, failed=failed))
        if self.steps >= self.max_steps:
            return self._end(observation, info, terminated=False)
        return Step(observation, 0.0, False, False, self._stamp(info))

    def _end(self, observation: str, info: dict[str, Any], *, terminated: bool) -> Step:
        self.done = True
        graded = self.graded = grade_of(self._world(), self.checks)
        info["passed"] = graded.passed
        info["score"] = graded.score
        info["violations"] = graded.violations
        if self.otel is not None and self.otel is not False:
            from faultbench.otel import export_run

            export_run(self._world(), None if self.otel is True else self.otel)
        return Step(observation, graded.reward, terminated, not terminated, self._stamp(info))

    # --- forks ------------------------------------------------------------------------------

    def fork(self) -> Episode:
        """An independent episode from this exact state: its world a fork of this one's (the
        parent is not touched), the calls seen so far, the step count."""
        world = self._world()
        other = Episode.__new__(Episode)
        other.__dict__.update(self.__dict__)
        # the fork carries the run index and fault switch of its parent: the same fault plan
        other.world = world.fork()
        other.calls = WorldCalls(other.world, principal=self.principal)
        other.seen = list(self.seen)
        return other

    def results(self) -> list[CallResult]:
        return self._world().trace.calls
