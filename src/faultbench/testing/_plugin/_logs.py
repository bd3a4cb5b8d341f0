"""Which reports carry their run's event log as text (issue 24: the per-run cost of a suite).

A run's event log is what the summary diffs a failing run against (its closest passing run),
what `--faultbench-events` writes, what the HTML report draws and what shrinking reads. It
travels on the run's report as JSON Lines only where something needs the text: on an xdist
worker (the controller, which gets nothing but reports, explains the failing runs), and with
`--faultbench-events`, `--faultbench-report` or `--faultbench-shrink`. Otherwise the report
carries no log, and the run keeps a reference to its world's own (persistent, read-only) log:
nothing is encoded, and the diff of a failing run reads the events as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from .._gate._report import Tally

__all__ = ["Logs", "ships_events"]

#: the options whose outputs read every run's log as text
_TEXT_CONSUMERS = ("faultbench_events", "faultbench_report", "faultbench_shrink")


def ships_events(config: pytest.Config) -> bool:
    """Every run's report carries its event log as text."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller explains failures
        return True
    return any(config.getoption(name, None) for name in _TEXT_CONSUMERS)


class Logs:
    """The event logs of this process's runs: shipped on the reports, or kept here."""

    def __init__(self, config: pytest.Config):
        self.ship = ships_events(config)
        self._kept: dict[str, Sequence[Any]] = {}  # nodeid -> its world's log

    def put(self, nodeid: str, world: Any, data: dict[str, Any]) -> None:
        """Record the log of the run `nodeid` (called when its call report is made)."""
        if self.ship:
            from faultbench.kernel import encode_events

            data["events"] = encode_events(world.events).decode()
        else:
            self._kept[nodeid] = world.events

    def attach(self, tally: Tally, nodeid: str) -> None:
        """Hand a kept log to the run's record in `tally` (once the call report is in)."""
        log = self._kept.pop(nodeid, None)
        if log is not None:
            run = tally.open_run(nodeid)
            if run is not None:
                run.log = log
