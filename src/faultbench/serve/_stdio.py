"""MCP over the process's stdin/stdout, under trio.

`mcp.server.stdio.stdio_server()` reads and writes through `anyio.wrap_file`, which costs a
worker-thread round trip per line read, per line written and per flush (bare server:
~800 calls/s on a 2-core machine), and a thread blocked in `readline` cannot be cancelled,
so Ctrl-C / SIGTERM would wait for the client's next line. When stdin and stdout are pipes
or sockets we hand `stdio_server` our own non-blocking streams over `trio.lowlevel.FdStream`
instead: no threads, cancellable reads.

`FdStream` puts the *open file description* into non-blocking mode, which every descriptor
sharing it sees. That is why we only take a stream that is a pipe/socket and not shared with
stderr (a terminal, or `2>&1`, would make logging raise `BlockingIOError`); otherwise that
stream falls back to the SDK's own thread-based reader/writer.

While serving, fd 1 points at stderr, so a handler that prints cannot corrupt the protocol
(the SDK does the same when it claims the streams itself).
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import trio
from mcp.server.stdio import stdio_server

_CHUNK = 1 << 16


def _private_pipe(fd: int) -> bool:
    """fd is a pipe or socket that is not the same open file as stderr."""
    try:
        st = os.fstat(fd)
    except OSError:
        return False
    if not (stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode)):
        return False
    try:
        err = os.fstat(2)
    except OSError:
        return True
    return (st.st_dev, st.st_ino) != (err.st_dev, err.st_ino)


class _LineReader:
    """`async for line in reader`: decoded lines from a non-blocking fd."""

    def __init__(self, stream: trio.lowlevel.FdStream):
        self._stream = stream
        self._buf = bytearray()
        self._eof = False

    def __aiter__(self) -> _LineReader:
        return self

    async def __anext__(self) -> str:
        while True:
            end = self._buf.find(b"\n")
            if end >= 0:
                line = bytes(self._buf[: end + 1])
                del self._buf[: end + 1]
                return line.decode("utf-8", errors="replace")
            if self._eof:
                if self._buf:
                    line = bytes(self._buf)
                    self._buf.clear()
                    return line.decode("utf-8", errors="replace")
                raise StopAsyncIteration
            try:
                data = await self._stream.receive_some(_CHUNK)
            except (trio.ClosedResourceError, trio.BrokenResourceError, OSError):
                data = b""
            if not data:
                self._eof = True
            else:
                self._buf += data


class _Writer:
    """`await write(text)` buffers; `await flush()` sends (what `stdio_server` calls)."""

    def __init__(self, stream: trio.lowlevel.FdStream):
        self._stream = stream
        self._buf: list[bytes] = []

    async def write(self, text: str) -> None:
        self._buf.append(text.encode("utf-8"))

    async def flush(self) -> None:
        if self._buf:
            data = b"".join(self._buf)
            self._buf.clear()
            await self._stream.send_all(data)


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """The (read, write) MCP message streams over this process's stdin/stdout."""
    stdin = stdout = None
    in_stream = out_stream = None
    saved_stdout_fd: int | None = None
    try:
        if _private_pipe(0):
            in_stream = trio.lowlevel.FdStream(os.dup(0))
            stdin = _LineReader(in_stream)
        if _private_pipe(1):
            out_stream = trio.lowlevel.FdStream(os.dup(1))
            stdout = _Writer(out_stream)
            # Divert fd 1 to stderr while we own the real stdout.
            saved_stdout_fd = os.dup(1)
            os.dup2(2, 1)
        # Duck-typed: stdio_server only iterates stdin and awaits stdout.write/flush, which is
        # all an anyio AsyncFile is used for there.
        async with stdio_server(stdin=stdin, stdout=stdout) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        if saved_stdout_fd is not None:
            with suppress(OSError):
                os.dup2(saved_stdout_fd, 1)
            os.close(saved_stdout_fd)
        for s in (in_stream, out_stream):
            if s is not None:
                with suppress(Exception):
                    await s.aclose()


async def serve_stdio(server: Any) -> None:
    """Serve `server` (a low-level mcp Server) on stdin/stdout until stdin closes."""
    async with stdio_streams() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
