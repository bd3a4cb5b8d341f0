"""Model faults through the pytest plugin: the `faults` marker's `model:` rule reaches a Pydantic
AI agent's model in every run, the event logs hold the model calls, the HTML report has a model
lane, and shrinking pins the one model fault a failing run needed."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

SHOP = Path(__file__).parent / "shop" / "world.yaml"

SUITE = """
import pytest
from faultbench.integrations import Reply, ToolCall
from faultbench.integrations.pydantic_ai import run_agent, scripted_model


def looks_up(seen):
    if not seen:
        return ToolCall("get_order", {"id": "1"})
    return Reply("done")


@pytest.mark.world("world.yaml")
@pytest.mark.faults({"model": {"errors": {"http_503": 0.3}, "latency_ms": 200}})
@pytest.mark.runs(6)
@pytest.mark.min_pass_rate(0.1)
async def test_agent(mcp_server):
    run = await run_agent(scripted_model(looks_up), "go", mcp=mcp_server)
    assert run.ok, repr(run.error)
"""


def test_the_marker_reaches_the_model_and_shrinking_pins_the_model_fault(
    pytester: pytest.Pytester,
):
    pytester.makefile(".yaml", world=SHOP.read_text())
    pytester.makepyfile(test_agent=SUITE)
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--faultbench-events",
        "logs",
        "--faultbench-shrink",
        "--faultbench-report",
        "out",
    )
    out = result.stdout.str()
    logs = sorted((pytester.path / "logs").rglob("*.jsonl"))
    assert logs  # early stop may decide the gate before the 6th run
    failed_runs = 0
    for log in logs:
        text = log.read_text()
        assert '"type":"ModelCalled"' in text
        failed_runs += '"kind":"http_503"' in text
    assert 0 < failed_runs < len(logs)
    # a failing run shrinks to its one model fault, pinned under model:
    lines = out.splitlines()
    at = next(i for i, x in enumerate(lines) if "fails with only: model#" in x)
    assert lines[at].endswith("http_503 (of 1 fault)")
    reproduce = next(x for x in lines[at:] if "Reproduce:" in x).strip()
    args = shlex.split(reproduce.removeprefix("Reproduce: pytest "))
    assert json.loads(args[-1]) == {
        "model": {"script": {lines[at].split("model#")[1].split()[0]: "http_503"}}
    }
    # the HTML report's timelines have a "model" lane, its bars marked with their faults
    html = (pytester.path / "out" / "faultbench-report.html").read_text()
    assert '"lanes":["orders.get_order","model"]' in html or '"lanes":["model"]' in html
    assert '"tool":"model","k":1,' in html
    assert '"fault":"http_503","kind":"http_503"' in html
    rerun = pytester.runpytest("-p", "no:cacheprovider", *args)
    assert "ModelUnavailableError" in rerun.stdout.str()
