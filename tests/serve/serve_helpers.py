"""Helpers shared by tests/serve (import as `serve_helpers`)."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

WORLDS = Path(__file__).parent / "worlds"
SHOP = WORLDS / "shop.yaml"


def nested(depth: int) -> dict:
    root = cur = {}
    for _ in range(depth):
        cur["a"] = {}
        cur = cur["a"]
    return root


class ServeProcess:
    """`faultbench serve ... --http --port 0` in a subprocess; `url` once it listens."""

    def __init__(self, *args: str, env: dict | None = None, preexec_fn=None):
        # Unbuffered: a buffered readline can take two lines off the pipe at once, and
        # select() would then wait for the second one, already read, until the deadline.
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "faultbench.cli", "serve", *args],
            bufsize=0,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            preexec_fn=preexec_fn,  # e.g. a lower file limit (ulimit -n)
        )
        self.stderr_lines: list[str] = []
        deadline = time.monotonic() + 30
        self.url = None
        while time.monotonic() < deadline:
            # select, so a server that hangs before printing fails the test instead of CI
            ready, _, _ = select.select([self.proc.stderr], [], [], deadline - time.monotonic())
            if not ready:
                break
            line = self.proc.stderr.readline().decode()
            if not line:
                break
            self.stderr_lines.append(line)
            found = re.search(r"(http://\S+/mcp)", line)
            if found:
                self.url = found.group(1)
                break
        if self.url is None:
            self.kill()
            raise AssertionError("server did not start:\n" + "".join(self.stderr_lines))
        self.base = self.url.removesuffix("/mcp")
        # Keep reading stderr, so a chatty server can never block on a full pipe.
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()

    def _drain(self) -> None:
        with contextlib.suppress(ValueError, OSError):
            for line in self.proc.stderr:
                self.stderr_lines.append(line.decode(errors="replace"))

    def stop(self, sig=signal.SIGTERM, timeout: float = 10) -> int:
        """Send `sig`, wait for the exit status; `stderr` then holds all the server wrote."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            status = self.proc.wait(timeout)
            self._drainer.join(timeout)  # stderr read to its end
            return status
        finally:
            self.kill()

    @property
    def stderr(self) -> str:
        return "".join(self.stderr_lines)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
