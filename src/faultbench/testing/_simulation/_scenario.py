"""`scenario(...)`: a multi-turn conversation between a simulated user and the agent, in a
fresh world.

Turn by turn the user speaks (`SimulatedUser.reply`), then the agent answers: the decorated
function, called with a `Conversation` (the user's message, the transcript, the world and
its tools), returning its reply. The conversation ends after `max_turns`, when the user has
nothing more to say, when the agent calls `conv.end()`, or when the agent raises (a failed
conversation, not a crash of the caller). Each call of the decorated function is one
conversation in a new world, with the world's tool calls of each turn recorded.

Inside `repeat`, conversation i runs in a world with run index i (its own fault draws) and
gets run i's seed; the world is the current world (`faultbench.current_world()`) while the
conversation runs, so `fault_inject` charges it.
"""

from __future__ import annotations

import copy
import functools
import inspect
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from faultbench.kernel import CallResult, Trace, World, WorldSpec, using_world

from .._gate._runs import derive_seed
from ._agentresult import AgentResult
from ._mocks import MockTool, MockToolRegistry
from ._personas import Message, Persona, SimulatedUser, as_user
from ._repeat import current_run, fails_one_run, is_async, not_awaited
from ._turns import ScenarioConfig, TurnFaults, arun_turns, mock_map, run_turns

__all__ = ["AgentReply", "Conversation", "Message", "ScenarioResult", "Turn", "scenario"]


@dataclass(frozen=True)
class Turn:
    """One turn: what the user said, what the agent answered, and the tool calls it made."""

    index: int
    user: str
    reply: str | None
    tool_calls: list[CallResult] = field(default_factory=list)
    error: BaseException | None = None

    @property
    def tools(self) -> list[str]:
        return [c.tool for c in self.tool_calls]


@dataclass(frozen=True)
class AgentReply:
    """What an agent may return instead of a plain string: its reply, and `end=True` to end
    the conversation after it."""

    text: str
    end: bool = False


class Conversation:
    """What the agent function gets each turn: `message` (the user's latest), `transcript`,
    `turn` (0-based), `world` (call its tools: `conv.call(...)` / `await conv.acall(...)`,
    or serve it: `conv.mcp_server()`), `persona`, `seed` and `run`."""

    def __init__(
        self,
        world: World,
        transcript: list[Message],
        turn: int,
        persona: Persona | None,
        seed: int,
        run: int,
    ):
        self.world = world
        self.transcript = transcript
        self.turn = turn
        self.persona = persona
        self.seed = seed
        self.run = run
        self.ended = False
        self._server: Any = None

    @property
    def message(self) -> str:
        """The user's message this turn."""
        return self.transcript[-1].text

    @property
    def history(self) -> list[tuple[str, str]]:
        """The transcript as (role, text) pairs, this turn's user message last."""
        return [(m.role, m.text) for m in self.transcript]

    def call(self, tool: str, args: Mapping[str, Any] | None = None) -> CallResult:
        return self.world.call(tool, args)

    async def acall(self, tool: str, args: Mapping[str, Any] | None = None) -> CallResult:
        return await self.world.acall(tool, args)

    def mcp_server(self) -> Any:
        """An in-process MCP server (`faultbench.serve.WorldServer`) on this conversation's
        world, made once: hand it to an agent framework (`faultbench.integrations`)."""
        if self._server is None:
            # Imported here, as the pytest plugin's `mcp_server` fixture does: only a
            # conversation that serves its world pays for mcp.
            from faultbench.serve import build_server

            self._server = build_server(self.world)
        return self._server

    def end(self) -> None:
        """End the conversation after this turn."""
        self.ended = True

    def __repr__(self) -> str:
        return f"<Conversation turn {self.turn} in {self.world.name}: {self.message!r}>"


@dataclass
class ScenarioResult:
    """One conversation: its turns, transcript, world and verdict. `passed` is True when the
    agent never raised and `check` (if any) accepted the result; `error` is what failed it."""

    turns: list[Turn]
    transcript: list[Message]
    world: World
    persona: Persona | None
    seed: int
    run: int
    #: "max_turns", "user", "agent" (conv.end()), or "error"
    ended_by: str
    error: BaseException | None = None
    passed: bool = True
    #: the parameters the scenario ran with (Attest's `ScenarioResult.config`)
    config: ScenarioConfig | None = None
    #: one `AgentResult` per turn; None: made from `turns` when first read
    turn_results: list[AgentResult] | None = field(default=None, repr=False)

    @property
    def results(self) -> list[AgentResult]:
        """One `AgentResult` per turn (Attest's `ScenarioResult.results`)."""
        if self.turn_results is None:
            self.turn_results = [_turn_result(t) for t in self.turns]
        return self.turn_results

    @property
    def failed_turns(self) -> list[AgentResult]:
        """The turns that failed, each with its `turn` index and `error`."""
        return [r for r in self.results if not r.passed]

    @property
    def trace(self) -> Trace:
        """The world's trace: every tool call of the conversation."""
        return self.world.trace

    def __str__(self) -> str:
        verdict = "passed" if self.passed else "failed"
        head = f"Scenario {verdict}: {len(self.turns)} turn(s), ended by {self.ended_by}"
        if self.error is not None:
            head += f" ({type(self.error).__name__}: {self.error})"
        lines = [head]
        for t in self.turns:
            lines.append(f"  [{t.index}] user: {t.user}")
            if t.tool_calls:
                lines.append(f"      tools: {_call_line(t.tool_calls)}")
            if t.reply is not None:
                lines.append(f"      agent: {t.reply}")
        return "\n".join(lines)


def _turn_result(t: Turn) -> AgentResult:
    r = AgentResult.of(t.reply, turn=t.index, calls=t.tool_calls)
    if t.error is not None:
        return AgentResult(r.trace, passed=False, error=t.error, turn=t.index)
    return r


def _call_line(calls: list[CallResult]) -> str:
    """`get_order → issue_refund!timeout`, as `Trace.summary` writes a call line."""
    marks = (f"!{c.fault or c.error_kind}" if not c.ok or c.fault else "" for c in calls)
    return " → ".join(c.tool + mark for c, mark in zip(calls, marks))


def _reply_text(value: Any) -> tuple[str | None, bool]:
    """(reply text, end?) from what an agent returned."""
    if value is None:
        return None, False
    if isinstance(value, AgentReply):
        return value.text, value.end
    if isinstance(value, str):
        return value, False
    output = getattr(value, "output", None)  # a framework's run result (Pydantic AI, ...)
    if output is not None:
        return str(output), False
    final = getattr(value, "final_output", None)  # OpenAI Agents SDK's RunResult
    if final is not None:
        return str(final), False
    return str(value), False


Tools = MockToolRegistry | Mapping[str, Callable[..., Any]] | Iterable[MockTool] | None
WorldArg = str | os.PathLike[str] | WorldSpec | World | None


class _Setup:
    """What a scenario decorator fixed: the spec (world + tools), faults, user, limits."""

    def __init__(
        self,
        persona: Persona | None,
        mock_tools: Tools,
        faults: Any,
        world: WorldArg,
        max_turns: int,
        seed: int | None,
        user: Any,
        check: Callable[[ScenarioResult], Any] | None,
        fault_error_rate: float = 0.0,
        fault_latency_jitter_ms: int = 0,
    ):
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise ValueError(f"Expected max_turns >= 1. Instead, received: {max_turns!r}")
        if persona is not None and not isinstance(persona, Persona):
            raise TypeError(f"Expected a Persona (or None). Instead, received: {persona!r}")
        self.persona = persona
        #: None: Attest's style, the function called once a turn (`_turns.py`)
        self.user: SimulatedUser | None = None if user is None else as_user(user, persona)
        self.config = ScenarioConfig(
            persona=persona,
            mock_tools=mock_map(mock_tools),
            fault_error_rate=fault_error_rate,
            fault_latency_jitter_ms=fault_latency_jitter_ms,
            max_turns=max_turns,
            seed=seed,
        )
        self.turn_faults = TurnFaults(fault_error_rate, fault_latency_jitter_ms, "scenario")
        self.max_turns = max_turns
        self.seed = seed
        self.check = check
        self.faults = faults
        self.base_world: World | None = None
        registry = _registry(mock_tools)
        if isinstance(world, World):
            if registry:
                raise ValueError(
                    "Expected mock_tools with a world file or spec (the tools become part of "
                    "the world when it is created). Instead, received an existing World; pass "
                    "its spec: scenario(world=world.spec, mock_tools=...)."
                )
            self.base_world = world
            self.spec = world.spec
        else:
            base: WorldSpec | None
            if isinstance(world, str | os.PathLike):
                from faultbench.kernel.lowlevel import load_spec

                base = load_spec(world)
            else:
                base = world
            self.spec = (registry or MockToolRegistry()).spec(base)

    def new_world(self) -> tuple[World, int]:
        """A fresh world for one conversation, and the conversation's seed."""
        run = current_run()
        index = run.index if run is not None else 0
        if self.base_world is not None:
            world = self.base_world.fork(self.base_world.snapshot(), run=index)
        else:
            world = World.from_spec(self.spec, seed=self.seed, run=index)
        if self.faults is True:
            pass  # the world file's own block, already in force
        elif self.faults is not None:
            world.set_faults(self.faults)
        elif world.fault_rules:
            world.set_faults({})  # as the pytest plugin: faults only when asked for
        seed = run.seed if run is not None else derive_seed(world.seed, index)
        return world, seed

    def finish(self, result: ScenarioResult) -> ScenarioResult:
        if result.error is None and self.check is not None:
            try:
                verdict = self.check(result)
            except Exception as exc:
                result.error, result.passed = exc, False
            else:
                if verdict is False:
                    result.passed = False
        return result


def _registry(tools: Tools) -> MockToolRegistry | None:
    if tools is None:
        return None
    if isinstance(tools, MockToolRegistry):
        return tools if len(tools) else None
    registry = MockToolRegistry(tools)
    return registry if len(registry) else None


def scenario(
    persona: Persona | None = None,
    mock_tools: Tools = None,
    faults: Any = None,
    world: WorldArg = None,
    max_turns: int = 1,
    seed: int | None = None,
    *,
    user: Any = None,
    check: Callable[[ScenarioResult], Any] | None = None,
    fault_error_rate: float = 0.0,
    fault_latency_jitter_ms: int = 0,
) -> Callable[[Callable[..., Any]], Callable[..., ScenarioResult | Awaitable[ScenarioResult]]]:
    """Decorate an agent function `agent(conv, *args, **kwargs) -> reply`; calling the result
    runs one conversation and returns a `ScenarioResult` (awaitable for an async agent).

    Without `user`, Attest's style: the function (`fn(*args, persona=persona)`) is called
    once per turn and each turn gives an `AgentResult` (`result.results`); see `_turns.py`.

    - `persona`: who the user is; `user`: what they say (a list of messages, a function of
      the transcript, `ScriptedUser`, or `LLMUser(model)`, which plays `persona`).
    - `fault_error_rate`, `fault_latency_jitter_ms`: turn-level faults, decided per turn
      from (seed, run, turn): a failed turn (an `InjectedError`), virtual latency.
    - `world`: a world file's path, a `WorldSpec`, a `World` (forked per conversation), or
      None (a world without records). `mock_tools`: tools defined in code to add to it.
    - `faults`: fault rules (a `faults:` block); None: no faults; True: the world file's.
    - `max_turns`: user messages at most. `seed`: the world's seed (default: the file's).
    - `check(result)`: decides `passed` (return False or raise to fail the conversation).
    """
    shared = _Setup(
        persona,
        mock_tools,
        faults,
        world,
        max_turns,
        seed,
        user,
        check,
        fault_error_rate,
        fault_latency_jitter_ms,
    )

    def decorate(agent: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(agent):
            raise TypeError(f"Expected an agent function. Instead, received: {agent!r}")
        setup = copy.copy(shared)  # the turn faults are named after this function
        setup.turn_faults = TurnFaults(
            fault_error_rate, fault_latency_jitter_ms, getattr(agent, "__name__", "agent")
        )
        if setup.user is None:
            return _turn_by_turn(setup, agent)
        user = setup.user

        if is_async(agent):

            @functools.wraps(agent)
            async def aconverse(*args: Any, **kwargs: Any) -> ScenarioResult:
                w, seed_ = setup.new_world()
                s = _State(setup, w, seed_)
                with using_world(w):
                    for turn in range(setup.max_turns):
                        said = await user.areply(s.transcript, seed=seed_ + turn)
                        conv = s.user_says(said, turn)
                        if conv is None:
                            break
                        fault = s.turn_fault(turn)
                        if fault is not None:
                            s.failed(turn, fault)
                            break
                        try:
                            value = await agent(conv, *args, **kwargs)
                        except BaseException as exc:
                            if not fails_one_run(exc):
                                raise
                            s.failed(turn, exc)
                            break
                        if s.agent_says(value, conv):
                            break
                return setup.finish(s.result())

            return aconverse

        @functools.wraps(agent)
        def converse(*args: Any, **kwargs: Any) -> ScenarioResult:
            w, seed_ = setup.new_world()
            s = _State(setup, w, seed_)
            with using_world(w):
                for turn in range(setup.max_turns):
                    said = user.reply(s.transcript, seed=seed_ + turn)
                    conv = s.user_says(said, turn)
                    if conv is None:
                        break
                    fault = s.turn_fault(turn)
                    if fault is not None:
                        s.failed(turn, fault)
                        break
                    try:
                        value = agent(conv, *args, **kwargs)
                    except BaseException as exc:
                        if not fails_one_run(exc):
                            raise
                        s.failed(turn, exc)
                        break
                    if inspect.isawaitable(value):
                        raise not_awaited(agent, value)
                    if s.agent_says(value, conv):
                        break
            return setup.finish(s.result())

        return converse

    return decorate


def _turn_by_turn(setup: _Setup, fn: Callable[..., Any]) -> Callable[..., Any]:
    if is_async(fn):

        @functools.wraps(fn)
        async def aturns(*args: Any, **kwargs: Any) -> ScenarioResult:
            result: ScenarioResult = await arun_turns(setup, fn, args, kwargs, Turn, ScenarioResult)
            return result

        return aturns

    @functools.wraps(fn)
    def turns(*args: Any, **kwargs: Any) -> ScenarioResult:
        result: ScenarioResult = run_turns(setup, fn, args, kwargs, Turn, ScenarioResult)
        return result

    return turns


class _State:
    """One conversation in progress (shared by the sync and async loops)."""

    def __init__(self, setup: _Setup, world: World, seed: int):
        self.setup = setup
        self.world = world
        self.seed = seed
        self.transcript: list[Message] = []
        self.turns: list[Turn] = []
        self.ended_by = "max_turns"
        self.error: BaseException | None = None
        self.calls_before = 0
        self.said = ""

    def user_says(self, said: str | None, turn: int) -> Conversation | None:
        if said is None:
            self.ended_by = "user"
            return None
        self.said = said
        self.transcript.append(Message("user", said, turn))
        self.calls_before = len(self.world.trace)
        return Conversation(
            self.world, list(self.transcript), turn, self.setup.persona, self.seed, self.world.run
        )

    def _calls(self) -> list[CallResult]:
        return self.world.trace.calls[self.calls_before :]

    def turn_fault(self, turn: int) -> BaseException | None:
        setup = self.setup
        seed = setup.seed if setup.seed is not None else self.seed
        return setup.turn_faults.before(self.world, seed, turn, setup.max_turns)

    def failed(self, turn: int, exc: BaseException) -> None:
        self.turns.append(Turn(turn, self.said, None, self._calls(), exc))
        self.error, self.ended_by = exc, "error"

    def agent_says(self, value: Any, conv: Conversation) -> bool:
        """Record the agent's answer; True when the conversation ends here."""
        text, end = _reply_text(value)
        if text is not None:
            self.transcript.append(Message("agent", text, conv.turn))
        self.turns.append(Turn(conv.turn, self.said, text, self._calls()))
        if end or conv.ended:
            self.ended_by = "agent"
            return True
        return False

    def result(self) -> ScenarioResult:
        return ScenarioResult(
            config=self.setup.config,
            turns=self.turns,
            transcript=self.transcript,
            world=self.world,
            persona=self.setup.persona,
            seed=self.seed,
            run=self.world.run,
            ended_by=self.ended_by,
            error=self.error,
            passed=self.error is None,
        )
