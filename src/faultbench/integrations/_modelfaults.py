"""What the frameworks' model wrappers share: when to wrap, and how an answer is broken.

A wrapper sits between a framework's agent and its model. Before each request it asks the
world for the call's decision (`World.model_call`: logged, clock moved); an error kind is
raised as the framework's own provider error, so the framework's retry and error handling is
what runs; an answer kind (`stream_cut`, `malformed_tool_call`, `empty_completion`) breaks
the real answer with the helpers below. After the answer it logs the usage the framework
reported (`World.model_used`).
"""

from __future__ import annotations

import json
from typing import Any

from faultbench.kernel import World
from faultbench.kernel.lowlevel import MODEL_KINDS

from ._run import InProcess, Target

__all__ = ["ERROR_KINDS", "cut", "drop_required", "model_world", "unparsable"]

#: model fault kinds raised as errors before the model is asked
ERROR_KINDS = frozenset(k.name for k in MODEL_KINDS if k.fails)


def model_world(where: Target, world: World | None = None) -> World | None:
    """The world whose plan decides the model's faults and logs its usage: `world` if given,
    else an in-process target's world, when its rules have a `model:` key (a stdio or HTTP
    world lives in another process and cannot see this one's model calls: pass
    `model_faults_world=`)."""
    if world is None and isinstance(where, InProcess):
        world = where.world
    if world is None:
        return None
    # A `model:` rule, even an empty one (`model: {}`, what a `budget` marker puts in force),
    # means: log every model call and its usage, faults or none.
    return world if "model" in world.fault_rules else None


def cut(text: str) -> str:
    """The first half of `text`: what a stream cut off mid-answer delivered."""
    return text[: len(text) // 2]


def unparsable(args: Any) -> str:
    """Tool call arguments that are not JSON: the object's text without its last character
    (an unclosed object), or `{` for none."""
    text = args if isinstance(args, str) else json.dumps(args or {})
    return text[:-1] if len(text) > 1 else "{"


def drop_required(args: Any, schema: dict[str, Any] | None) -> dict[str, Any]:
    """Tool call arguments without their first required field (or first field, when the
    schema requires none): valid JSON that fails the tool's schema."""
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            args = {}
    out: dict[str, Any] = dict(args) if isinstance(args, dict) else {}
    required = [f for f in (schema or {}).get("required", ()) if f in out]
    victim = required[0] if required else next(iter(out), None)
    if victim is not None:
        del out[victim]
    return out
