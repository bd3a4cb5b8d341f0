"""The traps a new user fell into (issue 18), each held shut: an unmarked async test, the
anyio marker, set-up problems counted as agent failures, mistyped markers, a relative stdio
path, and a stdio run whose world the summary could not see."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

GATED = """
import pytest

pytestmark = [pytest.mark.world("world.yaml"), pytest.mark.runs(3), pytest.mark.min_pass_rate(0.0)]
"""


def gated(body: str) -> str:
    """A test module whose tests run 3 times under a gate that tolerates every failure."""
    return GATED + textwrap.dedent(body)


# --- async tests ------------------------------------------------------------------------------


def test_an_unmarked_async_test_runs_on_asyncio_and_others_are_left_to_pytest(fb):
    fb.makepyfile(
        test_async="""
        import asyncio
        import pytest
        from scripted_agent import refund_order

        @pytest.mark.world("world.yaml")
        @pytest.mark.runs(3)
        async def test_agent(world, mcp_server, trace):
            asyncio.get_running_loop()  # a real asyncio loop, as the frameworks need
            await refund_order(mcp_server, "1", careful=True)
            assert len(world.refunds.where(order_id="1")) == 1
            assert trace.summary().startswith("get_order → list_refunds → issue_refund")

        async def test_not_ours():
            pass
        """
    )
    result = fb.runpytest("-p", "no:asyncio", "-p", "no:anyio", "-p", "no:trio")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*async def functions are not natively supported*",
            "test_async.py::test_agent: 3/3 passed (100%) *-> PASS",
        ]
    )


def test_async_plugins_keep_the_tests_they_are_asked_for(fb):
    fb.makepyfile(
        test_styles="""
        import pytest
        import sniffio

        pytestmark = [pytest.mark.world("world.yaml"), pytest.mark.runs(2)]

        @pytest.mark.trio
        async def test_trio(world):
            assert sniffio.current_async_library() == "trio"

        @pytest.mark.asyncio
        async def test_asyncio(world):
            assert sniffio.current_async_library() == "asyncio"
        """
    )
    fb.runpytest().assert_outcomes(passed=4)


def test_under_the_anyio_marker_a_faultbench_test_runs_on_asyncio_unless_it_asks(fb):
    fb.makepyfile(
        test_anyio="""
        import pytest
        import sniffio

        pytestmark = [pytest.mark.world("world.yaml"), pytest.mark.runs(2)]

        @pytest.mark.anyio
        async def test_default(world):
            assert sniffio.current_async_library() == "asyncio"

        @pytest.mark.anyio
        @pytest.mark.parametrize("anyio_backend", ["trio"])
        async def test_asks_for_trio(world, anyio_backend):
            assert sniffio.current_async_library() == "trio"

        """,
        test_other="""
        import pytest

        @pytest.mark.anyio
        async def test_not_ours():
            pass
        """,
    )
    result = fb.runpytest("-v")
    # 2 runs each of the two faultbench tests, and anyio's two backends for the other one
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(
        [
            "*test_default[[]asyncio-run0[]] PASSED*",
            "*test_asks_for_trio[[]trio-run1[]] PASSED*",
            "*test_not_ours[[]trio[]] PASSED*",
            "*2 deselected*",
        ]
    )
    assert "test_default[trio" not in result.stdout.str()


# --- set-up problems and agent failures ---------------------------------------------------------


def test_set_up_problems_are_errors_whatever_min_pass_rate_says(fb):
    fb.makepyfile(
        test_problems=gated(
            """
        @pytest.fixture
        def broken():
            raise OSError("the fixture's database is down")

        def test_fixture_error(world, broken):
            pass

        def test_import_error(world):
            import agent_that_is_not_installed

        async def test_inside_faultbench(world):
            from faultbench.integrations.pydantic_ai import run_agent
            await run_agent("test", "hi", mcp=42)

        @pytest.mark.trio
        async def test_no_async_plugin(world):
            pass
        """
        ),
        test_badworld="""
        import pytest

        @pytest.mark.world("bad.yaml")
        @pytest.mark.min_pass_rate(0.0)
        def test_world_does_not_load(world):
            pass
        """,
    )
    fb.makefile(".yaml", bad="services: {orders: {records: {order: {total: flaot}}}}\n")
    result = fb.runpytest("-p", "no:trio")
    out = result.stdout.str()
    assert "tolerated" not in out.lower().replace("set-up problem", "")
    for name, cause in [
        ("test_fixture_error", "it failed in setup: OSError: the fixture's database is down"),
        ("test_import_error", "an import failed: ModuleNotFoundError: No module named"),
        ("test_inside_faultbench", "faultbench raised it: TypeError: Expected mcp to be*"),
        ("test_no_async_plugin", "faultbench raised it: Failed: *pytest-trio is not installed*"),
        ("test_world_does_not_load", "it failed in setup: *cannot load the world file*flaot*"),
    ]:
        result.stdout.fnmatch_lines(
            [
                f"test_*.py::{name}: set-up problem in 1 of * -> FAIL (not an agent failure*",
                "    run0 (set-up problem): *",
                f"        Set-up problem, not an agent failure: {cause}*",
            ]
        )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # the first problem decides the gate: the other runs are not run
    result.stdout.fnmatch_lines(["*5 gates failed*"])
    assert result.parseoutcomes()["errors"] == 5


def test_agent_failures_are_tolerated_by_the_gate(fb):
    fb.makepyfile(
        test_agent=gated(
            """
        def my_agent(world):
            world.call("get_order", {"id": "1"})
            return world.orders.get("1")["no_such_field"]   # a bug in the agent's own code

        def test_assertion(world, faultbench_run):
            assert faultbench_run.index != 1, "the agent refunded twice"

        def test_agent_code_raises(world, faultbench_run):
            if faultbench_run.index == 1:
                my_agent(world)

        def test_pytest_fail(world, faultbench_run):
            if faultbench_run.index == 1:
                pytest.fail("the agent gave up")
        """
        )
    )
    result = fb.runpytest("--faultbench-no-early-stop")
    assert result.ret == pytest.ExitCode.OK
    out = result.stdout.str()
    assert out.count("(tolerated)") == 3
    assert "set-up problem" not in out
    result.stdout.fnmatch_lines(["*6 passed, 3 tolerated*"])


# --- markers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("strict", [False, True], ids=["lax", "strict"])
def test_a_near_miss_marker_is_a_collection_error_with_a_hint(fb, strict):
    fb.makepyfile(
        test_typo="""
        import pytest

        @pytest.mark.world("world.yaml")
        @pytest.mark.run(20)
        def test_runs(world):
            pass
        """,
        test_typo2="""
        import pytest

        @pytest.mark.world("world.yaml")
        @pytest.mark.min_passrate(0.95)
        def test_rate(world):
            pass
        """,
        test_fine="""
        import pytest

        @pytest.mark.slow
        @pytest.mark.order(1)
        def test_other_marks(faultbench_run):
            pass
        """,
    )
    fb.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
        "markers =\n    slow: long tests\n    order(n): order of tests\n"
    )
    args = ["--strict-markers"] if strict else []
    result = fb.runpytest(*args, "--continue-on-collection-errors")
    if strict:  # pytest refuses the mark while importing the module: the hint joins it
        result.stdout.fnmatch_lines(
            [
                "*'run' not found in `markers` configuration option",
                "faultbench: did you mean @pytest.mark.runs? *",
                "*'min_passrate' not found in `markers` configuration option",
                "faultbench: did you mean @pytest.mark.min_pass_rate? *",
            ]
        )
    else:
        result.stdout.fnmatch_lines(
            ["*test_runs: unknown marker @pytest.mark.run: did you mean @pytest.mark.runs?*"]
        )
        result.stdout.fnmatch_lines(
            [
                "*test_rate: unknown marker @pytest.mark.min_passrate: did you mean "
                "@pytest.mark.min_pass_rate?*"
            ]
        )
    assert result.parseoutcomes()["passed"] == 1  # slow, order: no typos of ours
    assert result.ret != pytest.ExitCode.OK


# --- stdio ----------------------------------------------------------------------------------------

STDIO = """
import sys
import pytest
from faultbench.integrations.pydantic_ai import run_agent, scripted_model
from faultbench.integrations import Reply, ToolCall


def naive(seen):
    refunds = [s for s in seen if s.tool == "issue_refund"]
    if not seen:
        return ToolCall("get_order", {"id": "1"})
    if refunds and refunds[-1].ok or len(refunds) == 3:
        return Reply("done")
    return ToolCall("issue_refund", {"order_id": "1", "amount": seen[0].value["total"]})


pytestmark = [
    pytest.mark.world("world.yaml"),
    pytest.mark.faults({"payments.issue_refund": {"errors": {"timeout": 0.5}}}),
    pytest.mark.runs(4),
    pytest.mark.min_pass_rate(0.5),
]


async def test_inproc(world, mcp_server):
    await run_agent(scripted_model(naive), "Refund order 1", mcp=mcp_server, retries=3)
    assert len(world.refunds.where(order_id="1")) == 1


async def test_stdio(mcp_command):
    run = await run_agent(scripted_model(naive), "Refund order 1", mcp=mcp_command, retries=3)
    assert len(mcp_command.world().refunds.where(order_id="1")) == 1
"""


def test_mcp_command_serves_the_runs_world_and_its_journal_reaches_summary_and_report(fb):
    fb.makepyfile(test_transport=STDIO)
    result = fb.runpytest(
        "--faultbench-no-early-stop", "--faultbench-events", "ev", "--faultbench-report", "rep"
    )
    out = result.stdout.str()
    section = out.split("faultbench: pass rate over runs", 1)[1]
    inproc, stdio = section.split("test_transport.py::test_stdio:")
    inproc_runs = sorted(
        line.split(":")[0].strip() for line in inproc.splitlines() if "(tolerated):" in line
    )
    stdio_runs = sorted(
        line.split(":")[0].strip() for line in stdio.splitlines() if "(tolerated):" in line
    )
    assert inproc_runs, out
    assert inproc_runs == stdio_runs, out
    result.stdout.fnmatch_lines(
        [
            "test_transport.py::test_stdio: * passed *",
            "    run* (tolerated): get_order → issue_refund!timeout → issue_refund*",
            "        AssertionError: assert 2 == 1",
            "        against run* (closest passing run):",
            '        Reproduce: pytest "test_transport.py::test_stdio[[]run*[]]"',
        ]
    )
    # the served world's log is the in-process run's, event for event
    for i in range(4):
        a = (fb.path / f"ev/test_transport.py.test_inproc.run{i}.jsonl").read_text()
        b = (fb.path / f"ev/test_transport.py.test_stdio.run{i}.jsonl").read_text()
        assert a == b
    session = json.loads((fb.path / "ev/faultbench-session.json").read_text())
    assert "test_stdio" in json.dumps(session)
    report = (fb.path / "rep/faultbench-report.html").read_text()
    assert "test_stdio" in report
    assert "issue_refund!timeout" in report


def test_a_bare_serve_command_warns_and_a_missing_relative_path_names_its_base(fb):
    fb.makepyfile(
        test_bare=gated(
            f"""
        from pathlib import Path
        from faultbench.integrations.pydantic_ai import run_agent, scripted_model
        from faultbench.integrations import Reply

        WORLD = str(Path(__file__).parent / "world.yaml")

        async def test_bare(world, faultbench_run):
            cmd = [{sys.executable!r}, "-m", "faultbench", "serve", WORLD]
            if faultbench_run.index == 0:
                await run_agent(scripted_model(lambda seen: Reply("hi")), "hi", mcp=cmd)

        async def test_relative(world):
            await run_agent(scripted_model(lambda seen: Reply("hi")), "hi",
                            mcp=["faultbench", "serve", "worlds/world.yaml"])

        async def test_server_does_not_start(world):
            await run_agent(scripted_model(lambda seen: Reply("hi")), "hi",
                            mcp=[{sys.executable!r}, "-c", "raise SystemExit(3)"])
        """
        )
    )
    result = fb.runpytest("-k", "bare or relative or start")
    result.stdout.fnmatch_lines(
        [
            "*inside a faultbench run: this command serves the world file with its own seed, "
            "run 0's fault draws*Use the mcp_command fixture*",
        ]
    )
    base = str(fb.path)
    result.stdout.fnmatch_lines(
        [
            "test_bare.py::test_relative: set-up problem in 1 of 3 runs -> FAIL*",
            f"        Set-up problem, not an agent failure: faultbench raised it: "
            f"FileNotFoundError: faultbench serve 'worlds/world.yaml': no such world file. The "
            f"path is relative, so the server resolves it against the working directory {base}, "
            f"which gives {base}/worlds/world.yaml.*",
            "test_bare.py::test_server_does_not_start: set-up problem in 1 of 3 runs -> FAIL*",
            "        Set-up problem, not an agent failure: the connection to the world's MCP "
            "server failed: *",
        ]
    )
    result.stdout.fnmatch_lines(["test_bare.py::test_bare: 3/3 passed*"])


def test_mcp_command_with_the_world_fixture_is_explained(fb):
    fb.makepyfile(
        test_both="""
        import pytest

        @pytest.mark.world("world.yaml")
        def test_both(world, mcp_command):
            pass
        """
    )
    result = fb.runpytest()
    result.stdout.fnmatch_lines(
        [
            "*takes mcp_command and world. mcp_command serves the run's world from a server "
            "process*mcp_command.world()*"
        ]
    )


def test_a_handler_bugs_traceback_reads_whole_in_pytests_output(fb):
    fb.makefile(
        ".yaml",
        buggy="""
services:
  orders:
    records: { order: { id: str, total: float } }
    operations:
      get_order: { kind: get, record: order }
      total_of: { kind: custom, handler: buggy_rules.total_of }
""",
    )
    fb.makepyfile(
        buggy_rules="""
        def total_of(world, clock, order_id: str):
            totals = {}
            return totals[order_id]
        """,
        test_bug="""
        import pytest

        @pytest.mark.world("buggy.yaml")
        def test_total(world):
            assert world.call("total_of", {"order_id": "1"}).ok
        """,
    )
    result = fb.runpytest()
    result.stdout.fnmatch_lines(
        [
            "*- faultbench: handler tracebacks -*",
            "total_of (call c1): a bug in the world's handler",
            "Traceback (most recent call last):",
            '  File "buggy_rules.py", line 3, in total_of',
            "    return totals[order_id]",
            "KeyError: '1'",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "    run0: total_of!internal_error",
            "        Handler traceback:",
            "          total_of (call c1): a bug in the world's handler",
            "*",
            "          KeyError: '1'",
        ]
    )
