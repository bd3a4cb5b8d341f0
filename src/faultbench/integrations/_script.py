"""Scripted agents, framework-neutral: a policy maps what the agent has seen to its next step.

A real model reads the conversation and answers with a tool call or a reply. A policy does
the same from the tool results (`Seen`, oldest first) and the user's prompt (`History.prompt`),
which is all a scripted agent of a test needs. `scripted_model(policy)` in each framework module feeds a policy the results the
framework reports and turns its answer into the framework's model output.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["History", "Policy", "Reply", "Seen", "ToolCall", "seen_result"]


@dataclass(frozen=True)
class ToolCall:
    """The agent calls `tool` with `args`."""

    tool: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """The agent ends its run with `text`."""

    text: str


@dataclass(frozen=True)
class Seen:
    """One tool call the agent made and what came back, as the framework showed it.

    `ok` is False when the call failed (a fault, a missing record, a refused handler); `value`
    is the answer's JSON, or None when it failed or is not JSON (a `malformed_json` fault).
    """

    tool: str
    args: dict[str, Any]
    text: str
    ok: bool
    value: Any = None


class History(list[Seen]):
    """What a policy is handed: the tool calls so far and their results (`Seen`, oldest
    first), and `prompt`, what the user asked (the run's first user message), so that a
    scripted agent can act on an order id in the prompt as a model would."""

    def __init__(self, seen: Sequence[Seen] = (), prompt: str = ""):
        super().__init__(seen)
        self.prompt = prompt


Policy = Callable[[Sequence[Seen]], ToolCall | Reply]


def seen_result(tool: str, args: dict[str, Any], content: Any, *, failed: bool | None) -> Seen:
    """A `Seen` from a framework's tool result. `failed=None`: the framework does not say
    (the OpenAI Agents SDK hands an error's text to the model like any answer), so a result
    that is not JSON counts as a failure: faultbench answers every success with JSON."""
    if isinstance(content, str):
        text = content
        try:
            value = json.loads(content)
            parsed = True
        except ValueError:
            value, parsed = None, False
    else:
        text = json.dumps(content)
        value, parsed = content, True
    ok = parsed if failed is None else not failed
    return Seen(tool=tool, args=args, text=text, ok=ok, value=value if ok else None)
