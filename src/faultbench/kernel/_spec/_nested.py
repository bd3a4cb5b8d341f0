"""Nested fields: `list[T]`, `{object: {...}}` and `{list: {...}}` values, at any depth.

A nested field's value is plain data: a dict for an object (keys in field order), a list for
a list, scalars as in flat fields (datetimes as aware UTC datetimes). `conform` checks and
normalizes one such value against its `FieldSpec`, and names the first wrong place with a
JSON path (`lines[2].amount: expected an integer, got "x"`); every writer goes through it:
tool arguments (`_schema.Validator`), table writes (`_tables.check_value`), seed rows and
defaults (`_fieldtypes._coerce`). `merge` is what an update does with an object (a
field-level merge, recursively; lists are replaced whole), `json_schema` what the agent
reads, `from_json` what replay does to a decoded value (datetime strings back to datetimes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from .._text import show_value, to_utc
from ._types import FieldSpec

#: Integers a record or an argument may hold: a signed 64-bit range, as real services (and
#: every JSON reader of an event log) can store; Python's unbounded ints would not round-trip.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1

#: how a scalar kind reads in messages (`_schema.py` adds the argument-only kinds)
SCALAR_NOUNS = {
    "str": "a string",
    "ref": "a string (a record id)",
    "int": "an integer",
    "float": "a number",
    "bool": "a boolean",
    "datetime": "a date-time string with a timezone (RFC 3339, e.g. 2025-06-01T00:00:00Z)",
}


class NestedError(ValueError):
    """A value that does not fit a field: `path` (as `lines[2].amount`) and what is wrong."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


def describe(f: FieldSpec) -> str:
    """What a value of `f` is, in words: "a list of strings", "an object {city, zip?}"."""
    if f.kind == "list":
        assert f.item is not None
        text = "a list of " + _plural(describe(f.item))
    elif f.kind == "object":
        names = ", ".join(g.name + ("?" if g.optional or g.has_default else "") for g in f.fields)
        text = "an object {" + names + "}"
    elif f.kind == "enum":
        text = "one of " + ", ".join(repr(c) for c in f.choices)
    else:
        text = SCALAR_NOUNS[f.kind]
    return text + " or null" if f.optional else text


def _plural(noun: str) -> str:
    for article in ("a ", "an "):
        if noun.startswith(article):
            head, _, rest = noun[len(article) :].partition(" ")
            return (head + "s " + rest).rstrip() if head != "list" else "lists " + rest
    return noun


def _fail(f: FieldSpec, path: str, value: Any) -> NestedError:
    return NestedError(path, f"expected {describe(f)}, got {show_value(value)}")


def conform(
    f: FieldSpec, value: Any, path: str, *, text_dates: bool = True, partial: bool = False
) -> Any:
    """`value` checked against `f` and normalized (a fresh container, defaults filled in,
    ints widened to float, datetimes in UTC), or `NestedError` at the first wrong place.

    `text_dates`: datetimes may be RFC 3339 strings (JSON input). `partial`: an object may
    leave out any field (an update, merged into the current value by `merge`); lists are
    always whole."""
    if value is None:
        if f.optional:
            return None
        raise _fail(f, path, value)
    kind = f.kind
    if kind == "object":
        if not isinstance(value, Mapping):
            raise _fail(f, path, value)
        names = [g.name for g in f.fields]
        for k in value:
            if k not in names:
                raise NestedError(
                    f"{path}.{k}" if path else str(k),
                    f"unknown field; expected one of {', '.join(names)}",
                )
        out: dict[str, Any] = {}
        for g in f.fields:
            where = f"{path}.{g.name}" if path else g.name
            if g.name in value:
                out[g.name] = conform(
                    g, value[g.name], where, text_dates=text_dates, partial=partial
                )
            elif partial:
                continue
            elif g.has_default:
                out[g.name] = conform(g, g.default, where, text_dates=text_dates)
            elif g.optional:
                out[g.name] = None
            else:
                raise NestedError(where, f"required, expected {describe(g)}")
        return out
    if kind == "list":
        if not isinstance(value, list | tuple):
            raise _fail(f, path, value)
        item = f.item
        assert item is not None
        return [
            conform(item, x, f"{path}[{i}]", text_dates=text_dates) for i, x in enumerate(value)
        ]
    return _scalar(f, value, path, text_dates)


def _scalar(f: FieldSpec, value: Any, path: str, text_dates: bool) -> Any:
    kind = f.kind
    if kind == "str" or kind == "ref":
        if isinstance(value, str):
            return value
    elif kind == "enum":
        if isinstance(value, str) and value in f.choices:
            return value
    elif kind == "bool":
        if isinstance(value, bool):
            return value
    elif isinstance(value, bool):
        pass  # not a number
    elif kind == "int":
        if isinstance(value, int) and INT_MIN <= value <= INT_MAX:
            return value
    elif kind == "float":
        if isinstance(value, int | float):
            try:
                number = float(value)
            except OverflowError:
                number = math.inf
            if math.isfinite(number):
                return number
    elif kind == "datetime":
        dt = _datetime(value, text_dates)
        if dt is not None:
            return dt
    raise _fail(f, path, value)


def _datetime(value: Any, text: bool) -> datetime | None:
    if isinstance(value, str) and text:
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    elif isinstance(value, date) and not isinstance(value, datetime) and text:
        value = datetime(value.year, value.month, value.day)
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None and not text:
        return None  # Python code must say which zone it means
    try:
        return to_utc(value)
    except ValueError:
        return None


def merge(f: FieldSpec, old: Any, new: Any) -> Any:
    """An update's value for object field `f`: `new`'s fields over `old`'s, recursively for
    objects inside objects; a list, a scalar, a null or a missing old value is replaced."""
    if f.kind != "object" or not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return new
    out = dict(old)
    for g in f.fields:
        if g.name in new:
            out[g.name] = merge(g, old.get(g.name), new[g.name])
    return out


def or_null(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` or null, as the MCP SDK (and Pydantic) write it: `anyOf` of the two. Never a
    list of types (`"type": ["string", "null"]`): several MCP clients (AutoGen, DSPy,
    Semantic Kernel) cannot read one."""
    return {"anyOf": [schema, {"type": "null"}]}


def json_schema(f: FieldSpec, *, partial: bool = False) -> dict[str, Any]:
    """The JSON Schema of a value of `f`: nested `properties` / `items`, no `$ref`; an
    optional field's as `anyOf` its schema or null (`or_null`), its default beside them."""
    s: dict[str, Any]
    if f.kind == "object":
        s = {
            "type": "object",
            "properties": {g.name: json_schema(g, partial=partial) for g in f.fields},
            "additionalProperties": False,
        }
        if not partial:
            s["required"] = [g.name for g in f.fields if not g.optional and not g.has_default]
    elif f.kind == "list":
        assert f.item is not None
        s = {"type": "array", "items": json_schema(f.item)}
    else:
        jtype = {"int": "integer", "float": "number", "bool": "boolean"}.get(f.kind, "string")
        s = {"type": jtype}
        if f.kind == "enum":
            s["enum"] = list(f.choices)
        elif f.kind == "datetime":
            s["format"] = "date-time"
    if f.optional:
        s = or_null(s)
    if f.has_default:
        s["default"] = f.default.isoformat() if isinstance(f.default, datetime) else f.default
    return s
    if f.kind == "list":
        assert f.item is not None
        return {
            "type": ["array", "null"] if f.optional else "array",
            "items": json_schema(f.item),
        }
    jtype = {"int": "integer", "float": "number", "bool": "boolean"}.get(f.kind, "string")
    s = {"type": [jtype, "null"] if f.optional else jtype}
    if f.kind == "enum":
        s["enum"] = [*f.choices, None] if f.optional else list(f.choices)
    elif f.kind == "datetime":
        s["format"] = "date-time"
    if f.has_default:
        s["default"] = f.default.isoformat() if isinstance(f.default, datetime) else f.default
    return s


def has_datetime(f: FieldSpec) -> bool:
    if f.kind == "datetime":
        return True
    if f.kind == "list":
        return f.item is not None and has_datetime(f.item)
    return any(has_datetime(g) for g in f.fields)


def from_json(f: FieldSpec, value: Any) -> Any:
    """A decoded (JSON) value of `f` with its datetimes back as datetimes; anything that
    does not fit is kept as it is (replay's own checks name it)."""
    if value is None:
        return None
    if f.kind == "datetime":
        return _datetime(value, True) or value
    if f.kind == "list" and f.item is not None and isinstance(value, list):
        return [from_json(f.item, x) for x in value]
    if f.kind == "object" and isinstance(value, dict):
        by = {g.name: g for g in f.fields}
        return {k: from_json(by[k], v) if k in by else v for k, v in value.items()}
    return value


def ref_targets(f: FieldSpec, value: Any) -> list[tuple[str, str, str]]:
    """(path, record, id) of every ref inside a nested value, for the seed's ref check."""
    out: list[tuple[str, str, str]] = []

    def walk(g: FieldSpec, v: Any, path: str) -> None:
        if v is None:
            return
        if g.kind == "ref" and g.ref is not None and isinstance(v, str):
            out.append((path, g.ref, v))
        elif g.kind == "list" and g.item is not None and isinstance(v, list):
            for i, x in enumerate(v):
                walk(g.item, x, f"{path}[{i}]")
        elif g.kind == "object" and isinstance(v, Mapping):
            for h in g.fields:
                walk(h, v.get(h.name), f"{path}.{h.name}")

    walk(f, value, f.name)
    return out
