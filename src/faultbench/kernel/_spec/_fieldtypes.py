"""Field types of a world file and the values they accept.

A field's type as written (`str`, `enum[placed, delivered]`, `ref[orders.order]`, with `?` for
optional) is parsed once into its parts; seed rows and defaults are checked and converted by
`_coerce`, whose failures the loader words with `_expected`. These functions know nothing of
positions in the file: the loader passes (`_read/_records.py`, `_read/_seeds.py`) place the problems.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime
from typing import Any

from .._text import did_you_mean, one_of, short_repr, to_utc
from ._nested import NestedError, conform, describe
from ._schema import INT_MAX, INT_MIN
from ._types import FieldSpec

SCALAR_KINDS = ("str", "int", "float", "bool", "datetime")
TYPE_HELP = (
    "expected one of str, int, float, bool, datetime, version, enum[a, b] or ref[service.record]"
)

_BRACKETED = re.compile(r"([A-Za-z_]\w*)\s*\[(.*)\]", re.S)
_REF_TARGET = re.compile(r"(?:([A-Za-z_][\w-]*)\.)?([A-Za-z_]\w*)")


def _parse_type(raw: str) -> tuple[str, tuple[str, ...], str | None, bool]:
    """(kind, enum choices, ref target as written, optional). Raises ValueError(message)."""
    text = raw.strip()
    optional = text.endswith("?")
    if optional:
        text = text[:-1].rstrip()
    if text in SCALAR_KINDS:
        return text, (), None, optional
    if text == "version":  # optimistic concurrency: 1 at creation, +1 on every write
        if optional:
            raise ValueError(
                f"a version field is never empty, so {short_repr(raw)} cannot be optional; "
                "expected 'version'"
            )
        return "version", (), None, False
    m = _BRACKETED.fullmatch(text)
    if m is None or m.group(1) not in ("enum", "ref"):
        head = m.group(1) if m else text
        hint = did_you_mean(head, (*SCALAR_KINDS, "enum", "ref"))
        if m and hint:
            hint = hint.replace("'?", f"[{m.group(2)}]'?")
        elif head in ("list", "dict", "array", "object", "json"):
            hint = (
                "; for nested values use list[T], {object: {name: type, ...}} or "
                "{list: {object: {...}}}"
            )
        raise ValueError(f"unknown field type {short_repr(raw)}; {TYPE_HELP}{hint}")
    head, inner = m.group(1), m.group(2)
    if head == "enum":
        members = [part.strip().strip("'\"").strip() for part in inner.split(",")]
        if members == [""]:
            raise ValueError(
                f"empty enum {short_repr(raw)}; expected at least one value, e.g. enum[placed, delivered]"
            )
        if "" in members:
            raise ValueError(f"enum {short_repr(raw)} has an empty value; expected enum[a, b, c]")
        if len(set(members)) < len(members):  # one pass each, not a count per member
            seen: set[str] = set()
            dupes: set[str] = set()
            for x in members:
                (dupes if x in seen else seen).add(x)
            raise ValueError(
                f"enum {short_repr(raw)} lists {short_repr(min(dupes))} twice; expected each value once"
            )
        return "enum", tuple(members), None, optional
    target = inner.strip()
    if not _REF_TARGET.fullmatch(target):
        raise ValueError(
            f"invalid reference {short_repr(raw)}; expected ref[service.record] or ref[record], "
            "e.g. ref[orders.order]"
        )
    return "ref", (), target, optional


_EXPECTED = {
    "str": "text (quote numbers and dates, e.g. '42')",
    "int": "a whole number (64-bit)",
    "float": "a finite number",
    "bool": "true or false",
    "datetime": "a date and time such as 2025-05-01T10:00:00Z (years 1 to 9999 in UTC)",
    "version": "a whole number from 1 (a record's version)",
}


def _coerce(field: FieldSpec, value: Any) -> tuple[bool, Any]:
    """(ok, value in the field's Python type)."""
    if value is None:
        return field.optional, None
    kind = field.kind
    if kind == "list" or kind == "object":
        try:
            return True, conform(field, value, field.name)
        except NestedError:
            return False, value
    if kind == "str":
        return isinstance(value, str), value
    if kind in ("int", "float", "ref") and isinstance(value, bool):
        return False, value
    if kind == "version":
        return isinstance(value, int) and not isinstance(
            value, bool
        ) and 1 <= value <= INT_MAX, value
    if kind == "int":
        # the kernel stores signed 64-bit ints only (an event log must round-trip)
        return isinstance(value, int) and INT_MIN <= value <= INT_MAX, value
    if kind == "float":
        if not isinstance(value, int | float):
            return False, value
        try:
            number = float(value)
        except OverflowError:  # an int beyond any float
            return False, value
        return math.isfinite(number), number
    if kind == "bool":
        return isinstance(value, bool), value
    if kind == "datetime":
        dt = _to_datetime(value)
        return dt is not None, dt
    if kind == "enum":
        text = value if isinstance(value, str) else str(value)
        return text in field.choices, text
    # ref: an id; ids are strings, a bare number is accepted as its text
    if isinstance(value, str | int):
        return True, str(value)
    return False, value


def _expected(field: FieldSpec) -> str:
    if field.nested:
        return describe(field)
    if field.kind == "enum":
        return f"one of {one_of(field.choices)}"
    if field.kind == "ref":
        return f"the id of a {field.ref} record"
    text = _EXPECTED[field.kind]
    return text + " or null" if field.optional else text


def _to_datetime(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    else:
        return None
    try:
        return to_utc(dt)
    except ValueError:  # past 9999 or before 1 in UTC: the caller says what is expected
        return None
