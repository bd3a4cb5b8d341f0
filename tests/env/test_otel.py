"""A run as OpenTelemetry spans (GenAI conventions), read back from the SDK's in-memory
exporter."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

import faultbench
from faultbench.env import WorldEnv
from faultbench.otel import export_run

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import StatusCode

SHOP = Path(__file__).parents[2] / "examples" / "shop" / "worlds" / "shop.yaml"


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def ns(at: datetime) -> int:
    return int(at.timestamp() * 1_000_000_000)


def test_a_run_with_a_timeout_as_genai_spans_in_virtual_time(spans):
    provider, exporter = spans
    world = faultbench.load_world(SHOP)
    world.set_faults({"payments.issue_refund": {"script": {1: "timeout"}}})
    world.call("get_order", {"id": "1"})
    world.call("issue_refund", {"order_id": "1", "amount": 25.0})
    export_run(world, provider)
    got = {s.name: s for s in exporter.get_finished_spans()}
    assert set(got) == {"faultbench.run", "execute_tool get_order", "execute_tool issue_refund"}
    root = got["faultbench.run"]
    assert root.attributes["faultbench.world"] == "shop"
    assert root.attributes["faultbench.state_hash"] == world.state_hash()
    read, refund = got["execute_tool get_order"], got["execute_tool issue_refund"]
    assert read.parent.span_id == root.context.span_id
    assert read.attributes["gen_ai.operation.name"] == "execute_tool"
    assert read.attributes["gen_ai.tool.name"] == "get_order"
    assert "gen_ai.tool.call.arguments" not in read.attributes  # only on request
    assert read.status.status_code != StatusCode.ERROR
    calls = world.trace.calls
    assert (read.start_time, read.end_time) == (ns(calls[0].started_at), ns(calls[0].finished_at))
    assert refund.attributes["error.type"] == "timeout"
    assert refund.status.status_code == StatusCode.ERROR
    assert [e.name for e in refund.events] == ["faultbench.fault"]
    assert refund.events[0].attributes["faultbench.fault.kind"] == "timeout"
    assert refund.end_time - refund.start_time >= 30 * 1_000_000_000  # the 30 s timeout


def test_an_env_episode_is_exported_when_it_ends_with_arguments_on_request(spans):
    provider, exporter = spans
    env = WorldEnv(SHOP, faults=False, otel=provider)
    env.reset()
    env.step({"tool": "get_order", "args": {"id": "1"}})
    assert exporter.get_finished_spans() == ()
    env.step({"reply": "done"})
    names = [s.name for s in exporter.get_finished_spans()]
    assert names == ["execute_tool get_order", "faultbench.run"]
    world = faultbench.load_world(SHOP, faults=False)
    world.call("get_order", {"id": "1"})
    exporter.clear()
    export_run(world, provider, arguments=True)
    tool = exporter.get_finished_spans()[0]
    assert tool.attributes["gen_ai.tool.call.arguments"] == '{"id": "1"}'


def test_the_plugin_flag_exports_each_run(pytester):
    pytester.makeconftest(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        EXPORTER = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(provider)

        def pytest_sessionfinish(session):
            names = [s.name for s in EXPORTER.get_finished_spans()]
            session.config.rootpath.joinpath("spans.txt").write_text("\\n".join(names))
        """
    )
    pytester.makepyfile(
        test_runs=f"""
        import pytest

        @pytest.mark.world({str(SHOP)!r})
        @pytest.mark.runs(3)
        def test_read(world):
            world.call("get_order", {{"id": "1"}})
        """
    )
    pytester.runpytest_subprocess("--faultbench-otel").assert_outcomes(passed=3)
    names = (pytester.path / "spans.txt").read_text().splitlines()
    assert names.count("faultbench.run") == 3
    assert names.count("execute_tool get_order") == 3
    pytester.runpytest_subprocess().assert_outcomes(passed=3)
    assert (pytester.path / "spans.txt").read_text() == ""  # opt-in only
