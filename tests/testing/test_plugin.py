"""The pytest plugin as users see it: pytester runs, real terminal output, exit statuses."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

import faultbench

RUN_INDEX_FAILS = """
import pytest

@pytest.mark.world("world.yaml")
@pytest.mark.runs({runs})
@pytest.mark.min_pass_rate({rate})
def test_flaky(world, faultbench_run):
    assert faultbench_run.index not in {failing}, "run %d fails on purpose" % faultbench_run.index
"""


def match(result: pytest.RunResult, patterns: list[str]) -> None:
    """fnmatch_lines with `[` taken literally (node ids and intervals are full of them)."""
    result.stdout.fnmatch_lines([p.replace("[", "[[]") for p in patterns])


def flaky(fb: pytest.Pytester, runs: int, rate: float, failing: tuple[int, ...]) -> None:
    fb.makepyfile(test_flaky=RUN_INDEX_FAILS.format(runs=runs, rate=rate, failing=failing))


def test_markers_are_registered(fb):
    result = fb.runpytest("--markers")
    match(
        result,
        [
            "@pytest.mark.world(path):*",
            "@pytest.mark.faults(rules=None):*",
            "@pytest.mark.runs(n, concurrency=None):*",
            "@pytest.mark.min_pass_rate(rate):*",
            "@pytest.mark.seed(n):*",
        ],
    )
    flaky(fb, 2, 0.5, ())
    fb.runpytest("--strict-markers", "--faultbench-no-early-stop").assert_outcomes(passed=2)


def test_a_gate_that_passes_tolerates_failing_runs_and_shows_them(fb):
    flaky(fb, 10, 0.8, (3,))
    result = fb.runpytest("--faultbench-no-early-stop")
    match(
        result,
        [
            "test_flaky.py ...t......*",
            "*= faultbench: pass rate over runs =*",
            "test_flaky.py::test_flaky: 9/10 passed (90%) [95% CI 59.6%-98.2%] pass^3=70% "
            "min_pass_rate=80% -> PASS",
            "    run3 (tolerated): (no calls)",
            "        AssertionError: run 3 fails on purpose",
            "        against run0 (closest passing run):",
            "          the same calls, outcomes and end state as run0",
            '        Reproduce: pytest "test_flaky.py::test_flaky[run3]"',
            "*= 9 passed, 1 tolerated in *",
        ],
    )
    assert "no passing run" not in result.stdout.str()  # there were passing runs...
    assert result.ret == 0


def test_a_gate_that_fails_fails_the_session(fb):
    flaky(fb, 10, 0.9, (1, 2, 3))
    result = fb.runpytest("--faultbench-no-early-stop", "-v")
    match(
        result,
        [
            "test_flaky.py::test_flaky[run1] TOLERATED*",
            "test_flaky.py::test_flaky: 7/10 passed (70%) [95% CI 39.7%-89.2%] pass^3=29.2% "
            "min_pass_rate=90% -> FAIL",
            "    run1 (tolerated): (no calls)",
            "    run2 (tolerated): (no calls)",
            "    run3 (tolerated): (no calls)",
            "*= 7 passed, 3 tolerated, 1 gate failed in *",
        ],
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_without_min_pass_rate_every_run_must_pass_and_failures_are_failures(fb):
    fb.makepyfile(
        """
        import pytest

        @pytest.mark.world("world.yaml")
        @pytest.mark.runs(3)
        def test_x(world, faultbench_run):
            assert faultbench_run.index != 1
        """
    )
    result = fb.runpytest("--faultbench-no-early-stop")
    result.assert_outcomes(passed=2, failed=1)
    match(
        result,
        [
            "test_*.py::test_x: 2/3 passed (66.7%) * min_pass_rate=100% -> FAIL",
            "    run1: (no calls)",
            "FAILED test_*.py::test_x[run1]*",
        ],
    )


def test_failing_runs_show_calls_message_diff_against_closest_pass_and_reproduce(fb):
    fb.makepyfile(
        test_refund="""
        import pytest
        from naive import naive

        @pytest.mark.world("world.yaml")
        @pytest.mark.faults({"payments.issue_refund": {"errors": {"timeout": 0.3}}})
        @pytest.mark.runs(20)
        @pytest.mark.min_pass_rate(0.95)
        def test_refund(world, trace):
            naive(world)
            assert len(world.refunds.where(order_id="1")) == 1, trace.summary()
        """
    )
    result = fb.runpytest("--faultbench-no-early-stop")
    match(
        result,
        [
            "test_refund.py::test_refund: */20 passed (*%) [95% CI *] pass^3=* "
            "min_pass_rate=95% -> FAIL",
            # Which runs draw the 30% timeout depends on the seed's draws, not on the plugin.
            "    run* (tolerated): get_order → issue_refund!timeout → issue_refund",
            "        AssertionError: get_order → issue_refund!timeout → *",
            "        against run* (closest passing run):",
            "          call 2 issue_refund: run* succeeded, run* timeout after commit -> run* "
            "retried (call 3) -> refund 2 created",
            "          end state (- run*, + run*):",
            '            + refund 2 {amount: *, order_id: "1"}',
            '        Reproduce: pytest "test_refund.py::test_refund[run*]"',
        ],
    )
    assert result.ret == 1
    # --faultbench-diff=events: the event-log diff, clock steps and all
    result = fb.runpytest("--faultbench-no-early-stop", "--faultbench-diff=events")
    match(
        result,
        [
            "    run* (tolerated): get_order → issue_refund!timeout → *issue_refund",
            "        AssertionError: get_order → issue_refund!timeout → *",
            "        event log against run* (closest passing run; - run*, + run*):",
            "          event logs differ at event 8 (a: 10 events, -1; b: 20 events, +11)",
            "*",
            "          + FaultInjected issue_refund timeout {commit: True, *}",
            "*",
            "          + CallFailed issue_refund timeout: 504 Gateway Timeout: "
            "payments.issue_refund did not answer within 30s",
            "*",
            '        Reproduce: pytest "test_refund.py::test_refund[run*]"',
        ],
    )
    assert result.ret == 1


def test_runs_option_overrides_and_unmarked_tests_are_untouched(fb):
    flaky(fb, 10, 0.5, ())
    fb.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = fb.runpytest("--runs", "3", "-v", "--faultbench-no-early-stop")
    match(
        result,
        [
            "test_flaky.py::test_flaky[run0] PASSED*",
            "test_flaky.py::test_flaky[run1] PASSED*",
            "test_flaky.py::test_flaky[run2] PASSED*",
            "test_plain.py::test_plain PASSED*",
            "test_flaky.py::test_flaky: 3/3 passed (100%) *",
        ],
    )
    result.assert_outcomes(passed=4)
    assert "test_plain.py::test_plain:" not in result.stdout.str()
    assert fb.runpytest("--runs", "0").ret == pytest.ExitCode.USAGE_ERROR


def test_run_ids_compose_with_parametrize_and_the_gate_groups_by_parameters(fb):
    fb.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("case", ["a", "b"])
        @pytest.mark.world("world.yaml")
        @pytest.mark.runs(3)
        @pytest.mark.min_pass_rate(0.6)
        def test_x(world, faultbench_run, case):
            assert case == "a" or faultbench_run.index == 0
        """
    )
    result = fb.runpytest("-v", "--faultbench-no-early-stop")
    match(
        result,
        [
            "test_*.py::test_x[a-run0] PASSED*",
            "test_*.py::test_x[a-run1] PASSED*",
            "test_*.py::test_x[a-run2] PASSED*",
            "test_*.py::test_x[b-run0] PASSED*",
            "test_*.py::test_x[b-run1] TOLERATED*",
            "test_*.py::test_x[a]: 3/3 passed (100%) * -> PASS",
            "test_*.py::test_x[b]: 1/3 passed (33.3%) * -> FAIL",
        ],
    )
    assert result.ret == 1


REPLAY = """
import pytest
from naive import naive

@pytest.mark.world("world.yaml")
@pytest.mark.faults()
@pytest.mark.runs(8)
@pytest.mark.min_pass_rate(0.5)
def test_refund(world, faultbench_run):
    naive(world)
    assert len(world.refunds.where(order_id="1")) == 1
"""


def test_one_run_id_replays_that_run_exactly_and_events_replay_to_its_hash(fb):
    fb.makepyfile(test_refund=REPLAY)
    full = fb.runpytest(
        "--faultbench-events", "all", "--junitxml", "all.xml", "--faultbench-no-early-stop"
    )
    assert full.ret == 0
    one = fb.runpytest(
        "test_refund.py::test_refund[run5]", "--faultbench-events", "one", "--junitxml", "one.xml"
    )
    one.assert_outcomes(passed=1)
    name = "test_refund.py.test_refund.run5.jsonl"
    assert (fb.path / "one" / name).read_bytes() == (fb.path / "all" / name).read_bytes()
    assert len(list((fb.path / "all").glob("*.jsonl"))) == 8

    # The log replays to the hash the run ended with (JUnit XML carries it per run).
    hashes = {}
    for case in ET.parse(fb.path / "all.xml").iter("testcase"):
        if case.get("name").endswith("[gate]"):
            continue
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        hashes[int(props["faultbench_run"])] = props["faultbench_state_hash"]
    spec = faultbench.kernel.lowlevel.load_spec(fb.path / "world.yaml")
    for run, expected in hashes.items():
        events = faultbench.decode_events(
            (fb.path / "all" / f"test_refund.py.test_refund.run{run}.jsonl").read_bytes()
        )
        assert faultbench.replay(spec, events).state_hash() == expected


def test_faults_marker_rules_reach_the_log_and_replay_reproduces_them(fb):
    fb.makepyfile(
        test_refund="""
        import pytest
        from naive import naive

        @pytest.mark.world("world.yaml")
        @pytest.mark.faults({"payments.issue_refund": {"script": {1: "timeout"}}})
        def test_refund(world):
            naive(world)
        """
    )
    fb.runpytest("--faultbench-events", "ev").assert_outcomes(passed=1)
    events = faultbench.decode_events(
        (fb.path / "ev" / "test_refund.py.test_refund.run0.jsonl").read_bytes()
    )
    changed = [e for e in events if isinstance(e, faultbench.FaultsChanged)]
    assert changed[0].rules == {"payments.issue_refund": {"script": {"1": "timeout"}}}
    # Replayed, the world is under the same rules: its next issue_refund (k=3) is fault-free,
    # and a fresh world from the same log prefix times out on k=1 again.
    replayed = faultbench.replay(
        faultbench.kernel.lowlevel.load_spec(fb.path / "world.yaml"), events
    )
    assert replayed.trace.summary() == "get_order → issue_refund!timeout → issue_refund"
    assert set(replayed.fault_rules) == {"payments.issue_refund"}


def test_fault_markers_no_marker_file_block_and_another_file(fb):
    fb.makefile(
        ".yaml",
        other="""
        services:
          payments:
            records: { refund: { id: str, order_id: str, amount: float } }
            operations: { issue_refund: { kind: create, record: refund } }
        faults:
          payments.issue_refund: { errors: { http_500: 1.0 } }
        """,
    )
    fb.makepyfile(
        """
        import pytest

        pytestmark = pytest.mark.world("world.yaml")

        def test_no_marker_is_fault_free(world, faults):
            assert faults.rules == {} and not faults
            assert world.call("issue_refund", {"order_id": "1", "amount": 1.0}).ok

        @pytest.mark.faults()
        def test_file_block(faults):
            assert faults.block == {
                "default": {"latency_ms": [50, 200]},
                "payments.issue_refund": {"errors": {"timeout": 0.1}},
            }

        @pytest.mark.faults("other.yaml")
        def test_other_file(world, faults, trace):
            assert set(faults.rules) == {"payments.issue_refund"}
            assert world.call("issue_refund", {"order_id": "1", "amount": 1.0}).fault == "http_500"
            assert trace.summary() == "issue_refund!http_500"

        @pytest.mark.faults({"payments.nope": {"errors": {"timeout": 0.1}}})
        def test_bad_rules(world):
            pass
        """
    )
    result = fb.runpytest()
    result.assert_outcomes(passed=3, errors=1)
    match(
        result,
        ["*test_bad_rules[run0]: @pytest.mark.faults({'payments.nope'*unknown operation 'nope'*"],
    )


def test_trace_clock_and_faults_fixtures_follow_the_world(fb):
    fb.makepyfile(
        """
        import pytest

        @pytest.mark.world("world.yaml")
        @pytest.mark.seed(3)
        def test_fixtures(world, trace, clock, faults, faultbench_run):
            assert (faultbench_run.index, faultbench_run.total, faultbench_run.world_seed) == (0, 1, 3)
            assert world.seed == 3 and world.run == 0
            assert len(trace) == 0
            world.call("get_order", {"id": "1"})
            assert trace.count("get_order") == 1 and trace.summary() == "get_order"
            start = clock.now()
            clock.advance(60)
            assert (world.clock.now() - start).total_seconds() == 60
            faults.set({"orders.get_order": {"script": {2: "http_503"}}})
            assert world.call("get_order", {"id": "1"}).fault == "http_503"
            assert [f.kind for f in faults.injected] == ["http_503"]
            faults.clear()
            assert world.call("get_order", {"id": "1"}).ok
        """
    )
    fb.runpytest().assert_outcomes(passed=1)


def test_run_seeds_are_derived_from_seed_and_index(fb):
    fb.makepyfile(
        """
        import pytest
        from faultbench.testing import derive_seed

        @pytest.mark.world("world.yaml")
        @pytest.mark.runs(3)
        def test_seeds(world, faultbench_run):
            assert faultbench_run.seed == derive_seed(7, faultbench_run.index)
            assert world.seed == 7 and world.run == faultbench_run.index
        """
    )
    fb.runpytest().assert_outcomes(passed=3)
    from faultbench.testing import derive_seed

    assert len({derive_seed(7, i) for i in range(100)}) == 100
    assert derive_seed(7, 1) == derive_seed(7, 1) != derive_seed(8, 1)


def test_early_stop_skips_runs_once_the_outcome_is_decided(fb):
    flaky(fb, 10, 0.5, tuple(range(10)))
    result = fb.runpytest("-rs")
    result.assert_outcomes(skipped=4)
    match(
        result,
        [
            "test_flaky.py tttttt*ssss*",
            "test_flaky.py::test_flaky: 0/6 passed (0%) * min_pass_rate=50% -> FAIL "
            "(outcome decided after 6 runs; 4 skipped)",
            "SKIPPED [4] test_flaky.py:*: outcome decided after 6 runs",
        ],
    )
    assert result.ret == 1
    # Enough passes decide it too; the gate still passes.
    flaky(fb, 10, 0.5, ())
    result = fb.runpytest()
    result.assert_outcomes(passed=5, skipped=5)
    match(result, ["*5/5 passed (100%) *-> PASS (outcome decided after 5 runs; 5 skipped)"])
    assert result.ret == 0
    # ...unless turned off
    fb.runpytest("--faultbench-no-early-stop").assert_outcomes(passed=10)


def test_junit_xml_gets_each_run_and_the_groups_pass_rate(fb):
    flaky(fb, 4, 0.5, (2,))
    fb.runpytest("--junitxml", "out.xml", "--faultbench-no-early-stop")
    cases = list(ET.parse(fb.path / "out.xml").iter("testcase"))
    names = [c.get("name") for c in cases]
    assert names == [*(f"test_flaky[run{i}]" for i in range(4)), "test_flaky[gate]"]
    cases = cases[:4]
    props = [{p.get("name"): p.get("value") for p in c.iter("property")} for c in cases]
    assert [p["faultbench_run"] for p in props] == ["0", "1", "2", "3"]
    last = props[-1]
    assert last["faultbench_group"] == "test_flaky.py::test_flaky"
    assert (last["faultbench_passed"], last["faultbench_ran"]) == ("3", "4")
    assert last["faultbench_pass_rate"] == "0.75"
    assert last["faultbench_pass_hat_3"] == "0.25"
    assert (last["faultbench_min_pass_rate"], last["faultbench_gate"]) == ("0.5", "PASS")
    # the tolerated run: not a skip, and it says what it was
    assert cases[2].find("skipped") is None
    assert cases[2].find("failure") is None
    assert props[2]["faultbench_outcome"] == "tolerated failure (min_pass_rate=0.5)"


def test_marker_mistakes_are_explained(fb):
    fb.makepyfile(
        test_zero="""
        import pytest

        @pytest.mark.runs(0)
        def test_zero_runs(faultbench_run):
            pass
        """,
        test_nofixture="""
        import pytest

        @pytest.mark.world("world.yaml")
        def test_no_fixture():
            pass
        """,
        test_bad="""
        import pytest

        def test_world_without_marker(world):
            pass

        @pytest.mark.world("missing.yaml")
        def test_missing_file(world):
            pass
        """,
    )
    result = fb.runpytest()
    match(
        result,
        [
            "*test_no_fixture: a test marked with @pytest.mark.world or @pytest.mark.runs*",
            "*test_zero_runs: Expected @pytest.mark.runs(n) with n >= 1. Instead, received: 0",
        ],
    )
    result = fb.runpytest("-k", "without or missing", "--continue-on-collection-errors")
    match(
        result,
        [
            '*the `world` fixture needs @pytest.mark.world("world.yaml")*',
            "*test_missing_file[run0]: cannot load the world file: *missing.yaml*",
        ],
    )
