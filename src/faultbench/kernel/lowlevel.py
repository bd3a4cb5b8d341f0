"""The kernel's second door: what faultbench's shells, and libraries built like them, need
beyond the user API of `faultbench.kernel`.

`faultbench.kernel` (and `faultbench`) export the API of DESIGN.md: worlds, tables, events,
traces, replay and errors. The serve, testing and command shells also read world files without
building a world, walk the fault registry, render values the way messages do, and read a run's
faults back from its log; those names live here, as trio keeps `trio.lowlevel` apart from
`trio`. They are public and documented in docs/ARCHITECTURE.md, but they move faster than
the user API: a shell imports them from here and from nowhere else (import-linter checks it).

The world-file readers (`load_spec`, `parse_faults`, `render_faults`, `parse_duration`) are
imported on first use: their module imports pyyaml, which `import faultbench` does not pay for.
"""

import typing as _typing

from faultbench._lazy import lazy_names as _lazy_names

from ._calls._auth import token_expiry as token_expiry
from ._errors import WebhookSignatureError as WebhookSignatureError
from ._faults._inject import INJECTABLE_KINDS as INJECTABLE_KINDS
from ._faults._inject import InjectionPlan as InjectionPlan
from ._faults._kinds import KINDS as FAULT_KINDS
from ._faults._kinds import FaultKind as FaultKind
from ._faults._kinds import kind as fault_kind
from ._faults._model import MODEL_KINDS as MODEL_KINDS
from ._faults._model import ModelFault as ModelFault
from ._faults._model import ModelKind as ModelKind
from ._faults._plan import effective_rule as effective_rule
from ._faults._protocol import PROTOCOL_KINDS as PROTOCOL_KINDS
from ._faults._protocol import Enactment as Enactment
from ._faults._surface import SURFACE_KINDS as SURFACE_KINDS
from ._inspect._diff import format_event as format_event
from ._inspect._explain import RunExplanation as RunExplanation
from ._inspect._explain import explain_runs as explain_runs
from ._inspect._pins import FaultPin as FaultPin
from ._inspect._pins import faults_received as faults_received
from ._inspect._pins import pin_block as pin_block
from ._inspect._pins import protocol_fault as protocol_fault
from ._read._files import read_bounded as read_bounded
from ._spec._code import add_tools as add_tools
from ._spec._code import empty_spec as empty_spec
from ._spec._rows import generate_rows as generate_rows
from ._spec._schema import operation_args as operation_args
from ._spec._types import WORLD_ATTRIBUTES as WORLD_ATTRIBUTES
from ._store._events import add_log_line as add_log_line
from ._store._incall import ToolCharges as ToolCharges
from ._store._incall import running_call as running_call
from ._store._log import Cut as Cut
from ._text._keys import id_order as id_order
from ._text._names import did_you_mean as did_you_mean
from ._text._names import plural as plural
from ._text._show import format_value as format_value
from ._text._show import iso_time as iso_time
from ._text._show import show_repr as show_repr
from ._text._utc import to_utc as to_utc
from ._world._current import AgentCall as AgentCall
from ._world._current import note_agent_call as note_agent_call
from ._world._current import recording_agent_calls as recording_agent_calls
from ._world._replay import absorb_events as absorb_events
from ._world._replay import spec_for_log as spec_for_log
from ._world._watch import keep_events as keep_events
from ._world._watch import watch_log as watch_log
from ._world._webhooks import SIGNATURE_HEADER as WEBHOOK_SIGNATURE_HEADER
from ._world._webhooks import Delivery as WebhookDelivery
from ._world._webhooks import sign_webhook as sign_webhook
from ._world._webhooks import verify_webhook as verify_webhook

if _typing.TYPE_CHECKING:
    from ._read._features._webhooks import webhook_url_problem as webhook_url_problem
    from ._read._reader import load_spec as load_spec
    from ._read._reader import parse_duration as parse_duration
    from ._read._reader import parse_faults as parse_faults
    from ._read._reader import render_faults as render_faults

#: public name -> the module it lives in, for names imported on first use (PEP 562)
_LAZY = {
    "load_spec": "._read._reader",
    "parse_duration": "._read._reader",
    "parse_faults": "._read._reader",
    "render_faults": "._read._reader",
    "webhook_url_problem": "._read._features._webhooks",
}


__getattr__, __dir__ = _lazy_names("faultbench.kernel", globals(), _LAZY)

__all__ = [
    "FAULT_KINDS",
    "INJECTABLE_KINDS",
    "MODEL_KINDS",
    "PROTOCOL_KINDS",
    "SURFACE_KINDS",
    "WEBHOOK_SIGNATURE_HEADER",
    "WORLD_ATTRIBUTES",
    "AgentCall",
    "Cut",
    "Enactment",
    "FaultKind",
    "FaultPin",
    "InjectionPlan",
    "ModelFault",
    "ModelKind",
    "RunExplanation",
    "ToolCharges",
    "WebhookDelivery",
    "WebhookSignatureError",
    "absorb_events",
    "add_log_line",
    "add_tools",
    "did_you_mean",
    "effective_rule",
    "empty_spec",
    "explain_runs",
    "fault_kind",
    "faults_received",
    "format_event",
    "format_value",
    "generate_rows",
    "id_order",
    "iso_time",
    "keep_events",
    "load_spec",
    "note_agent_call",
    "operation_args",
    "parse_duration",
    "parse_faults",
    "pin_block",
    "plural",
    "protocol_fault",
    "read_bounded",
    "recording_agent_calls",
    "render_faults",
    "running_call",
    "show_repr",
    "sign_webhook",
    "spec_for_log",
    "to_utc",
    "token_expiry",
    "verify_webhook",
    "watch_log",
    "webhook_url_problem",
]
