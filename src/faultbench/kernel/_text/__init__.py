"""Text for people: how values, names and ids are shown, sorted and suggested. The kernel's lowest stage.

The stage's face: what the other stages (and the kernel's two doors) use from it, imported from
here and never from a module inside the stage (tests/test_layout.py checks it)."""

from ._keys import id_order
from ._names import closest, did_you_mean, one_of, plural
from ._show import (
    SHOW_MAX,
    format_key,
    format_value,
    iso_time,
    loggable,
    short_repr,
    show_name,
    show_repr,
    show_value,
)
from ._utc import to_utc

__all__ = [
    "SHOW_MAX",
    "closest",
    "did_you_mean",
    "format_key",
    "format_value",
    "id_order",
    "iso_time",
    "loggable",
    "one_of",
    "plural",
    "short_repr",
    "show_name",
    "show_repr",
    "show_value",
    "to_utc",
]
