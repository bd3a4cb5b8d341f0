"""`World`: the stages brought together; the current world; replay of a log.

The stage's face: what the other stages (and the kernel's two doors) use from it, imported from
here and never from a module inside the stage (tests/test_layout.py checks it)."""

import typing as _typing

from faultbench._lazy import lazy_names as _lazy_names

from ._current import AgentCall, current_world, note_agent_call, recording_agent_calls, using_world
from ._replay import absorb_events, replay, spec_for_log
from ._webhooks import SIGNATURE_HEADER, Delivery, sign_webhook, verify_webhook
from ._world import Snapshot, World, load_world

if _typing.TYPE_CHECKING:
    from ._watch import keep_events, watch_log

#: names imported on first use (PEP 562): their modules are not loaded by `import faultbench`
_LAZY = {
    "keep_events": "._watch",
    "watch_log": "._watch",
}

__getattr__, __dir__ = _lazy_names(__name__, globals(), _LAZY)

__all__ = [
    "SIGNATURE_HEADER",
    "AgentCall",
    "Delivery",
    "Snapshot",
    "World",
    "absorb_events",
    "current_world",
    "keep_events",
    "load_world",
    "note_agent_call",
    "recording_agent_calls",
    "replay",
    "sign_webhook",
    "spec_for_log",
    "using_world",
    "verify_webhook",
    "watch_log",
]
