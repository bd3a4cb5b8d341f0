"""The loader's pass for what a tool tells a client besides its arguments: an operation's
`title:`, `annotations:` (MCP's hints: `readOnlyHint`, `destructiveHint`, `idempotentHint`,
`openWorldHint`, each true or false) and, for a custom operation, `output_schema:` (the
JSON Schema of its handler's answer). See `_spec/_tooldoc.py` for what each overrides.
"""

from __future__ import annotations

from typing import Any

from ..._spec import ANNOTATION_KEYS
from ..._text import did_you_mean, short_repr
from .._base import _LoaderBase

TOOLDOC_KEYS = ("title", "annotations", "output_schema")

_JSON_TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")


class _ToolDocLoader(_LoaderBase):
    def op_title(self, tool: str, decl: dict[Any, Any]) -> str | None:
        title = self.text(decl, "title", f"title of '{tool}'")
        if title is not None and not title.strip():
            self.at_value(
                decl, "title", f"title of '{tool}' is empty; expected a few words, e.g. "
                "title: Look up an order, or no title: (the name in words)",
            )  # fmt: skip
            return None
        return title

    def op_annotations(self, tool: str, decl: dict[Any, Any]) -> dict[str, bool]:
        if "annotations" not in decl:
            return {}
        value = decl["annotations"]
        example = "annotations: {readOnlyHint: true, idempotentHint: true}"
        if not isinstance(value, dict):
            self.at_value(
                decl, "annotations",
                f"annotations of '{tool}' must be a mapping of hints; expected e.g. '{example}'",
            )  # fmt: skip
            return {}
        out: dict[str, bool] = {}
        for key, hint in value.items():
            if key not in ANNOTATION_KEYS:
                self.at_key(
                    value, key,
                    f"unknown annotation {short_repr(key)} of '{tool}'; expected one of "
                    f"{', '.join(ANNOTATION_KEYS)}{did_you_mean(str(key), ANNOTATION_KEYS)}",
                )  # fmt: skip
            elif not isinstance(hint, bool):
                self.at_value(
                    value, key,
                    f"annotation {key} of '{tool}' must be true or false, not "
                    f"{short_repr(hint)}; write {key}: true or {key}: false",
                )  # fmt: skip
            else:
                out[key] = hint
        return out

    def op_output_schema(self, tool: str, kind: str, decl: dict[Any, Any]) -> dict[str, Any] | None:
        """`output_schema:`, a custom tool's result as a JSON Schema (an imported MCP tool's
        `outputSchema`), as plain JSON data."""
        if "output_schema" not in decl:
            return None
        value = decl["output_schema"]
        if kind != "custom":
            self.at_key(
                decl, "output_schema",
                f"'output_schema' is only for kind: custom (this operation is kind: {kind}: "
                "its output schema is the record's); remove it",
            )  # fmt: skip
            return None
        jtype = value.get("type") if isinstance(value, dict) else None
        types = jtype if isinstance(jtype, list) else [jtype]
        if not isinstance(value, dict) or not all(t in _JSON_TYPES for t in types):
            self.at_value(
                decl, "output_schema",
                f"output_schema of '{tool}' must be a JSON Schema with a type; expected e.g. "
                "{type: object, properties: {refund_id: {type: string}}, "
                "required: [refund_id]}",
            )  # fmt: skip
            return None
        plain: dict[str, Any] = plain_json(value)
        return plain


def plain_json(value: Any) -> Any:
    """YAML data as plain JSON types (what a tool listing sends)."""
    if isinstance(value, dict):
        return {str(k): plain_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_json(v) for v in value]
    return value
