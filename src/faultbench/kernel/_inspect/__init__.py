"""Reading what happened: the trace of calls, trace checks, diffs of states and logs, and the faults a run received.

The stage's face: what the other stages (and the kernel's two doors) use from it, imported from
here and never from a module inside the stage (tests/test_layout.py checks it)."""

import typing as _typing

from faultbench._lazy import lazy_names as _lazy_names

from ._diff import EventDiff, StateDiff, diff_events, diff_tables, format_event
from ._grade import Grade, Violation
from ._trace import Trace

if _typing.TYPE_CHECKING:
    from ._explain import RunExplanation, explain_runs
    from ._pins import FaultPin, faults_received, pin_block, protocol_fault

#: names imported on first use (PEP 562): their modules are not loaded by `import faultbench`
_LAZY = {
    "RunExplanation": "._explain",
    "explain_runs": "._explain",
    "FaultPin": "._pins",
    "faults_received": "._pins",
    "pin_block": "._pins",
    "protocol_fault": "._pins",
}

__getattr__, __dir__ = _lazy_names(__name__, globals(), _LAZY)

__all__ = [
    "EventDiff",
    "FaultPin",
    "Grade",
    "RunExplanation",
    "StateDiff",
    "Trace",
    "Violation",
    "diff_events",
    "diff_tables",
    "explain_runs",
    "faults_received",
    "format_event",
    "pin_block",
    "protocol_fault",
]
