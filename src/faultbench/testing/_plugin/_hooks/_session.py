"""The session's hooks: early stop, what each run's report carries (`report.faultbench`, a
plain dict that pytest-xdist carries from worker to controller), where the reports meet (the
tally of each group of runs), and the gates: the exit status, the summary, JUnit XML, GitHub
Actions, `--faultbench-json` and the session's outputs (`_plugin/_outputs.py`)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from ..._gate._report import Group, Tally, render_group
from ..._gate._reproduce import launcher, reproduce_command, shaping_options
from ..._gate._stats import decided
from .._ci import (
    faults_met,
    github_annotation,
    group_properties,
    send_gate_reports,
    step_summary,
    write_json,
)
from .._compare import compare_spec
from .._grading import grade_run
from .._harness import (
    before_first_call,
    never_awaited,
    never_reached_model,
    problem,
    setup_problem,
)
from .._logs import Logs
from .._outputs import Outputs
from .._usage import group_usage, run_usage, runs_needed
from ._stash import (
    AGENT_CALLS_KEY,
    COMMAND_KEY,
    FAULTS_OFF_KEY,
    PROBLEM_KEY,
    RUN_KEY,
    STOPPED_KEY,
    TOLERATED_KEY,
    WORLD_KEY,
)

__all__ = ["SESSION_KEY", "FaultbenchSession"]

#: the plugin's per-session state
SESSION_KEY = pytest.StashKey["FaultbenchSession"]()


class FaultbenchSession:
    """Per-session state and the hooks that need it (registered in `pytest_configure`)."""

    def __init__(self, config: pytest.Config):
        self.config = config
        #: xdist workers run tests and pass their reports on; the controller decides
        self.worker = hasattr(config, "workerinput")
        self.early_stop = not config.getoption("faultbench_no_early_stop", False)
        events = config.getoption("faultbench_events", None)
        self.events_dir = None if events is None else Path(events)
        self.tally = Tally()
        self.planned: dict[str, int] = {}  # group -> runs selected in this process
        self.order: dict[str, int] = {}  # nodeid -> collection position
        self.failed_gates: list[Group] = []
        self.outputs = Outputs(config)
        self.logs = Logs(config)
        #: the launcher and the options of the reproduce lines, once read
        self._command: tuple[list[str], list[str]] | None = None

    # --- early stop --------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Any:
        data = item.stash.get(RUN_KEY, None)
        # a compared test's runs pair up one for one: none may stop early
        if data is not None and self.early_stop and item.get_closest_marker("compare") is None:
            group = self.tally.groups.get(data["group"])
            if group is not None:
                passed, failed, _stopped = group.counts()
                errors = group.errors()
                skipped = len(group.runs) - passed - failed - _stopped - errors
                planned = self.planned.get(data["group"], data["total"]) - skipped - errors
                ran = passed + failed
                reason = None
                if errors:  # the gate has failed, and the next run would hit the same
                    reason = f"outcome decided: a set-up problem in run{_first_error(group)}"
                elif ran < planned and decided(
                    passed, failed, planned, data["min_pass_rate"] or 1.0
                ):
                    reason = f"outcome decided after {ran} run{'s' if ran != 1 else ''}"
                if reason is not None:
                    item.stash[STOPPED_KEY] = True
                    # A skip mark rather than raising here: pytest reports it at the test's
                    # own location, like any skip.
                    item.add_marker(pytest.mark.skip(reason=reason))
        return (yield)

    def pool_decided(self, item: pytest.Item, passed: int, failed: int) -> bool:
        """Whether a concurrent pool's runs that ended in a row from its first (`passed` and
        `failed` by their bodies), after the group's runs already reported, decide the gate:
        the pool starts no more runs then (_concurrent.py). An estimate: a run it leaves is
        run by its own item, or skipped by early stop above."""
        data = item.stash.get(RUN_KEY, None)
        if data is None or not self.early_stop or item.get_closest_marker("compare") is not None:
            return False
        group = self.tally.groups.get(data["group"])
        before_passed, before_failed, _stopped = (0, 0, 0) if group is None else group.counts()
        planned = self.planned.get(data["group"], data["total"])
        rate = data["min_pass_rate"] or 1.0
        return decided(before_passed + passed, before_failed + failed, planned, rate)

    # --- what a report carries ---------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        base = item.stash.get(RUN_KEY, None)
        if base is None:
            return report
        data = dict(base)
        if call.when == "call":
            data["compare"] = compare_spec(item)
        if call.when == "teardown":
            data["location"] = [item.location[0], item.location[1]]
            if FAULTS_OFF_KEY in item.stash:
                data["faults_off"] = item.stash[FAULTS_OFF_KEY]
        if call.when == "setup" and report.skipped and item.stash.get(STOPPED_KEY, False):
            data["stopped"] = True
        if report.failed and call.excinfo is not None:
            data["message"] = call.excinfo.exconly()
            # A run that never reached the agent is a set-up problem, never tolerated
            # (_harness.py; docs/TESTING.md, "What counts as a failure").
            cause = (
                problem(call.excinfo.value)
                if call.when == "call"
                else setup_problem(call.when, data["message"])
            )
            if cause is not None:
                data["problem"] = cause
        command = item.stash.get(COMMAND_KEY, None)
        if call.when == "call" and command is not None:
            # The run's world is the one the server logged (its journal), not a copy here.
            try:
                item.stash[WORLD_KEY] = command.world()
            except Exception as exc:  # a journal cut short, a world file changed mid-run
                item.stash[WORLD_KEY] = command.start
                if "problem" not in data:
                    text = f"faultbench could not read the mcp_command journal: {exc}"
                    data["problem"] = text
                    data.setdefault("message", text)
                    if not report.failed:
                        report.outcome = "failed"
                        report.longrepr = text
        world = item.stash.get(WORLD_KEY, None)
        if call.when == "call" and "problem" not in data:
            _agent_ran(item, call, report, world, data)
        if call.when == "call" and world is not None and report.failed:
            crashes = _handler_tracebacks(world)
            if crashes:
                # pytest shows a CallResult cut short and escaped into one line; the bug's
                # traceback reads better whole, under its own heading
                report.sections.append(("faultbench: handler tracebacks", crashes))
                data["crashes"] = crashes
        if call.when == "call" and world is not None:
            data["faults_met"] = faults_met(world)
            data["summary"] = world.trace.summary()
            data["world_file"] = world.spec.path
            self.logs.put(item.nodeid, world, data)  # as text only for who needs it
            data["state_hash"] = world.state_hash()
            grade_run(item, world, report, data)  # policies, expectations, milestones
            run_usage(item, report, world, data)  # figures, and a budget that fails the run
        if call.when in ("setup", "call") and "problem" in data:
            item.stash[PROBLEM_KEY] = data["problem"]
        if (
            call.when == "call"
            and report.failed
            and base["min_pass_rate"] is not None
            and "problem" not in data
        ):
            # Tolerated: not a failure for pytest (the gate decides the exit status, and the
            # gate is a test case of its own in JUnit XML: `_plugin/_ci.py`), shown as
            # TOLERATED. Not a skip either: the run ran. Its test case says what it was in
            # its properties (faultbench_outcome, faultbench_failure).
            report.outcome = "passed"
            report.longrepr = None
            data["tolerated"] = True
            item.stash[TOLERATED_KEY] = data.get("message") or "failed"
        if call.when == "teardown":
            report.user_properties.append(("faultbench_run", base["run"]))
            tolerated = item.stash.get(TOLERATED_KEY, None)
            if tolerated is not None:
                rate = base["min_pass_rate"]
                report.user_properties += [
                    ("faultbench_outcome", f"tolerated failure (min_pass_rate={rate:g})"),
                    ("faultbench_failure", tolerated),
                ]
            problem_text = item.stash.get(PROBLEM_KEY, None)
            if problem_text is not None:  # its test case says what it was, as tolerated ones do
                report.user_properties += [
                    ("faultbench_outcome", "set-up problem"),
                    ("faultbench_problem", problem_text),
                ]
            if world is not None:
                report.user_properties.append(("faultbench_calls", world.trace.summary()))
                report.user_properties.append(("faultbench_state_hash", world.state_hash()))
            # The item lives until the session ends; its world need not. Kept, every run's
            # world (~150 objects) would stay for the garbage collector to walk on each full
            # collection: 1,000 runs made those collections several times costlier (issue 24).
            if WORLD_KEY in item.stash:
                del item.stash[WORLD_KEY]
            if COMMAND_KEY in item.stash:
                del item.stash[COMMAND_KEY]
        # A report may carry extra attributes (pytest's TestReport says so); JSON types only,
        # so that pytest-xdist carries it from worker to controller.
        report.faultbench = data
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: Any, config: pytest.Config) -> Any:
        data = getattr(report, "faultbench", None)
        if data is not None and data.get("tolerated") and report.when == "call":
            return "tolerated", "t", ("TOLERATED", {"yellow": True})
        if data is not None and data.get("problem") and report.when == "call" and report.failed:
            # never reached the agent: an error, as a fixture's failure is
            return "error", "E", ("ERROR", {"red": True})
        return None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Any:
        if RUN_KEY not in item.stash:
            return (yield)
        from faultbench.kernel.lowlevel import recording_agent_calls

        with recording_agent_calls() as calls:
            item.stash[AGENT_CALLS_KEY] = calls
            return (yield)

    # --- where reports meet ------------------------------------------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # On the controller: the collection order, so groups are listed as without xdist.
        for position, nodeid in enumerate(ids):
            self.order.setdefault(nodeid, position)

    @pytest.hookimpl(tryfirst=True)  # before junitxml reads user_properties
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "faultbench", None)
        if data is None:
            return
        if (
            report.when == "call"
            and self.events_dir is not None
            and not self.worker
            and data.get("events") is not None
        ):
            data["events_file"] = self._write_events(report.nodeid, data["events"])
        group = self.tally.add(report, data)
        if report.when == "call":
            self.logs.attach(self.tally, report.nodeid)
        if group is not None and group.complete and not self.worker:
            report.user_properties.extend(group_properties(group))

    def _write_events(self, nodeid: str, events: str) -> str:
        assert self.events_dir is not None
        self.events_dir.mkdir(parents=True, exist_ok=True)
        name = nodeid.replace("::", ".").replace("/", ".").replace("[", ".").rstrip("]")
        name = re.sub(r"[^\w.\-]+", "_", name)
        path = self.events_dir / f"{name}.jsonl"
        path.write_text(events)
        return os.path.relpath(path) if not path.is_absolute() else str(path)

    @pytest.hookimpl(tryfirst=True)  # before junitxml writes its file
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.worker:
            return
        groups = self._groups()
        gates = [g.gate() for g in groups]
        counted = [(g, gate) for g, gate in zip(groups, gates) if gate.planned or gate.errors]
        self.failed_gates = [g for g, gate in counted if not gate.ok]
        if self.failed_gates and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        send_gate_reports(
            self.config,
            [
                (g, gate.ok, self._lines(g), group_properties(g), bool(gate.errors))
                for g, gate in counted
            ],
        )
        json_file = self.config.getoption("faultbench_json", None)
        if json_file:
            write_json(Path(json_file), [(g, gate) for g, gate in counted], self._reproduce)
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if _on_github() and summary and counted:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(step_summary([(g.name, gate) for g, gate in counted], self._display))
        # --faultbench-shrink, the session file next to the event logs, --faultbench-report
        self.outputs.finish(self._groups(every=True), self._reproduce)

    def _groups(self, *, every: bool = False) -> list[Group]:
        groups = list(self.tally.groups.values()) if every else self.tally.shown()
        last = len(self.order)

        def position(g: Group) -> int:
            return min((self.order.get(r.nodeid, last) for r in g.runs.values()), default=last)

        return sorted(groups, key=position)

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: Any) -> None:
        if self.worker:
            return
        groups = self._groups()
        if not groups:
            self.outputs.summary(terminalreporter)
            return
        terminalreporter.section("faultbench: pass rate over runs")
        verbose = config.get_verbosity() > 0
        for group in groups:
            lines = self._lines(group, verbose=verbose)
            for line in lines:
                markup = {}
                if line.startswith(self._display(group.name) + ":"):
                    markup = {"green": True} if group.gate().ok else {"red": True, "bold": True}
                terminalreporter.write_line(line, **markup)
            if _on_github() and group in self.failed_gates:
                terminalreporter.write_line(github_annotation(group, lines, self.config.rootpath))
        if self.failed_gates:
            # Counted in pytest's last line ("17 passed, 3 tolerated, 1 gate failed").
            key = "gate failed" if len(self.failed_gates) == 1 else "gates failed"
            terminalreporter.stats.setdefault(key, []).extend(self.failed_gates)
        self.outputs.summary(terminalreporter)  # shrinking's findings, where the report went

    def _lines(self, group: Group, *, verbose: bool = False) -> list[str]:
        """The summary's lines of `group`: its gate, failing runs, usage, runs needed."""
        lines = render_group(
            group,
            display=self._display,
            reproduce=self._reproduce,
            verbose=verbose,
            diff=self.config.getoption("faultbench_diff", "calls"),
        )
        extras = (group_usage(group)[0], runs_needed(group))
        return lines + ["    " + extra for extra in extras if extra is not None]

    def _display(self, nodeid: str) -> str:
        """`nodeid` with its file relative to the working directory, as pytest takes it."""
        path, sep, rest = nodeid.partition("::")
        full = self.config.rootpath / path
        try:
            rel = os.path.relpath(full, self.config.invocation_params.dir)
        except ValueError:  # another drive (Windows)
            return nodeid
        return rel.replace(os.sep, "/") + sep + rest

    def _reproduce(self, nodeid: str) -> str:
        """The command that runs `nodeid` again as this session ran it (`_reproduce.py`)."""
        if self._command is None:
            self._command = (launcher(), shaping_options(self.config))
        words, options = self._command
        return reproduce_command(self._display(nodeid), options, words)


def _agent_ran(
    item: pytest.Item, call: pytest.CallInfo[None], report: Any, world: Any, data: dict[str, Any]
) -> None:
    """Make a run whose agent never ran a set-up problem (`_plugin/_harness.py`), failed if it
    passed: a gate never passes on runs that tested nothing."""
    calls = item.stash.get(AGENT_CALLS_KEY, [])
    cause = never_awaited(calls) or never_reached_model(calls)
    if cause is None and report.failed and call.excinfo is not None:
        cause = before_first_call(call.excinfo.value, world, calls)
    if cause is None:
        return
    data["problem"] = cause
    if not report.failed:
        report.outcome = "failed"
        report.longrepr = f"faultbench: {cause}"


def _on_github() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def _handler_tracebacks(world: Any) -> str:
    """The tracebacks of the run's handler bugs (internal errors), one block per call."""
    blocks = []
    for c in world.trace:
        if c.traceback:
            blocks.append(
                f"{c.tool} (call {c.call_id}): a bug in the world's handler\n{c.traceback}"
            )
    return "\n".join(blocks)


def _first_error(group: Group) -> int:
    return min(i for i, r in group.runs.items() if r.outcome == "error")
