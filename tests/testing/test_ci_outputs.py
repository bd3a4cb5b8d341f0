"""Gates where CI reads them (issue 39): a gate is a test case in JUnit XML, read here by a
real consumer of the format (junitparser), with its failing runs and their reproduce lines;
tolerated runs are not skips; under GitHub Actions a failed gate is an `::error` annotation at
the test's definition and every gate a row of the job summary."""

from __future__ import annotations

import pytest

junitparser = pytest.importorskip("junitparser")

GATES = """
import pytest

pytestmark = [pytest.mark.world("world.yaml"), pytest.mark.runs(4)]


@pytest.mark.min_pass_rate(0.5)
def test_flaky(world, faultbench_run):
    world.call("get_order", {"id": "1"})
    assert faultbench_run.index != 2, "run 2 fails"


@pytest.mark.min_pass_rate(0.75)
def test_broken(world, faultbench_run):
    world.call("get_order", {"id": "1"})
    assert faultbench_run.index % 2 == 0, "odd runs fail"
"""


def _properties(case):
    return {p.name: p.value for p in case.iterchildren(junitparser.Properties) for p in p}


def _cases(path):
    xml = junitparser.JUnitXml.fromfile(str(path))
    return {case.name: case for suite in xml for case in suite}, xml


def test_a_failed_gate_is_a_failed_test_case_and_tolerated_runs_are_not_skips(fb):
    fb.makepyfile(test_gates=GATES)
    result = fb.runpytest("--junitxml", "report.xml", "--faultbench-no-early-stop")
    assert result.ret == 1
    cases, xml = _cases(fb.path / "report.xml")
    suite = next(iter(xml))
    # what GitHub, GitLab and Jenkins count: one failure, the broken gate; no skips
    assert (suite.failures, suite.errors, suite.skipped) == (1, 0, 0)
    assert suite.tests == 10  # 8 runs, 2 gates
    assert cases["test_flaky[gate]"].is_passed
    broken = cases["test_broken[gate]"]
    assert not broken.is_passed
    assert not broken.is_skipped
    (failure,) = broken.result
    assert isinstance(failure, junitparser.Failure)
    message = failure.message
    assert message.startswith("test_gates.py::test_broken: 2/4 passed (50%)")
    assert "min_pass_rate=75% -> FAIL" in message
    assert "run1 (tolerated): get_order" in message
    # the message attribute is cut short (pytest keeps it to a few lines); the text is whole
    assert failure.text.startswith(message.split("\n")[0])
    assert 'Reproduce: pytest "test_gates.py::test_broken[run1]"' in failure.text
    assert 'Reproduce: pytest "test_gates.py::test_broken[run3]"' in failure.text
    # a tolerated run is a test case that is neither skipped nor failed, and says what it was
    tolerated = cases["test_broken[run1]"]
    assert tolerated.is_passed
    assert not tolerated.is_skipped
    props = _properties(tolerated)
    assert props["faultbench_outcome"] == "tolerated failure (min_pass_rate=0.75)"
    assert "odd runs fail" in props["faultbench_failure"]
    gate_props = _properties(broken)
    assert gate_props["faultbench_gate"] == "FAIL"
    assert (gate_props["faultbench_passed"], gate_props["faultbench_ran"]) == ("2", "4")


def test_the_terminal_does_not_count_the_gate_reports_twice(fb):
    fb.makepyfile(test_gates=GATES)
    result = fb.runpytest("--junitxml", "report.xml", "--faultbench-no-early-stop")
    result.stdout.fnmatch_lines(["*= 5 passed, 3 tolerated, 1 gate failed in *"])
    assert "[gate]" not in result.stdout.str().split("faultbench: pass rate over runs")[0]


def test_under_github_actions_a_failed_gate_is_an_annotation_and_a_summary_row(fb, monkeypatch):
    fb.makepyfile(test_gates=GATES)
    summary = fb.path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(fb.path))
    result = fb.runpytest("--faultbench-no-early-stop")
    assert result.ret == 1
    lines = result.stdout.lines
    (annotation,) = [line for line in lines if line.startswith("::error ")]
    source = (fb.path / "test_gates.py").read_text().splitlines()
    line = next(i for i, text in enumerate(source, 1) if "def test_broken" in text)
    head = f"::error file=test_gates.py,line={line - 1},title=faultbench gate failed%3A "
    # the line of its first decorator, where Python says the function starts
    assert annotation.startswith(head + "test_gates.py%3A%3Atest_broken::"), annotation
    body = annotation.split("::", 2)[2].replace("%0A", "\n").replace("%25", "%")
    assert body.startswith("test_gates.py::test_broken: 2/4 passed (50%)")
    assert "\n    run1 (tolerated): get_order\n" in body
    assert 'Reproduce: pytest "test_gates.py::test_broken[run3]"' in body
    table = summary.read_text()
    assert "| gate | passed | pass rate | 95% CI | min_pass_rate | verdict |" in table
    assert "| `test_gates.py::test_flaky` | 3/4 | 75.0% |" in table
    assert table.rstrip().endswith("| 0.75 | **FAIL** |")


def test_outside_github_actions_nothing_is_annotated(fb, monkeypatch):
    fb.makepyfile(test_gates=GATES)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    result = fb.runpytest("--faultbench-no-early-stop")
    assert not [line for line in result.stdout.lines if line.startswith("::error")]


FAULTED = """
import pytest
from naive import naive


@pytest.mark.world("world.yaml")
@pytest.mark.faults({"payments.issue_refund": {"errors": {"timeout": 0.4}}})
@pytest.mark.runs(10)
@pytest.mark.min_pass_rate(0.9)
def test_refund(world):
    naive(world)
    assert len(world.refunds.where(order_id="1")) == 1
"""


def test_fault_figures_under_the_gate_and_in_the_json_file(fb):
    import json

    fb.makepyfile(test_faulted=FAULTED)
    result = fb.runpytest("--faultbench-no-early-stop", "--faultbench-json", "out/gates.json")
    out = result.stdout.str()
    data = json.loads((fb.path / "out" / "gates.json").read_text())
    (gate,) = data["gates"]
    assert gate["gate"] == "test_faulted.py::test_refund"
    assert gate["ran"] == 10
    timeouts = gate["faults"]["kinds"]["timeout"]
    failed = 10 - gate["passed"]
    assert failed > 0  # the seeds of this world make some runs meet the timeout
    # a naive agent fails exactly when it met the timeout after commit
    assert timeouts == {"met": failed, "passed": 0}
    assert gate["faults"]["failed_after_fault"] == failed
    assert gate["faults"]["failed_without_fault"] == 0
    assert [r["faults_met"] for r in gate["failing_runs"]] == [["timeout"]] * failed
    assert all(
        r["reproduce"].startswith('pytest "test_faulted.py::test_refund[run')
        for r in gate["failing_runs"]
    )
    result.stdout.fnmatch_lines(
        [
            "test_faulted.py::test_refund: *",
            f"    faults met: timeout: met in {failed} run{'s' if failed > 1 else ''}, 0 passed",
            f"    failing runs: {failed} failed after their first fault, 0 without meeting one",
        ]
    )
    assert gate["verdict"] == ("PASS" if "-> PASS" in out else "FAIL")


SETUP_PROBLEMS = """
import pytest

pytestmark = [pytest.mark.world("world.yaml"), pytest.mark.runs(4), pytest.mark.min_pass_rate(0.5)]


@pytest.fixture
def customer(world):
    return world.orders.pick(status="no such status")


def test_bad_fixture(world, customer):
    world.call("get_order", {"id": customer.id})


def test_raises_before_the_agent(world):
    order = {"id": "1"}
    world.call("get_order", {"id": order["number"]})
"""


def test_set_up_problems_are_errors_in_junit_xml_and_their_gates_never_read_green(fb):
    fb.makepyfile(test_setup=SETUP_PROBLEMS)
    result = fb.runpytest("--junitxml", "report.xml")
    assert result.ret == 1
    cases, xml = _cases(fb.path / "report.xml")
    suite = next(iter(xml))
    # a fixture's error (set-up) and an error before the agent's first call (call phase):
    # both errors, each gate too; nothing counted as an agent failure, nothing green
    for name in ("test_bad_fixture", "test_raises_before_the_agent"):
        gate = cases[f"{name}[gate]"]
        assert not gate.is_passed, name
        (error,) = gate.result
        assert isinstance(error, junitparser.Error), (name, error)
        assert "-> FAIL" in error.text
        assert _properties(gate)["faultbench_gate"] == "FAIL"
        run0 = cases[f"{name}[run0]"]
        assert not run0.is_passed
        assert _properties(run0)["faultbench_outcome"] == "set-up problem"
    assert (
        "KeyError" in _properties(cases["test_raises_before_the_agent[run0]"])["faultbench_problem"]
    )
    assert suite.errors >= 3  # the two gates, the fixture's error
