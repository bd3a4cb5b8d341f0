"""World files -> `WorldSpec`: strict, and every mistake reported at once.

The loader reads YAML with positions (`_yaml.py`), validates each level against the keys it
knows, and collects problems in the document instead of raising at the first one, so a user
fixes a file in one round: `WorldFileError` lists them all, each as `path:line:col: what is
wrong; expected ...; did you mean '...'?`. The fault block lives in `_faultspec.py`, handler
imports in `_handlers.py`; both are re-exported here.

    load_spec("world.yaml")            -> WorldSpec
    parse_faults(mapping_or_text, spec) -> {key: FaultRule}
    merged_rule(faults, "payments", "issue_refund") -> FaultRule
    parse_duration("2h")                -> 7200.0
    render_faults({key: FaultRule})     -> the `faults:` block parse_faults reads back
"""

from __future__ import annotations

import hashlib
import keyword
import math
import os
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import msgspec

from ._errors import SourceError, WorldFileError
from ._faultspec import (
    _RuleParser,
    check_merged_probabilities,
    merged_rule,
    parse_duration,
    render_faults,
)
from ._handlers import HandlerProblem, handler_description, handler_params, resolve_handler
from ._names import did_you_mean, one_of, plural
from ._schema import INT_MAX, INT_MIN
from ._seed import id_order, plan_ids
from ._spec import (
    DEFAULT_CLOCK_START,
    WORLD_ATTRIBUTES,
    FaultRule,
    FieldSpec,
    Location,
    OperationSpec,
    RecordSpec,
    SeedPlan,
    ServiceSpec,
    WorldSpec,
)
from ._yaml import Document, parse_yaml

__all__ = ["load_spec", "merged_rule", "parse_duration", "parse_faults", "render_faults"]

TOP_KEYS = ("name", "seed", "clock", "description", "services", "faults")
SERVICE_KEYS = ("records", "seed", "operations", "description")
OPERATION_KEYS = ("kind", "record", "filter", "handler", "description")
OPERATION_KINDS = ("get", "list", "create", "update", "delete", "custom")
FIELD_KEYS = ("type", "default", "optional")
SCALAR_KINDS = ("str", "int", "float", "bool", "datetime")
#: seed rows per record; a slip of the keyboard (`count: 10000000000`) must not hang a load
MAX_ROWS = 1_000_000
TYPE_HELP = "expected one of str, int, float, bool, datetime, enum[a, b] or ref[service.record]"

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SERVICE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_TOOL = re.compile(r"[A-Za-z0-9_-]{1,64}")
_BRACKETED = re.compile(r"([A-Za-z_]\w*)\s*\[(.*)\]", re.S)
_REF_TARGET = re.compile(r"(?:([A-Za-z_][\w-]*)\.)?([A-Za-z_]\w*)")


def load_spec(source: str | os.PathLike[str], *, text: str | None = None) -> WorldSpec:
    """Load and validate a world file. With `text`, parse that instead of reading `source`,
    which then only names the file in messages and anchors handler imports.
    Raises WorldFileError listing every problem, or OSError if the file cannot be read."""
    display = os.fspath(source)
    if text is None:
        raw = Path(display).read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WorldFileError(_not_utf8(display, raw, exc)) from None
        path: str | None = os.path.abspath(display)
    else:
        raw = text.encode("utf-8")
        path = None
    doc = parse_yaml(text, display)
    base_dir = Path(os.path.abspath(display)).parent
    stem = "world" if display.startswith("<") else Path(display).stem
    return _WorldLoader(doc, base_dir).build(
        path=path, default_name=stem, digest=hashlib.sha256(raw).hexdigest()
    )


def parse_faults(
    obj: Mapping[str, Any] | str, spec: WorldSpec, *, source: str = "<faults>"
) -> dict[str, FaultRule]:
    """Parse a `faults:` block on its own (YAML text or plain Python values) against the
    services of `spec`, with the same validation as in a world file."""
    doc = parse_yaml(obj, source) if isinstance(obj, str) else Document(obj, source, {})
    block = doc.data
    if isinstance(block, dict) and set(block) == {"faults"}:
        block = block["faults"]
    services = {s.name: s.operations for s in spec.services}
    op_kinds = {op.qualname: op.kind for op in spec.operations.values()}
    parser = _RuleParser(doc, services, op_kinds)
    rules = parser.parse_block(block, {"faults": block}, "faults")
    check_merged_probabilities(doc, rules, services)
    doc.raise_problems()
    return rules


def _not_utf8(path: str, raw: bytes, exc: UnicodeDecodeError) -> SourceError:
    line_start = raw.rfind(b"\n", 0, exc.start) + 1
    line = raw.count(b"\n", 0, exc.start) + 1
    col = len(raw[line_start : exc.start].decode("utf-8", "replace")) + 1
    return SourceError(
        path, line, col,
        f"not UTF-8 text: byte 0x{raw[exc.start]:02x} cannot be decoded; expected a YAML file "
        "encoded as UTF-8; save it as UTF-8 (is this a binary file?)",
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Field types and values
# ---------------------------------------------------------------------------------------------


def _parse_type(raw: str) -> tuple[str, tuple[str, ...], str | None, bool]:
    """(kind, enum choices, ref target as written, optional). Raises ValueError(message)."""
    text = raw.strip()
    optional = text.endswith("?")
    if optional:
        text = text[:-1].rstrip()
    if text in SCALAR_KINDS:
        return text, (), None, optional
    m = _BRACKETED.fullmatch(text)
    if m is None or m.group(1) not in ("enum", "ref"):
        head = m.group(1) if m else text
        hint = did_you_mean(head, (*SCALAR_KINDS, "enum", "ref"))
        if m and hint:
            hint = hint.replace("'?", f"[{m.group(2)}]'?")
        elif head in ("list", "dict", "array", "object", "json"):
            hint = "; records are flat: use a record of its own with a ref, or text"
        raise ValueError(f"unknown field type {raw!r}; {TYPE_HELP}{hint}")
    head, inner = m.group(1), m.group(2)
    if head == "enum":
        members = [part.strip().strip("'\"").strip() for part in inner.split(",")]
        if members == [""]:
            raise ValueError(
                f"empty enum {raw!r}; expected at least one value, e.g. enum[placed, delivered]"
            )
        if "" in members:
            raise ValueError(f"enum {raw!r} has an empty value; expected enum[a, b, c]")
        dupes = sorted({x for x in members if members.count(x) > 1})
        if dupes:
            raise ValueError(f"enum {raw!r} lists {dupes[0]!r} twice; expected each value once")
        return "enum", tuple(members), None, optional
    target = inner.strip()
    if not _REF_TARGET.fullmatch(target):
        raise ValueError(
            f"invalid reference {raw!r}; expected ref[service.record] or ref[record], "
            "e.g. ref[orders.order]"
        )
    return "ref", (), target, optional


_EXPECTED = {
    "str": "text (quote numbers and dates, e.g. '42')",
    "int": "a whole number (64-bit)",
    "float": "a finite number",
    "bool": "true or false",
    "datetime": "a date and time such as 2025-05-01T10:00:00Z",
}


def _coerce(field: FieldSpec, value: Any) -> tuple[bool, Any]:
    """(ok, value in the field's Python type)."""
    if value is None:
        return field.optional, None
    kind = field.kind
    if kind == "str":
        return isinstance(value, str), value
    if kind in ("int", "float", "ref") and isinstance(value, bool):
        return False, value
    if kind == "int":
        # the kernel stores signed 64-bit ints only (an event log must round-trip)
        return isinstance(value, int) and INT_MIN <= value <= INT_MAX, value
    if kind == "float":
        if not isinstance(value, int | float):
            return False, value
        try:
            number = float(value)
        except OverflowError:  # an int beyond any float
            return False, value
        return math.isfinite(number), number
    if kind == "bool":
        return isinstance(value, bool), value
    if kind == "datetime":
        dt = _to_datetime(value)
        return dt is not None, dt
    if kind == "enum":
        text = value if isinstance(value, str) else str(value)
        return text in field.choices, text
    # ref: an id; ids are strings, a bare number is accepted as its text
    if isinstance(value, str | int):
        return True, str(value)
    return False, value


def _expected(field: FieldSpec) -> str:
    if field.kind == "enum":
        return f"one of {one_of(field.choices)}"
    if field.kind == "ref":
        return f"the id of a {field.ref} record"
    text = _EXPECTED[field.kind]
    return text + " or null" if field.optional else text


def _to_datetime(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    else:
        return None
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


# ---------------------------------------------------------------------------------------------
# The world
# ---------------------------------------------------------------------------------------------


class _WorldLoader:
    def __init__(self, doc: Document, base_dir: Path):
        self.doc = doc
        self.base_dir = base_dir
        self.services: dict[str, dict[str, Any]] = {}  # name -> {"body":, "loc":, "records": [...]}
        self.records: dict[str, RecordSpec] = {}
        self.record_at: dict[str, tuple[Any, str]] = {}  # name -> (container, key) in the file
        self.operations: dict[str, OperationSpec] = {}
        self.handlers: dict[str, Any] = {}
        self.tool_at: dict[str, tuple[str, str]] = {}  # tool -> (service, "path:line:col")
        #: tool names as written, valid or not: fault keys naming them are not "unknown"
        self.declared: dict[str, list[str]] = {}
        self.plans: dict[str, dict[str, Any]] = {}  # record -> {"count":, "rows":}
        self.row_where: dict[int, dict] = {}  # id(clean row) -> the row as written

    # -- problems -------------------------------------------------------------------------------

    def at_key(self, container: Any, key: Any, message: str) -> None:
        self.doc.problem(self.doc.key_at(container, key), message)

    def at_value(self, container: Any, key: Any, message: str) -> None:
        self.doc.problem(self.doc.value_at(container, key), message)

    def loc(self, container: Any, key: Any) -> Location:
        line, col = self.doc.key_at(container, key)
        return Location(self.doc.path, line, col)

    def where(self, container: Any, key: Any) -> str:
        line, col = self.doc.key_at(container, key)
        return f"{self.doc.path}:{line}:{col}"

    def unknown_keys(self, body: dict, allowed: tuple[str, ...], what: str) -> None:
        for key in body:
            if key not in allowed:
                expected = (
                    f"'{allowed[0]}'" if len(allowed) == 1
                    else f"one of {one_of(allowed)}{did_you_mean(key, allowed)}"
                )  # fmt: skip
                self.at_key(body, key, f"unknown key '{key}' in {what}; expected {expected}")

    def mapping(self, parent: Any, key: Any, what: str, example: str) -> dict | None:
        value = parent[key]
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.at_value(parent, key, f"{what} must be a mapping; expected e.g. '{example}'")
            return None
        return value

    def text(self, parent: dict, key: str, what: str) -> str | None:
        value = parent.get(key)
        if value is None or isinstance(value, str):
            return value
        self.at_value(parent, key, f"{what} must be text, not {value!r}; quote it")
        return None

    # -- top level ------------------------------------------------------------------------------

    def build(self, *, path: str | None, default_name: str, digest: str) -> WorldSpec:
        doc = self.doc
        top = doc.data
        if not isinstance(top, dict):
            got = (
                "empty" if top is None
                else "a list" if isinstance(top, list)
                else f"the single value {top!r}"
            )  # fmt: skip
            doc.problem(
                doc.at(top) if isinstance(top, list) else (1, 1),
                f"the world file is {got}; expected a mapping with a 'services:' key, e.g. "
                "'services: {orders: {records: {order: {status: str}}}}'",
            )
            doc.raise_problems()
        self.unknown_keys(top, TOP_KEYS, "the world file")

        name = self.text(top, "name", "name") or default_name
        seed = top.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool):
            self.at_value(top, "seed", f"seed must be a whole number, not {seed!r}; e.g. seed: 42")
            seed = 0
        clock_start = self.clock(top)
        description = self.text(top, "description", "description")

        if "services" not in top:
            # `servces:` was already reported with "did you mean 'services'?"
            if not any(did_you_mean(k, TOP_KEYS) == "; did you mean 'services'?" for k in top):
                doc.problem(
                    doc.at(top),
                    "missing 'services:'; expected e.g. 'services: {orders: {records: "
                    "{order: {status: str}}}}'",
                )
            doc.raise_problems()
        services = self.mapping(top, "services", "services", "services: {orders: {...}}") or {}
        for svc, body in services.items():
            self.service_records(services, svc, body)
        self.resolve_refs()
        accessors = self.accessors()
        for svc, info in self.services.items():
            self.service_operations(svc, info["body"])
        for svc, info in self.services.items():
            self.service_seed(svc, info["body"])
        self.check_seed_refs()

        ops_by_service = {s: tuple(self.declared.get(s, ())) for s in self.services}
        faults: dict[str, FaultRule] = {}
        if "faults" in top:
            op_kinds = {op.qualname: op.kind for op in self.operations.values()}
            parser = _RuleParser(doc, ops_by_service, op_kinds)
            faults = parser.parse_block(top["faults"], top, "faults")
            check_merged_probabilities(doc, faults, ops_by_service)
        doc.raise_problems()

        return WorldSpec(
            name=name,
            path=path,
            seed=seed,
            clock_start=clock_start,
            services=tuple(
                ServiceSpec(
                    svc,
                    tuple(i["records"]),
                    tuple(i["operations"]),
                    loc=i["loc"],
                    description=i["description"],
                )
                for svc, i in self.services.items()
            ),
            records=self.records,
            operations=self.operations,
            faults=faults,
            seed_plans=tuple(
                SeedPlan(rec, p["count"], tuple(p["rows"]))
                for rec in self.records
                if (p := self.plans.get(rec)) and (p["count"] or p["rows"])
            ),
            accessors=accessors,
            handlers=self.handlers,
            digest=digest,
            description=description,
        )

    def clock(self, top: dict) -> datetime:
        clock = top.get("clock")
        if clock is None:
            return DEFAULT_CLOCK_START
        body = self.mapping(top, "clock", "clock", "clock: {start: 2025-06-01T09:00:00Z}")
        if not body:
            return DEFAULT_CLOCK_START
        self.unknown_keys(body, ("start",), "clock")
        if "start" not in body:
            return DEFAULT_CLOCK_START
        start = _to_datetime(body["start"])
        if start is None:
            self.at_value(
                body, "start",
                f"invalid clock start {body['start']!r}; expected an ISO date and time such "
                "as 2025-06-01T09:00:00Z (no timezone means UTC)",
            )  # fmt: skip
            return DEFAULT_CLOCK_START
        return start

    # -- services and records --------------------------------------------------------------------

    def service_records(self, services: dict, svc: Any, body: Any) -> None:
        if not _SERVICE.fullmatch(svc):
            self.at_key(
                services, svc,
                f"invalid service name '{svc}'; expected letters, digits, '_' or '-' "
                "(no dots: fault keys use service.operation)",
            )  # fmt: skip
            return
        if body is None:
            body = {}
        elif not isinstance(body, dict):
            self.at_value(
                services, svc,
                f"service '{svc}' must be a mapping; expected records:, operations: and "
                "optionally seed:",
            )  # fmt: skip
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
        records = self.mapping(body, "records", "records", "records: {order: {status: str}}")
        for rec, fields in (records or {}).items():
            spec = self.record(svc, records, rec, fields)
            if spec is not None:
                self.records[rec] = spec
                self.record_at[rec] = (records, rec)
                info["records"].append(rec)

    def record(self, svc: str, records: dict, rec: Any, body: Any) -> RecordSpec | None:
        if not _IDENT.fullmatch(rec) or rec.startswith("_"):
            self.at_key(
                records, rec,
                f"invalid record name '{rec}'; expected a Python identifier such as "
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
                continue
            if name == "id":
                if field.raw.strip() != "str" or field.has_default:
                    self.at_value(
                        body, name,
                        f"the id of '{rec}' is always text, not {field.raw!r}; expected "
                        "'id: str' or no id line at all",
                    )  # fmt: skip
                id_field = field
                continue
            fields.append(field)
        return RecordSpec(rec, svc, plural(rec), (id_field, *fields), loc=self.loc(records, rec))

    def field(self, rec: str, body: dict, name: Any, decl: Any) -> FieldSpec | None:
        if not _IDENT.fullmatch(name):
            self.at_key(
                body, name,
                f"invalid field name '{name}' in record '{rec}'; expected a Python "
                "identifier such as 'status' or 'created_at'",
            )  # fmt: skip
            return None
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
                f"field '{rec}.{name}' has no type ({raw!r}); {TYPE_HELP}",
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
            name, kind, optional, choices=choices, ref=ref, raw=raw,  # type: ignore[arg-type]
            loc=Location(self.doc.path, *self.doc.value_at(*where)),
        )  # fmt: skip
        if "default" in options:
            default = options["default"]
            probe = msgspec.structs.replace(field, optional=True)
            ok, value = _coerce(probe, default)
            if not ok:
                self.at_value(
                    options, "default",
                    f"default {default!r} of field '{rec}.{name}' is not of type {raw}; "
                    f"expected {_expected(field)}{self.enum_hint(field, default)}",
                )  # fmt: skip
                return None
            field = msgspec.structs.replace(
                field, has_default=True, default=value, optional=optional or value is None
            )
        return field

    def enum_hint(self, field: FieldSpec, value: Any) -> str:
        return did_you_mean(value, field.choices) if field.kind == "enum" else ""

    def resolve_refs(self) -> None:
        qualified = {f"{r.service}.{r.name}": r.name for r in self.records.values()}
        for rec, spec in list(self.records.items()):
            fields = []
            for f in spec.fields:
                if f.kind == "ref" and f.ref is not None:
                    target = qualified.get(f.ref) or (f.ref if f.ref in self.records else None)
                    svc, dot, name = f.ref.rpartition(".")
                    if dot and f.ref not in qualified and name in self.records:
                        owner = self.records[name].service
                        self.doc.problem(
                            (f.loc.line, f.loc.col),
                            f"'{f.raw}': record '{name}' belongs to service '{owner}', not "
                            f"'{svc}'; expected ref[{owner}.{name}]",
                        )
                        target = name
                    elif target is None:
                        hint = did_you_mean(f.ref, [*qualified, *self.records])
                        self.doc.problem(
                            (f.loc.line, f.loc.col),
                            f"'{f.raw}' refers to a record that does not exist; expected one "
                            f"of {one_of(qualified)}{hint}",
                        )
                    f = msgspec.structs.replace(f, ref=target)
                fields.append(f)
            self.records[rec] = msgspec.structs.replace(spec, fields=tuple(fields))

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

    # -- operations -----------------------------------------------------------------------------

    def service_operations(self, svc: str, body: dict) -> None:
        self.declared[svc] = []
        if "operations" not in body:
            return
        ops = self.mapping(
            body, "operations", "operations", "operations: {get_order: {kind: get, record: order}}"
        )
        for tool, decl in (ops or {}).items():
            first = self.tool_at.get(tool)
            op = self.operation(svc, ops, tool, decl)
            if op is not None:
                self.operations[tool] = op
                self.services[svc]["operations"].append(tool)
            if first is None and isinstance(tool, str):
                self.declared[svc].append(tool)

    def operation(self, svc: str, ops: dict, tool: Any, decl: Any) -> OperationSpec | None:
        if not _TOOL.fullmatch(tool):
            self.at_key(
                ops, tool,
                f"invalid tool name '{tool}'; expected 1 to 64 letters, digits, '_' or '-'",
            )  # fmt: skip
            return None
        if tool in self.tool_at:
            first_svc, first_loc = self.tool_at[tool]
            self.at_key(
                ops, tool,
                f"tool '{tool}' is already defined by service '{first_svc}' at {first_loc}; "
                "expected tool names unique across the world; rename one",
            )  # fmt: skip
            return None
        self.tool_at[tool] = (svc, self.where(ops, tool))
        if not isinstance(decl, dict):
            self.at_value(
                ops, tool,
                f"operation '{tool}' must be a mapping; expected e.g. "
                "'{kind: get, record: order}'",
            )  # fmt: skip
            return None
        before = len(self.doc.problems)
        self.unknown_keys(decl, OPERATION_KEYS, f"operation '{tool}'")
        kind = decl.get("kind")
        if kind is None:
            self.at_key(
                ops,
                tool,
                f"operation '{tool}' has no kind; expected kind: {one_of(OPERATION_KINDS)}",
            )
            return None
        if kind not in OPERATION_KINDS:
            self.at_value(
                decl, "kind",
                f"unknown operation kind {kind!r}; expected one of {one_of(OPERATION_KINDS)}"
                f"{did_you_mean(kind, OPERATION_KINDS)}",
            )  # fmt: skip
            return None
        record = self.op_record(tool, kind, ops, decl)
        filters = self.op_filter(tool, kind, decl, record)
        handler = decl.get("handler")
        description = self.text(decl, "description", "description")
        params: tuple = ()
        if kind == "custom":
            if handler is None:
                self.at_key(
                    ops, tool,
                    f"custom operation '{tool}' has no handler; expected "
                    "handler: module.function, e.g. handler: shop_rules.create_return",
                )  # fmt: skip
            elif not isinstance(handler, str):
                self.at_value(decl, "handler", "handler must be text: module.function")
            else:
                try:
                    func = resolve_handler(handler, self.base_dir)
                    params = handler_params(func)
                except HandlerProblem as exc:
                    self.at_value(decl, "handler", f"handler '{handler}': {exc}")
                else:
                    self.handlers[tool] = func
                    description = description or handler_description(func)
        elif handler is not None:
            self.at_key(
                decl, "handler",
                f"'handler' is only for kind: custom (this operation is kind: {kind}); "
                "remove it or use kind: custom",
            )  # fmt: skip
        if len(self.doc.problems) > before:
            return None
        return OperationSpec(
            tool, svc, kind, record=record, filter=filters, handler=handler,
            description=description, params=params, loc=self.loc(ops, tool),
        )  # fmt: skip

    def op_record(self, tool: str, kind: str, ops: dict, decl: dict) -> str | None:
        record = decl.get("record")
        if record is None:
            if kind != "custom":
                expected = (
                    f"expected record: one of {one_of(self.records)}"
                    if self.records
                    else "the world declares no records; expected them under "
                    "services.<name>.records"
                )
                self.at_key(
                    ops, tool, f"operation '{tool}' (kind: {kind}) has no record; {expected}"
                )
            return None
        if not isinstance(record, str):
            self.at_value(decl, "record", f"record must be a record name, not {record!r}")
            return None
        svc, dot, name = record.rpartition(".")
        if dot and name in self.records and self.records[name].service == svc:
            return name
        if record in self.records:
            return record
        expected = (
            f"expected one of {one_of(self.records)}{did_you_mean(record, self.records)}"
            if self.records
            else "the world declares no records; expected them under services.<name>.records"
        )
        self.at_value(
            decl, "record", f"operation '{tool}' names an unknown record '{record}'; {expected}"
        )
        return None

    def op_filter(self, tool: str, kind: str, decl: dict, record: str | None) -> tuple[str, ...]:
        if "filter" not in decl:
            return ()
        value = decl["filter"]
        if kind != "list":
            self.at_key(
                decl,
                "filter",
                f"'filter' is only for kind: list (this operation is kind: {kind}); remove it",
            )
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.at_value(
                decl, "filter",
                f"filter must be a list of field names, not {value!r}; expected e.g. "
                "filter: [status, customer_id]",
            )  # fmt: skip
            return ()
        if record is None:
            return tuple(value)
        names = [f.name for f in self.records[record].fields]
        for i, item in enumerate(value):
            if item not in names:
                self.at_value(
                    value, i,
                    f"filter field '{item}' is not a field of record '{record}'; expected one "
                    f"of {one_of(names)}{did_you_mean(item, names)}",
                )  # fmt: skip
        return tuple(dict.fromkeys(value))

    # -- seed -------------------------------------------------------------------------------------

    def service_seed(self, svc: str, body: dict) -> None:
        if "seed" not in body:
            return
        block = self.mapping(body, "seed", "seed", "seed: {count: 20} or seed: {order: 20}")
        if not block:
            return
        own = self.services[svc]["records"]
        allowed = ("count", "rows", *own)
        if "count" in block:
            count = self.count(block, "count")
            for rec in own:
                self.plans.setdefault(rec, {"count": 0, "rows": []})["count"] = count
        for key, value in block.items():
            if key == "count":
                continue
            if key == "rows":
                if len(own) == 1:
                    self.plans.setdefault(own[0], {"count": 0, "rows": []})
                    self.plans[own[0]]["rows"] = self.rows(own[0], block, key)
                else:
                    self.at_key(
                        block, key,
                        f"service '{svc}' has {len(own)} records ({', '.join(own)}), so its rows "
                        "must say which; expected them under a record, e.g. "
                        f"seed: {{{own[0] if own else 'record'}: {{rows: [...]}}}}",
                    )  # fmt: skip
            elif key in own:
                plan = self.plans.setdefault(key, {"count": 0, "rows": []})
                if isinstance(value, dict):
                    self.unknown_keys(value, ("count", "rows"), f"the seed of '{key}'")
                    if "count" in value:
                        plan["count"] = self.count(value, "count")
                    if "rows" in value:
                        plan["rows"] = self.rows(key, value, "rows")
                else:
                    plan["count"] = self.count(block, key)
            elif key in self.records:
                owner = self.records[key].service
                self.at_key(
                    block, key,
                    f"record '{key}' belongs to service '{owner}', not '{svc}'; expected its "
                    f"seed under services.{owner}.seed",
                )  # fmt: skip
            else:
                self.at_key(
                    block, key,
                    f"unknown key '{key}' in the seed of service '{svc}'; expected count, rows "
                    f"or a record of the service ({one_of(own)}){did_you_mean(key, allowed)}",
                )  # fmt: skip

    def count(self, parent: dict, key: str) -> int:
        value = parent[key]
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_ROWS:
            return value
        self.at_value(
            parent, key,
            f"invalid row count {value!r}; expected a whole number from 0 to {MAX_ROWS:_}, "
            "e.g. 20",
        )  # fmt: skip
        return 0

    def rows(self, rec: str, parent: dict, key: str) -> list[dict[str, Any]]:
        value = parent[key]
        if not isinstance(value, list):
            self.at_value(
                parent, key,
                f"rows must be a list of records, not {type(value).__name__}; expected e.g. "
                "rows: [{id: A1, status: placed}]",
            )  # fmt: skip
            return []
        spec = self.records[rec]
        names = [f.name for f in spec.fields]
        out: list[dict[str, Any]] = []
        seen: dict[str, int] = {}
        for i, row in enumerate(value):
            if not isinstance(row, dict):
                self.at_value(value, i, f"a row of '{rec}' must be a mapping of field values")
                continue
            clean: dict[str, Any] = {}
            for name, raw in row.items():
                field = spec.field(name)
                if field is None:
                    self.at_key(
                        row, name,
                        f"'{name}' is not a field of record '{rec}'; expected one of "
                        f"{one_of(names)}{did_you_mean(name, names)}",
                    )  # fmt: skip
                    continue
                if name == "id":
                    if isinstance(raw, str | int) and not isinstance(raw, bool) and str(raw):
                        ident = str(raw)
                        if ident in seen:
                            self.at_value(
                                row, name,
                                f"id {ident!r} is used twice in the rows of '{rec}'; "
                                "expected unique ids",
                            )  # fmt: skip
                        seen[ident] = i
                        clean["id"] = ident
                    else:
                        self.at_value(row, name, f"invalid id {raw!r}; expected text or a number")
                    continue
                ok, coerced = _coerce(field, raw)
                if not ok:
                    self.at_value(
                        row, name,
                        f"invalid value {raw!r} for {rec}.{name} ({field.raw}); expected "
                        f"{_expected(field)}{self.enum_hint(field, raw)}",
                    )  # fmt: skip
                    continue
                clean[name] = coerced
            out.append(clean)
            self.row_where[id(clean)] = row
        return out

    def check_seed_refs(self) -> None:
        """Explicit ref values name seeded ids; a required ref has rows to point at."""
        ids = {
            rec: set(plan_ids(SeedPlan(rec, p["count"], tuple(p["rows"]))))
            for rec, p in self.plans.items()
        }
        for rec, spec in self.records.items():
            plan = self.plans.get(rec, {"count": 0, "rows": []})
            for field in spec.fields:
                if field.kind != "ref" or field.ref is None or field.ref not in self.records:
                    continue
                target = ids.get(field.ref, set())
                for row in plan["rows"]:
                    value = row.get(field.name)
                    if value is not None and value not in target:
                        written = self.row_where[id(row)]
                        sample = ", ".join(sorted(target, key=id_order)[:5])
                        self.at_value(
                            written, field.name,
                            f"{rec}.{field.name} {value!r} is not the id of any seeded "
                            f"'{field.ref}'; expected one of its ids"
                            + (f" ({sample}{', ...' if len(target) > 5 else ''})" if target else
                               f", but '{field.ref}' has no seed rows"),
                        )  # fmt: skip
                needs = plan["count"] > 0 or any(field.name not in r for r in plan["rows"])
                if needs and not target and not field.optional:
                    owner = self.records[field.ref].service
                    self.doc.problem(
                        (field.loc.line, field.loc.col),
                        f"{rec}.{field.name} ({field.raw}) needs '{field.ref}' rows to point "
                        f"at, but '{field.ref}' has no seed rows while '{rec}' gets some; "
                        f"expected seed: {{{field.ref}: N}} under services.{owner}, or an "
                        f"optional field ({field.raw}?)",
                    )
