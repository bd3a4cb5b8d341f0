"""The loader's operations pass: `operations:` of each service -> `OperationSpec`s.

Tool names are unique across the world (an MCP client sees one flat list). A tool is noted
as declared even when its declaration is wrong, so a fault key naming it is not reported as
unknown on top of the real mistake. Custom handlers are imported here; `_handlers.py` looks
for their module next to the world file first.
"""

from __future__ import annotations

import re
from typing import Any

from .._spec import (
    HandlerProblem,
    OperationSpec,
    ParamSpec,
    handler_description,
    handler_params,
    resolve_handler,
)
from .._text import did_you_mean, one_of, short_repr
from ._features._auth import _AuthLoader
from ._features._effects import _EffectsLoader
from ._features._lists import _ListsLoader
from ._features._tooldoc import TOOLDOC_KEYS, _ToolDocLoader
from ._features._tooldoc import plain_json as _plain
from ._features._writes import _WritesLoader

OPERATION_KEYS = (
    "kind", "record", "filter", "handler", "description", "sort", "page", "input_schema",
    "http", "idempotency", "scopes", "set", "then", *TOOLDOC_KEYS,
)  # fmt: skip
HTTP_KEYS = (
    "method", "path", "status", "items", "envelope", "errors", "nulls", "total", "key", "args",
    "bounds", "ids", "fill", "text", "headers",
)  # fmt: skip
HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_HTTP_PATH = re.compile(r"/[^\s?#]*")
_ERROR_STATUS = re.compile(r"[45](\d\d|XX)")
_JSON_KINDS: dict[str, str] = {
    "string": "str", "integer": "int", "number": "float", "boolean": "bool",
    "array": "list", "object": "dict",
}  # fmt: skip
OPERATION_KINDS = ("get", "list", "create", "update", "delete", "custom")

_TOOL = re.compile(r"[A-Za-z0-9_-]{1,64}")


class _OperationsLoader(_ListsLoader, _AuthLoader, _WritesLoader, _EffectsLoader, _ToolDocLoader):
    def service_operations(self, svc: str, body: dict[Any, Any]) -> None:
        self.declared[svc] = []
        if "operations" not in body:
            return
        ops = (
            self.mapping(
                body,
                "operations",
                "operations",
                "operations: {get_order: {kind: get, record: order}}",
            )
            or {}
        )
        for tool, decl in ops.items():
            first = self.tool_at.get(tool)
            op = self.operation(svc, ops, tool, decl)
            if op is not None:
                self.operations[tool] = op
                self.services[svc]["operations"].append(tool)
            if first is None and isinstance(tool, str):
                self.declared[svc].append(tool)

    def operation(
        self, svc: str, ops: dict[Any, Any], tool: Any, decl: Any
    ) -> OperationSpec | None:
        if not _TOOL.fullmatch(tool):
            self.at_key(
                ops, tool,
                f"invalid tool name {short_repr(tool)}; expected 1 to 64 letters, digits, '_' or '-'",
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
                f"unknown operation kind {short_repr(kind)}; expected one of {one_of(OPERATION_KINDS)}"
                f"{did_you_mean(kind, OPERATION_KINDS)}",
            )  # fmt: skip
            return None
        record = self.op_record(tool, kind, ops, decl)
        filters = self.op_filter(tool, kind, decl, record)
        for key in ("sort", "page"):
            if key in decl and kind != "list":
                self.at_key(
                    decl, key,
                    f"'{key}' is only for kind: list (this operation is kind: {kind}); remove it",
                )  # fmt: skip
        where = self.list_where(tool, decl, record) if kind == "list" else ()
        sort = self.list_sort(tool, decl, record) if kind == "list" else ()
        page = self.list_page(tool, decl) if kind == "list" else None
        if record is not None and kind == "list":
            self.list_names_free(decl, record, where, sort, page)
        idempotency = self.op_idempotency(tool, kind, decl, record)
        scopes = self.op_scopes(tool, decl, self.auth)
        sets = self.op_set(tool, kind, decl, record)
        then = self.op_then(tool, kind, decl, record)
        handler = decl.get("handler")
        description = self.text(decl, "description", "description")
        params: tuple[ParamSpec, ...] = ()
        schema = self.op_input_schema(tool, kind, decl)
        http = self.op_http(tool, decl)
        title = self.op_title(tool, decl)
        annotations = self.op_annotations(tool, decl)
        output_schema = self.op_output_schema(tool, kind, decl)
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
                    params = handler_params(func) if schema is None else schema_params(schema)
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
            where=where, sort=sort, page=page, input_schema=schema, http=http,
            idempotency=idempotency, scopes=scopes, set=sets, then=then, title=title,
            annotations=annotations, output_schema=output_schema,
        )  # fmt: skip

    def op_http(self, tool: str, decl: dict[Any, Any]) -> dict[str, Any] | None:
        """`http: {method:, path:}` (and `status:`; for a list `items:`, the key of the
        envelope its rows go under, and `envelope:`, the rest of that answer; `errors:`, the
        JSON Schema of the error bodies by status: `{404: {...}, 4XX: {...}, default: {...}}`;
        `nulls:`, the properties answered as null when unset, the others being left out;
        `total:`, a list envelope's property counting every match; `key:`, the property that
        is the record's id; `args:`, request names of other tool arguments; `bounds:`,
        the document's own bounds of an argument; `ids: integer`, ids answered as numbers;
        `fill:`, answers of properties the record holds no field for; `text:`, body
        properties taking any JSON that a text field holds as JSON text; `headers:`,
        request headers that are arguments)."""
        if "http" not in decl:
            return None
        value = decl["http"]
        example = "http: {method: GET, path: /v1/charges/{charge}}"
        if not isinstance(value, dict):
            self.at_value(decl, "http", f"http of '{tool}' must be a mapping; expected {example}")
            return None
        before = len(self.doc.problems)
        self.unknown_keys(value, HTTP_KEYS, f"http of '{tool}'")
        method, path = value.get("method"), value.get("path")
        if method not in HTTP_METHODS:
            self.at_key(
                decl, "http",
                f"http of '{tool}' has method {short_repr(method)}; expected one of "
                f"{one_of(HTTP_METHODS)} ({example})",
            )  # fmt: skip
        if not isinstance(path, str) or not _HTTP_PATH.fullmatch(path):
            self.at_key(
                decl, "http",
                f"http of '{tool}' has path {short_repr(path)}; expected a path starting "
                f"with / and without a query ({example})",
            )  # fmt: skip
        status = value.get("status", 200)
        if not isinstance(status, int) or isinstance(status, bool) or not 200 <= status < 300:
            self.at_value(value, "status", "status must be a 2xx code such as 200 or 201")
        if "items" in value and not isinstance(value["items"], str):
            self.at_value(value, "items", "items must be the envelope key of a list's rows")
        if "envelope" in value and not isinstance(value["envelope"], dict):
            self.at_value(value, "envelope", "envelope must be a mapping (the list answer)")
        if "errors" in value:
            self.http_errors(value)
        for name in ("total", "key"):
            if name in value and not (isinstance(value[name], str) and value[name]):
                self.at_value(value, name, f"{name} must be a property name")
        if value.get("ids", "integer") != "integer":
            self.at_value(
                value, "ids", "ids must be integer (ids answered as numbers), or left out"
            )
        args = value.get("args", {})
        if not isinstance(args, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in args.items()
        ):
            self.at_value(
                value, "args",
                "args must map request names to tool arguments, e.g. "
                "{pool_name_pattern: name_like} (or 'name_like %{}%': the value put in a template)",
            )  # fmt: skip
        bounds = value.get("bounds", {})
        if not isinstance(bounds, dict) or not all(isinstance(v, dict) for v in bounds.values()):
            self.at_value(
                value,
                "bounds",
                "bounds must map arguments to {minimum:}, e.g. {limit: {minimum: 0}}",
            )
        if not isinstance(value.get("fill", {}), dict):
            self.at_value(
                value, "fill", "fill must map properties to their answer, e.g. {conf: {}}"
            )
        headers = value.get("headers", {})
        if not isinstance(headers, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
        ):
            self.at_value(
                value,
                "headers",
                "headers must map header names to arguments, e.g. {X-Trace: trace}",
            )
        text = value.get("text", [])
        if not isinstance(text, list) or not all(isinstance(n, str) and n for n in text):
            self.at_value(value, "text", "text must be a list of body properties, e.g. [value]")
        nulls = value.get("nulls", [])
        if not isinstance(nulls, list) or not all(isinstance(n, str) and n for n in nulls):
            self.at_value(
                value, "nulls",
                "nulls must be a list of property paths answered as null when unset, e.g. "
                "[deleted_at, address.city, lines[].note]",
            )  # fmt: skip
        if len(self.doc.problems) > before:
            return None
        plain: dict[str, Any] = _plain(value)
        if "errors" in plain:  # status keys as text, as OpenAPI writes them
            plain["errors"] = {
                "default" if str(k).lower() == "default" else str(k).upper(): v
                for k, v in plain["errors"].items()
            }
        return plain

    def http_errors(self, value: dict[Any, Any]) -> None:
        errors = value["errors"]
        example = "errors: {404: {type: object, properties: {message: {type: string}}}}"
        if not isinstance(errors, dict):
            self.at_value(value, "errors", f"errors must be a mapping; expected {example}")
            return
        for status, schema in errors.items():
            text = str(status).upper()
            if not (_ERROR_STATUS.fullmatch(text) or text == "DEFAULT") or isinstance(status, bool):
                self.at_key(
                    errors, status,
                    f"errors has key {short_repr(status)}; expected a 4xx or 5xx status (404), "
                    f"a class (4XX, 5XX) or default ({example})",
                )  # fmt: skip
            elif not isinstance(schema, dict):
                self.at_value(
                    errors, status,
                    f"errors.{status} must be a JSON Schema (a mapping); expected {example}",
                )  # fmt: skip

    def op_input_schema(self, tool: str, kind: str, decl: dict[Any, Any]) -> dict[str, Any] | None:
        """`input_schema:`, a custom tool's JSON Schema given verbatim (its handler then
        takes the arguments as `**args`), as plain JSON data."""
        if "input_schema" not in decl:
            return None
        value = decl["input_schema"]
        if kind != "custom":
            self.at_key(
                decl, "input_schema",
                f"'input_schema' is only for kind: custom (this operation is kind: {kind}); "
                "remove it",
            )  # fmt: skip
            return None
        props = value.get("properties", {}) if isinstance(value, dict) else None
        if (
            not isinstance(value, dict)
            or value.get("type", "object") != "object"
            or not isinstance(props, dict)
            or not all(isinstance(p, dict) for p in props.values())
        ):
            self.at_value(
                decl, "input_schema",
                f"input_schema of '{tool}' must be a JSON Schema of an object; expected e.g. "
                "{type: object, properties: {city: {type: string}}, required: [city]}",
            )  # fmt: skip
            return None
        plain: dict[str, Any] = _plain(value)
        return plain

    def op_record(
        self, tool: str, kind: str, ops: dict[Any, Any], decl: dict[Any, Any]
    ) -> str | None:
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
            self.at_value(decl, "record", f"record must be a record name, not {short_repr(record)}")
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

    def op_filter(
        self, tool: str, kind: str, decl: dict[Any, Any], record: str | None
    ) -> tuple[str, ...]:
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
        if isinstance(value, dict):  # with operators: read by list_where (`_lists.py`)
            return tuple(name for name, ops in value.items() if ops == "eq" or (
                isinstance(ops, list) and "eq" in ops and record is not None
                and isinstance(name, str) and self.records[record].field(name) is not None
            ))  # fmt: skip
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.at_value(
                decl, "filter",
                f"filter must be a list of field names or a mapping of fields to operators, not "
                f"{short_repr(value)}; expected e.g. filter: [status, customer_id] or "
                "filter: {status: [eq, in], amount: [gt, lte]}",
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


def schema_params(schema: dict[str, Any]) -> tuple[ParamSpec, ...]:
    """A custom tool's arguments from its `input_schema:`: each top-level property typed by
    its JSON type (an enum of strings as an enum; several types, or none, as any value)."""
    required = set(schema.get("required") or ())
    out = []
    for name, prop in (schema.get("properties") or {}).items():
        types = prop.get("type")
        listed = [types] if isinstance(types, str) else list(types or [])
        nullable = "null" in listed
        listed = [t for t in listed if t != "null"]
        enum = prop.get("enum")
        kind = _JSON_KINDS.get(listed[0], "any") if len(listed) == 1 else "any"
        choices: tuple[str, ...] = ()
        if isinstance(enum, list) and enum and all(isinstance(e, str) for e in enum):
            kind, choices = "enum", tuple(dict.fromkeys(enum))
        param = ParamSpec(
            name,
            kind,  # type: ignore[arg-type]  # a ParamSpec kind: _JSON_KINDS holds only those
            required=name in required,
            choices=choices,
            nullable=nullable or name not in required,
            description=str(prop.get("description") or ""),
        )
        out.append(param)
    return tuple(out)
