"""`faultbench serve --events FILE`: the event log, written as it grows, append-only.

The journal is the acknowledgement. Every change to a served world (a call or a batch of
calls, a control action) is written to the file and flushed to the operating system before
it takes effect for anyone: the journal watches the world's log through the kernel's
`lowlevel.watch_log` seam, and when the write fails (the disk is full, too many open files,
an I/O error, the file was deleted) the kernel undoes the change, the agent or the control
client gets a server error naming the cause, and the server goes on. The journal says so
once in the server's log; every later change of that world is refused the same way until a
write works again (space was freed, the file can be opened again), which the log also says
once. A failed write leaves nothing in the file: what it may have written is cut off again
(or before the next write, if even that failed), so the file stays whole lines.

A server killed at any moment (SIGKILL included) leaves a file that holds every answered
call and control action; at worst its last line is cut short (the write in flight, never
answered), which `faultbench replay` reports and replays past only with `--partial`. The
file is not fsynced unless the server runs with `--fsync`: without it, a machine that loses
power can lose what the operating system had not written yet.

The file only grows. A reset or a restore moves the world's log back: the journal appends a
`LogRewound` line (the log keeps its first `seq` events) and then the events of the log from
there on, so the file never has to be rewritten, and a kill during a reset or restore
loses nothing. Readers (`decode_events`, `faultbench replay`, `faultbench diff`) apply the
rewinds and see the world's log as it was at the end. If the file is deleted while the
server runs, the next change writes the whole log to a new file at the same path.

With `--keep-events N`, the world keeps only a window of its latest events in memory
(`lowlevel.keep_events`); the file still gets every event. A cut of the window is shown to
the journal as a change that writes nothing, so the journal knows which windows begin with
what the file holds. A reset, or a restore to a snapshot taken before a cut, rewrites from
the point the journal can see the logs part (at worst from event 1); a restore to a snapshot
whose window began where the file no longer agrees (the log went back before that window
since) is refused with the reason, as is rebuilding a deleted file once events are dropped.

With `--isolate`, each session's world is logged to its own file next to FILE
(`events.jsonl` -> `events.<session>.jsonl`), opened when the session begins: a session
whose file cannot be opened is refused then (503), never served without a journal. A
fork's log starts with its parent's events, so each file still replays alone.

With `--state FILE` (stdio), FILE is such a journal shared by every server of one world, which
take turns at it under a lock (`StateFile`, the last section): a server resumes the world
from the file, and folds in what the others appended before each call.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sys
import time
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import BinaryIO, Protocol

from faultbench.kernel import Event, EventLog, LogRewound, World, encode_events
from faultbench.kernel.lowlevel import Cut, watch_log
from faultbench.kernel.lowlevel import keep_events as keep_events_of


class _MakesWorlds(Protocol):
    """What `Journals.attach` needs of a `WorldServer` (which imports this module)."""

    on_new_world: list[Callable[[str, World], None]]


log = logging.getLogger("faultbench.serve")


# ---------------------------------------------------------------------------------------------
# One world's journal: a file that takes every change before it is made
# ---------------------------------------------------------------------------------------------


class JournalError(Exception):
    """A change could not be written to its world's journal, so it was not made. The
    message names the file and the operating system's reason."""

    def __init__(self, path: Path, exc: OSError, doing: str = "write"):
        name = errno.errorcode.get(exc.errno or 0, "")
        reason = exc.strerror or str(exc)
        self.cause = f"{reason} ({name})" if name else reason
        #: what failed, in one line
        self.summary = f"cannot {doing} the event journal {path} (--events): {self.cause}"
        super().__init__(
            f"{self.summary}. The change was not made; this world refuses changes until its "
            "journal can be written again."
        )
        self.path = path
        self.errno = exc.errno


#: how a journal file is opened: for writing, truncated
Opener = Callable[[Path], BinaryIO]


def _open(path: Path) -> BinaryIO:
    """`path` truncated, unbuffered: each journal write is one `write`, whose failure leaves
    nothing behind in a buffer to reach the file later."""
    return open(path, "wb", buffering=0)


class Journal:
    """One world's event log, mirrored to one append-only file."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        world: World,
        *,
        fsync: bool = False,
        file: BinaryIO | None = None,
        opener: Opener | None = None,
        parent: Journal | None = None,
        holds: int | None = None,
    ):
        """`parent`: the journal of the world `world` was forked from, whose file starts
        this one when `world`'s log no longer holds its first events (--keep-events).
        `holds`: `file` (opened for appending) already holds `world`'s whole log in its
        first `holds` bytes (`serve --state`, resuming a world from its file)."""
        self.path = Path(path)
        self.world = world
        self.fsync = fsync
        self._opener = opener or _open
        try:
            self._file: BinaryIO | None = self._opener(self.path) if file is None else file
        except OSError as exc:
            raise JournalError(self.path, exc, "open") from None
        self._size = 0  # bytes of whole lines in the file
        self._cut = False  # a failed write may have left bytes past `_size`
        #: the log the file holds now (a view that never changes)
        self._written: Sequence[Event] = ()
        #: windows of the log (`EventLog.window`) whose events before them are the file's
        self._windows: weakref.WeakSet[Cut] = weakref.WeakSet()
        #: why the last write failed (None: it worked)
        self.failing: str | None = None
        if holds is not None:
            self.caught_up(holds)
        try:
            if parent is not None and world.events.first:
                self._start_from(parent)
            self.record(world.events)
        except JournalError:
            self.close()
            raise
        watch_log(world, self.record)

    def _start_from(self, parent: Journal) -> None:
        """Begin the file with the parent's: the whole lines it holds are the log this
        world's continues (a fork shares its parent's events), older events included."""
        assert self._file is not None
        try:
            with open(parent.path, "rb") as source:
                left = parent._size
                while left:
                    chunk = source.read(min(left, 1 << 20))
                    if not chunk:
                        raise OSError(errno.EIO, f"{parent.path} is shorter than it was written")
                    left -= len(chunk)
                    view = memoryview(chunk)
                    while view:
                        n = self._file.write(view)
                        if not n:
                            raise OSError(errno.EIO, "the file took no bytes")
                        view = view[n:]
        except OSError as exc:
            raise JournalError(self.path, exc) from None
        self._size = parent._size
        self._written = parent._written
        self._windows = weakref.WeakSet(parent._windows)

    def record(self, now: Sequence[Event]) -> None:
        """Append what `now` (the world's log) holds beyond what the file has. A log that
        moved back (a reset or restore) is a `LogRewound` line, then the events from the
        point where the file and the log part. Raises `JournalError` if the file cannot
        take it (then the file is as it was)."""
        try:
            file = self._writable()
            data = self._encode(now)
            if data:
                view = memoryview(data)
                while view:
                    n = file.write(view)
                    if not n:
                        raise OSError(errno.EIO, "the file took no bytes")
                    view = view[n:]
                if self.fsync:
                    os.fsync(file.fileno())
                if os.fstat(file.fileno()).st_nlink == 0:
                    raise FileNotFoundError(errno.ENOENT, "the file was deleted")
        except OSError as exc:
            self._cut = True
            self._repair()
            if exc.errno == errno.ENOENT and self._file is not None:
                self._file.close()
                self._file = None  # reopened (and written whole) on the next change
            error = JournalError(self.path, exc)
            if self.failing is None:
                log.error("%s", error)
            self.failing = error.cause
            raise error from None
        self._size += len(data)
        self._written = now
        window = now.window if isinstance(now, EventLog) else None
        if window is not None:
            self._windows.add(window)
        if self.failing is not None:
            log.warning("the event journal %s is written again", self.path)
            self.failing = None

    @property
    def size(self) -> int:
        """Bytes of whole lines the file holds (what this journal wrote or was told of)."""
        return self._size

    def caught_up(self, size: int) -> None:
        """The file holds the world's log as it is now, in its first `size` bytes: events
        another process wrote were folded into the world (`serve --state`)."""
        self._size = size
        self._written = self.world.events

    def _writable(self) -> BinaryIO:
        if self._file is None:  # the file was deleted: start a new one, with the whole log
            self._file = self._opener(self.path)
            self._size, self._cut, self._written = 0, False, ()
        if self._cut and not self._repair():
            raise OSError(errno.EIO, "cannot cut off the end of a failed write")
        return self._file

    def _repair(self) -> bool:
        """Cut off what a failed write left past the last whole line."""
        file = self._file
        if file is None or not self._cut:
            return True
        try:
            os.ftruncate(file.fileno(), self._size)
            file.seek(self._size)
        except OSError:
            return False
        self._cut = False
        return True

    def _encode(self, now: Sequence[Event]) -> bytes:
        done = self._written
        keep = len(done)
        out = b""
        if keep and (len(now) < keep or not _same(done, now, keep - 1)):
            keep = self._rewind_point(done, now)
            out = encode_events([LogRewound(seq=keep, at=self.world.clock.now())])
            for window in list(self._windows):  # the file no longer agrees before them
                if window.seq > keep:
                    self._windows.discard(window)
        elif keep < _first(now):
            # an empty or a new file, and the log's first events are gone from memory
            raise OSError(
                0,
                f"the file lacks events before seq {_first(now)}, and this world no longer "
                "holds them in memory (--keep-events): the journal cannot be rebuilt; "
                "restart the server",
            )
        if len(now) > keep:
            out += encode_events(now[keep:])
        return out

    def _rewind_point(self, done: Sequence[Event], now: Sequence[Event]) -> int:
        """A seq the file's log and `now` agree up to, from which writing `now` again makes
        them equal: where they part if both logs still hold that point, else a point known
        to be below it (event 1 for a whole log; the start of `now`'s window if the file
        agrees with what came before it)."""
        lo = max(_first(done), _first(now))
        hi = min(len(done), len(now))
        if lo < hi and done[lo] is now[lo]:
            return _shared_prefix(done, now, lo + 1)
        start = _first(now)
        if not start:
            return 1  # event 0 (WorldCreated) is never undone
        if isinstance(now, EventLog) and now.window in self._windows:
            return start
        # Not a failure of the file: a change the journal cannot express. Refused (and so
        # undone) before anything is written; the file and later changes are fine.
        raise ValueError(
            f"Cannot restore this snapshot: its log begins at seq {start} in memory "
            "(--keep-events dropped the events before it), and the journal's log went back "
            "before that point since the snapshot was taken, so the journal could not be made "
            "to hold the snapshot's events. Restore a snapshot taken since, or reset."
        )

    def close(self) -> None:
        watch_log(self.world, None)
        if self._file is not None and not self._file.closed:
            self._file.close()


def _first(log: Sequence[Event]) -> int:
    """The first seq `log` holds (a window's `first`; 0 for a whole log)."""
    return log.first if isinstance(log, EventLog) else 0


def _same(a: Sequence[Event], b: Sequence[Event], i: int) -> bool:
    """Whether both logs hold event `i`, and the same one."""
    return i >= _first(a) and i >= _first(b) and a[i] is b[i]


def _shared_prefix(a: Sequence[Event], b: Sequence[Event], lo: int = 0) -> int:
    """How many first events two logs of one world share, given that they share at least
    `lo`. Logs share events by identity (a snapshot's log is a prefix of the log it was
    taken from), and once two logs part they never share an event again, so the boundary
    can be found by bisection."""
    hi = min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] is b[mid]:
            lo = mid + 1
        else:
            hi = mid
    return max(lo, 1)  # event 0 (WorldCreated) is never undone


# ---------------------------------------------------------------------------------------------
# A server's journals: its shared world's and, with --isolate, each session's
# ---------------------------------------------------------------------------------------------


#: file descriptors an --isolate server keeps free of session journals
SPARE_FDS = 16


def _fd_limit() -> int:
    """The soft limit on open files (`ulimit -n`), or a huge number where there is none."""
    try:
        import resource
    except ImportError:  # not a Unix: no limit known
        return 1 << 30
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return soft if soft != resource.RLIM_INFINITY else 1 << 30


class Journals:
    """The journals of a server: its shared world and, with --isolate, each session's."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        world: World,
        *,
        fsync: bool = False,
        opener: Opener | None = None,
        keep_events: int | None = None,
    ):
        """`opener(path)` opens a journal file for writing, truncated (default: unbuffered
        `open(path, "wb")`; tests pass one whose files fail on purpose). `keep_events`: each
        journaled world keeps only its latest events in memory (`lowlevel.keep_events`)."""
        self.path = Path(path)
        self.fsync = fsync
        self.keep_events = keep_events
        self._opener = opener or _open
        self._shared = Journal(self.path, world, fsync=fsync, opener=self._opener)
        self._by_world: dict[int, Journal] = {id(world): self._shared}
        if keep_events is not None:  # once its journal holds every event
            keep_events_of(world, keep_events)
        #: files opened for sessions that have no world yet (it is made on first use)
        self._reserved: dict[str, tuple[Path, BinaryIO]] = {}
        self._refusing = False  # the last session's file could not be opened

    def session_path(self, session: str) -> Path:
        safe = "".join(c for c in session if c.isalnum() or c in "-_")[:64] or "session"
        return self.path.with_name(f"{self.path.stem}.{safe}{self.path.suffix or '.jsonl'}")

    def reserve(self, session: str) -> None:
        """Open a session's file as the session begins; raises `JournalError` if it cannot
        be opened (the session is then refused)."""
        if session in self._reserved:
            return
        path = self.session_path(session)
        try:
            file = self._opener(path)
            if file.fileno() >= _fd_limit() - SPARE_FDS:
                # File descriptors are numbered lowest first: this one says how many are
                # open. The last few stay for the server's own needs (accepting a request,
                # importing a module on a session's first call).
                file.close()
                path.unlink(missing_ok=True)
                raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
            self._reserved[session] = (path, file)
        except OSError as exc:
            error = JournalError(path, exc, "open")
            if not self._refusing:  # once, until a session's file opens again
                log.error("refusing new MCP sessions: %s", error.summary)
            self._refusing = True
            raise error from None
        if self._refusing:
            log.warning("new MCP sessions are journaled again (%s)", path.name)
            self._refusing = False

    def release(self, session: str) -> None:
        """A session ended before it had a world: close the file opened for it."""
        reserved = self._reserved.pop(session, None)
        if reserved is not None:
            reserved[1].close()

    def add_session(self, session: str, world: World) -> None:
        """Journal a session's new world; raises `JournalError` (and journals nothing) if
        its file cannot be opened or written."""
        path, file = self._reserved.pop(session, (self.session_path(session), None))
        self._by_world[id(world)] = Journal(
            path, world, fsync=self.fsync, file=file, opener=self._opener, parent=self._shared
        )
        if self.keep_events is not None:
            keep_events_of(world, self.keep_events)

    def journal_of(self, world: World) -> Journal | None:
        return self._by_world.get(id(world))

    def drop(self, world: World) -> None:
        """Stop logging a session's world (it ended); its file stays, complete."""
        journal = self._by_world.pop(id(world), None)
        if journal is not None:
            journal.close()

    def close(self) -> None:
        for journal in self._by_world.values():
            journal.close()
        for session in list(self._reserved):
            self.release(session)

    def attach(self, server: _MakesWorlds) -> Journals:
        """Log every session world `server` creates (the shared world is logged already)."""
        server.on_new_world.append(self.add_session)
        return self


# ---------------------------------------------------------------------------------------------
# serve --state FILE: one world in a file, shared by the servers that take turns at it
# ---------------------------------------------------------------------------------------------


class StateFileError(Exception):
    """`serve --state FILE` cannot serve from FILE: it is not this world's event log (another
    world or world file, other options, not an event log at all) or cannot be read or
    locked. The message names the file and the fix; the file is left as it was."""


class FileLock:
    """An exclusive lock held by one process at a time: the operating system's advisory
    lock on a file of its own (`FILE.lock`, beside the state file, created if absent and
    never removed). POSIX: `fcntl.flock`; Windows: `msvcrt.locking` of its first byte. Both
    are released by the operating system when the process dies, `kill -9` included, so a
    killed server never leaves the world locked. Not reentrant: `StateFile` counts its
    holders."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self._file: BinaryIO = open(path, "a+b", buffering=0)  # noqa: SIM115
        except OSError as exc:
            raise StateFileError(
                f"cannot open the lock file {path} (--state): {exc.strerror or exc}"
            ) from None

    def try_acquire(self) -> bool:
        fd = self._file.fileno()
        try:
            if sys.platform == "win32":
                import msvcrt

                os.lseek(fd, 0, os.SEEK_SET)
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            else:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK, errno.EDEADLK):
                return False
            raise
        return True

    def acquire(self, timeout: float) -> None:
        """Wait (blocking this thread) until the lock is ours; `StateFileError` after
        `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not self.try_acquire():
            if time.monotonic() > deadline:
                raise StateFileError(_busy(self.path, timeout))
            time.sleep(LOCK_POLL_S)

    async def acquire_async(self, timeout: float) -> None:
        """`acquire` without blocking the event loop (any loop anyio runs on)."""
        import anyio

        deadline = time.monotonic() + timeout
        while not self.try_acquire():
            if time.monotonic() > deadline:
                raise StateFileError(_busy(self.path, timeout))
            await anyio.sleep(LOCK_POLL_S)

    def release(self) -> None:
        fd = self._file.fileno()
        if sys.platform == "win32":
            import msvcrt

            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        self._file.close()


#: how often a server waiting for the state file's lock tries again (seconds)
LOCK_POLL_S = 0.002
#: how long a server waits for the state file's lock before it gives up (seconds): another
#: server holds it for one call at a time, a few milliseconds
LOCK_TIMEOUT_S = 30.0


def _busy(path: Path, timeout: float) -> str:
    return (
        f"the state file's lock {path} (--state) was held by another process for more than "
        f"{timeout:g} s; a faultbench server holds it for one call at a time. Is another "
        "program holding it?"
    )


class StateFile:
    """One world kept in an event-log file for every server that serves it (`serve --state
    FILE`), so that clients which start a server per call, or several at once, see one world.

    FILE is an `--events` journal like any other (replay it, report on it), written the same
    way (the journal is the acknowledgement; `Journal`). What is added is taking turns: each
    call (and each `tools/list`) holds the lock (`FileLock`), first folds in what other
    servers appended since this one last looked (`lowlevel.absorb_events`, checked as a
    replay checks a log), then runs, its events written to FILE before the lock is let go.
    So calls from every server form one log in one order, and each decides on the whole
    world: the same seed and fault plan run on as if one process had served every call (the
    plan draws from the call counts and clock of the state, and the state is the file's).
    Calls of one server that run at once (a batch) take one turn together.

    A stdio server only: it changes its world through tool calls alone, so the file only
    ever grows by whole calls (no reset or restore to apply from another process)."""

    def __init__(self, path: Path, world: World, journal: Journal, lock: FileLock):
        self.path = path
        self.world = world
        self.journal = journal
        self.lock = lock
        self._holders = 0

    @classmethod
    def open(cls, path: str | os.PathLike[str], make_world: Callable[[], World]) -> StateFile:
        """The world FILE holds, resumed (FILE exists and is not empty), or `make_world()`'s
        new world written to it (FILE absent or empty). FILE is checked to be this world's
        log, begun with the same options: the first events `make_world()` logs (the world
        file's digest, seed, run, seed rows, fault rules) are the file's first lines, byte for
        byte; else `StateFileError`, and the file is not touched."""
        from faultbench.kernel import ReplayError, decode_events, replay

        path = Path(path)
        lock = FileLock(path.with_name(path.name + ".lock"))
        try:
            lock.acquire(LOCK_TIMEOUT_S)
            try:
                data = _read_state(path)
                fresh = make_world()
                holds: int | None = None  # a new file: the journal writes the whole log
                if not data:
                    world = fresh
                else:
                    genesis = encode_events(fresh.events)
                    if not data.startswith(genesis):
                        raise StateFileError(_not_this_world(path, data, fresh))
                    if not data.endswith(b"\n"):
                        raise StateFileError(_cut_short(path, data))
                    try:
                        world = replay(fresh.spec, decode_events(data))
                    except (ReplayError, ValueError) as exc:
                        raise StateFileError(
                            f"{path} (--state) does not replay: {exc}. Nothing was written to "
                            "it; check it with `faultbench replay`, or start a new file."
                        ) from None
                    holds = len(data)
                try:
                    file = open(path, "ab", buffering=0)  # noqa: SIM115
                except OSError as exc:
                    raise StateFileError(
                        f"cannot open {path} (--state) for appending: {exc.strerror or exc}"
                    ) from None
                try:
                    journal = Journal(path, world, file=file, holds=holds)
                except JournalError as exc:
                    raise StateFileError(exc.summary) from None
            finally:
                lock.release()
        except BaseException:
            lock.close()
            raise
        return cls(path, world, journal, lock)

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Hold the world for one call (or one listing): the lock taken (without blocking
        the event loop), what other servers appended folded in, and let go once the call's
        events are in the file. Tasks of this server that overlap share one turn."""
        if self._holders == 0:
            await self.lock.acquire_async(LOCK_TIMEOUT_S)
            try:
                self.catch_up()
            except BaseException:
                self.lock.release()
                raise
        self._holders += 1
        try:
            yield
        finally:
            self._holders -= 1
            if self._holders == 0:
                self.lock.release()

    def catch_up(self) -> int:
        """Fold into the world what other servers appended to FILE since this one last
        wrote or read it (the lock held); how many events. `StateFileError` if what they
        appended cannot be (a line cut short by a killed server, a rewind, events that do
        not continue this world's log): the world stays as it was, and so does the file."""
        from faultbench.kernel import LogRewound, ReplayError, decode_events
        from faultbench.kernel.lowlevel import absorb_events

        size = self.journal.size
        try:
            with open(self.path, "rb") as f:
                f.seek(size)
                tail = f.read()
        except OSError as exc:
            raise StateFileError(
                f"cannot read {self.path} (--state): {exc.strerror or exc}"
            ) from None
        if not tail:
            return 0
        if not tail.endswith(b"\n"):
            raise StateFileError(_cut_short(self.path, tail))
        try:
            events = decode_events(tail)
            if any(type(ev) is LogRewound for ev in events):
                raise ValueError("a LogRewound line (only a reset or restore writes one)")
            n = absorb_events(self.world, events)
        except (ReplayError, ValueError) as exc:
            raise StateFileError(
                f"what another process appended to {self.path} (--state) since byte {size} "
                f"does not continue this world: {exc}. Nothing was written; check the file "
                "with `faultbench replay`."
            ) from None
        self.journal.caught_up(size + len(tail))
        return n

    def close(self) -> None:
        self.journal.close()
        self.lock.close()


def _read_state(path: Path) -> bytes:
    """FILE's bytes (b"" when it does not exist yet); only a regular file."""
    from faultbench.kernel.lowlevel import read_bounded

    if not path.exists():
        return b""
    try:
        return read_bounded(path, 2**62)
    except (OSError, ValueError) as exc:
        raise StateFileError(f"cannot read {path} (--state): {exc}") from None


def _cut_short(path: Path, data: bytes) -> str:
    line = data.count(b"\n") + 1
    return (
        f"{path} (--state) ends in a line cut short (line {line} of what was read has no "
        "newline): a server was killed while writing it, and that call was never answered. "
        "Nothing was written; remove that last partial line (`faultbench replay --partial` "
        "shows the log without it) and start again."
    )


def _not_this_world(path: Path, data: bytes, fresh: World) -> str:
    """Why FILE is not the log `fresh` (a world just made from the command line) continues."""
    from faultbench.kernel import WorldCreated, decode_events

    head = data.split(b"\n", 1)[0]
    try:
        first = decode_events(head)[0] if head.strip() else None
    except ValueError:
        first = None
    if not isinstance(first, WorldCreated):
        return (
            f"{path} (--state) is not a faultbench event log: its first line is not a "
            "WorldCreated event. Nothing was written to it; point --state at a new file or at "
            "one a `faultbench serve --state` (or --events) wrote for this world."
        )
    mine = fresh.events[0]
    assert isinstance(mine, WorldCreated)
    if first.world != mine.world or first.digest != mine.digest:
        return (
            f"{path} (--state) holds the world {first.world!r} of a world file with digest "
            f"{first.digest[:12]}..., not {mine.world!r} of {fresh.spec.path or 'this file'} "
            f"(digest {mine.digest[:12]}...): another world, or the world file changed since. "
            "Nothing was written to it; use another --state file for this world file."
        )
    if (first.seed, first.run) != (mine.seed, mine.run):
        return (
            f"{path} (--state) was begun with seed {first.seed} and run {first.run}, but this "
            f"server was started with seed {mine.seed} and run {mine.run}. Nothing was "
            "written to it; start every server of this file with the same --seed and --run."
        )
    return (
        f"{path} (--state) was begun with other fault options (--faults, --no-faults) or "
        "other seed rows than this server's. Nothing was written to it; start every server "
        "of this file with the same options."
    )
