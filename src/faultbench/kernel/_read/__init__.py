"""World files -> `WorldSpec`: YAML with positions, then one pass each for records, operations, seed plans and the fault block, every problem at file:line:col.

The stage's face: what the other stages (and the kernel's two doors) use from it, imported from
here and never from a module inside the stage (tests/test_layout.py checks it)."""

import typing as _typing

from faultbench._lazy import lazy_names as _lazy_names

if _typing.TYPE_CHECKING:
    from ._durations import parse_duration
    from ._features._webhooks import webhook_url_problem
    from ._files import read_bounded
    from ._reader import load_spec, parse_faults, read_world_file, render_faults

#: names imported on first use (PEP 562): their modules are not loaded by `import faultbench`
_LAZY = {
    "parse_duration": "._durations",
    "webhook_url_problem": "._features._webhooks",
    "read_bounded": "._files",
    "load_spec": "._reader",
    "parse_faults": "._reader",
    "read_world_file": "._reader",
    "render_faults": "._reader",
}

__getattr__, __dir__ = _lazy_names(__name__, globals(), _LAZY)

__all__ = [
    "load_spec",
    "parse_duration",
    "parse_faults",
    "read_bounded",
    "read_world_file",
    "render_faults",
    "webhook_url_problem",
]
