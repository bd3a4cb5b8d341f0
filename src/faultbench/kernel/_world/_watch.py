"""Seams over a world's `Book` for shells that keep a world's log elsewhere (the serve
shell's `--events` journal): watch every change, and drop the in-memory log's old events.

Both are documented in `faultbench.kernel.lowlevel`; the user API has neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._store import EventLog
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


def keep_events(world: World, n: int | None) -> None:
    """Bound the memory of a long-lived `world`: keep only its latest events in its in-memory
    log, between `n` and `2 * n` of them (once it holds more than `2 * n`, it is cut to the
    last `n`: O(n) every n events). The world itself is untouched (its state, its hash, its
    next answers); what changes is what `world.events` holds: a window whose `first` is the
    seq of its oldest event (`len(world.events)` still counts every event, and reading one
    before `first` raises `IndexError`), and `world.trace` covers the calls of that window.
    A replay needs the whole log: keep it elsewhere, with a `watch_log` watcher that writes
    every change (the serve shell's --events journal, which --keep-events requires); each
    cut is shown to the watcher as a change of its own. A stale read (the `stale_read`
    fault) reaches back at most to the window's first event. A world with an `events:` feed
    cannot keep a window (ValueError). `None` keeps every event again (from
    now on; what was dropped stays dropped). A fork keeps every event unless told too."""
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"Expected a number of events of 1 or more. Instead, received: {n!r}")
    if n is not None and world.spec.feeds:
        raise ValueError(
            f"The world {world.name!r} has an events: feed, which list_events derives from the "
            "whole log, so it cannot keep only its latest events in memory."
        )
    book = world._book  # noqa: SLF001  (the kernel reaching its own Book)
    with book.lock:
        book.keep = n
        if n is not None:
            book._trim()  # noqa: SLF001  (the seam's one way in)
