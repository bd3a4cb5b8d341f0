"""List operations' filters, orders and pages: the names every stage agrees on.

A filter `{amount: [gt, lte]}` becomes one tool argument per operator, named
`<field>_<operator>` (`amount_gt`, `status_in`), except `eq`, which keeps the field's own
name (`status`), as the old `filter: [status]` did. Which operators a field takes depends on
its type (`OPERATORS_FOR`); `sort:` entries are field names, `-` first for descending; the
paging arguments (`PAGE_ARGS`) are reserved names. The loader (`_read/_features/_lists.py`) checks a
file against these; the schema (`_schema.py`) and the runner (`_calls/_lists.py`) use them.
"""

from __future__ import annotations

from ._types import OperationSpec, RecordSpec

OPERATORS = ("eq", "in", "gt", "gte", "lt", "lte", "prefix", "contains", "like")
RANGE_OPERATORS = ("gt", "gte", "lt", "lte")

_ORDERED = frozenset({"int", "float", "datetime", "str"})
_EQUAL = frozenset({"str", "int", "float", "bool", "datetime", "enum", "ref"})

#: the field kinds each operator applies to
OPERATORS_FOR: dict[str, frozenset[str]] = {
    "eq": _EQUAL,
    "in": _EQUAL - {"bool"},
    **dict.fromkeys(RANGE_OPERATORS, _ORDERED),
    "prefix": frozenset({"str"}),
    "contains": frozenset({"str"}),
    "like": frozenset({"str"}),
}

#: the arguments `page:` adds, by style
PAGE_ARGS = {
    "cursor": ("limit", "starting_after", "ending_before"),
    "offset": ("limit", "offset"),
}
RESERVED_ARGS = ("sort", "limit", "starting_after", "ending_before", "offset")


def arg_name(field: str, op: str) -> str:
    """The tool argument of filter operator `op` on `field`: `status`, `amount_gte`."""
    return field if op == "eq" else f"{field}_{op}"


def sort_key(entry: str) -> tuple[str, bool]:
    """(field, descending) of a `sort:` entry: "-amount" -> ("amount", True)."""
    return (entry[1:], True) if entry.startswith("-") else (entry, False)


def list_sorted_fields(op: OperationSpec) -> tuple[str, ...]:
    """The fields `op` reads in value order: its sort fields and its range-filtered ones,
    and `id` for pages in id order (an `id` entry's value is its id's `id_order` key)."""
    out = [sort_key(e)[0] for e in op.sort]
    out += [f for f, ops in op.where if any(o in RANGE_OPERATORS for o in ops)]
    if op.page is not None and not op.sort:
        out.append("id")  # pages in id order: cursors find their place by bisection
    return tuple(dict.fromkeys(out))


def is_rich(op: OperationSpec) -> bool:
    """A list operation that uses more than equality filters (its runner is `_calls/_lists`)."""
    return bool(op.sort or op.page) or any(ops != ("eq",) for _, ops in op.where)


#: how a filter argument reads in the tool schema
OP_TEXT = {
    "in": "only {plural} whose {name} is one of these",
    "gt": "only {plural} whose {name} is greater than this",
    "gte": "only {plural} whose {name} is at least this",
    "lt": "only {plural} whose {name} is less than this",
    "lte": "only {plural} whose {name} is at most this",
    "prefix": "only {plural} whose {name} starts with this text",
    "contains": "only {plural} whose {name} contains this text",
    "like": "only {plural} whose {name} matches this SQL LIKE pattern (% any text, _ one "
    "character; any case)",
}


def list_description(op: OperationSpec, r: RecordSpec) -> str:
    """The default description of a list tool with operators, sorting or pages."""
    plural = r.plural.replace("_", " ")
    text = f"List {plural}"
    if op.where:
        text += ", optionally filtered by " + ", ".join(f for f, _ in op.where)
    text += f", in {op.sort[0]} order" if op.sort else ", in id order"
    text += "."
    if op.page is not None and op.page.style == "cursor":
        text += (
            " Returns {data, has_more, next_cursor}: pass next_cursor as starting_after "
            "for the next page while has_more is true."
        )
    elif op.page is not None:
        text += (
            " Returns {data, has_more, total}: pass offset = offset + len(data) for the "
            "next page while has_more is true."
        )
    return text
