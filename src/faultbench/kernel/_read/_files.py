"""Reading a file a command was pointed at (a world file, an event log): regular files only,
and at most a given size, so `/dev/zero` ends, a FIFO never blocks and a huge file is refused
before it is read whole."""

from __future__ import annotations

import errno
import os
import stat

_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


class NotRegular(OSError):
    """The path is not a regular file (a FIFO, a device, a directory...)."""


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """The first `limit + 1` bytes of the regular file at `path` (so a caller sees that it is
    larger than `limit`). Raises `IsADirectoryError` for a directory, `NotRegular` for
    anything else but a regular file (without waiting for a FIFO's writer), and `OSError`
    if it cannot be opened."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory, not a regular file")
        if not stat.S_ISREG(mode):
            kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
            raise NotRegular(errno.EINVAL, f"{kind}, not a regular file")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", buffering=0, closefd=True) as fh:
            fd = -1
            # In pieces no bigger than the file (plus one byte, to see its end): a single
            # read(limit + 1) would allocate the whole limit up front.
            size, want = os.fstat(fh.fileno()).st_size, limit + 1
            chunks: list[bytes] = []
            got = 0
            while got < want:
                chunk = fh.read(min(want - got, max(size + 1 - got, 1 << 16)))
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
            return b"".join(chunks)
    finally:
        if fd >= 0:
            os.close(fd)
