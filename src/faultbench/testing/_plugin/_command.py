"""The `mcp_command` fixture's value: the command that serves *this run's* world over stdio.

An agent that reaches its tools through a subprocess (`run_agent(..., mcp=mcp_command)`, or
any MCP client that starts a server) gets `faultbench serve` with everything that makes run
i of a test what it is: the world file's absolute path, the `seed` marker, `--run i`, the
`faults` marker's rules (`--faults JSON`) and `--events FILE`, a journal of every event the
server logs. The server then starts from the same events as the `world` fixture would, so
its log is byte for byte the in-process run's; after the run the plugin reads the journal,
and the summary, the diff, the report, replay and shrinking see the run as they see an
in-process one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["ServeCommand"]


class ServeCommand(list[str]):
    """`[python, -m, faultbench, serve, WORLD, --run, K, ..., --events FILE]`: a command
    (argv) to hand to an MCP client or `run_agent(mcp=...)`, plus what it serves.

    `journal` is the event log the server writes; `world()` rebuilds the served world from
    it as it is now (after the agent's run: the world the agent left), `trace()` its calls.
    """

    def __init__(
        self,
        world_file: Path,
        *,
        run: int,
        seed: int | None,
        faults: dict[str, Any] | None,
        journal: Path,
        spec: Any,
        start: Any,
        principal: str | None = None,
        webhook_url: str | None = None,
        debug: bool = False,
    ):
        argv = [sys.executable, "-m", "faultbench", "serve", str(world_file), "--run", str(run)]
        if seed is not None:
            argv += ["--seed", str(seed)]
        if faults is not None:
            argv += ["--faults", json.dumps(faults, sort_keys=True, default=str)]
        if principal is not None:  # a world with auth: (`@pytest.mark.principal`)
            argv += ["--principal", principal]
        if webhook_url is not None:  # the test takes `webhook_receiver`
            argv += ["--webhook-url", webhook_url]
        if debug:  # --faultbench-debug-meta
            argv += ["--debug-meta"]
        argv += ["--events", str(journal)]
        super().__init__(argv)
        self.journal = journal
        self._spec = spec
        #: the world the server starts as (its first events)
        self.start = start

    @property
    def started(self) -> bool:
        """True once a server wrote its journal (the agent connected)."""
        return self.journal.exists() and self.journal.stat().st_size > 0

    def world(self) -> Any:
        """The served world as the journal has it now; before any server started, the world
        it will start as."""
        if not self.started:
            return self.start
        from faultbench.kernel import replay

        return replay(self._spec, self.journal.read_bytes())

    def trace(self) -> Any:
        """The calls the served world answered so far."""
        return self.world().trace

    def __repr__(self) -> str:
        return f"<ServeCommand {' '.join(self)!r}>"
