"""What a lying tool answers: the rewrites of the `wrong_value`, `schema_violation` and
`oversized_result` fault kinds. Pure functions of a JSON answer and the decision's options;
the call pipeline runs the operation as usual, then hands its answer through one of these.

- `wrong_value`: a plausible but false value in `field` (or the first field that can lie):
  a number off by a factor of 10, the next member of an enum (not the stored one), a date
  30 days earlier, a flipped boolean.
- `schema_violation`: `field` (or the first field besides `id`) missing from each record
  (`change: missing`, the default), or of the wrong type (`change: wrong_type`: a number
  as text, text as a number).
- `invalid_structured_content` (a fault of the MCP protocol, not a lie of the text):
  `broken_structure` makes the copy an MCP answer carries as `structuredContent`, which
  breaks the tool's output schema while the text stays true.
- `oversized_result`: a list answer `times` times as long (its records repeated), bounded
  at MAX_RECORDS; a single record's text fields `times` times as long, bounded at MAX_TEXT.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

__all__ = ["CHANGES", "MAX_RECORDS", "MAX_TEXT", "REWRITES", "broken_structure"]

#: the most records an oversized list answer holds
MAX_RECORDS = 10_000
#: the most characters an oversized text field holds
MAX_TEXT = 100_000
#: `schema_violation`'s `change:` values
CHANGES = ("missing", "wrong_type")
#: how far back a wrong date lies
STALE_DAYS = 30

#: enum members by field name, for the answer's record (None: not known)
Choices = Mapping[str, tuple[str, ...]]
#: (answer, decision, enum choices) -> (rewritten answer, what to log)
Rewrite = Callable[[Any, Any, Choices], tuple[Any, dict[str, Any]]]


def _records(value: Any) -> tuple[list[Any], Callable[[list[Any]], Any]]:
    """The records of an answer (a record, a list, a page's `data`) and how to put them back."""
    if isinstance(value, list):
        return value, lambda rs: rs
    if isinstance(value, dict) and isinstance(value.get("data"), list):
        return value["data"], lambda rs: {**value, "data": rs}
    if isinstance(value, dict):
        return [value], lambda rs: rs[0]
    return [], lambda rs: value


def _time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _lie(name: str, value: Any, choices: Choices) -> tuple[bool, Any]:
    """(whether it can lie, the false value) for one field's value."""
    if isinstance(value, bool):
        return True, not value
    if isinstance(value, int | float):
        return True, value * 10
    if isinstance(value, str):
        members = choices.get(name)
        if members and value in members and len(members) > 1:
            return True, members[(members.index(value) + 1) % len(members)]
        when = _time(value) if len(value) >= 10 and value[4:5] == "-" else None
        if when is not None:
            back = when - timedelta(days=STALE_DAYS)
            return True, back.isoformat().replace("+00:00", "Z")
    return False, value


def wrong_value(value: Any, decision: Any, choices: Choices) -> tuple[Any, dict[str, Any]]:
    records, put = _records(value)
    changed: dict[str, list[Any]] = {}
    out = []
    for r in records:
        if not isinstance(r, dict):
            out.append(r)
            continue
        names = [decision.field] if decision.field else [k for k in r if k != "id"]
        for name in names:
            if name in r:
                ok, false = _lie(name, r[name], choices)
                if ok:
                    changed.setdefault("ids", []).append(str(r.get("id", "")))
                    changed.setdefault("was", []).append(r[name])
                    r = {**r, name: false}
                    changed["field"] = [name]
                    break
        out.append(r)
    if not changed:
        return value, {}
    return put(out), {
        "into": changed["ids"],
        "changed_field": changed["field"][0],
        "was": changed["was"],
    }


def schema_violation(value: Any, decision: Any, choices: Choices) -> tuple[Any, dict[str, Any]]:
    records, put = _records(value)
    change = decision.change or "missing"
    out, ids, field = [], [], None
    for r in records:
        if not isinstance(r, dict):
            out.append(r)
            continue
        name = decision.field or next((k for k in r if k != "id"), None)
        if name is None or name not in r:
            out.append(r)
            continue
        field = name
        ids.append(str(r.get("id", "")))
        if change == "missing":
            out.append({k: v for k, v in r.items() if k != name})
        else:
            v = r[name]
            wrong: Any = str(v) if isinstance(v, int | float | bool) or v is None else len(str(v))
            out.append({**r, name: wrong})
    if field is None:
        return value, {}
    return put(out), {"into": ids, "changed_field": field}


def oversized_result(value: Any, decision: Any, choices: Choices) -> tuple[Any, dict[str, Any]]:
    times = max(1, int(decision.times or 1))
    if isinstance(value, list) or (isinstance(value, dict) and isinstance(value.get("data"), list)):
        records, put = _records(value)
        if not records:
            return value, {}
        grown = (records * times)[: max(len(records), MAX_RECORDS)]
        return put(grown), {"records": len(grown), "was": len(records)}
    records, put = _records(value)
    out, grew = [], 0
    for r in records:
        if isinstance(r, dict):
            new = {}
            for k, v in r.items():
                if isinstance(v, str) and v and k != "id":
                    big = (v + " ") * times
                    new[k] = big[:MAX_TEXT]
                    grew += len(new[k]) - len(v)
                else:
                    new[k] = v
            out.append(new)
        else:
            out.append(r)
    if not grew:
        return value, {}
    return put(out), {"chars_added": grew}


REWRITES: dict[str, Rewrite] = {
    "wrong_value": wrong_value,
    "schema_violation": schema_violation,
    "oversized_result": oversized_result,
}


def broken_structure(value: Any, field: str | None) -> tuple[Any, dict[str, Any]]:
    """A copy of `value` that its tool's output schema refuses: in each record, `field` (or
    the first field besides `id` that is not null) of the wrong type (text as its length, a
    number or a boolean as text, an object or a list as its length); an answer with no such
    field is wrapped in an object of the wrong shape, `{"data": value}` (a record's schema
    requires its fields and takes no others; a list's is an array). Returns (the copy, what
    to log)."""
    records, put = _records(value)
    out, ids, changed = [], [], None
    for r in records:
        name = None
        if isinstance(r, dict):
            names = [field] if field else [k for k in r if k != "id"]
            name = next((n for n in names if n in r and r[n] is not None), None)
        if name is None:
            out.append(r)
            continue
        v = r[name]
        wrong: Any = str(v).lower() if isinstance(v, int | float | bool) else len(str(v))
        if isinstance(v, list | dict):
            wrong = len(v)
        out.append({**r, name: wrong})
        ids.append(str(r.get("id", "")))
        changed = name
    if changed is None:
        return {"data": value}, {"wrapped": True}
    return put(out), {"into": ids, "changed_field": changed}
