"""`faultbench serve --events FILE`: the event log, written as it grows.

Every call's events are appended and flushed before the agent gets its answer, so a server
killed with SIGKILL loses at most the call in flight; the file replays on its own
(`faultbench replay FILE`) because event 0 names the world file. A control action that
rewrites history (reset, restore) rewrites the file.

With `--isolate`, each session's world is logged to its own file next to FILE
(`events.jsonl` -> `events.<session>.jsonl`); a fork's log starts with its parent's events,
so each file still replays alone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from faultbench.kernel import encode_events


class Journal:
    """One world's event log, mirrored to one file."""

    def __init__(self, path: str | os.PathLike[str], world: Any):
        self.path = Path(path)
        self.world = world
        self._file = open(self.path, "wb")  # noqa: SIM115 - lives as long as the server
        self._next = 0  # seq of the first event not yet written
        self.sync()

    def sync(self, *, rewritten: bool = False) -> None:
        if rewritten:
            self._file.seek(0)
            self._file.truncate()
            self._next = 0
        # Asking from one before and filtering works whether `events_since` is inclusive.
        since = max(self._next - 1, 0)
        events = [e for e in self.world.events_since(since) if e.seq >= self._next]
        if events:
            self._file.write(encode_events(events))
            self._file.flush()
            self._next = events[-1].seq + 1

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


class Journals:
    """The journals of a server: its shared world and, with --isolate, each session's."""

    def __init__(self, path: str | os.PathLike[str], world: Any):
        self.path = Path(path)
        self._by_world: dict[int, Journal] = {id(world): Journal(self.path, world)}

    def add_session(self, session: str, world: Any) -> None:
        safe = "".join(c for c in session if c.isalnum() or c in "-_")[:64] or "session"
        path = self.path.with_name(f"{self.path.stem}.{safe}{self.path.suffix or '.jsonl'}")
        self._by_world[id(world)] = Journal(path, world)

    def sync(self, world: Any, *, rewritten: bool = False) -> None:
        journal = self._by_world.get(id(world))
        if journal is not None:
            journal.sync(rewritten=rewritten)

    def drop(self, world: Any) -> None:
        """Stop logging a session's world (it ended); its file stays, complete."""
        journal = self._by_world.pop(id(world), None)
        if journal is not None:
            journal.sync()
            journal.close()

    def after_call(self, world: Any, result: Any) -> None:
        self.sync(world)

    def close(self) -> None:
        for journal in self._by_world.values():
            journal.close()

    def attach(self, server: Any) -> Journals:
        """Log every call `server` answers, and every session world it creates."""
        server.after_call.append(self.after_call)
        server.on_new_world.append(self.add_session)
        return self
