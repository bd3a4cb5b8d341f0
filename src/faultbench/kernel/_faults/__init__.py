"""Fault kinds (the registry), fault rules as a call sees them, and the seeded fault plan.

The stage's face: what the other stages (and the kernel's two doors) use from it, imported from
here and never from a module inside the stage (tests/test_layout.py checks it)."""

import typing as _typing

from faultbench._lazy import lazy_names as _lazy_names

from ._injections import TEMPLATES, injection_text, plant
from ._kinds import (
    ERROR_KINDS,
    ERROR_OPTIONS,
    FEED_KINDS,
    KINDS,
    REFUSED_KINDS,
    FaultKind,
    answer_headers,
    http_status,
    kind,
    kinds_with_option,
)
from ._lies import CHANGES, REWRITES, broken_structure
from ._plan import FaultDecision, FaultPlan, FaultTarget, created_field, effective_rule
from ._protocol import PROTOCOL_KINDS, Enactment, enactment
from ._rules import BY_ID, merged_rule
from ._surface import SURFACE_KINDS, ToolChange, fold, surface_digest_items
from ._types import ErrorRule, FaultRule, Latency, RateLimit
from ._window import Admitted, Window, since, without

if _typing.TYPE_CHECKING:
    from ._inject import INJECTABLE_KINDS, InjectionPlan
    from ._model import (
        MODEL_KEY,
        MODEL_KIND_NAMES,
        MODEL_KINDS,
        ModelFault,
        ModelKind,
        decide_model,
        model_kind,
    )

#: names imported on first use (PEP 562): their modules are not loaded by `import faultbench`
_LAZY = {
    "INJECTABLE_KINDS": "._inject",
    "InjectionPlan": "._inject",
    "MODEL_KEY": "._model",
    "MODEL_KINDS": "._model",
    "MODEL_KIND_NAMES": "._model",
    "ModelFault": "._model",
    "ModelKind": "._model",
    "decide_model": "._model",
    "model_kind": "._model",
}

__getattr__, __dir__ = _lazy_names(__name__, globals(), _LAZY)

__all__ = [
    "BY_ID",
    "CHANGES",
    "ERROR_KINDS",
    "ERROR_OPTIONS",
    "FEED_KINDS",
    "INJECTABLE_KINDS",
    "KINDS",
    "MODEL_KEY",
    "MODEL_KINDS",
    "MODEL_KIND_NAMES",
    "PROTOCOL_KINDS",
    "REFUSED_KINDS",
    "REWRITES",
    "SURFACE_KINDS",
    "TEMPLATES",
    "Admitted",
    "Enactment",
    "ErrorRule",
    "FaultDecision",
    "FaultKind",
    "FaultPlan",
    "FaultRule",
    "FaultTarget",
    "InjectionPlan",
    "Latency",
    "ModelFault",
    "ModelKind",
    "RateLimit",
    "ToolChange",
    "Window",
    "answer_headers",
    "broken_structure",
    "created_field",
    "decide_model",
    "effective_rule",
    "enactment",
    "fold",
    "http_status",
    "injection_text",
    "kind",
    "kinds_with_option",
    "merged_rule",
    "model_kind",
    "plant",
    "since",
    "surface_digest_items",
    "without",
]
