"""A run as OpenTelemetry spans (GenAI conventions), read back from the SDK's in-memory
exporter."""

from __future__ import annotations

import time
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


def tree(exporter):
    """The finished spans as comparable tuples, roots with their calls."""
    spans = exporter.get_finished_spans()
    roots = [s for s in spans if s.name == "faultbench.run"]
    out = []
    for root in roots:
        calls = [s for s in spans if s.parent is not None and s.parent.span_id == root.context.span_id]  # fmt: skip
        out.append(
            (
                dict(root.attributes),
                root.start_time,
                root.end_time,
                [
                    (
                        c.name,
                        dict(c.attributes),
                        c.start_time,
                        c.end_time,
                        [e.name for e in c.events],
                    )
                    for c in calls
                ],
            )
        )
    return sorted(out, key=lambda r: r[0]["faultbench.run"])


def test_rollouts_export_each_episode_the_same_from_every_backend(spans):
    from examples.shop import agents

    from faultbench.env import rollouts

    provider, exporter = spans
    local = rollouts(SHOP, agents.naive, 24, seed=42, otel=provider)
    here = tree(exporter)
    exporter.clear()
    rollouts(SHOP, agents.naive, 24, seed=42, otel=provider, backend="process", workers=2)
    assert tree(exporter) == here  # the same spans, times included: virtual time
    assert [r[0]["faultbench.run"] for r in here] == list(range(24))
    for (root, start, end, calls), episode in zip(here, local.episodes, strict=True):
        assert root["faultbench.state_hash"] == episode.state_hash
        assert root["faultbench.reward"] == episode.reward
        assert root["faultbench.world"] == "shop"
        assert [c[0] for c in calls] == [f"execute_tool {c.tool}" for c in episode.calls]
        assert start <= min(c[2] for c in calls)
        assert end >= max(c[3] for c in calls)
    timeouts = [c for r in here for c in r[3] if c[1].get("error.type") == "timeout"]
    assert timeouts, "the naive agent meets a timeout in runs 12, 17, 19 and 22"
    assert all(c[4] == ["faultbench.fault"] for c in timeouts)


def test_served_openenv_episodes_are_exported_when_they_end_or_are_left(spans):
    import asyncio

    from openenv.core import GenericEnvClient

    from faultbench.env import openenv_app
    from faultbench.kernel.lowlevel import load_spec

    from .test_openenv_http import TIMEOUT, served

    provider, exporter = spans
    refund = {"type": "call_tool", "tool_name": "issue_refund",
              "arguments": {"order_id": "1", "amount": 25.0}}  # fmt: skip

    async def drive(base):
        async with GenericEnvClient(base_url=base) as env:
            await env.reset(seed=42, episode_id="3")
            await env.step(refund)
            ended = await env.step({"reply": "done"})
            await env.reset(seed=42, episode_id="4")  # left by the session's close
            await env.step({"type": "call_tool", "tool_name": "get_order", "arguments": {"id": "1"}})  # fmt: skip
            return ended.reward

    app = openenv_app(load_spec(SHOP), faults=TIMEOUT, otel=provider)
    with served(app) as base:
        reward = asyncio.run(drive(base))
        deadline = time.monotonic() + 10
        while len(tree(exporter)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    (first, _, _, calls), (second, _, _, later) = tree(exporter)
    assert (first["faultbench.run"], first["faultbench.episode_id"]) == (3, "3")
    assert first["faultbench.reward"] == reward == 1.0
    assert [c[0] for c in calls] == ["execute_tool issue_refund"]
    assert calls[0][1]["error.type"] == "timeout"
    assert calls[0][4] == ["faultbench.fault"]
    assert second["faultbench.run"] == 4
    assert "faultbench.reward" not in second  # it never ended: the session left it
    assert [c[0] for c in later] == ["execute_tool get_order"]
