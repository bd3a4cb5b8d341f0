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

import functools
import inspect
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from faultbench.kernel import CallResult, Trace, World, WorldSpec, using_world

from .._gate._runs import derive_seed
from ._mocks import MockTool, MockToolRegistry
from ._personas import Message, Persona, SimulatedUser, as_user
from ._repeat import current_run, is_async, not_awaited

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
    ):
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise ValueError(f"Expected max_turns >= 1. Instead, received: {max_turns!r}")
        if persona is not None and not isinstance(persona, Persona):
            raise TypeError(f"Expected a Persona (or None). Instead, received: {persona!r}")
        self.persona = persona
        self.user: SimulatedUser = as_user(user, persona)
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
) -> Callable[[Callable[..., Any]], Callable[..., ScenarioResult | Awaitable[ScenarioResult]]]:
    """Decorate an agent function `agent(conv, *args, **kwargs) -> reply`; calling the result
    runs one conversation and returns a `ScenarioResult` (awaitable for an async agent).

    - `persona`: who the user is; `user`: what they say (a list of messages, a function of
      the transcript, `ScriptedUser`, or `LLMUser(model)`, which plays `persona`).
    - `world`: a world file's path, a `WorldSpec`, a `World` (forked per conversation), or
      None (a world without records). `mock_tools`: tools defined in code to add to it.
    - `faults`: fault rules (a `faults:` block); None: no faults; True: the world file's.
    - `max_turns`: user messages at most. `seed`: the world's seed (default: the file's).
    - `check(result)`: decides `passed` (return False or raise to fail the conversation).
    """
    setup = _Setup(persona, mock_tools, faults, world, max_turns, seed, user, check)

    def decorate(agent: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(agent):
            raise TypeError(f"Expected an agent function. Instead, received: {agent!r}")

        if is_async(agent):

            @functools.wraps(agent)
            async def aconverse(*args: Any, **kwargs: Any) -> ScenarioResult:
                w, seed_ = setup.new_world()
                s = _State(setup, w, seed_)
                with using_world(w):
                    for turn in range(setup.max_turns):
                        said = await setup.user.areply(s.transcript, seed=seed_ + turn)
                        conv = s.user_says(said, turn)
                        if conv is None:
                            break
                        try:
                            value = await agent(conv, *args, **kwargs)
                        except Exception as exc:
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
                    said = setup.user.reply(s.transcript, seed=seed_ + turn)
                    conv = s.user_says(said, turn)
                    if conv is None:
                        break
                    try:
                        value = agent(conv, *args, **kwargs)
                    except Exception as exc:
                        s.failed(turn, exc)
                        break
                    if inspect.isawaitable(value):
                        raise not_awaited(agent, value)
                    if s.agent_says(value, conv):
                        break
            return setup.finish(s.result())

        return converse

    return decorate


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
