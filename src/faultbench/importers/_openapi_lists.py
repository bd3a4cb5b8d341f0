"""An imported list's query: filters (`eq`, `in`, ranges), text searches (`*_pattern`,
`search`, `q`), sort and pages; and the natural key a record's path names."""

from __future__ import annotations

import re
from typing import Any

from ._document import Document
from ._mapping import Operation, Record
from ._names import snake

_CURSOR = {
    "starting_after", "ending_before", "after", "before", "cursor", "page_token",
    "pagetoken", "next_token", "continuation_token", "marker", "next_page_token",
}  # fmt: skip
_OFFSET = {"offset", "start", "skip", "page", "pagenumber", "page_number"}
_SIZE = {"limit", "page_size", "pagesize", "per_page", "size", "rows", "max_results", "top"}
_NOT_FILTERS = {"expand", "fields", "include", "select"}
_RANGE = ("gt", "gte", "lt", "lte")
#: query parameters that search a list by text (on its record's key or name)
_SEARCH = ("search", "q", "query")


def list_options(
    doc: Document, skipped: list[dict[str, str]], record: Record,
    params: list[dict[str, Any]], out: Operation,
) -> None:  # fmt: skip
    """A list's filters, searches, sort and page from its query parameters (those that map
    to nothing go to `skipped`)."""
    by_name = {snake(k): k for k in record.fields}
    cursor = offset = False
    for p in params:
        if p.get("in") != "query":
            continue
        pname = str(p["name"])
        low = pname.lower()
        schema, _ = doc.deref(p.get("schema"))
        if low in _CURSOR:
            cursor = True
            continue
        if low in _OFFSET:
            # a page *token* (Stripe's search `page`) is a cursor, a page number an offset
            cursor, offset = (True, offset) if schema.get("type") == "string" else (cursor, True)
            continue
        if low in _SIZE:
            default = schema.get("default")
            maximum = schema.get("maximum")
            minimum = schema.get("minimum")
            size = default if isinstance(default, int) and default > 0 else 10
            if isinstance(maximum, int) and maximum >= size:
                top = maximum
            elif isinstance(minimum, int) and not isinstance(minimum, bool):
                top = _NO_MAX  # bounded below only: any size the document allows
            else:
                top = max(size, 100)
            out.page = {"size": size, "max_size": top}
            if pname != "limit":
                out.args[pname] = "limit"
            if isinstance(minimum, int) and not isinstance(minimum, bool) and maximum is None:
                out.bounds["limit"] = {"minimum": minimum}  # and no maximum
            continue
        if low in _OFFSET and pname != "offset":
            out.args[pname] = "offset"
        if low in _NOT_FILTERS:
            continue
        described = {**schema, "description": p.get("description") or schema.get("description")}
        searched = _searched(pname, described, record)
        if searched is not None:
            field_, op = searched
            out.filter.setdefault(field_, [])
            if op not in out.filter[field_]:
                out.filter[field_].append(op)
            out.args[pname] = f"{field_}_{op}"
            if op == "like":  # anywhere in the text, as `ILIKE '%text%'`
                out.args[pname] += " %{}%"
            continue
        if low in ("sort", "order", "order_by", "orderby", "sort_by", "sortby"):
            out.sort = _sort_keys(schema, record)
            continue
        fname = by_name.get(snake(pname))
        decl = record.fields.get(fname) if fname else None
        if fname is None or decl is None or not isinstance(decl, str) or decl.startswith("list["):
            skipped.append(
                {
                    "method": out.method.upper(),
                    "path": out.path,
                    "why": f"query parameter {pname!r} is not a filter: no flat field of {record.name} is called that",
                    "part": "parameter",
                }
            )
            continue
        out.filter[fname] = _operators(doc, schema, decl)
    if cursor or offset:
        page = out.page or {"size": 10, "max_size": 100}
        out.page = {"style": "cursor" if cursor else "offset", **page}
    elif out.page is not None:
        out.page = None  # a size alone pages nothing: the first page is all an agent could see


#: `limit`'s max_size where the document bounds it below only
_NO_MAX = 10_000  # the most a world's page may hold


def field_named(name: str, record: Record) -> str | None:
    """The flat text-or-scalar field of `record` that a parameter names: the name itself
    (`dag_id`), the name without the record's own before it (`pool_name` of a pool ->
    `name`, `backfill_id` -> `id`), or its last word (`variable_key` -> `key`)."""
    by_name = {snake(k): k for k in record.fields if isinstance(record.fields[k], str)}
    words = snake(name).split("_")
    own = record.name.split("_")
    candidates = [snake(name)]
    if words[: len(own)] == own:
        candidates.append("_".join(words[len(own) :]))
    candidates.append(words[-1])
    return next((by_name[c] for c in candidates if c in by_name), None)


def _searched(pname: str, schema: dict[str, Any], record: Record) -> tuple[str, str] | None:
    """(field, operator) for a query parameter that searches by text: `<field>_pattern` and
    `search`/`q` (on the record's name, title, label or key) are `like` where the
    description speaks of SQL LIKE or `%` (the text then matches anywhere, as `ILIKE
    '%text%'` does), else `contains`; `<field>_prefix_pattern` is `prefix`."""
    low = snake(pname)
    op = "prefix" if low.endswith("_prefix_pattern") else None
    if low.endswith("_pattern"):
        base = low[: -len("_prefix_pattern")] if op else low[: -len("_pattern")]
        fname = field_named(base, record)
    elif low in _SEARCH:
        fname = next((f for f in ("name", "title", "label", "key") if f in record.fields), None)
    else:
        return None
    if fname is None or str(record.fields.get(fname, "")).rstrip("?") != "str":
        return None
    text = f"{schema.get('description', '')}".lower()
    if op is None:
        op = "like" if "like" in text or "%" in text else "contains"
    return fname, op


def natural_keys(records: dict[str, Record], operations: list[Operation]) -> None:
    """A record that declares no `id` and whose get names it by a path parameter that is one
    of its properties (`GET /pools/{pool_name}` of a pool with a `name`): that property is
    its id under `serve --rest` (`http: {key: name}`), and its answers leave `id` out."""
    for op in operations:
        if op.kind != "get" or op.record is None or records[op.record].key is not None:
            continue
        rec = records[op.record]
        names = re.findall(r"\{([^{}/]+)\}", op.path)
        if not names or "id" in rec.fields:
            continue
        key = field_named(names[-1], rec)
        if key is not None and key != "id":
            rec.key = key
    for op in operations:
        if op.record is not None and records[op.record].key is not None:
            op.key = records[op.record].key


def _operators(doc: Document, schema: dict[str, Any], decl: str) -> list[str]:
    ops: list[str] = []
    variants = [
        schema,
        *(doc.deref(v)[0] for v in [*(schema.get("anyOf") or []), *(schema.get("oneOf") or [])]),
    ]
    for v in variants:
        props = v.get("properties") or {}
        if v.get("type") == "array":
            ops.append("in")
        elif props and set(props) & set(_RANGE):
            ops.extend(o for o in _RANGE if o in props)
        elif v.get("type") in ("string", "integer", "number", "boolean") or "enum" in v:
            ops.append("eq")
    ops = list(dict.fromkeys(ops or ["eq"]))
    if decl.startswith(("bool", "ref[", "enum[")):
        ops = [o for o in ops if o in ("eq", "in")] or ["eq"]
    return ops


def _sort_keys(schema: dict[str, Any], record: Record) -> list[str]:
    values = schema.get("enum") or _items_enum(schema)
    keys = []
    for v in values:
        text = str(v)
        name = text.lstrip("+-").split(":")[0]
        if name in record.fields:
            keys.append(f"-{name}" if text.startswith("-") or text.endswith(":desc") else name)
    return list(dict.fromkeys(keys))


def _items_enum(schema: dict[str, Any]) -> list[Any]:
    items = schema.get("items")
    return list(items.get("enum") or []) if isinstance(items, dict) else []
