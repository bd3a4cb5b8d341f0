"""`faultbench serve --events FILE`: the event log, written as it grows, append-only.

Durability: every call's events are appended and flushed to the operating system before the
agent gets its answer, and so is every control action before its HTTP answer. A server
killed at any moment (SIGKILL included) leaves a file that holds every answered call; at
worst its last line is cut short (the write in flight), which `faultbench replay` reports
and replays past only with `--partial`. The file is not fsynced: a machine that loses power
can lose what the OS had not written yet.

The file only grows. A reset or a restore moves the world's log back: the journal appends a
`LogRewound` line (the log keeps its first `seq` events) and then the events of the log from
there on, so the file never has to be rewritten, and a kill during a reset or restore
loses nothing. Readers (`decode_events`, `faultbench replay`, `faultbench diff`) apply the
rewinds and see the world's log as it was at the end.

With `--isolate`, each session's world is logged to its own file next to FILE
(`events.jsonl` -> `events.<session>.jsonl`); a fork's log starts with its parent's events,
so each file still replays alone.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from faultbench.kernel import CallResult, Event, LogRewound, World, encode_events

if TYPE_CHECKING:
    from ._server import WorldServer


class Journal:
    """One world's event log, mirrored to one append-only file."""

    def __init__(self, path: str | os.PathLike[str], world: World):
        self.path = Path(path)
        self.world = world
        self._file = open(self.path, "wb")  # noqa: SIM115 - lives as long as the server
        #: the log the file holds now (a view that never changes)
        self._written: Sequence[Event] = ()
        self.sync()

    def sync(self, *, rewritten: bool = False) -> None:
        """Append what the world logged since the last sync. A log that moved back (a reset
        or restore; `rewritten` is a hint, the journal sees it anyway) is a `LogRewound`
        line, then the events from the point where the file and the log part."""
        now = self.world.events
        done = self._written
        keep = len(done)
        if keep and (len(now) < keep or now[keep - 1] is not done[keep - 1]):
            keep = _shared_prefix(done, now)
            at = self.world.clock.now()
            self._file.write(encode_events([LogRewound(seq=keep, at=at)]))
        if len(now) > keep:
            self._file.write(encode_events(now[keep:]))
        self._file.flush()
        self._written = now

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


def _shared_prefix(a: Sequence[Event], b: Sequence[Event]) -> int:
    """How many first events two logs of one world share. Logs share events by identity
    (a snapshot's log is a prefix of the log it was taken from), and once two logs part they
    never share an event again, so the boundary can be found by bisection."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] is b[mid]:
            lo = mid + 1
        else:
            hi = mid
    return max(lo, 1)  # event 0 (WorldCreated) is never undone


class Journals:
    """The journals of a server: its shared world and, with --isolate, each session's."""

    def __init__(self, path: str | os.PathLike[str], world: World):
        self.path = Path(path)
        self._by_world: dict[int, Journal] = {id(world): Journal(self.path, world)}

    def add_session(self, session: str, world: World) -> None:
        safe = "".join(c for c in session if c.isalnum() or c in "-_")[:64] or "session"
        path = self.path.with_name(f"{self.path.stem}.{safe}{self.path.suffix or '.jsonl'}")
        self._by_world[id(world)] = Journal(path, world)

    def sync(self, world: World, *, rewritten: bool = False) -> None:
        journal = self._by_world.get(id(world))
        if journal is not None:
            journal.sync(rewritten=rewritten)

    def drop(self, world: World) -> None:
        """Stop logging a session's world (it ended); its file stays, complete."""
        journal = self._by_world.pop(id(world), None)
        if journal is not None:
            journal.sync()
            journal.close()

    def after_call(self, world: World, result: CallResult) -> None:
        self.sync(world)

    def close(self) -> None:
        for journal in self._by_world.values():
            journal.close()

    def attach(self, server: WorldServer) -> Journals:
        """Log every call `server` answers, and every session world it creates."""
        server.after_call.append(self.after_call)
        server.on_new_world.append(self.add_session)
        return self
