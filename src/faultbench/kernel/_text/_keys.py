"""The one sort key of record ids, used wherever ids are ordered.

Tables, their indexes, seed plans, diffs and `faultbench replay`'s listing all order ids with
`id_order`, so a table, its diff and its seed rows list records the same way. Numeric ids
("1", "2", ..., "10") come first in numeric order, then every other id by its text. "Numeric"
means ASCII digits only: `str.isdigit` also accepts "²" or "٣", which `int()` refuses, so they
sort as text.
"""

from __future__ import annotations


def id_order(rid: str) -> tuple[int, int, str]:
    """Sort key for ids: numeric ids in numeric order first, then the others by text."""
    if rid.isascii() and rid.isdigit():
        # Compare by length without leading zeros, then by text: numeric order without
        # int() (ids may be long), and "01" and "1" stay distinct keys.
        return (0, len(rid.lstrip("0")), rid)
    return (1, 0, rid)
