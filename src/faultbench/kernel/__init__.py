"""faultbench's kernel: pure, synchronous, no I/O beyond reading world files.

Events (msgspec Structs) are folded by one pure reducer (`apply`) into immutable state; a
`World` wraps that with tables, a virtual clock, tool calls, snapshots, forks and replay.
It imports msgspec, immutables, pyyaml and the standard library only.
"""

from ._clock import VirtualClock as VirtualClock
from ._diff import EventDiff as EventDiff
from ._diff import StateDiff as StateDiff
from ._diff import diff_events as diff_events
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
from ._events import CallFailed as CallFailed
from ._events import CallStarted as CallStarted
from ._events import CallSucceeded as CallSucceeded
from ._events import ClockAdvanced as ClockAdvanced
from ._events import Event as Event
from ._events import FaultInjected as FaultInjected
from ._events import FaultsChanged as FaultsChanged
from ._events import RecordCreated as RecordCreated
from ._events import RecordDeleted as RecordDeleted
from ._events import RecordUpdated as RecordUpdated
from ._events import WorldCreated as WorldCreated
from ._events import WorldForked as WorldForked
from ._events import decode_events as decode_events
from ._events import encode_events as encode_events
from ._log import EventLog as EventLog
from ._reducer import apply as apply
from ._replay import replay as replay
from ._results import CallResult as CallResult
from ._results import Tool as Tool
from ._spec import WorldSpec as WorldSpec
from ._state import State as State
from ._tables import Record as Record
from ._tables import Table as Table
from ._trace import Trace as Trace
from ._world import Snapshot as Snapshot
from ._world import World as World
from ._world import load_world as load_world

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
    "FaultsChanged",
    "FaultsDisabled",
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
    "apply",
    "decode_events",
    "diff_events",
    "encode_events",
    "load_world",
    "replay",
]
