"""Durations as world files write them (`500ms`, `30s`, `5m`, `2h`, `1d`, or a number of
seconds): parsed for the `faults:` block and the blocks that schedule effects, and rendered
back to the shortest text that parses to the same value."""

from __future__ import annotations

import math
import re

from .._text import short_repr

_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d)?\s*")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}
MAX_DURATION_S = 10 * 365 * 86400.0
DURATION_HELP = "expected a number of seconds or a number with a unit: 500ms, 30s, 5m, 2h or 1d"


def parse_duration(text: str | int | float) -> float:
    """Seconds in a duration: `"500ms"`, `"30s"`, `"5m"`, `"2h"`, `"1d"`; a bare number is
    seconds. Raises ValueError for anything else, negative and non-finite values included."""
    if isinstance(text, bool):
        raise ValueError(f"invalid duration {short_repr(text)}; {DURATION_HELP}")
    if isinstance(text, int | float):
        try:
            seconds = float(text)
        except OverflowError:  # an int beyond any float
            seconds = math.inf if text > 0 else -math.inf
    else:
        match = _DURATION.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            raise ValueError(f"invalid duration {short_repr(text)}; {DURATION_HELP}")
        seconds = float(match.group(1)) * _UNIT_S[match.group(2)]
    # A virtual clock cannot move by inf or NaN; ten years is more than any fault needs.
    if not 0 <= seconds <= MAX_DURATION_S:
        why = "negative" if seconds < 0 else "not a number" if seconds != seconds else "over 3650d"
        raise ValueError(f"invalid duration {short_repr(text)}: {why}; {DURATION_HELP}")
    return seconds


def render_duration(seconds: float) -> str | float | int:
    """`seconds` as the duration text a person would write (`"2h"`, `"90s"`, `"500ms"`) when
    one reads back exactly, else the number of seconds."""
    for unit in ("d", "h", "m", "s", "ms"):
        count = seconds / _UNIT_S[unit]
        if count >= 1 and count.is_integer():
            text = f"{int(count)}{unit}"
            if parse_duration(text) == seconds:
                return text
    if seconds.is_integer() and abs(seconds) < 2**53:
        return int(seconds)  # a whole number reads as one (`50`, not `50.0`)
    return seconds
