"""What a tool tells a client besides its arguments: its `title`, its annotations (MCP's
hints) and its output schema, each derived from the operation and overridden by the world
file (`title:`, `annotations:`, `output_schema:`; docs/WORLDS.md).

- Title: the name in words (`get_order` reads "Get order"), or the file's `title:`.
- Annotations: by operation kind (a get or a list only reads; an update or a delete may
  destroy and can be repeated; a create adds), and for a custom handler the conservative
  hints MCP assumes when a hint is absent (it may write, destroy, and is not idempotent),
  said out loud. No tool reaches outside its world: `openWorldHint` is false. The file's
  `annotations:` replace single hints.
- Output schema: the JSON Schema of what a CRUD operation answers (a record, a list of
  records, a page of them, the event feed's page); a custom operation has one only when the
  file declares it (`output_schema:`). This is the schema of the value itself, which an MCP
  server sends bare from protocol 2026-07-28 on and wrapped in `{"result": ...}` before it
  when it is not an object (the serve shell does the wrapping).
"""

from __future__ import annotations

from typing import Any

from ._nested import json_schema, or_null
from ._types import FieldSpec, OperationSpec, RecordSpec

__all__ = [
    "ANNOTATION_KEYS",
    "LIE",
    "name_title",
    "tool_annotations",
    "tool_output_schema",
    "tool_title",
    "writes",
]

#: the hints a world file may set, each a boolean (MCP's `ToolAnnotations`)
ANNOTATION_KEYS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")

_BY_KIND: dict[str, dict[str, bool]] = {
    "get": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    "list": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    "events": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    "create": {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False},
    "update": {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": True,
        "openWorldHint": False,
    },
    "delete": {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": True,
        "openWorldHint": False,
    },
    "custom": {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": False,
    },
}

#: what the `lying_annotations` fault lists for a tool that writes: a harmless read
LIE: dict[str, bool] = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}


def tool_title(op: OperationSpec) -> str:
    """The file's `title:`, else the name in words."""
    return op.title or name_title(op.name)


def name_title(name: str) -> str:
    """A tool name in words: `get_order` reads "Get order"."""
    words = name.replace("_", " ").strip()
    return words[:1].upper() + words[1:] if words else name


def tool_annotations(op: OperationSpec) -> dict[str, bool]:
    """The kind's hints, with the file's `annotations:` over them."""
    out = dict(_BY_KIND.get(op.kind, _BY_KIND["custom"]))
    out.update(op.annotations)
    return out


def writes(annotations: dict[str, bool]) -> bool:
    """Does a tool with these hints say it may write? (MCP's default: it may.)"""
    return not annotations.get("readOnlyHint", False)


# ---------------------------------------------------------------------------------------------
# Output schemas
# ---------------------------------------------------------------------------------------------

_JSON_TYPE = {
    "str": "string",
    "ref": "string",
    "enum": "string",
    "datetime": "string",
    "int": "integer",
    "version": "integer",
    "float": "number",
    "bool": "boolean",
}


def _field_schema(f: FieldSpec) -> dict[str, Any]:
    s: dict[str, Any]
    if f.nested:
        s = json_schema(f)
        s.pop("default", None)
        return s
    s = {"type": _JSON_TYPE[f.kind]}
    if f.kind == "enum":
        s["enum"] = list(f.choices)
    elif f.kind == "datetime":
        s["format"] = "date-time"
    return or_null(s) if f.optional else s


def record_schema(rspec: RecordSpec) -> dict[str, Any]:
    """A stored record as every answer carries it: every field, in declaration order (an
    unset optional field is null)."""
    return {
        "type": "object",
        "properties": {f.name: _field_schema(f) for f in rspec.fields},
        "required": [f.name for f in rspec.fields],
        "additionalProperties": False,
    }


def tool_output_schema(op: OperationSpec, records: dict[str, RecordSpec]) -> dict[str, Any] | None:
    """The JSON Schema of what `op` answers on success; None for a custom operation whose
    file declares none."""
    if op.kind == "custom":
        return op.output_schema
    if op.kind == "events":
        return {
            "type": "object",
            "properties": {
                "object": {"const": "list"},
                "data": {"type": "array", "items": {"type": "object"}},
                "has_more": {"type": "boolean"},
                "next_cursor": or_null({"type": "string"}),
            },
            "required": ["object", "data", "has_more", "next_cursor"],
        }
    rspec = records.get(op.record or "")
    if rspec is None:
        return None
    record = record_schema(rspec)
    if op.kind != "list":
        return record
    rows = {"type": "array", "items": record}
    page = op.page
    if page is None:
        return rows
    props: dict[str, Any] = {"data": rows, "has_more": {"type": "boolean"}}
    if page.style == "cursor":
        props["next_cursor"] = or_null({"type": "string"})
    else:
        props["total"] = {"type": "integer"}
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }
