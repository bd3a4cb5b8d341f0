"""Seams over a world's `Book` for shells that keep a world's log elsewhere (the serve
shell's `--events` journal): watch every change, and drop the in-memory log's old events.

Both are documented in `faultbench.kernel.lowlevel`; the user API has neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._store._log import EventLog
    from ._world import World


def watch_log(world: World, watcher: Callable[[EventLog], None] | None) -> None:
    """Call `watcher(log)` after every change to `world` (a call or a batch of calls, a
    table or clock write, a reset, a restore, new fault rules), under the world's lock,
    before anyone else can see the change, with the world's log as it now is. If `watcher`
    raises, the change is undone (records, clock and log go back to what they were before
    it) and the exception reaches whoever made the change (`world.call` raises it instead
    of returning a result). `None` stops watching. One watcher per world; a fork starts
    unwatched."""
    world._book.watcher = watcher  # noqa: SLF001  (the kernel reaching its own Book)
