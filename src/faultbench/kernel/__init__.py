"""faultbench's kernel: pure, synchronous, no I/O beyond reading world files.

Events (msgspec Structs) are folded by one pure reducer (`apply`) into immutable state; a
`World` wraps that with tables, a virtual clock, tool calls, snapshots, forks and replay.
It imports msgspec, immutables, pyyaml and the standard library only.

The world file readers (`load_spec`, `parse_faults`, `render_faults`, `parse_duration`) are
imported on first use: their module imports pyyaml, which `import faultbench` does not pay for.
"""

import importlib as _importlib
import typing as _typing

from ._clock import VirtualClock as VirtualClock
from ._codetools import add_tools as add_tools
from ._codetools import empty_spec as empty_spec
from ._current import current_world as current_world
from ._current import using_world as using_world
from ._diff import EventDiff as EventDiff
from ._diff import StateDiff as StateDiff
from ._diff import diff_events as diff_events
from ._diff import format_value as format_value
from ._diff import natural_key as natural_key
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
from ._events import AnyEvent as AnyEvent
from ._events import CallFailed as CallFailed
from ._events import CallStarted as CallStarted
from ._events import CallSucceeded as CallSucceeded
from ._events import ClockAdvanced as ClockAdvanced
from ._events import Event as Event
from ._events import FaultInjected as FaultInjected
from ._events import FaultsChanged as FaultsChanged
from ._events import LogRewound as LogRewound
from ._events import RecordCreated as RecordCreated
from ._events import RecordDeleted as RecordDeleted
from ._events import RecordUpdated as RecordUpdated
from ._events import WorldCreated as WorldCreated
from ._events import WorldForked as WorldForked
from ._events import add_log_line as add_log_line
from ._events import decode_events as decode_events
from ._events import encode_events as encode_events
from ._faultkinds import KINDS as FAULT_KINDS
from ._faultkinds import FaultKind as FaultKind
from ._faultkinds import kind as fault_kind
from ._faults import effective_rule as effective_rule
from ._incall import ToolCharges as ToolCharges
from ._incall import running_call as running_call
from ._inject import INJECTABLE_KINDS as INJECTABLE_KINDS
from ._inject import InjectionPlan as InjectionPlan
from ._log import EventLog as EventLog
from ._names import did_you_mean as did_you_mean
from ._pins import FaultPin as FaultPin
from ._pins import faults_received as faults_received
from ._pins import pin_block as pin_block
from ._reducer import apply as apply
from ._replay import replay as replay
from ._results import CallResult as CallResult
from ._results import Tool as Tool
from ._schema import operation_args as operation_args
from ._seed import generate_rows as generate_rows
from ._show import iso_time as iso_time
from ._show import show_repr as show_repr
from ._spec import WorldSpec as WorldSpec
from ._state import State as State
from ._tables import Record as Record
from ._tables import Table as Table
from ._trace import Trace as Trace
from ._world import Snapshot as Snapshot
from ._world import World as World
from ._world import load_world as load_world

if _typing.TYPE_CHECKING:
    from ._loader import load_spec as load_spec
    from ._loader import parse_duration as parse_duration
    from ._loader import parse_faults as parse_faults
    from ._loader import render_faults as render_faults

#: public name -> the module it lives in, for names imported on first use (PEP 562)
_LAZY = {
    "load_spec": "._loader",
    "parse_duration": "._loader",
    "parse_faults": "._loader",
    "render_faults": "._loader",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = value  # once imported, an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "FAULT_KINDS",
    "INJECTABLE_KINDS",
    "AnyEvent",
    "CallFailed",
    "CallResult",
    "CallStarted",
    "CallSucceeded",
    "ClockAdvanced",
    "ClockOverflow",
    "Event",
    "EventDiff",
    "EventLog",
    "FaultInjected",
    "FaultKind",
    "FaultPin",
    "FaultbenchError",
    "FaultsChanged",
    "FaultsDisabled",
    "HandlerCrashed",
    "HandlerError",
    "InjectedFault",
    "InjectionPlan",
    "InvalidArguments",
    "LogRewound",
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
    "ToolCharges",
    "Trace",
    "UnknownTool",
    "VirtualClock",
    "World",
    "WorldCreated",
    "WorldFileError",
    "WorldForked",
    "WorldSpec",
    "add_log_line",
    "add_tools",
    "apply",
    "current_world",
    "decode_events",
    "did_you_mean",
    "diff_events",
    "effective_rule",
    "empty_spec",
    "encode_events",
    "fault_kind",
    "faults_received",
    "format_value",
    "generate_rows",
    "iso_time",
    "load_spec",
    "load_world",
    "natural_key",
    "operation_args",
    "parse_duration",
    "parse_faults",
    "pin_block",
    "render_faults",
    "replay",
    "running_call",
    "show_repr",
    "using_world",
]
