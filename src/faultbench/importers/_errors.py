"""An operation's declared error responses as the JSON Schemas `http: {errors:}` holds.

`serve --rest` answers a failed call with a body the schema for its status accepts, so an
SDK reads the error as it reads the real API's. Each 4xx/5xx response (`404`, `4XX`) and
`default` with a JSON body is kept, its `$ref`s inlined into plain JSON Schema: OpenAPI
3.0's `nullable: true` becomes a `null` type, descriptions and vendor keys go. What the
server never writes is cut short so the world file stays readable: an optional property
whose schema is another component (Stripe's error names the `payment_intent` it concerns)
(or any schema it refers to) keeps only its type, and a cycle or a nesting past a few levels is any value. A body the
trimmed schema accepts is accepted by the document's (the cuts only loosen).
"""

from __future__ import annotations

import re
from typing import Any

from ._document import Document, _mapping, _preferred

_KEEP = (
    "type", "properties", "required", "items", "enum", "const", "allOf", "anyOf", "oneOf",
    "additionalProperties", "minItems", "maxItems", "minLength", "maxLength", "minimum",
    "maximum", "pattern", "default",
)  # fmt: skip
_MESSAGE = {"message", "msg", "detail", "errormessage", "errordescription"}
_MAX_DEPTH = 8


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def error_schemas(doc: Document, op: dict[str, Any]) -> dict[str, tuple[str | None, Any]]:
    """{status key: (component name or None, inlined schema)} of `op`'s error responses,
    in the document's order (`404`, `4XX`, `default`)."""
    out: dict[str, tuple[str | None, Any]] = {}
    for status, resp in _mapping(op.get("responses")).items():
        key = str(status)
        if key.lower() == "default":
            key = "default"
        elif not re.fullmatch(r"[45](\d\d|XX)", key.upper()):
            continue
        body, _ = doc.deref(resp)
        content = _mapping(body.get("content"))
        media = next((m for m in _preferred(content) if "json" in m), None)
        if media is None:
            continue
        node = (content[media] or {}).get("schema")
        if node is None:
            continue
        _schema, name = doc.deref(node)
        out[key.upper() if key != "default" else key] = (name, _Inliner(doc).inline(node, 0, ()))
    return out


class _Inliner:
    def __init__(self, doc: Document) -> None:
        self.doc = doc

    def inline(self, node: Any, depth: int, stack: tuple[str, ...]) -> Any:
        schema, name = self.doc.deref(node)
        if depth > _MAX_DEPTH or (name is not None and name in stack):
            return _stub(schema)
        inner = (*stack, name) if name is not None else stack
        out: dict[str, Any] = {}
        for k in _KEEP:
            if k not in schema:
                continue
            v = schema[k]
            if k == "properties" and isinstance(v, dict):
                required = set(map(str, schema.get("required") or []))
                out[k] = {
                    str(p): self.prop(sub, str(p) in required, depth + 1, inner)
                    for p, sub in v.items()
                }
            elif k in ("allOf", "anyOf", "oneOf") and isinstance(v, list):
                out[k] = [self.inline(sub, depth + 1, inner) for sub in v]
            elif k in ("items", "additionalProperties") and isinstance(v, dict):
                out[k] = self.inline(v, depth + 1, inner)
            else:
                out[k] = v
        if schema.get("nullable") is True:
            _nullable(out)
        return out

    def prop(self, node: Any, required: bool, depth: int, stack: tuple[str, ...]) -> Any:
        """A property: inlined when required or holding a message, else only its type if
        it is another component (or an array of them)."""
        schema, _name = self.doc.deref(node)
        if not required and _refers(node) and not _says(schema):
            stub = _stub(schema)
            if isinstance(schema.get("items"), dict):
                stub["items"] = _stub(self.doc.deref(schema["items"])[0])
            return stub
        return self.inline(node, depth, stack)


def _refers(node: Any, depth: int = 0) -> bool:
    """Whether `node` names another schema (`$ref`) at its top or a few levels in."""
    if isinstance(node, dict):
        if "$ref" in node:
            return True
        return depth < 4 and any(_refers(v, depth + 1) for v in node.values())
    if isinstance(node, list):
        return depth < 4 and any(_refers(v, depth + 1) for v in node)
    return False


def _says(schema: dict[str, Any]) -> bool:
    props = schema.get("properties")
    return isinstance(props, dict) and any(_norm(str(k)) in _MESSAGE for k in props)


def _stub(schema: dict[str, Any]) -> dict[str, Any]:
    """Any value of the schema's type (a cut: looser than the schema it stands for)."""
    out: dict[str, Any] = {}
    if isinstance(schema.get("type"), str | list):
        out["type"] = schema["type"]
    if schema.get("nullable") is True:
        _nullable(out)
    return out


def _nullable(out: dict[str, Any]) -> None:
    t = out.get("type")
    if isinstance(t, str) and t != "null":
        out["type"] = [t, "null"]
    elif isinstance(t, list) and "null" not in t:
        out["type"] = [*t, "null"]
    if isinstance(out.get("enum"), list) and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
