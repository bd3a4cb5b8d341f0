"""The arguments of imported operations: a custom handler's parameters, the fields a create
requires (and the defaults of those a server sets), and the principals and scopes the
document's security gives."""

from __future__ import annotations

from typing import Any

from ._document import Document
from ._mapping import Operation, Param, Record, schema_ref
from ._names import identifier
from ._shapes import Decl, FieldTypes

#: headers that carry the request, not an argument (`Idempotency-Key` has its own rule)
_TRANSPORT = {"authorization", "content-type", "accept", "content-length", "idempotency-key"}


def _annotation(doc: Document, node: Any) -> str:
    schema, _ = doc.deref(node)
    from ._shapes import _types, enum_type

    types, nullable = _types(schema)
    kind = types[0] if len(types) == 1 else None
    if kind == "string" and isinstance(schema.get("enum"), list) and enum_type(schema["enum"]):
        values = [v for v in schema["enum"] if isinstance(v, str) and v]
        text = f"Literal[{', '.join(repr(v) for v in dict.fromkeys(values))}]"
    else:
        text = {
            "string": "str",
            "integer": "int",
            "number": "float",
            "boolean": "bool",
            "array": "list",
            "object": "dict",
        }.get(kind or "", "Any")
    return f"{text} | None" if nullable and text != "Any" else text


def custom_params(doc: Document, params: list[dict[str, Any]], op: dict[str, Any]) -> list[Param]:
    out: list[Param] = []
    seen = {"world", "clock"}

    def add(source: str, where: str, node: Any, required: bool, description: Any) -> None:
        name = identifier(source, "arg")
        while name in seen:
            name = f"{name}_{where}"
        seen.add(name)
        text = " ".join(str(description or "").split())
        out.append(Param(name, source, where, _annotation(doc, node), required, text[:300]))

    for p in params:
        if p.get("in") == "header" and str(p["name"]).lower() not in _TRANSPORT:
            add(
                str(p["name"]),
                "header",
                p.get("schema"),
                bool(p.get("required")),
                p.get("description"),
            )
        if p.get("in") in ("path", "query"):
            add(
                str(p["name"]),
                str(p["in"]),
                p.get("schema"),
                bool(p.get("required")) or p.get("in") == "path",
                p.get("description"),
            )
    media, body = doc.body(op)
    if media is not None:
        props, required = FieldTypes(doc, {}).properties(body)
        for pname, pnode in props.items():
            sub, _ = doc.deref(pnode)
            add(pname, "body", pnode, pname in required, sub.get("description"))
    return out


def required_by_create(
    doc: Document, records: dict[str, Record], operations: list[Operation], chosen: list[Any]
) -> None:
    """A field the API's create does not require is optional in the world, so the create
    tool takes what the API takes (a field answered but set by the server stays optional);
    one the answer must carry (required, not nullable) gets a default instead, the value
    the server would set: the schema's default, its first enum value, else the smallest."""
    from ._shapes import optional, server_default

    for op, (_path, _method, raw, _item) in zip(operations, chosen):
        if op.kind != "create" or op.record is None:
            continue
        _media, body = doc.body(raw)
        _props, required = FieldTypes(doc, {}).properties(body)
        rec = records[op.record]
        answered, _ = doc.deref(schema_ref(rec.schema_name))
        props, must = FieldTypes(doc, {}).properties(answered)
        fields: dict[str, Decl] = {}
        for k, v in rec.fields.items():
            default = server_default(doc, props.get(k), v) if k in must else None
            if k == "id" or k in required or (isinstance(v, dict) and "default" in v):
                fields[k] = v
            elif default is not None:
                fields[k] = (
                    {**v, "default": default}
                    if isinstance(v, dict)
                    else {"type": v, "default": default}
                )
            else:
                fields[k] = optional(v)
        rec.fields = fields


# ---------------------------------------------------------------------------------------------
# Auth
# ---------------------------------------------------------------------------------------------
# Security schemes as principals; an operation's scopes.


def principals(
    doc: Document, chosen: list[Any], operations: list[Operation]
) -> dict[str, list[str]]:
    comps = doc.data.get("components") or {}
    schemes = comps.get("securitySchemes") if isinstance(comps, dict) else None
    if not isinstance(schemes, dict) or not schemes:
        return {}
    default = doc.data.get("security")
    used: dict[str, list[str]] = {}
    for op, (_p, _m, raw, _i) in zip(operations, chosen):
        alternatives = [a for a in raw.get("security", default) or [] if isinstance(a, dict)]
        scoped = next((a for a in alternatives if any(a.values())), None)
        op.scopes = (
            list(dict.fromkeys(str(s) for ss in scoped.values() for s in ss or []))
            if scoped
            else []
        )
        for alt in alternatives:
            for scheme, scopes in alt.items():
                # a scheme without scopes (an API key) admits the call by itself: its
                # principal holds the scopes the operation asks of the others
                granted = [str(s) for s in scopes or []] if any(alt.values()) else op.scopes
                used.setdefault(str(scheme), []).extend(granted)
    principals: dict[str, list[str]] = {}
    order = list(schemes)
    for scheme in sorted(used, key=lambda s: (order.index(s) if s in order else len(order), s)):
        body, _ = doc.deref(schemes.get(scheme, {}))
        scopes = list(used[scheme])
        for flow in (body.get("flows") or {}).values():
            if isinstance(flow, dict):
                scopes.extend(str(s) for s in (flow.get("scopes") or {}))
        principals[identifier(scheme, "principal")] = list(dict.fromkeys(scopes))
    return principals
