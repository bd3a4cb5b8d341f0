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

A request nested deeper than the SDK's JSON parser allows (about 200 levels) would be dropped
by it without an answer (it cannot read the request's id). `_LineReader` answers such a line
itself, with a JSON-RPC "Invalid Request" error for its id, found by a scan that does not
recurse; only on our own streams (the SDK's thread-based ones cannot be shared this way).

Tool calls at 2026-07-28 (on our own streams, mcp 2.x): the line is parsed here anyway (the
check above), so once a connection is modern (its first request carried the 2026-07-28
envelope and was not `initialize`: the SDK's rule, `_sdk.opens_modern`), a later `tools/call`
line that the SDK would accept (`_sdk.modern_tool_call`: its own envelope and params checks)
is answered here, in a task of its own (concurrent calls still form one `World.acall`
batch), with the result the SDK's runner would send (`WorldServer.answer_modern`), serialized
by the same pydantic-core serializer, one whole line through the same writer. It skips the
SDK's message models, memory streams, dispatcher task and runner: about half of a call's
CPU (docs/BENCHMARKS.md). Everything else (the opening request, `initialize`, lists,
notifications, any line the checks refuse) goes to the SDK as before. A
`notifications/cancelled` for such a call cancels its task here, as the SDK cancels its
handlers (the call itself is a few virtual-time steps, never a real wait; what a client can
cancel is an answer a protocol fault holds), and no answer is sent; the SDK sees the
notification too, and knows no such request. A call whose `_meta` carries a progress token
goes the SDK's way: its progress notifications ride the SDK's session.

While serving, fd 1 points at stderr, so a handler that prints cannot corrupt the protocol
(the SDK does the same when it claims the streams itself).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

import pydantic_core
import trio

from ._sdk import CallParams, jsonrpc_error, modern_tool_call, opens_modern, stdio_server

#: `WorldServer.answer_modern`: (protocol version, params) -> the result, in wire form
Answer = Callable[[str, CallParams], Awaitable[dict[str, Any]]]

_CHUNK = 1 << 16
#: JSON-RPC messages nested deeper than this are answered "Invalid Request" here (the SDK's
#: parser gives up at about 200 and drops the line, id and all)
MAX_DEPTH = 128
#: outside strings, the next bracket or quote; a string from its opening quote (an unrolled
#: loop: linear, and tried once per string, never again from inside an unterminated one)
_STRUCTURE = re.compile(r'[\[\]{}"]')
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_ID_VALUE = re.compile(r'\s*:\s*(-?\d{1,50}(?![\d.eE])|"[^"\\]*(?:\\.[^"\\]*)*")')


def _scan(line: str) -> tuple[int, int | str | None]:
    """(deepest nesting, the top-level id if one is readable): one linear pass that does not
    recurse, for lines the parser refuses or that may be too deep for it."""
    depth = deepest = 0
    ident: int | str | None = None
    pos = 0
    while (found := _STRUCTURE.search(line, pos)) is not None:
        char = found.group()
        pos = found.end()
        if char == '"':
            string = _STRING.match(line, found.start())
            if string is None:
                break  # unterminated: the rest of the line is inside it
            pos = string.end()
            if depth == 1 and ident is None and string.group() == '"id"':
                value = _ID_VALUE.match(line, pos)
                if value is not None:
                    with suppress(ValueError):
                        ident = json.loads(value.group(1))
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest, ident


def too_deep(line: str) -> tuple[bool, int | str | None]:
    """(nested deeper than MAX_DEPTH, the message's top-level id if it has one)."""
    if line.count("[") + line.count("{") <= MAX_DEPTH:
        return False, None  # cannot be that deep: the common case costs two counts
    deepest, ident = _scan(line)
    return deepest > MAX_DEPTH, ident


def unparsable(line: str) -> tuple[str, int | str | None] | None:
    """None if the SDK's JSON parser reads `line`, else (its reason, the line's id if one is
    readable). The SDK drops such a line unanswered; we answer it -32700."""
    if not line.strip():
        return None  # blank lines are skipped, not messages
    try:
        pydantic_core.from_json(line)  # the parser the SDK validates messages with
    except ValueError as exc:
        return str(exc), _scan(line)[1]
    return None


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
    """`async for line in reader`: decoded lines from a non-blocking fd. With `reply` (our
    writer), a request nested too deeply is answered here instead of passed on."""

    def __init__(self, stream: trio.lowlevel.FdStream):
        self._stream = stream
        self._buf = bytearray()
        self._eof = False
        self.reply: _Writer | None = None
        #: answers 2026-07-28 tool calls here (see the module's doc), with `reply`
        self.answer: Answer | None = None
        self.nursery: trio.Nursery | None = None
        self.modern: bool | None = None  # the connection's era, once its first request said
        #: the tool calls answered here and still running, by JSON-RPC id: what a
        #: `notifications/cancelled` for one of them cancels
        self.running: dict[str, trio.CancelScope] = {}

    def __aiter__(self) -> _LineReader:
        return self

    async def __anext__(self) -> str:
        while True:
            end = self._buf.find(b"\n")
            if end >= 0:
                line = bytes(self._buf[: end + 1])
                del self._buf[: end + 1]
                text = line.decode("utf-8", errors="replace")
                if self.reply is not None and await self._refused(text):
                    continue
                return text
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

    async def _refused(self, text: str) -> bool:
        deep, ident = too_deep(text)
        if deep:
            if ident is None:  # a notification has no one to answer
                return False
            error = {
                "code": -32600,
                "message": f"Invalid Request: nested deeper than {MAX_DEPTH} levels; expected "
                "arguments nested less deeply",
            }
        else:
            if not text.strip():
                return False  # blank lines are skipped, not messages
            try:
                message = pydantic_core.from_json(text)  # the parser the SDK reads lines with
            except ValueError as exc:
                reason, ident = str(exc), _scan(text)[1]
            else:
                return self._answered(message)
            error = {
                "code": -32700,
                "message": f"Parse error: {reason}; expected one JSON-RPC message per line "
                "(UTF-8 JSON, no lone surrogates, integers under 4,300 digits)",
            }
        assert self.reply is not None
        # One write of a whole line: `write` never yields, so it cannot split an SDK message.
        await self.reply.write(json.dumps({"jsonrpc": "2.0", "id": ident, "error": error}) + "\n")
        await self.reply.flush()
        return True

    def _answered(self, message: Any) -> bool:
        """A 2026-07-28 tool call taken to be answered here (see the module's doc)."""
        if self.modern is None:
            self.modern = opens_modern(message)  # None until a request: it decides the era
            return False  # the opening request is the SDK's: it opens the connection
        if not self.modern or self.answer is None or self.nursery is None:
            return False
        cancelled = _cancelled_id(message)
        if cancelled is not None:
            scope = self.running.get(cancelled)
            if scope is not None:
                scope.cancel()
            return False  # the SDK sees it too (and knows no such request)
        call = modern_tool_call(message)
        if call is None or _has_progress_token(message):
            return False  # progress notifications ride the SDK's session: its way
        self.nursery.start_soon(self._answer, message["id"], *call)
        return True

    async def _answer(self, ident: int | str, version: str, params: CallParams) -> None:
        assert self.answer is not None
        assert self.reply is not None
        key = json.dumps(ident)
        with trio.CancelScope() as scope:
            self.running[key] = scope
            try:
                result = await self.answer(version, params)  # a failing call is a result
            except Exception as exc:  # a bug that escaped the handler: the SDK's error
                line = pydantic_core.to_json(jsonrpc_error(ident, exc)[1])
            else:
                line = pydantic_core.to_json({"jsonrpc": "2.0", "id": ident, "result": result})
            finally:
                del self.running[key]
        if scope.cancelled_caught:
            return  # the client cancelled it (a fault held its answer): MCP sends none
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await self.reply.send_line(line + b"\n")  # else the client has gone


def _cancelled_id(message: Any) -> str | None:
    """The request id a `notifications/cancelled` names (as `_answer` keys it), else None."""
    if not isinstance(message, dict) or message.get("method") != "notifications/cancelled":
        return None
    params = message.get("params")
    ident = params.get("requestId") if isinstance(params, dict) else None
    return json.dumps(ident) if isinstance(ident, str | int) else None


def _has_progress_token(message: Any) -> bool:
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and meta.get("progressToken") is not None


class _Writer:
    """`await write(text)` buffers; `await flush()` sends (what `stdio_server` calls).
    Two tasks flush (the SDK's writer and `_LineReader` refusing a line): a lock keeps their
    sends apart, and lines are only ever buffered whole between checkpoints."""

    def __init__(self, stream: trio.lowlevel.FdStream):
        self._stream = stream
        self._buf: list[bytes] = []
        self._lock = trio.Lock()

    async def write(self, text: str) -> None:
        self._buf.append(text.encode("utf-8"))

    async def send_line(self, line: bytes) -> None:
        """Send one whole line now (after whatever is buffered)."""
        self._buf.append(line)
        await self.flush()

    async def flush(self) -> None:
        async with self._lock:
            if self._buf:
                data = b"".join(self._buf)
                self._buf.clear()
                await self._stream.send_all(data)


@asynccontextmanager
async def stdio_streams(answer: Answer | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """The (read, write) MCP message streams over this process's stdin/stdout; with
    `answer`, 2026-07-28 tool calls are answered by it, here (see the module's doc)."""
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
        if stdin is not None and stdout is not None:
            stdin.reply = stdout
            stdin.answer = answer
        # Duck-typed: stdio_server only iterates stdin and awaits stdout.write/flush, which is
        # all an anyio AsyncFile is used for there. The nursery holds the calls answered here:
        # when stdin ends, those in flight are answered before the streams close.
        async with trio.open_nursery() as nursery:
            if stdin is not None:
                stdin.nursery = nursery
            async with stdio_server(stdin=stdin, stdout=stdout) as streams:  # type: ignore[arg-type]  # not AsyncFiles: duck-typed, see above
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
    async with stdio_streams(getattr(server, "answer_modern", None)) as (read, write):
        await server.run(read, write, server.create_initialization_options())
