"""The records pass, for nested fields: `list[T]`, `{object: {...}}`, `{list: ...}`.

A nested declaration is read recursively into a `FieldSpec` of kind "list" (its `item`) or
"object" (its `fields`); scalars inside go through the flat field reader (`_records.py`), so
`str?`, enums, refs and `{type:, default:}` mean the same at every depth. Depth is bounded
by the YAML reader's nesting limit. Defaults are checked with `_nested.conform`, whose JSON
path names the wrong place; refs inside are resolved with the flat ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec

from .._errors import Location
from .._spec import FieldSpec, NestedError, conform
from .._text import short_repr
from ._base import _LoaderBase

NESTED_KEYS = ("object", "list", "optional", "default", "description")

_LIST = re.compile(r"\s*list\s*\[(.*)\]\s*(\??)\s*", re.S)


def is_nested(decl: Any) -> bool:
    """Whether a field declaration is a list or an object (else the flat reader takes it)."""
    if isinstance(decl, str):
        return _LIST.fullmatch(decl) is not None
    if isinstance(decl, dict):
        return "object" in decl or "list" in decl or is_nested(decl.get("type"))
    return False


class _NestedLoader(_LoaderBase):
    # `field` is the flat reader of `_RecordsLoader`, which calls back here for nested ones.
    def field(self, rec: str, body: dict[Any, Any], name: Any, decl: Any) -> FieldSpec | None:
        raise NotImplementedError

    def nested_field(
        self, owner: str, body: dict[Any, Any], name: str, decl: Any
    ) -> FieldSpec | None:
        """The field `name` of `owner` (a record, or a path like `invoice.lines`), declared
        as a list or an object in `body[name]`."""
        where = f"{owner}.{name}"
        loc = Location(self.doc.path, *self.doc.value_at(body, name))
        if isinstance(decl, str):
            return self._list_of_text(owner, body, name, decl, loc)
        self.unknown_keys(decl, (*NESTED_KEYS, "type"), f"field '{where}'")
        shapes = [k for k in ("object", "list", "type") if k in decl]
        if len(shapes) > 1:
            self.at_key(
                decl, shapes[1],
                f"field '{where}' declares both {shapes[0]}: and {shapes[1]}:; expected one "
                "of them",
            )  # fmt: skip
            return None
        field: FieldSpec | None
        if "type" in decl:
            raw = decl["type"]
            field = self._list_of_text(owner, decl, "type", raw, loc)
            if field is not None:
                field = msgspec.structs.replace(field, name=name)
        elif "object" in decl:
            field = self._object(where, decl, name, loc)
        else:
            field = self._list(where, decl, name, loc)
        if field is None:
            return None
        if "optional" in decl:
            if not isinstance(decl["optional"], bool):
                self.at_value(decl, "optional", "optional must be true or false")
            elif decl["optional"]:
                field = msgspec.structs.replace(field, optional=True)
        if "default" in decl:
            default = decl["default"]
            try:
                value = conform(msgspec.structs.replace(field, optional=True), default, "")
            except NestedError as exc:
                at = f" at {exc.path}" if exc.path else ""
                self.at_value(
                    decl, "default",
                    f"default {short_repr(default)} of field '{where}' does not fit{at}: "
                    f"{exc.message}",
                )  # fmt: skip
                return None
            field = msgspec.structs.replace(
                field, has_default=True, default=value, optional=field.optional or value is None
            )
        return field

    def _list_of_text(
        self, owner: str, body: Any, key: Any, raw: Any, loc: Location
    ) -> FieldSpec | None:
        m = _LIST.fullmatch(raw) if isinstance(raw, str) else None
        if m is None:
            self.at_value(
                body, key,
                f"field '{owner}.{key}' has no list type ({short_repr(raw)}); expected e.g. "
                "list[str], list[ref[order]] or {list: {object: {...}}}",
            )  # fmt: skip
            return None
        inner = m.group(1).strip()
        name = key if isinstance(key, str) else "item"
        probe = {name: inner}
        # The item is read like a field of its own (its messages place it on this line);
        # the probe is kept alive, as positions are found by the id of their container.
        self.doc.place_like(probe, name, body, key)
        self.probes.append(probe)
        item = self.any_field(owner, probe, name, inner)
        if item is None:
            return None
        return FieldSpec(
            name, "list", bool(m.group(2)), raw=raw.strip(), loc=loc, item=item
        )  # fmt: skip

    def _object(
        self, where: str, decl: dict[Any, Any], name: str, loc: Location
    ) -> FieldSpec | None:
        body = decl["object"]
        if not isinstance(body, dict) or not body:
            self.at_value(
                decl, "object",
                f"field '{where}': object must map field names to types; expected e.g. "
                "{object: {city: str, postal_code: str?}}",
            )  # fmt: skip
            return None
        fields = []
        for sub, sub_decl in body.items():
            f = self.any_field(where, body, sub, sub_decl)
            if f is None:
                return None
            fields.append(f)
        return FieldSpec(name, "object", raw="object", loc=loc, fields=tuple(fields))

    def _list(self, where: str, decl: dict[Any, Any], name: str, loc: Location) -> FieldSpec | None:
        inner = decl["list"]
        item = self.any_field(where.rpartition(".")[0], decl, "list", inner)
        if item is None:
            return None
        item = msgspec.structs.replace(item, name=name)
        return FieldSpec(name, "list", raw="list", loc=loc, item=item)

    def any_field(self, owner: str, body: dict[Any, Any], name: Any, decl: Any) -> FieldSpec | None:
        if isinstance(name, str) and is_nested(decl):
            return self.nested_field(owner, body, name, decl)
        return self.field(owner, body, name, decl)

    def resolve_nested(self, f: FieldSpec, resolve: Callable[[FieldSpec], FieldSpec]) -> FieldSpec:
        """`f` with every ref inside resolved by `resolve(ref_field) -> ref_field`."""
        if f.kind == "list" and f.item is not None:
            return msgspec.structs.replace(f, item=self.resolve_nested(f.item, resolve))
        if f.kind == "object":
            return msgspec.structs.replace(
                f, fields=tuple(self.resolve_nested(g, resolve) for g in f.fields)
            )
        return resolve(f)
