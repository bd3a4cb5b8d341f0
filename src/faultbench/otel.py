"""A run as OpenTelemetry spans, following the GenAI semantic conventions (the `otel` extra).

`export_run(world, tracer_provider)` writes one root span for the run (`faultbench.run`, with
the world, seed and run index) and under it one `execute_tool {name}` span per call, as the
GenAI conventions name a tool execution: `gen_ai.operation.name = execute_tool`,
`gen_ai.tool.name`, `gen_ai.tool.call.id`, the arguments as `gen_ai.tool.call.arguments`
only with `arguments=True` (they may hold personal data), `error.type` and an error status
for a failed call, and the injected fault as a `faultbench.fault` event. Spans are
timestamped in the world's virtual time, so a viewer (Jaeger, Phoenix, Logfire, Langfuse)
shows the latencies and timeouts the agent lived through.

`export_episodes(rollouts, tracer_provider)` writes the episodes of a `faultbench.env.rollouts`
call the same way (`rollouts(..., otel=...)` calls it), from what the episodes carry back from
their workers; `faultbench serve --openenv --otel` exports each served episode when it ends.

Imported only by who asks for it: `import faultbench` imports no opentelemetry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from faultbench.kernel import World

__all__ = ["export_episodes", "export_run"]

_NS = 1_000_000_000


def _ns(at: datetime | None) -> int | None:
    return None if at is None else int(at.timestamp() * _NS)


def export_run(
    world: World,
    tracer_provider: Any = None,
    *,
    arguments: bool = False,
    attributes: Mapping[str, Any] | None = None,
) -> None:
    """Write `world`'s run so far as spans through `tracer_provider` (default: the global
    one). `attributes`: added to the root span (an episode's id, its reward)."""
    calls = world.trace.calls
    start = _ns(world.events[0].at)
    end = max([_ns(c.finished_at) or 0 for c in calls] + [_ns(world.clock.now()) or 0])
    root = {
        "faultbench.world": world.name,
        "faultbench.seed": world.seed,
        "faultbench.run": world.run,
        "faultbench.state_hash": world.state_hash(),
        **(attributes or {}),
    }
    _write(tracer_provider, root, calls, start, end, arguments)


def export_episodes(rollouts: Any, tracer_provider: Any = None, *, arguments: bool = False) -> None:
    """Write each episode of a `faultbench.env.rollouts` call (its `Rollouts`; not imported
    here, the shells' layer being above this module) as a run's spans (as
    `export_run` writes a world's), in virtual time: the root also says the episode's
    `reward`, whether it `passed` and, for one that crashed, `error.type` and its error."""
    for e in rollouts.episodes:
        root: dict[str, Any] = {
            "faultbench.world": rollouts.world,
            "faultbench.seed": rollouts.seed,
            "faultbench.run": e.run,
            "faultbench.state_hash": e.state_hash,
            "faultbench.reward": e.reward,
            "faultbench.passed": e.passed,
            "faultbench.steps": e.steps,
        }
        if e.crashed:
            root["error.type"] = "crashed"
            root["faultbench.error"] = e.error or ""
        ends = [_ns(c.finished_at) or 0 for c in e.calls]
        start = _ns(e.started_at)
        end = max([*ends, _ns(e.ended_at) or 0]) or start
        _write(tracer_provider, root, e.calls, start, end, arguments, crashed=e.crashed)


def _write(
    tracer_provider: Any,
    root_attributes: dict[str, Any],
    calls: Sequence[Any],
    start: int | None,
    end: int | None,
    arguments: bool,
    *,
    crashed: bool = False,
) -> None:
    """A `faultbench.run` span and one `execute_tool` span per call under it; `calls`: the
    kernel's call records, or `rollouts`' `Call`s (the same fields)."""
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    tracer = trace.get_tracer("faultbench", tracer_provider=tracer_provider)
    root = tracer.start_span("faultbench.run", start_time=start, attributes=root_attributes)
    if crashed:
        root.set_status(Status(StatusCode.ERROR, str(root_attributes.get("faultbench.error"))))
    context = trace.set_span_in_context(root)
    for c in calls:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": c.tool,
            "gen_ai.tool.call.id": c.call_id,
            "gen_ai.tool.type": "function",
        }
        if arguments:
            attrs["gen_ai.tool.call.arguments"] = json.dumps(c.args, default=str)
        if not c.ok:
            attrs["error.type"] = c.error_kind or "error"
        span = tracer.start_span(
            f"execute_tool {c.tool}",
            context=context,
            kind=trace.SpanKind.INTERNAL,
            start_time=_ns(c.started_at),
            attributes=attrs,
        )
        if c.fault is not None:
            span.add_event(
                "faultbench.fault",
                {"faultbench.fault.kind": c.fault},
                timestamp=_ns(c.started_at),
            )
        if not c.ok:
            span.set_status(Status(StatusCode.ERROR, c.error or ""))
        span.end(end_time=_ns(c.finished_at))
    root.end(end_time=end)
