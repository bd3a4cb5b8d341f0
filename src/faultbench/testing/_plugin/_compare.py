"""`@pytest.mark.compare(a, b, margin=None)`: two agents on the same runs, paired.

The test is parametrized over agents (`@pytest.mark.parametrize("agent", ["baseline",
"candidate"])`); its runs then form one group per agent (`test_x[baseline]`,
`test_x[candidate]`), and run k of both met the same faults (same world, seed and run index:
common random numbers). At the end of the session the groups are paired by run index and the
summary gets both pass / only a / only b / both fail, the difference with its 95% interval for
paired proportions and the exact McNemar p-value (`_gate/_paired.py`). With `margin=d` it is a
gate, "b is not worse than a by more than d", which fails the session when the interval does
not show it. The marker's arguments travel on the run's reports (xdist-safe).
"""

from __future__ import annotations

from typing import Any

import pytest

from .._gate._paired import Paired
from .._gate._runs import group_of

__all__ = ["ComparePlugin", "compare_spec"]


def compare_spec(item: pytest.Item) -> list[Any] | None:
    """The marker's (a, b, margin) as JSON, for the run's report; None without one."""
    marker = item.get_closest_marker("compare")
    if marker is None:
        return None
    if len(marker.args) != 2 or not all(isinstance(x, str) for x in marker.args):
        raise pytest.UsageError(
            f"{item.nodeid}: expected @pytest.mark.compare('baseline', 'candidate'): the ids "
            f"of two parameters of the test. Instead, received: {marker.args!r}"
        )
    margin = marker.kwargs.get("margin")
    return [*marker.args, None if margin is None else float(margin)]


def _partner(group: str, a: str, b: str) -> str | None:
    """The name of `group`'s b-group when `group` is its a-group (`t.py::x[a-http]` ->
    `t.py::x[b-http]`)."""
    head, sep, ids = group.partition("[")
    if not sep:
        return None
    parts = ids.rstrip("]").split("-")
    if a not in parts:
        return None
    return f"{head}[{'-'.join(b if p == a else p for p in parts)}]"


class ComparePlugin:
    """Collects compare specs from reports; prints and gates the pairs at the end."""

    def __init__(self, session: Any):
        self.session = session  # the FaultbenchSession whose tally holds the groups
        self.pairs: dict[tuple[str, str], tuple[str, str, float | None]] = {}
        self.failed = False

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data: dict[str, Any] = getattr(report, "faultbench", None) or {}
        spec = data.get("compare")
        if spec is None or report.when != "call":
            return
        a, b, margin = spec
        group = group_of(report.nodeid, data["run"])
        partner = _partner(group, a, b)
        if partner is not None:
            self.pairs[(group, partner)] = (a, b, margin)

    def _results(self) -> list[tuple[str, Paired, str, str, float | None]]:
        groups = self.session.tally.groups
        out = []
        for (ga, gb), (a, b, margin) in sorted(self.pairs.items()):
            if ga not in groups or gb not in groups:
                continue
            oa = _outcomes(groups[ga])
            ob = _outcomes(groups[gb])
            out.append((ga, Paired.of(oa, ob), a, b, margin))
        return out

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.session.worker:
            return
        for _, paired, _, _, margin in self._results():
            if margin is not None and paired.not_worse(margin) is not True:
                self.failed = True
        if self.failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        results = [] if self.session.worker else self._results()
        if not results:
            return
        terminalreporter.section("faultbench: paired comparison (same runs, same faults)")
        for group, paired, a, b, margin in results:
            terminalreporter.write_line(f"{group.split('[')[0]}: {b} against {a}")
            for line in paired.lines(a, b, margin):
                terminalreporter.write_line("    " + line)


def _outcomes(group: Any) -> dict[int, bool]:
    return {
        i: r.outcome == "passed" for i, r in group.runs.items() if r.outcome in ("passed", "failed")
    }
