"""Tool-surface changes as state: what `rug_pull`, `tool_removed`, `tool_added`,
`renamed_args` and `lying_annotations` did to the tools an agent sees, folded from the log.

A surface fault is decided like any fault (`(seed, run, operation, k)`), executed after the
k-th call's operation ran (`_calls/_surface.py` works out the change against the tools of
that moment), and logged as `FaultInjected` whose `detail["surface"]` says the change in
plain JSON. The reducer folds it into `State.surface` with `fold` below, so the tool list at
any point of a run is a function of the state, and a replay rebuilds it from the log alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import immutables
import msgspec

__all__ = ["SURFACE_KINDS", "ToolChange", "fold", "surface_digest_items"]

#: the fault kinds that change the tool surface (their effect is "surface")
SURFACE_KINDS = frozenset(
    {"rug_pull", "tool_removed", "tool_added", "renamed_args", "lying_annotations"}
)


class ToolChange(msgspec.Struct, frozen=True, gc=False):
    """What has happened to one tool name so far in a run (`State.surface[name]`)."""

    #: order of the name's first change: added tools are listed in this order, after the rest
    n: int
    #: tool_removed: the name is gone (calls to it are unknown tools)
    removed: bool = False
    #: rug_pull / tool_added: the description shown now (None: the original)
    description: str | None = None
    #: renamed_args: (original argument name, name shown now), in renaming order
    renamed: tuple[tuple[str, str], ...] = ()
    #: tool_added: the world's tool this one copies (its schema and kind); None for a tool
    #: of the world file
    copy_of: str | None = None
    #: lying_annotations: the tool is listed with hints that say it only reads
    lying: bool = False

    def shown_name(self, original: str) -> str:
        """The name an argument called `original` has now."""
        for old, new in self.renamed:
            if old == original:
                return new
        return original


_NONE: immutables.Map[str, ToolChange] = immutables.Map()


def fold(surface: immutables.Map[str, ToolChange], change: Any) -> immutables.Map[str, ToolChange]:
    """`surface` after one logged change (`FaultInjected.detail["surface"]`, or None when the
    fault found nothing to change). Total: a change that is not of the logged shape (a log
    edited by hand) changes nothing; replay's own checks say what is wrong with it."""
    if not isinstance(change, Mapping) or not isinstance(change.get("tool"), str):
        return surface
    name: str = change["tool"]
    before = surface.get(name)
    now = before if before is not None else ToolChange(n=len(surface))
    if change.get("removed") is True:
        now = msgspec.structs.replace(now, removed=True)
    description = change.get("description")
    if isinstance(description, str):
        now = msgspec.structs.replace(now, description=description)
    if change.get("lying") is True:
        now = msgspec.structs.replace(now, lying=True)
    copy_of = change.get("copy_of")
    if isinstance(copy_of, str):
        # added (again): a fresh tool under this name, whatever it was before
        now = ToolChange(n=now.n, description=now.description, copy_of=copy_of)
    renamed = change.get("renamed")
    if (
        isinstance(renamed, list | tuple)
        and len(renamed) == 2
        and all(isinstance(x, str) for x in renamed)
    ):
        old, new = renamed
        kept = tuple((o, n) for o, n in now.renamed if o != old)
        now = msgspec.structs.replace(now, renamed=(*kept, (old, new)))
    return surface.set(name, now)


def surface_digest_items(surface: immutables.Map[str, ToolChange]) -> list[Any]:
    """The surface as sorted plain data, for the state hash."""
    return sorted((name, msgspec.to_builtins(c)) for name, c in surface.items())


def empty_surface() -> immutables.Map[str, ToolChange]:
    return _NONE
