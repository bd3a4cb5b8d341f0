"""Shrinking a failing run's faults (ddmin over pinned script entries), in-process with real
worlds, and end to end through `pytest --faultbench-shrink` (one pytest process per probe)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from faultbench.kernel import World
from faultbench.kernel.lowlevel import load_spec
from faultbench.testing._artifacts._shrink import Pin, ddmin, faults_received, pin_block, shrink

SHOP = Path(__file__).parent / "shop"
SPEC = load_spec(SHOP / "world.yaml")


def pings(block: dict) -> World:
    """The scripted agent of test_pings: ten sends, whatever they answer."""
    world = World.from_spec(SPEC, run=0)
    world.set_faults(block)
    for n in range(10):
        world.call("send", {"n": n})
    return world


def pings_fail(block: dict) -> bool:
    """It fails only when the 3rd and the 7th send both failed."""
    return {3, 7} <= {r.k for r in pings(block).trace if not r.ok}


def test_faults_received_are_read_from_the_log_as_script_entries():
    world = World.from_spec(SPEC, run=0)
    world.set_faults(
        {
            "payments.issue_refund": {
                "script": {1: "timeout", 2: {"kind": "http_500", "commit": True}},
            },
            "orders.get_order": {"script": {1: {"kind": "stale_read", "lag_s": 5}}},
        }
    )
    world.call("issue_refund", {"order_id": "1", "amount": 1.0})
    world.call("issue_refund", {"order_id": "1", "amount": 1.0})
    world.call("issue_refund", {"order_id": "1", "amount": 1.0})
    world.call("get_order", {"id": "1"})
    pins = faults_received(world.events)
    assert [str(p) for p in pins] == [
        "issue_refund#1 timeout",
        "issue_refund#2 http_500",
        "get_order#1 stale_read",
    ]
    assert pin_block(pins, SPEC) == {
        "orders.get_order": {"script": {1: {"kind": "stale_read", "lag_s": 5.0}}},
        "payments.issue_refund": {
            "script": {1: "timeout", 2: {"kind": "http_500", "commit": True}},
        },
    }
    # Pinned, the same faults happen again: the log's fault events are the same.
    again = World.from_spec(SPEC, run=3)
    again.set_faults(pin_block(pins, SPEC))
    for _ in range(3):
        again.call("issue_refund", {"order_id": "1", "amount": 1.0})
    again.call("get_order", {"id": "1"})
    assert faults_received(again.events) == pins


def test_two_coinciding_faults_among_ten_shrink_to_exactly_those_two():
    received = faults_received(pings({"net.send": {"errors": {"http_503": 1.0}}}).events)
    assert len(received) == 10
    result = shrink(received, SPEC, pings_fail)
    assert result.verdict == "minimal"
    assert [str(p) for p in result.pins] == ["send#3 http_503", "send#7 http_503"]
    assert result.headline() == "fails with only: send#3 http_503, send#7 http_503 (of 10 faults)"
    assert result.block == {"net.send": {"script": {3: "http_503", 7: "http_503"}}}
    assert pings_fail(result.block)
    assert result.probes == 20  # docs/REPORT.md quotes this figure


def test_a_run_that_fails_without_faults_says_so_after_one_probe():
    received = faults_received(pings({"net.send": {"errors": {"http_503": 1.0}}}).events)
    result = shrink(received, SPEC, lambda block: True)
    assert result.verdict == "no_faults"
    assert result.headline() == "fails without faults: the bug is not fault handling"
    assert result.probes == 1
    assert result.block == {}


def test_a_failure_the_pinned_faults_do_not_reproduce_is_reported():
    received = faults_received(pings({"net.send": {"errors": {"http_503": 1.0}}}).events)
    result = shrink(received, SPEC, lambda block: False)
    assert result.verdict == "not_reproduced"
    assert result.probes == 2  # none, then all of them
    assert "passes with its 10 faults pinned" in result.headline()


def test_the_budget_bounds_the_probes_and_keeps_the_smallest_failing_subset():
    received = faults_received(pings({"net.send": {"errors": {"http_503": 1.0}}}).events)
    result = shrink(received, SPEC, pings_fail, budget=5)
    assert result.verdict == "budget"
    assert result.probes == 5
    assert pings_fail(pin_block(result.pins, SPEC))
    assert {"send#3 http_503", "send#7 http_503"} <= {str(p) for p in result.pins}
    assert "may not be minimal" in result.headline()


def test_ddmin_finds_one_fault_and_never_probes_a_subset_twice():
    items = [Pin("t", k, "http_500") for k in range(1, 17)]
    probed: list[frozenset[Pin]] = []

    def fails(subset: list[Pin]) -> bool:
        probed.append(frozenset(subset))
        return items[11] in subset

    result = ddmin(items, fails)
    assert result.pins == [items[11]]
    assert len(probed) == len(set(probed)) == result.probes


def shop(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", world=(SHOP / "world.yaml").read_text())
    pytester.makepyfile(test_shop=(SHOP / "suite.py").read_text())
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def test_pytest_faultbench_shrink_end_to_end(pytester: pytest.Pytester):
    """Probes are fresh pytest processes running one item under --faultbench-faults."""
    shop(pytester)
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--faultbench-shrink",
        "--faultbench-report",
        "out",
        "-k",
        "refund_once or always_broken",
    )
    out = result.stdout.str()
    assert "faultbench: the faults that matter (shrunk)" in out
    lines = out.splitlines()
    refund = next(
        i
        for i, line in enumerate(lines)
        if "test_refund_once[run" in line and "fails with only" in line
    )
    assert lines[refund].endswith("fails with only: issue_refund#1 timeout (of 3 faults)")
    assert lines[refund + 1].strip().startswith("4 probes")
    reproduce = lines[refund + 2].strip()
    assert reproduce.startswith('Reproduce: pytest "test_shop.py::test_refund_once[run')
    broken = next(i for i, line in enumerate(lines) if "test_always_broken[run0]:" in line)
    assert lines[broken].endswith("fails without faults: the bug is not fault handling")
    assert lines[broken + 1].strip().startswith("1 probe ")
    # The report shows it on the run.
    html = (pytester.path / "out" / "faultbench-report.html").read_text()
    assert '"headline":"fails with only: issue_refund#1 timeout (of 3 faults)"' in html
    assert '"headline":"fails without faults: the bug is not fault handling"' in html
    # The printed command reproduces the failure with only that fault.
    args = shlex.split(reproduce.removeprefix("Reproduce: pytest "))
    assert json.loads(args[-1]) == {"payments.issue_refund": {"script": {"1": "timeout"}}}
    rerun = pytester.runpytest("-p", "no:cacheprovider", "-rx", *args)
    rerun.stdout.fnmatch_lines(["*1 tolerated*"])
    assert "issue_refund!timeout → issue_refund" in rerun.stdout.str()


def test_a_bad_faults_option_is_a_usage_error(pytester: pytest.Pytester):
    shop(pytester)
    result = pytester.runpytest("--faultbench-faults", "{not json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*Expected --faultbench-faults to be a faults: block as JSON*"])
