"""Usage, cost and budgets: figures read from each run's log, priced from the table the user
sets, checked against hand-computed values; a run over its budget fails with the figures."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from faultbench.kernel import CallStarted, ModelCalled, ModelUsed
from faultbench.testing._gate._usage import (
    DEFAULT_PRICES,
    PRICES_DATE,
    Usage,
    load_prices,
    over_budget,
    percentile,
)

SHOP = Path(__file__).parent / "shop" / "world.yaml"
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def test_usage_and_cost_from_events_by_hand():
    events = [
        ModelCalled(seq=0, at=T0, k=1, model="a"),
        ModelUsed(seq=1, at=T0, k=1, input_tokens=1000, output_tokens=200, model="a"),
        CallStarted(seq=2, at=T0, call_id="c1", tool="get_order", args={}, k=1),
        ModelCalled(seq=3, at=T0 + timedelta(seconds=2), k=2, model="b"),
        ModelUsed(
            seq=4, at=T0 + timedelta(seconds=3), k=2, input_tokens=500, output_tokens=50, model="b"
        ),
    ]
    prices = {"a": (2.0, 8.0), "b": (0.5, 1.5)}
    usage = Usage.of(events, prices)
    assert (usage.model_calls, usage.tool_calls, usage.tokens) == (2, 1, 1750)
    assert usage.virtual_seconds == 3.0
    # a: 1000 * 2 + 200 * 8 = 3600; b: 500 * 0.5 + 50 * 1.5 = 325; per million tokens
    assert usage.cost_usd == pytest.approx(3925 / 1e6)
    assert Usage.of(events, {"a": (2.0, 8.0)}).cost_usd is None  # b has no price
    assert over_budget(usage, {"tokens": 1500, "model_calls": 2, "cost_usd": 0.001}) == [
        "tokens 1750 > budget 1500",
        "cost_usd $0.0039 > budget $0.0010",
    ]


def test_percentiles_are_nearest_rank():
    assert percentile([80, 160, 240, 320], 0.5) == 160
    assert percentile([80, 160, 240, 320], 0.9) == 320
    assert percentile([5], 0.9) == 5


def test_prices_come_from_pyproject_or_the_dated_default(tmp_path):
    assert load_prices(tmp_path) == DEFAULT_PRICES
    assert PRICES_DATE == "2024-10-01"
    (tmp_path / "pyproject.toml").write_text(
        '[tool.faultbench.prices]\n"my-model" = {input = 1.5, output = 6}\n'
    )
    assert load_prices(tmp_path) == {"my-model": (1.5, 6.0)}
    (tmp_path / "pyproject.toml").write_text('[tool.faultbench.prices]\nm = {input = "x"}\n')
    with pytest.raises(ValueError, match=r"\[tool.faultbench.prices\] m = "):
        load_prices(tmp_path)


SUITE = """
import pytest


@pytest.mark.world("world.yaml")
@pytest.mark.runs(4)
@pytest.mark.min_pass_rate(0.75)
@pytest.mark.budget(tokens=250, prices={"m": {"input": 2.0, "output": 10.0}})
def test_agent(world, faultbench_run):
    # run i makes 4 - i model calls of 60 input and 20 output tokens each
    for _ in range(4 - faultbench_run.index):
        call = world.model_call("m")
        world.model_used(call.k, 60, 20, "m")
    world.call("get_order", {"id": "1"})
"""


def test_a_run_over_budget_fails_with_its_figures_and_the_summary_adds_usage(pytester):
    pytester.makefile(".yaml", world=SHOP.read_text())
    pytester.makepyfile(test_agent=SUITE)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-rx", "--junitxml", "junit.xml", "--faultbench-events", "logs"
    )
    out = result.stdout.str()
    # run0: 4 calls x 80 tokens = 320 > 250; its cost 4 x (60 x 2 + 20 x 10) / 1e6 = $0.00128
    assert "over budget: tokens 320 > budget 250" in out
    assert "3/4 passed" in out
    # tokens per run 320, 240, 160, 80: p50 160, p90 320 (nearest rank); 10 calls / 4 runs;
    # cost 10 x $0.00032 = $0.0032: $0.0008 a run, $0.0032 / 3 passes = $0.0011 a pass
    assert (
        "    usage: 2.5 model calls/run, tokens p50 160 p90 320, cost/run $0.0008, "
        "cost per pass $0.0011" in out
    )
    junit = (pytester.path / "junit.xml").read_text()
    assert '<property name="faultbench_tokens" value="800"' in junit
    assert '<property name="faultbench_model_calls" value="10"' in junit
    assert '<property name="faultbench_cost_usd" value="0.0032"' in junit
    log = (pytester.path / "logs" / "test_agent.py.test_agent.run0.jsonl").read_text()
    used = [json.loads(x) for x in log.splitlines() if '"ModelUsed"' in x]
    assert [(u["k"], u["input_tokens"], u["output_tokens"]) for u in used] == [
        (k, 60, 20) for k in range(1, 5)
    ]


def test_a_group_over_its_group_budget_fails_its_gate_with_the_figures(pytester):
    """budget(per="group") limits the runs together: 800 tokens and $0.0032 over 4 runs
    (as above); each run stays within its own per-run budget (400 tokens)."""
    pytester.makefile(".yaml", world=SHOP.read_text())
    suite = SUITE.replace(
        '@pytest.mark.budget(tokens=250, prices={"m": {"input": 2.0, "output": 10.0}})',
        '@pytest.mark.budget(tokens=400, prices={"m": {"input": 2.0, "output": 10.0}})\n'
        '@pytest.mark.budget(tokens=700, cost_usd=0.01, per="group")',
    )
    pytester.makepyfile(test_agent=suite)
    result = pytester.runpytest("-p", "no:cacheprovider", "--faultbench-no-early-stop")
    out = result.stdout.str()
    assert result.ret == 1
    assert (
        "4/4 passed (100%) [95% CI 51%-100%] pass^3=100% min_pass_rate=75%; group over "
        "budget: tokens 800 > budget 700 -> FAIL"
    ) in out
    assert "1 gate failed" in out
    within = suite.replace("tokens=700, cost_usd=0.01", "tokens=800, cost_usd=0.0032")
    pytester.makepyfile(test_agent=within)
    result = pytester.runpytest("-p", "no:cacheprovider", "--faultbench-no-early-stop")
    assert result.ret == 0, result.stdout.str()
    pytester.makepyfile(test_agent=suite.replace('per="group"', 'per="suite"'))
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert 'per=\'suite\': expected per="run" or per="group"' in (
        result.stdout.str() + result.stderr.str()
    )


def test_the_html_report_shows_usage_per_run_and_per_group_also_rebuilt_from_logs(pytester):
    pytester.makefile(".yaml", world=SHOP.read_text())
    pytester.makepyfile(test_agent=SUITE)
    args = ("-p", "no:cacheprovider", "--faultbench-events", "logs")
    pytester.runpytest(*args, "--faultbench-report", "out")
    line = (
        '"usage":"usage: 2.5 model calls/run, tokens p50 160 p90 320, cost/run $0.0008, '
        'cost per pass $0.0011"'
    )
    # run3: 1 model call of 60 + 20 tokens, $0.00032, one tool call
    run3 = (
        '"usage":{"model_calls":1,"input_tokens":60,"output_tokens":20,"tool_calls":1,'
        '"virtual_seconds":'
    )
    html = (pytester.path / "out" / "faultbench-report.html").read_text()
    assert line in html
    assert run3 in html
    assert "function usageLine(u)" in html  # the page renders both
    # `faultbench report logs` rebuilds it from the session file
    from faultbench.testing import read_session, write_report

    session = read_session(pytester.path / "logs")
    again = write_report(pytester.path / "again", session.groups).read_text()
    assert line in again
    assert run3 in again


def test_a_bad_budget_is_a_usage_error(pytester):
    pytester.makefile(".yaml", world=SHOP.read_text())
    pytester.makepyfile(test_agent=SUITE.replace("tokens=250", "tokenz=250"))
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert (
        "unknown budget 'tokenz'; expected one of cost_usd, tokens"
        in result.stdout.str() + result.stderr.str()
    )


AGENT_SUITE = """
import pytest
from faultbench.integrations import Reply, ToolCall
from faultbench.integrations.pydantic_ai import run_agent, scripted_model


def looks_up(seen):
    return Reply("done") if seen else ToolCall("get_order", {"id": "1"})


@pytest.mark.world("world.yaml")
@pytest.mark.budget(model_calls=1)
async def test_agent(mcp_server):
    run = await run_agent(scripted_model(looks_up), "go", mcp=mcp_server)
    assert run.ok
"""


def test_a_budget_marker_logs_a_frameworks_model_calls_and_usage(pytester):
    pytest.importorskip("pydantic_ai")
    pytester.makefile(".yaml", world=SHOP.read_text())
    pytester.makepyfile(test_agent=AGENT_SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider", "--faultbench-events", "logs")
    # Pydantic AI asked its model twice (the tool call, then the answer): over a budget of 1
    result.stdout.fnmatch_lines(["*over budget: model_calls 2 > budget 1*"])
    log = (pytester.path / "logs" / "test_agent.py.test_agent.run0.jsonl").read_text()
    used = [json.loads(x) for x in log.splitlines() if '"ModelUsed"' in x]
    assert [u["k"] for u in used] == [1, 2]
    assert all(u["input_tokens"] > 0 and u["output_tokens"] > 0 for u in used)
    assert used[0]["model"] == "function:respond:"


def test_a_model_the_table_does_not_price_is_priced_by_genai_prices():
    from importlib.metadata import version

    from genai_prices import Usage as Tokens
    from genai_prices import calc_price

    from faultbench.testing._gate._usage import Usage, usage_line

    events = [
        ModelCalled(seq=0, at=T0, k=1, model="gpt-5-mini"),
        ModelUsed(seq=1, at=T0, k=1, input_tokens=10_000, output_tokens=2_000, model="gpt-5-mini"),
    ]
    expected = float(
        calc_price(Tokens(input_tokens=10_000, output_tokens=2_000), "gpt-5-mini").total_price
    )
    usage = Usage.of(events, {})
    assert usage.cost_usd == pytest.approx(expected)
    assert expected > 0
    assert usage.priced_by == f"genai-prices {version('genai-prices')}"
    line = usage_line([usage], passed=1)
    assert line is not None
    assert line.endswith(
        f"(prices: genai-prices {version('genai-prices')}, where the price table has none)"
    )
    # the user's table wins over it
    assert Usage.of(events, {"gpt-5-mini": (1.0, 1.0)}).cost_usd == pytest.approx(0.012)
    assert Usage.of(events, {"gpt-5-mini": (1.0, 1.0)}).priced_by is None
    # and a model nobody prices stays unknown
    unknown = [ModelUsed(seq=1, at=T0, k=1, input_tokens=5, output_tokens=5, model="my-own-llm-x")]
    assert Usage.of(unknown, {}).cost_usd is None
