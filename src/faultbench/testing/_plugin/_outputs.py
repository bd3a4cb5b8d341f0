"""What a session leaves behind once its runs are tallied: shrunk fault schedules
(`--faultbench-shrink`), the session file next to the event logs (`--faultbench-events`) and
the HTML report (`--faultbench-report`). All of it happens where the reports meet (in one
process, or on pytest-xdist's controller), after the gate is decided.

`--faultbench-faults JSON` is the other half of shrinking: a `faults:` block that replaces
every run's own faults, so one run can be re-run under a chosen schedule (shrinking's probes
and the command it prints both use it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .._artifacts._shrink import DEFAULT_BUDGET, ShrinkResult
from .._gate._report import Group, Run

__all__ = ["Outputs", "add_output_options", "faults_override"]

#: set in the environment of shrinking's probes: they must not shrink or report themselves
PROBE_ENV = "FAULTBENCH_PROBE"

_OVERRIDE_KEY = pytest.StashKey[Any]()


def add_output_options(group: Any) -> None:
    group.addoption(
        "--faultbench-report",
        metavar="DIR",
        default=None,
        help="write a self-contained HTML report of the session (pass rates, per-run "
        "timelines in virtual time, diffs) to DIR/faultbench-report.html",
    )
    group.addoption(
        "--faultbench-diff",
        choices=("calls", "events"),
        default="calls",
        help="how a failing run is compared with the closest passing run: 'calls' (default: "
        "the runs aligned by their calls, the divergence in words, then the end states) or "
        "'events' (the event-log diff, clock steps included)",
    )
    group.addoption(
        "--faultbench-shrink",
        action="store_true",
        default=False,
        help="for the first failing run of each test, find the smallest subset of its "
        "faults that still fails it (re-runs the test once per probe)",
    )
    group.addoption(
        "--faultbench-shrink-budget",
        type=int,
        metavar="N",
        default=DEFAULT_BUDGET,
        help=f"at most N probes (test runs) per shrunk run (default {DEFAULT_BUDGET}); with "
        "a live model every probe is one more model run",
    )
    group.addoption(
        "--faultbench-debug-meta",
        action="store_true",
        default=False,
        help="serve mcp_server, mcp_url and mcp_command with faultbench serve's --debug-meta: "
        "each answer names its call id, virtual times and injected fault (by default an "
        "answer carries no sign of faultbench)",
    )
    group.addoption(
        "--faultbench-faults",
        metavar="JSON",
        default=None,
        help="run every test with this faults: block (JSON) instead of its faults marker, "
        'e.g. \'{"payments.issue_refund": {"script": {"2": "timeout"}}}\'',
    )


def faults_override(config: pytest.Config) -> dict[str, Any] | None:
    """The `--faultbench-faults` block, parsed once; None without the option."""
    if _OVERRIDE_KEY not in config.stash:
        text = config.getoption("faultbench_faults", None)
        block = None
        if text is not None:
            try:
                block = json.loads(text)
            except ValueError as exc:
                raise pytest.UsageError(
                    f"Expected --faultbench-faults to be a faults: block as JSON. Instead, "
                    f"received: {text!r} ({exc})"
                ) from None
            if not isinstance(block, dict):
                raise pytest.UsageError(
                    f"Expected --faultbench-faults to be a JSON object. Instead, received: {text!r}"
                )
        config.stash[_OVERRIDE_KEY] = block
    result: dict[str, Any] | None = config.stash[_OVERRIDE_KEY]
    return result


class Outputs:
    def __init__(self, config: pytest.Config):
        self.config = config
        self.worker = hasattr(config, "workerinput")
        probe = os.environ.get(PROBE_ENV) == "1"
        report = config.getoption("faultbench_report", None)
        self.report_dir = None if report is None or probe else Path(report)
        self.shrink = bool(config.getoption("faultbench_shrink", False)) and not probe
        self.budget = config.getoption("faultbench_shrink_budget", DEFAULT_BUDGET)
        if self.budget is not None and self.budget < 1:
            raise pytest.UsageError(
                f"Expected --faultbench-shrink-budget N with N >= 1. Instead, received: "
                f"{self.budget}"
            )
        events = config.getoption("faultbench_events", None)
        self.events_dir = None if events is None else Path(events)
        faults_override(config)  # a bad --faultbench-faults is a usage error, at once
        self.shrinks: dict[str, tuple[ShrinkResult, str | None]] = {}
        self.report_path: Path | None = None

    def finish(self, groups: list[Group], reproduce: Callable[[str], str]) -> None:
        if self.worker:
            return
        if self.shrink:
            for group in groups:
                failing = group.failing()
                if failing:
                    self.shrinks[failing[0].nodeid] = self._shrink(failing[0], reproduce)
        shrinks = {nodeid: _shrink_json(r, cmd) for nodeid, (r, cmd) in self.shrinks.items()}
        if self.events_dir is not None:
            from .._artifacts._sessionfile import write_session

            write_session(self.events_dir, groups, reproduce, shrinks)
        if self.report_dir is not None:
            from .._artifacts._html import write_report

            self.report_path = write_report(
                self.report_dir,
                groups,
                reproduce={r.nodeid: reproduce(r.nodeid) for g in groups for r in g.runs.values()},
                shrinks=shrinks,
                title=f"faultbench: {self.config.rootpath.name}",
                comparisons=self._comparisons(),
            )

    def _comparisons(self) -> list[tuple[str, str, str, str, float | None]]:
        """`@pytest.mark.compare`'s pairs of groups, as `_compare.ComparePlugin` saw them."""
        compare = self.config.pluginmanager.get_plugin("faultbench-compare")
        pairs = {} if compare is None else compare.pairs
        return [(ga, gb, a, b, margin) for (ga, gb), (a, b, margin) in sorted(pairs.items())]

    def _shrink(self, run: Run, reproduce: Callable[[str], str]) -> tuple[ShrinkResult, str | None]:
        # imported here: only a session with --faultbench-shrink and a failing run pays for them
        from faultbench.kernel import decode_events
        from faultbench.kernel.lowlevel import faults_received

        from .._artifacts._html import spec_of
        from .._artifacts._shrink import Probe, probe_pytest, shrink

        if run.events is None:
            return ShrinkResult("error", message="the run has no event log (no world)"), None
        events = decode_events(run.events)
        spec = spec_of(events)
        if spec is None:
            return ShrinkResult("error", message="the run's world file cannot be read"), None
        probe = Probe(run.nodeid, self._probe_args(), str(self.config.rootpath))
        probe.shown = reproduce(run.nodeid)
        result = shrink(faults_received(events), spec, probe_pytest(probe), budget=self.budget)
        cmd = None if result.block is None else probe.reproduce(result.block)
        return result, cmd

    def _probe_args(self) -> list[str]:
        config = self.config
        args = ["--rootdir", str(config.rootpath)]
        if config.inipath is not None:
            args += ["-c", str(config.inipath)]
        runs = config.getoption("runs", None)
        if runs is not None:
            args += ["--runs", str(runs)]
        if config.pluginmanager.hasplugin("xdist"):
            args += ["-n", "0"]
        return args

    def summary(self, terminalreporter: Any) -> None:
        if self.shrinks:
            terminalreporter.section("faultbench: the faults that matter (shrunk)")
            for nodeid, (result, cmd) in self.shrinks.items():
                terminalreporter.write_line(f"{nodeid}: {result.headline()}")
                terminalreporter.write_line(
                    f"    {result.probes} probe{'s' if result.probes != 1 else ''} "
                    f"(of at most {self.budget})"
                )
                if cmd is not None:
                    terminalreporter.write_line(f"    Reproduce: {cmd}")
        if self.report_path is not None:
            terminalreporter.write_line(f"faultbench report: {self.report_path}")


def _shrink_json(result: ShrinkResult, cmd: str | None) -> dict[str, Any]:
    return {
        "verdict": result.verdict,
        "headline": result.headline(),
        "pins": [str(p) for p in result.pins],
        "received": [str(p) for p in result.received],
        "probes": result.probes,
        "faults": result.block,
        "reproduce": cmd,
    }
