"""JSON Schemas of an API document as world-file field types, and schema-valid answers.

`FieldTypes.declare` turns one property's schema into what the world file writes for it:
`int`, `datetime?`, `enum[a, b]`, `ref[customer]`, `list[str]`, `{object: {...}}`,
`{list: {object: {...}}}`; or None, with the reason noted, for what a field cannot hold
(free-form maps, polymorphism that is not a nullable or id-or-object choice, lists of lists,
cycles and nesting past the depth limit). `answer` builds the smallest value a schema
accepts, for the generated handlers of custom operations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ._document import Document
from ._names import identifier

Decl = str | dict[str, Any]

_SAFE_ENUM = re.compile(r"[^,\[\]'\"\n\r#{}]+")
_SCALARS = {"integer": "int", "number": "float", "boolean": "bool", "string": "str"}


def _types(schema: dict[str, Any]) -> tuple[list[str], bool]:
    """(the non-null types a schema declares or implies, whether null is allowed)."""
    raw = schema.get("type")
    types = [raw] if isinstance(raw, str) else list(raw) if isinstance(raw, list) else []
    nullable = schema.get("nullable") is True or "null" in types
    types = [t for t in types if t != "null"]
    if not types:
        if "properties" in schema or "additionalProperties" in schema:
            types = ["object"]
        elif "items" in schema:
            types = ["array"]
        elif isinstance(schema.get("enum"), list):
            values = [v for v in schema["enum"] if v is not None]
            nullable = nullable or None in schema["enum"]
            if values and all(isinstance(v, str) for v in values):
                types = ["string"]
    return types, nullable


def _is_blank(schema: dict[str, Any]) -> bool:
    """Stripe's `{enum: ['']}` variant (send '' to unset) and a bare `type: null`."""
    types, _ = _types(schema)
    return schema.get("enum") == [""] or (not types and schema.get("type") == "null")


def enum_type(values: list[Any]) -> str | None:
    """`enum[a, b]` for values the world-file reader reads back as written, else None."""
    texts = [v for v in values if isinstance(v, str) and v != ""]
    if not texts or len(texts) != len([v for v in values if v not in ("", None)]):
        return None
    texts = list(dict.fromkeys(texts))
    if any(not _SAFE_ENUM.fullmatch(t) or t != t.strip() for t in texts):
        return None
    return f"enum[{', '.join(texts)}]"


def optional(decl: Decl) -> Decl:
    if isinstance(decl, str):
        return decl if decl.endswith("?") else f"{decl}?"
    if "type" in decl:
        return {**decl, "type": optional(decl["type"])}
    return {**decl, "optional": True}


@dataclass
class FieldTypes:
    """Field declarations for the schemas of one document. `records` maps the component
    schemas that are records to their record names: a property holding one becomes a ref."""

    doc: Document
    records: dict[str, str]
    max_depth: int = 4
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, why)

    def fields(
        self, schema: dict[str, Any], where: str, *, depth: int, stack: tuple[str, ...]
    ) -> dict[str, Decl]:
        """The fields of an object schema (allOf and object variants merged)."""
        props, required = self.properties(schema)
        out: dict[str, Decl] = {}
        for pname, pnode in props.items():
            name = identifier(pname)
            if name in out:
                self.skipped.append((f"{where}.{pname}", f"its name as a field, {name}, is taken"))
                continue
            decl = self.declare(pnode, f"{where}.{name}", depth=depth, stack=stack)
            if decl is None:
                continue
            prop, _ = self.doc.deref(pnode)
            if pname not in required or prop.get("readOnly") is True:
                decl = optional(decl)
            single = re.fullmatch(r"enum\[([^,]*)\]\??", decl) if isinstance(decl, str) else None
            if single:  # a constant (Stripe's `object: charge`): a default the agent may omit
                decl = {"type": decl, "default": single.group(1)}
            out[name] = decl
        return out

    def properties(self, schema: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
        """(properties, required names) with allOf merged and oneOf/anyOf objects joined
        (their properties optional: any one variant may be the one sent)."""
        props: dict[str, Any] = {}
        required: set[str] = set()
        for part in schema.get("allOf") or []:
            sub, _ = self.doc.deref(part)
            p, r = self.properties(sub)
            props.update(p)
            required |= r
        for key in ("oneOf", "anyOf"):
            for part in schema.get(key) or []:
                sub, _ = self.doc.deref(part)
                if "object" in _types(sub)[0]:
                    p, _r = self.properties(sub)
                    for k, v in p.items():
                        props.setdefault(k, v)
        own = schema.get("properties")
        if isinstance(own, dict):
            props.update(own)
        req = schema.get("required")
        if isinstance(req, list):
            required |= {str(r) for r in req}
        return props, required

    def declare(self, node: Any, where: str, *, depth: int, stack: tuple[str, ...]) -> Decl | None:
        schema, name = self.doc.deref(node)
        # a record's schema itself is the object embedded (FAB's role holds its
        # `actions`, not their ids); an id-or-object choice is a ref (`_choice`)
        if name is not None and name in stack:
            return self._skip(where, f"refers back to {name} (a cycle)")
        if name is not None:
            stack = (*stack, name)
        decl, nullable = self._declare(schema, where, depth=depth, stack=stack)
        return optional(decl) if decl is not None and nullable else decl

    def _declare(
        self, schema: dict[str, Any], where: str, *, depth: int, stack: tuple[str, ...]
    ) -> tuple[Decl | None, bool]:
        variants = [*(schema.get("oneOf") or []), *(schema.get("anyOf") or [])]
        types, nullable = _types(schema)
        if variants and not schema.get("properties"):
            return self._choice(
                variants, schema, where, depth=depth, stack=stack, nullable=nullable
            )
        if schema.get("allOf") and not types:
            types = ["object"]
        if len(types) != 1:
            why = f"its type is one of {', '.join(types)}" if types else "it declares no type"
            return self._skip(where, why), nullable
        kind = types[0]
        if kind == "object":
            props, _ = self.properties(schema)
            if not props:
                return self._skip(where, "a free-form map (no declared properties)"), nullable
            if depth >= self.max_depth:
                return self._skip(where, f"nested deeper than {self.max_depth} levels"), nullable
            inner = self.fields(schema, where, depth=depth + 1, stack=stack)
            if not inner:
                return self._skip(where, "none of its properties can be a field"), nullable
            return {"object": inner}, nullable
        if kind == "array":
            item = self.declare(schema.get("items", {}), f"{where}[]", depth=depth + 1, stack=stack)
            if item is None:
                return None, nullable
            if isinstance(item, str):
                if item.startswith("list["):
                    return self._skip(where, "a list of lists"), nullable
                return f"list[{item}]", nullable
            if "list" in item:
                return self._skip(where, "a list of lists"), nullable
            return {"list": item}, nullable
        if kind == "string" and isinstance(schema.get("enum"), list):
            enum = enum_type(schema["enum"])
            nullable = nullable or "" in schema["enum"] or None in schema["enum"]
            if enum is not None:
                return enum, nullable
        if kind == "string" and schema.get("format") == "date-time":
            return "datetime", nullable
        if kind in _SCALARS:
            return _SCALARS[kind], nullable
        return self._skip(where, f"type {kind!r} has no field type"), nullable

    def _choice(
        self,
        variants: list[Any],
        schema: dict[str, Any],
        where: str,
        *,
        depth: int,
        stack: tuple[str, ...],
        nullable: bool,
    ) -> tuple[Decl | None, bool]:
        """oneOf/anyOf: a nullable wrapper, an id-or-object (a ref), or one scalar type."""
        kept: list[tuple[dict[str, Any], str | None, Any]] = []
        for v in variants:
            sub, name = self.doc.deref(v)
            if _is_blank(sub):
                nullable = True
            else:
                kept.append((sub, name, v))
        for _sub, name, _v in kept:
            if name is not None and name in self.records:
                return f"ref[{self.records[name]}]", nullable
        if len(kept) == 1:
            return self.declare(kept[0][2], where, depth=depth, stack=stack), nullable
        decls = [self._declare(sub, where, depth=depth, stack=stack)[0] for sub, _n, _v in kept]
        plain = {d for d in decls if isinstance(d, str)}
        if len(plain) == 1 and len(decls) == len(kept):
            return plain.pop(), nullable
        objects = [sub for sub, _n, _v in kept if "object" in _types(sub)[0]]
        if decls.count("str") == 1 and len(objects) == len(kept) - 1:
            return "str", nullable  # an id, or the object it names when expanded: the id
        if len(objects) == len(kept):
            return self._merge(kept, where, depth=depth, stack=stack), nullable
        kinds = ", ".join(sorted({str(_types(sub)[0][:1] or ["any"]) for sub, _n, _v in kept}))
        return self._skip(
            where, f"polymorphic (oneOf/anyOf of {len(kept)} shapes: {kinds})"
        ), nullable

    def _merge(
        self,
        kept: list[tuple[dict[str, Any], str | None, Any]],
        where: str,
        *,
        depth: int,
        stack: tuple[str, ...],
    ) -> Decl | None:
        union = {"type": "object", "anyOf": [v for *_, v in kept]}
        if depth >= self.max_depth:
            return self._skip(where, f"nested deeper than {self.max_depth} levels")
        inner = self.fields(union, where, depth=depth + 1, stack=stack)
        return {"object": inner} if inner else self._skip(where, "no field in any variant")

    def _skip(self, where: str, why: str) -> Decl | None:
        """Note why `where` is no field; None, for the caller to return."""
        self.skipped.append((where, why))
        return None


# ---------------------------------------------------------------------------------------------
# Schema-valid answers for generated handlers
# ---------------------------------------------------------------------------------------------

_FORMATS = {
    "date-time": "2025-06-01T00:00:00Z",
    "date": "2025-06-01",
    "time": "00:00:00Z",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "127.0.0.1",
}


def answer(doc: Document, node: Any, depth: int = 0) -> Any:
    """The smallest value `node` accepts: required properties only, the first enum value,
    empty lists, zero or the minimum. Past a depth of 12 an optional value is null."""
    schema, _name = doc.deref(node)
    if "const" in schema:
        return schema["const"]
    if "default" in schema and depth > 0:
        return schema["default"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    variants = schema.get("oneOf") or schema.get("anyOf")
    types, nullable = _types(schema)
    if variants and not types and not schema.get("properties"):
        return answer(doc, variants[0], depth + 1)
    if schema.get("allOf") and not types:
        types = ["object"]
    kind = types[0] if types else None
    if nullable and depth > 12:
        return None
    if kind == "object" or (kind is None and "properties" in schema):
        out: dict[str, Any] = {}
        parts = [schema, *(doc.deref(p)[0] for p in schema.get("allOf") or [])]
        for part in parts:
            props = part.get("properties") or {}
            for req in part.get("required") or []:
                if req in props and req not in out:
                    out[req] = answer(doc, props[req], depth + 1)
                elif req not in out:
                    out[req] = None
        return out
    if kind == "array":
        return [
            answer(doc, schema.get("items", {}), depth + 1)
            for _ in range(int(schema.get("minItems") or 0))
        ]
    if kind == "string":
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS:
            return _FORMATS[fmt]
        return "x" * int(schema.get("minLength") or 0)
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = low if isinstance(low, int | float) and not isinstance(low, bool) else 0
        if isinstance(schema.get("exclusiveMinimum"), int | float) and not isinstance(
            schema.get("exclusiveMinimum"), bool
        ):
            value = schema["exclusiveMinimum"] + 1
        elif schema.get("exclusiveMinimum") is True:
            value += 1
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    return None


def null_paths(doc: Document, node: Any, fields: dict[str, Decl], prefix: str = "") -> list[str]:
    """The paths (`a`, `a.b`, `a[].b`) of a record's properties that the schema requires and
    lets be null: answered as null when unset under `serve --rest`, where every other unset
    property is left out (`http: {nulls:}`)."""
    schema, _ = doc.deref(node)
    props, required = FieldTypes(doc, {}).properties(schema)
    out: list[str] = []
    for name, decl in fields.items():
        if name not in props:
            continue
        sub, _ = doc.deref(props[name])
        if name in required and _nullable(doc, sub):
            out.append(prefix + name)
        if not isinstance(decl, dict):
            continue
        inner = decl.get("list") if isinstance(decl.get("list"), dict) else None
        if isinstance(decl.get("object"), dict):
            out += null_paths(doc, sub, decl["object"], f"{prefix}{name}.")
        elif inner is not None and isinstance(inner.get("object"), dict):
            items = sub.get("items") or {}
            out += null_paths(doc, items, inner["object"], f"{prefix}{name}[].")
    return out


def _nullable(doc: Document, schema: dict[str, Any]) -> bool:
    if _types(schema)[1]:
        return True
    variants = [*(schema.get("anyOf") or []), *(schema.get("oneOf") or [])]
    return any(_types(doc.deref(v)[0]) == ([], True) for v in variants)


def server_default(doc: Document, node: Any, decl: Decl) -> Any:
    """The value a server would give a required, non-nullable property a create left out
    (the schema's default, its first enum value, an empty list, a date-time or other
    format's example, else the smallest), or None (an object, nullable, a reference to
    another record, or text whose pattern no smallest value is sure to match)."""
    if isinstance(decl, str):
        if decl.endswith("?"):
            return None
    elif "list" not in decl or decl.get("optional"):
        return None
    if node is None:
        return None
    schema, _ = doc.deref(node)
    if _nullable(doc, schema):
        return None
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    if not isinstance(decl, str) or decl.startswith("list["):
        return [] if not schema.get("minItems") else None  # `created_dagruns`: none yet
    if decl.startswith("enum["):
        values = [v for v in schema.get("enum") or [] if isinstance(v, str) and v]
        return values[0] if values else None
    if decl in ("str", "datetime") and schema.get("format") in _FORMATS:
        return _FORMATS[schema["format"]]  # a server-set `created_at`: the clock's start
    if decl == "str" and ("format" in schema or "pattern" in schema):
        return None  # no smallest text is sure to match (a number's format, unix-time, is)
    minimum = schema.get("minimum", 0)
    smallest: dict[str, Any] = {
        "str": "x" * int(schema.get("minLength", 0)),
        "int": int(minimum) if isinstance(minimum, int | float) else 0,
        "float": float(minimum) if isinstance(minimum, int | float) else 0.0,
        "bool": False,
    }
    return smallest.get(decl)
