"""The loader's first pass: services, their records and fields, refs and `world.<name>`.

Records come first because everything after names them: operations (`record: order`), seed
rows, ref targets and fault keys. A ref is resolved only once every record is known, so refs
may point forward and across services; the accessors (`world.order`, `world.orders`) are
checked against each other and against the names `World` itself uses.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

import msgspec

from .._errors import Location
from .._spec import (
    TYPE_HELP,
    WORLD_ATTRIBUTES,
    FieldSpec,
    RecordSpec,
    _coerce,
    _expected,
    _parse_type,
)
from .._text import did_you_mean, one_of, plural, short_repr
from ._nested import _NestedLoader, is_nested

SERVICE_KEYS = ("records", "seed", "operations", "description")
FIELD_KEYS = ("type", "default", "optional")

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SERVICE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


class _RecordsLoader(_NestedLoader):
    def service_records(self, services: dict[Any, Any], svc: Any, body: Any) -> None:
        body = self.named_entry(
            services, svc, _SERVICE,
            f"invalid service name {short_repr(svc)}; expected letters, digits, '_' or '-' "
            "(no dots: fault keys use service.operation)",
            f"service '{svc}' must be a mapping; expected records:, operations: and optionally "
            "seed:",
        )  # fmt: skip
        if body is None:
            return
        self.unknown_keys(body, SERVICE_KEYS, f"service '{svc}'")
        info = self.services[svc] = {
            "body": body,
            "loc": self.loc(services, svc),
            "records": [],
            "operations": [],
            "description": self.text(body, "description", "description"),
        }
        if "records" not in body:
            return
        records = self.mapping(body, "records", "records", "records: {order: {status: str}}") or {}
        for rec, fields in records.items():
            spec = self.record(svc, records, rec, fields)
            if spec is not None:
                self.records[rec] = spec
                self.record_at[rec] = (records, rec)
                info["records"].append(rec)

    def record(self, svc: str, records: dict[Any, Any], rec: Any, body: Any) -> RecordSpec | None:
        if not _IDENT.fullmatch(rec) or rec.startswith("_"):
            self.at_key(
                records, rec,
                f"invalid record name {short_repr(rec)}; expected a Python identifier such as "
                "'order' or 'line_item' (it becomes world.<name>)",
            )  # fmt: skip
            return None
        if keyword.iskeyword(rec):
            self.at_key(
                records, rec,
                f"record name '{rec}' is a Python keyword, so world.{rec} would not parse; "
                f"expected another name, e.g. '{rec}_item'",
            )  # fmt: skip
            return None
        if rec in self.records:
            other = self.records[rec]
            self.at_key(
                records, rec,
                f"record '{rec}' is already defined in service '{other.service}' at "
                f"{self.where(*self.record_at[rec])}; expected record names unique across "
                "the world; rename one",
            )  # fmt: skip
            return None
        if body is None:
            body = {}
        if not isinstance(body, dict):
            self.at_value(
                records, rec,
                f"record '{rec}' must map field names to types; expected e.g. "
                "'{status: enum[placed, delivered], total: float}'",
            )  # fmt: skip
            return None
        fields: list[FieldSpec] = []
        id_field = FieldSpec("id", "str", raw="str", loc=self.loc(records, rec))
        for name, decl in body.items():
            field = self.field(rec, body, name, decl)
            if field is None:
                # reported where it is declared; what names it later (a seed row's value)
                # is its consequence, not a second mistake
                self.unreadable.setdefault(rec, set()).add(str(name))
                continue
            if name == "id":
                if field.raw.strip() != "str" or field.has_default:
                    self.at_value(
                        body, name,
                        f"the id of '{rec}' is always text, not {short_repr(field.raw)}; expected "
                        "'id: str' or no id line at all",
                    )  # fmt: skip
                id_field = field
                continue
            fields.append(field)
        return RecordSpec(rec, svc, plural(rec), (id_field, *fields), loc=self.loc(records, rec))

    def field(self, rec: str, body: dict[Any, Any], name: Any, decl: Any) -> FieldSpec | None:
        if not _IDENT.fullmatch(name):
            self.at_key(
                body, name,
                f"invalid field name {short_repr(name)} in record {short_repr(rec)}; expected a Python "
                "identifier such as 'status' or 'created_at'",
            )  # fmt: skip
            return None
        if is_nested(decl):
            return self.nested_field(rec, body, name, decl)
        where: tuple[Any, Any] = (body, name)
        options: dict[str, Any] = {}
        if isinstance(decl, dict):
            self.unknown_keys(decl, FIELD_KEYS, f"field '{rec}.{name}'")
            if "type" not in decl:
                self.at_value(
                    body, name,
                    f"field '{rec}.{name}' needs a type; expected e.g. "
                    "'{type: str, default: ...}'",
                )  # fmt: skip
                return None
            options, raw, where = decl, decl["type"], (decl, "type")
        else:
            raw = decl
        if not isinstance(raw, str):
            self.at_value(
                *where,
                f"field '{rec}.{name}' has no type ({short_repr(raw)}); {TYPE_HELP}",
            )  # fmt: skip
            return None
        try:
            kind, choices, ref, optional = _parse_type(raw)
        except ValueError as exc:
            self.at_value(*where, str(exc))
            return None
        if "optional" in options:
            if not isinstance(options["optional"], bool):
                self.at_value(options, "optional", "optional must be true or false")
            optional = optional or options["optional"] is True
        field = FieldSpec(
            name, kind, optional, choices=choices, ref=ref, raw=raw,  # type: ignore[arg-type]  # a FieldKind: _parse_type returns only those
            loc=Location(self.doc.path, *self.doc.value_at(*where)),
        )  # fmt: skip
        if "default" in options:
            default = options["default"]
            probe = msgspec.structs.replace(field, optional=True)
            ok, value = _coerce(probe, default)
            if not ok:
                self.at_value(
                    options, "default",
                    f"default {short_repr(default)} of field '{rec}.{name}' is not of type {raw}; "
                    f"expected {_expected(field)}{self.enum_hint(field, default)}",
                )  # fmt: skip
                return None
            field = msgspec.structs.replace(
                field, has_default=True, default=value, optional=optional or value is None
            )
        return field

    def resolve_refs(self) -> None:
        qualified = {f"{r.service}.{r.name}": r.name for r in self.records.values()}

        def resolve(f: FieldSpec) -> FieldSpec:
            if f.kind == "ref" and f.ref is not None:
                target = qualified.get(f.ref) or (f.ref if f.ref in self.records else None)
                svc, dot, name = f.ref.rpartition(".")
                if dot and f.ref not in qualified and name in self.records:
                    owner = self.records[name].service
                    self.doc.problem(
                        self.pos(f.loc),
                        f"'{f.raw}': record '{name}' belongs to service '{owner}', not "
                        f"'{svc}'; expected ref[{owner}.{name}]",
                    )
                    target = name
                elif target is None:
                    hint = did_you_mean(f.ref, [*qualified, *self.records])
                    self.doc.problem(
                        self.pos(f.loc),
                        f"'{f.raw}' refers to a record that does not exist; expected one "
                        f"of {one_of(qualified)}{hint}",
                    )
                f = msgspec.structs.replace(f, ref=target)
            return f

        for rec, spec in list(self.records.items()):
            fields = tuple(self.resolve_nested(f, resolve) for f in spec.fields)
            self.records[rec] = msgspec.structs.replace(spec, fields=fields)

    def accessors(self) -> dict[str, str]:
        accessors: dict[str, str] = {}
        for rec, spec in self.records.items():
            names = list(dict.fromkeys((rec, spec.plural)))
            reserved = [n for n in names if n in WORLD_ATTRIBUTES]
            taken = [n for n in names if n in accessors and n not in reserved]
            if reserved:
                self.at_key(
                    *self.record_at[rec],
                    f"record '{rec}' would be reachable as "
                    f"{' and '.join(f'world.{n}' for n in reserved)}, which World already "
                    f"uses; expected a record name whose singular and plural are free; rename "
                    f"it, e.g. '{rec}_entry'",
                )  # fmt: skip
            elif taken:
                other = accessors[taken[0]]
                self.at_key(
                    *self.record_at[rec],
                    f"record '{rec}' and record '{other}' "
                    f"({self.where(*self.record_at[other])}) would both be world.{taken[0]}; "
                    "expected records whose names and plurals differ; rename one",
                )  # fmt: skip
            else:
                accessors.update(dict.fromkeys(names, rec))
        return accessors
