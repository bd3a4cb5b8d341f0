"""faultbench: a fake, stateful, deliberately broken world for tool-using AI agents.

::

    import faultbench

    world = faultbench.load_world("world.yaml", seed=1)
    result = world.call("get_order", {"id": "1"})
    assert world.trace.count("get_order") == 1

The kernel (worlds, events, replay) is re-exported here; the MCP server lives in
`faultbench.serve` and the pytest plugin in `faultbench.testing`, imported only when used.
"""

from .kernel import (
    CallFailed,
    CallResult,
    CallStarted,
    CallSucceeded,
    ClockAdvanced,
    Event,
    EventDiff,
    EventLog,
    FaultbenchError,
    FaultInjected,
    HandlerCrashed,
    HandlerError,
    InjectedFault,
    InvalidArguments,
    Record,
    RecordCreated,
    RecordDeleted,
    RecordError,
    RecordNotFound,
    RecordUpdated,
    ReentrantApplyError,
    ReplayError,
    Snapshot,
    SourceError,
    State,
    StateDiff,
    Table,
    Tool,
    ToolCallError,
    Trace,
    UnknownTool,
    VirtualClock,
    World,
    WorldCreated,
    WorldFileError,
    WorldForked,
    WorldSpec,
    apply,
    decode_events,
    diff_events,
    encode_events,
    load_world,
    replay,
)

__version__ = "0.2.0.dev0"

__all__ = [
    "CallFailed",
    "CallResult",
    "CallStarted",
    "CallSucceeded",
    "ClockAdvanced",
    "Event",
    "EventDiff",
    "EventLog",
    "FaultInjected",
    "FaultbenchError",
    "HandlerCrashed",
    "HandlerError",
    "InjectedFault",
    "InvalidArguments",
    "Record",
    "RecordCreated",
    "RecordDeleted",
    "RecordError",
    "RecordNotFound",
    "RecordUpdated",
    "ReentrantApplyError",
    "ReplayError",
    "Snapshot",
    "SourceError",
    "State",
    "StateDiff",
    "Table",
    "Tool",
    "ToolCallError",
    "Trace",
    "UnknownTool",
    "VirtualClock",
    "World",
    "WorldCreated",
    "WorldFileError",
    "WorldForked",
    "WorldSpec",
    "__version__",
    "apply",
    "decode_events",
    "diff_events",
    "encode_events",
    "load_world",
    "replay",
]
