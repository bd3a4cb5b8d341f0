"""The kernel's second door: what faultbench's shells, and libraries built like them, need
beyond the user API of `faultbench.kernel`.

`faultbench.kernel` (and `faultbench`) export the user API: worlds, tables, events, traces,
replay and errors. The serve, testing and command shells also read world files without
building a world, walk the fault registry, render values the way messages do, and read a run's
faults back from its log; those names live here, as trio keeps `trio.lowlevel` apart from
`trio`. They are public and listed in docs/API.md ("faultbench.kernel.lowlevel"), but they move
faster than the user API: a shell imports them from here and from nowhere else (import-linter checks it).

The world-file readers (`load_spec`, `parse_faults`, `render_faults`, `parse_duration`) are
imported on first use: their module imports pyyaml, which `import faultbench` does not pay for.
"""

import typing as _typing

from faultbench._lazy import lazy_names as _lazy_names

from ._calls import token_expiry as token_expiry
from ._errors import WebhookSignatureError as WebhookSignatureError
from ._faults import INJECTABLE_KINDS as INJECTABLE_KINDS
from ._faults import KINDS as FAULT_KINDS
from ._faults import MODEL_KINDS as MODEL_KINDS
from ._faults import PROTOCOL_KINDS as PROTOCOL_KINDS
from ._faults import SURFACE_KINDS as SURFACE_KINDS
from ._faults import Enactment as Enactment
from ._faults import FaultKind as FaultKind
from ._faults import InjectionPlan as InjectionPlan
from ._faults import ModelFault as ModelFault
from ._faults import ModelKind as ModelKind
from ._faults import answer_headers as fault_headers
from ._faults import effective_rule as effective_rule
from ._faults import http_status as http_status
from ._faults import kind as fault_kind
from ._faults import model_kind as model_kind
from ._inspect import FaultPin as FaultPin
from ._inspect import RunExplanation as RunExplanation
from ._inspect import explain_runs as explain_runs
from ._inspect import faults_received as faults_received
from ._inspect import format_event as format_event
from ._inspect import pin_block as pin_block
from ._inspect import protocol_fault as protocol_fault
from ._read import read_bounded as read_bounded
from ._spec import WORLD_ATTRIBUTES as WORLD_ATTRIBUTES
from ._spec import add_tools as add_tools
from ._spec import empty_spec as empty_spec
from ._spec import generate_rows as generate_rows
from ._spec import operation_args as operation_args
from ._store import Cut as Cut
from ._store import ToolCharges as ToolCharges
from ._store import add_log_line as add_log_line
from ._store import running_call as running_call
from ._text import did_you_mean as did_you_mean
from ._text import format_value as format_value
from ._text import id_order as id_order
from ._text import iso_time as iso_time
from ._text import plural as plural
from ._text import show_repr as show_repr
from ._text import to_utc as to_utc
from ._world import SIGNATURE_HEADER as WEBHOOK_SIGNATURE_HEADER
from ._world import AgentCall as AgentCall
from ._world import Delivery as WebhookDelivery
from ._world import absorb_events as absorb_events
from ._world import keep_events as keep_events
from ._world import note_agent_call as note_agent_call
from ._world import recording_agent_calls as recording_agent_calls
from ._world import sign_webhook as sign_webhook
from ._world import spec_for_log as spec_for_log
from ._world import verify_webhook as verify_webhook
from ._world import watch_log as watch_log

if _typing.TYPE_CHECKING:
    from ._read import load_spec as load_spec
    from ._read import parse_duration as parse_duration
    from ._read import parse_faults as parse_faults
    from ._read import render_faults as render_faults
    from ._read import webhook_url_problem as webhook_url_problem

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
    "fault_headers",
    "fault_kind",
    "faults_received",
    "format_event",
    "format_value",
    "generate_rows",
    "http_status",
    "id_order",
    "iso_time",
    "keep_events",
    "load_spec",
    "model_kind",
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
