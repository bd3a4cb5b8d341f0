"""Where the reports meet: runs tallied into groups, the gate of each group, and the report.

Everything here works on `report.faultbench`, the plain dict (JSON types only) the plugin puts
on every report of a run, so it works the same in one process and on pytest-xdist's
controller, which receives the reports of all workers and nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._hints import budget_hint
from ._stats import Gate, decide
from ._usage import Usage, over_budget

if TYPE_CHECKING:
    from faultbench.kernel import Event, EventDiff
    from faultbench.kernel.lowlevel import RunExplanation

__all__ = ["Group", "Run", "Tally", "closest_explained", "closest_passing", "render_group"]

#: failing runs shown with their message and event-log diff (the rest get their call line)
DETAILED_FAILURES = 5
#: lines of event-log diff shown per failing run
DIFF_LINES = 30


@dataclass
class Run:
    """One run as its reports told it."""

    nodeid: str
    index: int
    #: "passed", "failed", "error" (a set-up problem: it never reached the agent),
    #: "stopped" (early stop) or "skipped" (by the test itself)
    outcome: str = "passed"
    tolerated: bool = False
    message: str | None = None
    #: why an "error" run is a set-up problem (docs/TESTING.md)
    problem: str | None = None
    #: the tracebacks of handler bugs the run hit (internal errors)
    crashes: str | None = None
    summary: str | None = None
    events: str | None = None  # JSON Lines
    state_hash: str | None = None
    events_file: str | None = None
    world_file: str | None = None  # the world file the run was made with
    #: its milestone score in [0, 1] and which milestones it hit (docs/CHECKS.md)
    score: float | None = None
    milestones: dict[str, bool] | None = None
    min_mean_score: float | None = None
    #: the checks it broke: {"rule", "message", "calls", "call_ids"} (docs/CHECKS.md)
    violations: list[dict[str, Any]] | None = None
    #: it received an injection (`inject`): did its test's assertions pass (utility), and
    #: did it break a policy (attack success)?
    attacked: bool = False
    utility: bool | None = None
    attack_succeeded: bool | None = None
    usage: dict[str, Any] | None = None  # `_usage.Usage` figures: model calls, tokens, cost
    #: the test's `budget(per="group")` limits, by `BUDGET_KEYS` name
    group_budget: dict[str, float] | None = None
    #: the fault kinds the run met (None: no world to ask)
    faults_met: list[str] | None = None
    #: the run's events themselves, when they never left this process (the plugin ships
    #: `events` only to a consumer that needs the text: `_plugin/_logs.py`)
    log: Sequence[Event] | None = field(default=None, repr=False)

    @property
    def has_events(self) -> bool:
        return self.events is not None or self.log is not None


@dataclass
class Group:
    """The runs of one test (or one parameter set of it)."""

    name: str
    total: int
    min_pass_rate: float | None
    runs: dict[int, Run] = field(default_factory=dict)
    #: where the test is defined: (path relative to the rootdir, 0-based line)
    location: tuple[str, int | None] | None = None
    #: (world file name, its fault rules) when its runs left the file's `faults:` off
    faults_off: tuple[str, int] | None = None

    def faults_note(self) -> str:
        """`faults: off (world.yaml has 2 rules; add @pytest.mark.faults())`, or ""."""
        if self.faults_off is None:
            return ""
        name, n = self.faults_off
        return (
            f"faults: off ({name} has {n} rule{'s' if n != 1 else ''}; add @pytest.mark.faults())"
        )

    def counts(self) -> tuple[int, int, int]:
        outcomes = [r.outcome for r in self.runs.values()]
        return outcomes.count("passed"), outcomes.count("failed"), outcomes.count("stopped")

    def errors(self) -> int:
        return sum(r.outcome == "error" for r in self.runs.values())

    def gate(self) -> Gate:
        ran = [r for r in self.runs.values() if r.outcome in ("passed", "failed")]
        scores = tuple(r.score for r in ran if r.score is not None)
        wanted = [r.min_mean_score for r in self.runs.values() if r.min_mean_score is not None]
        return decide(
            *self.counts(),
            self.min_pass_rate,
            self.errors(),
            scores,
            max(wanted, default=None),
            self.over_budget(ran),
        )

    def over_budget(self, ran: list[Run]) -> tuple[str, ...]:
        """The group's usage (its runs that ran, together) over its `budget(per="group")`."""
        budget = next((r.group_budget for r in self.runs.values() if r.group_budget), None)
        if budget is None:
            return ()
        total = Usage.total([Usage(**r.usage) for r in ran if r.usage])
        return tuple(over_budget(total, budget))

    def fault_figures(self) -> dict[str, Any]:
        """Per fault kind the runs that ran met: {"kinds": {kind: {"met": n, "passed": p}},
        "failed_after_fault": a, "failed_without_fault": b}."""
        ran = [r for r in self.runs.values() if r.outcome in ("passed", "failed")]
        kinds: dict[str, dict[str, int]] = {}
        for r in sorted(ran, key=lambda r: r.index):
            for kind in r.faults_met or ():
                k = kinds.setdefault(kind, {"met": 0, "passed": 0})
                k["met"] += 1
                k["passed"] += r.outcome == "passed"
        failed = [r for r in ran if r.outcome == "failed"]
        return {
            "kinds": kinds,
            "failed_after_fault": sum(bool(r.faults_met) for r in failed),
            "failed_without_fault": sum(not r.faults_met for r in failed),
        }

    def fault_lines(self) -> list[str]:
        """`faults met: timeout: met in 4 runs, 2 passed; ...` and where the failing runs
        failed, under the gate line; none when no run met a fault."""
        figures = self.fault_figures()
        if not figures["kinds"]:
            return []
        parts = [
            f"{kind}: met in {k['met']} run{'s' if k['met'] != 1 else ''}, {k['passed']} passed"
            for kind, k in figures["kinds"].items()
        ]
        lines = ["    faults met: " + "; ".join(parts)]
        after, before = figures["failed_after_fault"], figures["failed_without_fault"]
        if after or before:
            lines.append(
                f"    failing runs: {after} failed after their first fault, {before} without "
                "meeting one"
            )
        return lines

    def attack_line(self) -> str:
        """`under attack: ...`: how the runs that received an injection did, attack success
        apart from utility (AgentDojo's two numbers); "" when no run was attacked."""
        ran = [r for r in self.runs.values() if r.outcome in ("passed", "failed")]
        attacked = [r for r in ran if r.attacked]
        if not attacked:
            return ""
        n = len(attacked)
        won = sum(bool(r.attack_succeeded) for r in attacked)
        useful = sum(bool(r.utility) for r in attacked)
        return (
            f"    under attack: {n} of {len(ran)} run{'s' * (len(ran) != 1)} received an "
            f"injection; attack success {won}/{n} ({100 * won / n:.0f}%), utility {useful}/{n} "
            f"({100 * useful / n:.0f}%)"
        )

    def milestone_rates(self) -> list[tuple[str, int, int]]:
        """(milestone, runs that hit it, runs graded on it), in the order first seen."""
        hits: dict[str, list[int]] = {}
        for _, r in sorted(self.runs.items()):
            if r.outcome in ("passed", "failed") and r.milestones:
                for name, hit in r.milestones.items():
                    h = hits.setdefault(name, [0, 0])
                    h[0] += bool(hit)
                    h[1] += 1
        return [(name, h[0], h[1]) for name, h in hits.items()]

    @property
    def complete(self) -> bool:
        return len(self.runs) >= self.total

    def failing(self) -> list[Run]:
        """The runs that failed, set-up problems first."""
        runs = [r for _, r in sorted(self.runs.items()) if r.outcome in ("failed", "error")]
        return sorted(runs, key=lambda r: r.outcome != "error")

    def passing(self) -> list[Run]:
        return [r for _, r in sorted(self.runs.items()) if r.outcome == "passed"]


class Tally:
    """Runs by group, built from reports as they arrive (setup, call, teardown of each)."""

    def __init__(self) -> None:
        self.groups: dict[str, Group] = {}
        self._open: dict[str, Run] = {}  # nodeid -> run whose teardown has not arrived

    def add(self, report: Any, data: dict[str, Any]) -> Group | None:
        """Take one report of a run; returns its group once the run's teardown is in."""
        run = self._open.get(report.nodeid)
        if run is None:
            run = self._open[report.nodeid] = Run(report.nodeid, data["run"])
        if report.when == "setup":
            if report.failed:
                run.outcome = "error"
                run.message = data.get("message")
                run.problem = data.get("problem")
            elif report.skipped:
                run.outcome = "stopped" if data.get("stopped") else "skipped"
        elif report.when == "call":
            if data.get("problem") is not None:
                run.outcome = "error"
                run.message = data.get("message")
                run.problem = data["problem"]
            elif data.get("tolerated") or report.failed:
                run.outcome = "failed"
                run.tolerated = bool(data.get("tolerated"))
                run.message = data.get("message")
            elif report.skipped:
                run.outcome = "skipped"
            for key in (
                "summary", "events", "state_hash", "events_file", "world_file", "crashes",
                "score", "milestones", "min_mean_score", "violations",
                "attacked", "utility", "attack_succeeded",
                "usage", "group_budget", "faults_met",
            ):  # fmt: skip
                if data.get(key) is not None:
                    setattr(run, key, data[key])
        elif report.when == "teardown":
            if report.failed and run.outcome not in ("failed", "error"):
                run.outcome = "error"
                run.message = data.get("message")
                run.problem = data.get("problem")
            del self._open[report.nodeid]
            group = self.groups.get(data["group"])
            if group is None:
                group = self.groups[data["group"]] = Group(
                    data["group"], data["total"], data.get("min_pass_rate")
                )
            group.runs[run.index] = run
            if group.location is None and data.get("location"):
                path, line = data["location"]
                group.location = (path, line)
            if data.get("faults_off"):
                name, n = data["faults_off"]
                group.faults_off = (name, n)
            return group
        return None

    def open_run(self, nodeid: str) -> Run | None:
        """The run of `nodeid` whose teardown report has not arrived yet."""
        return self._open.get(nodeid)

    def shown(self) -> list[Group]:
        """The groups the summary shows: several runs, a min_pass_rate, or a failure."""
        return [
            g
            for g in self.groups.values()
            if g.total > 1 or g.min_pass_rate is not None or g.failing()
        ]


def _indent(text: str, prefix: str) -> list[str]:
    return [prefix + line for line in text.splitlines()]


def render_group(
    group: Group, *, display: Any, reproduce: Any, verbose: bool = False, diff: str = "calls"
) -> list[str]:
    """The summary lines of one group: its gate, then each failing run's call line,
    assertion message, how it differs from the closest passing run (`diff="calls"`: in
    words, then the end states; `"events"`: the event-log diff) and the command that
    reproduces it. `display(nodeid)` shortens a node id for people; `reproduce(nodeid)` is
    the command."""
    gate = group.gate()
    if gate.planned == 0 and not gate.errors:
        return [f"{display(group.name)}: no runs counted (all skipped)"]
    lines = [f"{display(group.name)}: {gate.line()}"]
    if group.faults_off is not None:
        lines.append("    " + group.faults_note())
    lines += group.fault_lines()
    attack = group.attack_line()
    if attack:
        lines.append(attack)
    rates = group.milestone_rates()
    if rates:
        lines.append(
            "    milestones: "
            + ", ".join(f"{name} {hit}/{n} ({100 * hit / n:.0f}%)" for name, hit, n in rates)
        )
    failing = group.failing()
    decoded: dict[int, list[Event]] = {}
    for n, run in enumerate(failing):
        calls = run.summary if run.summary else "(no calls)" if run.has_events else "(no world)"
        tag = " (tolerated)" if run.tolerated else ""
        if run.outcome == "error":
            tag = " (set-up problem)"
        lines.append(f"    run{run.index}{tag}: {calls}")
        if run.problem:
            lines.append(f"        Set-up problem, not an agent failure: {run.problem}")
        if n >= DETAILED_FAILURES and not verbose:
            lines.append(f"        Reproduce: {reproduce(run.nodeid)}")
            continue
        hint = budget_hint(run.message)
        if hint is not None:
            lines.append(f"        Note: {hint}")
        if run.message:
            message = run.message.splitlines()
            lines += ["        " + m for m in message[:12]]
            if len(message) > 12:
                lines.append(f"        ... {len(message) - 12} more lines")
        if run.crashes:
            lines.append("        Handler traceback:")
            lines += ["          " + c for c in run.crashes.splitlines()]
        diff_lines = (
            _closest_diff(group, run, decoded)
            if diff == "events"
            else _closest_explained(group, run, decoded)
        )
        lines += ["        " + d for d in diff_lines]
        if run.events_file:
            lines.append(
                f"        Event log: {run.events_file} (faultbench replay {run.events_file} "
                f"--world {run.world_file} "
                f"--expect-hash {run.state_hash})"
            )
        lines.append(f"        Reproduce: {reproduce(run.nodeid)}")
    return lines


def _closest_diff(group: Group, run: Run, decoded: dict[int, list[Event]]) -> list[str]:
    """The event-log diff of `run` against the passing run of its group closest to it."""
    if not run.has_events:
        return []
    best = closest_passing(group, run, decoded, candidates=SUMMARY_CANDIDATES)
    if best is None:
        return ["no passing run to compare the event log with"]
    other, d = best
    if not d:
        return [f"event log: the same as run{other.index}'s ({d.len_a} events)"]
    head = f"event log against run{other.index} (closest passing run; - run{other.index}, + run{run.index}):"
    return [head, *_indent(str(d), "  ")]


#: the summary compares a failing run with at most this many passing runs, nearest in log
#: length: a 20-run group compares with all of them, a 1,000-run group's summary stays
#: linear (all 990 made it ~2 s of a 1,000-run suite's ~12 s)
SUMMARY_CANDIDATES = 32


def _closest_explained(group: Group, run: Run, decoded: dict[int, list[Event]]) -> list[str]:
    """How `run` differs from the passing run of its group closest to it, in words."""
    if not run.has_events:
        return []
    best = closest_explained(group, run, decoded, candidates=SUMMARY_CANDIDATES)
    if best is None:
        return ["no passing run to compare with"]
    other, x = best
    return [f"against run{other.index} (closest passing run):", *_indent(str(x), "  ")]


def closest_explained(
    group: Group, run: Run, decoded: dict[int, list[Event]], *, candidates: int | None = None
) -> tuple[Run, RunExplanation] | None:
    """The passing run of `group` whose calls and end state are closest to `run`'s, and the
    explanation of `run` against it; None without a passing run."""
    passing = _nearest_passing(group, run, decoded, candidates)
    if passing is None:
        return None
    from faultbench.kernel.lowlevel import explain_runs

    mine = _events(run, decoded)
    best = None
    for p in passing:
        x = explain_runs(
            _events(p, decoded), mine, a_name=f"run{p.index}", b_name=f"run{run.index}"
        )
        if best is None or x.distance < best[1].distance:
            best = (p, x)
    return best


def _nearest_passing(
    group: Group, run: Run, decoded: dict[int, list[Event]], candidates: int | None
) -> list[Run] | None:
    """The passing runs of `group` to compare `run` with (None when there is nothing to
    compare): at most `candidates`, nearest in log length first (a large group's report
    stays linear)."""
    passing = [p for p in group.passing() if p.has_events]
    if not run.has_events or not passing:
        return None
    if candidates is not None and len(passing) > candidates:
        length = _length(run, decoded)
        passing.sort(key=lambda p: abs(_length(p, decoded) - length))
        passing = passing[:candidates]
    return passing


def closest_passing(
    group: Group,
    run: Run,
    decoded: dict[int, list[Event]],
    *,
    max_lines: int = DIFF_LINES,
    candidates: int | None = None,
) -> tuple[Run, EventDiff] | None:
    """The passing run of `group` whose event log is closest to `run`'s, and the `EventDiff`
    (passing run: a, `run`: b); None without a passing run. `candidates` bounds the runs
    compared, nearest in log length first (a large group's report stays linear)."""
    passing = _nearest_passing(group, run, decoded, candidates)
    if passing is None:
        return None
    from faultbench.kernel import diff_events

    mine = _events(run, decoded)
    best = None
    for p in passing:
        d = diff_events(_events(p, decoded), mine, max_lines=max_lines)
        if best is None or d.distance < best[1].distance:
            best = (p, d)
    return best


def _length(run: Run, decoded: dict[int, list[Event]]) -> int:
    """How many events `run` logged, without decoding a log that is not decoded yet (a
    shipped log is JSON Lines: one event a line)."""
    got = decoded.get(run.index)
    if got is not None:
        return len(got)
    if run.log is not None:
        return len(run.log)
    text = run.events or ""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _events(run: Run, decoded: dict[int, list[Event]]) -> list[Event]:
    got = decoded.get(run.index)
    if got is None:
        from faultbench.kernel import decode_events, encode_events

        # A kept log goes through its text too (encoded only now, for the runs a diff
        # reads): the events read back are the ones a shipped log gives, so the report is
        # the same either way (a record's fields in the log's key order, ...).
        text = encode_events(run.log) if run.log is not None else None
        if text is None:
            assert run.events is not None
            text = run.events.encode()
        got = decoded[run.index] = list(decode_events(text))
    return got
