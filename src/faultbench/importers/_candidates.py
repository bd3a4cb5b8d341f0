"""Arguments to try when recording a tool's answer (`import mcp --record`).

The smallest arguments a schema accepts (`""`, `0`, the first enum value) are often refused
by a real server: a time zone must be a real one, an amount positive, a query non-empty. So
after them come, in order: the schema's own examples (`examples`/`example` of the whole
object), the properties' examples, defaults and enum values, and values generated from each
property's format and name (`timezone` -> `UTC`, `url` -> `https://example.com`, `1` for a
number), first for the required properties, then for all of them. Each set is new (no set
is tried twice); `MAX_TRIES` bounds the calls a tool gets.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ._document import Document
from ._shapes import _FORMATS, _types, answer

#: calls a tool gets at most while recording (each may change the real server's state)
MAX_TRIES = 6

# A value for a string property, by words of its name (first match wins).
_BY_NAME: tuple[tuple[tuple[str, ...], Any], ...] = (
    (("timezone", "tz", "zone"), "UTC"),
    (("url", "uri", "link", "href", "endpoint"), "https://example.com"),
    (("email", "mail"), "user@example.com"),
    (("path", "dir", "directory", "folder", "repo", "repository"), "."),
    (("file", "filename"), "README.md"),
    (("date", "day"), "2024-01-01"),
    (("time",), "12:00"),
    (("lang", "language", "locale"), "en"),
    (("country",), "US"),
    (("currency",), "USD"),
    (("city", "location", "place"), "London"),
    (("phone",), "+15555550100"),
    (("id", "uid", "uuid", "key"), "1"),
    (("query", "q", "search", "term", "text", "prompt", "message", "content"), "hello"),
    (("name", "title", "label"), "example"),
)


def candidates(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where the arguments came from, the arguments), each set once, at most MAX_TRIES."""
    seen: set[str] = set()
    tried = 0
    for origin, args in _all(schema):
        if not isinstance(args, dict):
            continue
        text = json.dumps(args, sort_keys=True, default=str)
        if text in seen:
            continue
        seen.add(text)
        yield origin, args
        tried += 1
        if tried >= MAX_TRIES:
            return


def _all(schema: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    doc = Document(dict(schema))
    yield "the smallest arguments", answer(doc, schema)
    examples = schema.get("examples")
    for ex in examples if isinstance(examples, list) else []:
        yield "the schema's examples", ex
    if isinstance(schema.get("example"), dict):
        yield "the schema's example", schema["example"]
    props = {
        str(k): doc.deref(v)[0] for k, v in (schema.get("properties") or {}).items()
    }  # fmt: skip
    required = [str(r) for r in schema.get("required") or [] if r in props]
    for every in (False, True):
        names = list(props) if every else required
        which = "all properties" if every else "the required properties"
        documented = {n: _documented(props[n]) for n in names}
        if all(v is not None for v in documented.values()) and documented:
            yield f"examples, defaults and enums of {which}", documented
        yield (
            f"values generated for {which}",
            {n: documented[n] if documented[n] is not None else _generated(n, props[n], doc)
             for n in names},
        )  # fmt: skip
    # each other value of the first enum among the required properties
    for n in required:
        values = props[n].get("enum")
        if isinstance(values, list) and len(values) > 1:
            base = {m: _documented(props[m]) or _generated(m, props[m], doc) for m in required}
            for v in values[1:]:
                yield f"{n}={json.dumps(v)}", {**base, n: v}
            break


def _documented(schema: dict[str, Any]) -> Any:
    """A value the schema itself offers: an example, the default, a const or an enum's first
    value; None when it offers none."""
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    for key in ("example", "default", "const"):
        if key in schema and schema[key] is not None:
            return schema[key]
    values = schema.get("enum")
    if isinstance(values, list):
        return next((v for v in values if v not in (None, "")), None)
    return None


def _generated(name: str, schema: dict[str, Any], doc: Document) -> Any:
    """A plausible value from the property's type, format and name."""
    types, _nullable = _types(schema)
    kind = types[0] if types else "string"
    if kind in ("integer", "number"):
        low = schema.get("minimum")
        value = max(1, low) if isinstance(low, int | float) and not isinstance(low, bool) else 1
        high = schema.get("maximum")
        if isinstance(high, int | float) and not isinstance(high, bool) and value > high:
            value = high
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return True
    if kind == "array":
        items, _ = doc.deref(schema.get("items") or {})
        return [_documented(items) or _generated(name.rstrip("s"), items, doc)]
    if kind == "object":
        return answer(doc, schema)
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _FORMATS:
        return _FORMATS[fmt]
    words = set(re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()))
    for keys, value in _BY_NAME:
        if words & set(keys):
            return value
    return "example"
