"""Gates where CI reads them: a test case of its own in JUnit XML (`pytest --junitxml`), and
under GitHub Actions an `::error` annotation at the test's definition for a failed gate and a
Markdown table of every gate in the job's summary (`$GITHUB_STEP_SUMMARY`).

A gate reaches JUnit XML as a test does: its set-up, call and teardown reports go through
pytest's `pytest_runtest_logreport` hook (every plugin that writes test reports hears them:
junitxml, pytest-html...), except to the terminal, which shows the gate in faultbench's own
section. Its node id is the group's with `gate` as its last parameter (`test_x[gate]`,
`test_x[case-a-gate]`); a failed gate's failure message holds its gate line, its failing runs
and their reproduce lines.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest

from .._gate._stats import pass_hat_k
from ._usage import group_usage

__all__ = [
    "gate_nodeid",
    "github_annotation",
    "group_properties",
    "send_gate_reports",
    "step_summary",
]

When = Literal["setup", "call", "teardown"]
Outcome = Literal["passed", "failed", "skipped"]

#: the plugins that do not hear a gate's reports (the terminal shows gates in its own section)
_QUIET = ("terminalreporter", "stepwiseplugin", "lfplugin", "faultbench-session")


def gate_nodeid(group: str) -> str:
    """The node id of the gate of `group`: `t.py::test_x` -> `t.py::test_x[gate]`,
    `t.py::test_x[a]` -> `t.py::test_x[a-gate]`."""
    if group.endswith("]"):
        return group[:-1] + "-gate]"
    return group + "[gate]"


def send_gate_reports(
    config: pytest.Config,
    gates: Sequence[tuple[Any, bool, list[str], list[tuple[str, object]], bool]],
) -> None:
    """Report each gate as a test: (group, ok, its lines, its properties, whether set-up
    problems failed it). A gate its set-up problems failed is an error (it failed in its
    set-up, as a test whose fixture broke: JUnit's `<error>`), one its agent failed a failure
    (`<failure>`); either way never a passing test case."""
    quiet = [p for name in _QUIET if (p := config.pluginmanager.get_plugin(name)) is not None]
    hook = config.pluginmanager.subset_hook_caller("pytest_runtest_logreport", quiet)
    for group, ok, lines, properties, setup_problem in gates:
        nodeid = gate_nodeid(group.name)
        path, line = group.location or (group.name.partition("::")[0], None)
        location = (path, line, nodeid.partition("::")[2])
        common: dict[str, Any] = {"keywords": {"faultbench_gate": 1}, "location": location}
        text = "\n".join(lines)
        phases: list[tuple[When, Outcome, str | None, list[tuple[str, object]]]] = [
            ("setup", "passed", None, []),
            ("call", "passed" if ok else "failed", None if ok else text, []),
            ("teardown", "passed", None, properties),
        ]
        if not ok and setup_problem:  # no verdict on the agent: an error, as pytest has it
            phases = [("setup", "failed", text, []), ("teardown", "passed", None, properties)]
        for when, outcome, longrepr, props in phases:
            report = pytest.TestReport(
                nodeid,
                outcome=outcome,
                longrepr=longrepr,
                when=when,
                user_properties=props,
                sections=[("faultbench gate", text)] if when == "call" else (),
                **common,
            )
            hook(report=report)


def _escape(text: str, *, prop: bool = False) -> str:
    """Text for a GitHub workflow command (its data, or a property with `prop`)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def _file(path: str, root: Path) -> str:
    """`path` (relative to pytest's rootdir) relative to the workspace GitHub checked out
    into, as an annotation wants it."""
    workspace = os.environ.get("GITHUB_WORKSPACE")
    full = root / path
    if workspace:
        try:
            return Path(os.path.relpath(full, workspace)).as_posix()
        except ValueError:
            pass
    return Path(path).as_posix()


def github_annotation(group: Any, lines: list[str], root: Path) -> str:
    """The `::error file=...,line=...::` workflow command of a failed gate, at its test's
    definition (its lines after the gate line as the annotation's body)."""
    path, line = group.location or (group.name.partition("::")[0], None)
    where = f"file={_escape(_file(path, root), prop=True)}"
    if line is not None:
        where += f",line={line + 1}"
    title = _escape(f"faultbench gate failed: {group.name}", prop=True)
    return f"::error {where},title={title}::{_escape(chr(10).join(lines))}"


def step_summary(rows: Sequence[tuple[str, Any]], display: Callable[[str], str]) -> str:
    """The Markdown table of every gate (name, gate) for `$GITHUB_STEP_SUMMARY`."""
    out = [
        "### faultbench: pass rate over runs",
        "",
        "| gate | passed | pass rate | 95% CI | min_pass_rate | verdict |",
        "| --- | ---: | ---: | --- | ---: | --- |",
    ]
    for name, gate in rows:
        verdict = "PASS" if gate.ok else "**FAIL**"
        if gate.errors:
            out.append(
                f"| `{display(name)}` | set-up problem in {gate.errors} run"
                f"{'s' if gate.errors != 1 else ''} | | | {gate.min_pass_rate:g} | {verdict} |"
            )
            continue
        lo, hi = gate.interval
        out.append(
            f"| `{display(name)}` | {gate.passed}/{gate.ran} | {gate.rate:.1%} | "
            f"{lo:.1%}-{hi:.1%} | {gate.min_pass_rate:g} | {verdict} |"
        )
    return "\n".join(out) + "\n"


def group_properties(group: Any) -> list[tuple[str, object]]:
    """The group's pass rate as JUnit XML properties (on its last run's test case)."""
    gate = group.gate()
    lo, hi = gate.interval
    props: list[tuple[str, object]] = [
        ("faultbench_group", group.name),
        ("faultbench_passed", gate.passed),
        ("faultbench_ran", gate.ran),
        ("faultbench_pass_rate", round(gate.rate, 4)),
        ("faultbench_ci95", f"{lo:.4f}-{hi:.4f}"),
    ]
    p3 = pass_hat_k(gate.passed, gate.ran, 3)
    if p3 is not None:
        props.append(("faultbench_pass_hat_3", round(p3, 4)))
    props += [
        ("faultbench_min_pass_rate", gate.min_pass_rate),
        ("faultbench_gate", "PASS" if gate.ok else "FAIL"),
    ]
    return props + group_usage(group)[1]


def faults_met(world: Any) -> list[str]:
    """The fault kinds a run's world injected, in the order first met."""
    from faultbench.kernel import FaultInjected

    kinds: dict[str, None] = {}
    for event in world.events:
        if isinstance(event, FaultInjected):
            kinds.setdefault(event.kind, None)
    return list(kinds)


def write_json(
    path: Path, gates: Sequence[tuple[Any, Any]], reproduce: Callable[[str], str]
) -> None:
    """`--faultbench-json FILE`: every gate as data."""
    import json

    out = []
    for group, gate in gates:
        lo, hi = gate.interval
        out.append(
            {
                "gate": group.name,
                "verdict": "PASS" if gate.ok else "FAIL",
                "passed": gate.passed,
                "ran": gate.ran,
                "skipped": gate.stopped,
                "setup_problems": gate.errors,
                "pass_rate": gate.rate,
                "ci95": [lo, hi],
                "min_pass_rate": gate.min_pass_rate,
                "faults_off": group.faults_note() or None,
                "faults": group.fault_figures(),
                "failing_runs": [
                    {
                        "run": r.index,
                        "outcome": "set-up problem" if r.outcome == "error" else "failed",
                        "tolerated": r.tolerated,
                        "calls": r.summary,
                        "faults_met": r.faults_met or [],
                        "message": r.problem or r.message,
                        "reproduce": reproduce(r.nodeid),
                    }
                    for r in group.failing()
                ],
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"gates": out}, indent=2) + "\n")
