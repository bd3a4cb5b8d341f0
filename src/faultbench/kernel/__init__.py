"""faultbench's kernel: pure, synchronous, no I/O beyond reading world files.

Events (msgspec Structs) are folded by one pure reducer (`apply`) into immutable state; a
`World` wraps that with tables, a virtual clock, tool calls, snapshots, forks and replay.
It imports msgspec, immutables, pyyaml and the standard library only.

This module exports the user API (docs/API.md, "faultbench.kernel") and nothing else;
`faultbench` re-exports it. What
faultbench's own shells (and libraries built like them) need beyond it, the world-file reader,
the fault registry, rendering helpers, comes from `faultbench.kernel.lowlevel`.

The code lives in private packages, one per stage of a world's way (docs/ARCHITECTURE.md):
`_text` < `_errors` < `_faults` < `_spec` < `_store` < `_calls` < `_inspect` < `_world`.
"""

from ._calls import CallResult as CallResult
from ._calls import Tool as Tool
from ._errors import ClockOverflow as ClockOverflow
from ._errors import FaultbenchError as FaultbenchError
from ._errors import FaultsDisabled as FaultsDisabled
from ._errors import HandlerCrashed as HandlerCrashed
from ._errors import HandlerError as HandlerError
from ._errors import InjectedFault as InjectedFault
from ._errors import InvalidArguments as InvalidArguments
from ._errors import RecordError as RecordError
from ._errors import RecordNotFound as RecordNotFound
from ._errors import ReplayError as ReplayError
from ._errors import SourceError as SourceError
from ._errors import ToolCallError as ToolCallError
from ._errors import UnknownTool as UnknownTool
from ._errors import WorldFileError as WorldFileError
from ._inspect import EventDiff as EventDiff
from ._inspect import Grade as Grade
from ._inspect import StateDiff as StateDiff
from ._inspect import Trace as Trace
from ._inspect import Violation as Violation
from ._inspect import diff_events as diff_events
from ._spec import Checks as Checks
from ._spec import Policy as Policy
from ._spec import WorldSpec as WorldSpec
from ._store import AnyEvent as AnyEvent
from ._store import CallFailed as CallFailed
from ._store import CallStarted as CallStarted
from ._store import CallSucceeded as CallSucceeded
from ._store import ClockAdvanced as ClockAdvanced
from ._store import EffectFired as EffectFired
from ._store import EffectScheduled as EffectScheduled
from ._store import Event as Event
from ._store import EventLog as EventLog
from ._store import FaultInjected as FaultInjected
from ._store import FaultsChanged as FaultsChanged
from ._store import LogRewound as LogRewound
from ._store import ModelCalled as ModelCalled
from ._store import ModelUsed as ModelUsed
from ._store import Record as Record
from ._store import RecordCreated as RecordCreated
from ._store import RecordDeleted as RecordDeleted
from ._store import RecordUpdated as RecordUpdated
from ._store import State as State
from ._store import Table as Table
from ._store import VirtualClock as VirtualClock
from ._store import WebhookAttempted as WebhookAttempted
from ._store import WorldCreated as WorldCreated
from ._store import WorldForked as WorldForked
from ._store import apply as apply
from ._store import decode_events as decode_events
from ._store import encode_events as encode_events
from ._world import Snapshot as Snapshot
from ._world import World as World
from ._world import current_world as current_world
from ._world import load_world as load_world
from ._world import replay as replay
from ._world import using_world as using_world

__all__ = [
    "AnyEvent",
    "CallFailed",
    "CallResult",
    "CallStarted",
    "CallSucceeded",
    "Checks",
    "ClockAdvanced",
    "ClockOverflow",
    "EffectFired",
    "EffectScheduled",
    "Event",
    "EventDiff",
    "EventLog",
    "FaultInjected",
    "FaultbenchError",
    "FaultsChanged",
    "FaultsDisabled",
    "Grade",
    "HandlerCrashed",
    "HandlerError",
    "InjectedFault",
    "InvalidArguments",
    "LogRewound",
    "ModelCalled",
    "ModelUsed",
    "Policy",
    "Record",
    "RecordCreated",
    "RecordDeleted",
    "RecordError",
    "RecordNotFound",
    "RecordUpdated",
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
    "Violation",
    "VirtualClock",
    "WebhookAttempted",
    "World",
    "WorldCreated",
    "WorldFileError",
    "WorldForked",
    "WorldSpec",
    "apply",
    "current_world",
    "decode_events",
    "diff_events",
    "encode_events",
    "load_world",
    "replay",
    "using_world",
]
