"""An OpenAPI document mapped to a world: records, operations, filters, pages, auth.

The rules (docs/IMPORT.md says them for users):

- An operation's record is the component schema its 2xx JSON answer names (the first named
  variant of a oneOf/anyOf answer); a list's is the item schema of the answer's array, found
  at the top or in one array property of an envelope (`data`, `items`, `results`...).
- By method and path: `GET /things` answering a list -> `list`; `POST /things` answering a
  thing -> `create`; `GET /things/{id}` -> `get`; `PUT|PATCH|POST /things/{id}` -> `update`;
  `DELETE /things/{id}` -> `delete` (of the record its path's other methods name). Anything
  else -> `custom`, with a generated handler whose answer the response schema accepts.
- A list's query parameters that name a field of its record become filters (`eq`, `in` for
  arrays, the range operators a deepObject `{gt, gte, lt, lte}` parameter offers); its
  paging parameters set `page:` (cursor or offset) and are not filters.
- Security schemes become principals (one per scheme, with the OAuth2 scopes it defines);
  an operation's first security requirement gives its `scopes:`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from faultbench.kernel.lowlevel import plural

from ._document import Document, title_name
from ._errors import error_schemas
from ._names import fastapi_tool, identifier, record_name, resource_words, snake, tool_name
from ._shapes import Decl, FieldTypes, answer, null_paths

_ITEM_PATH = re.compile(r".*/\{[^/{}]+\}/?$")
_ENVELOPE = ("data", "items", "results", "records", "entries", "values", "value", "list", "content")
_CURSOR = {
    "starting_after", "ending_before", "after", "before", "cursor", "page_token",
    "pagetoken", "next_token", "continuation_token", "marker", "next_page_token",
}  # fmt: skip
_OFFSET = {"offset", "start", "skip", "page", "pagenumber", "page_number"}
_SIZE = {"limit", "page_size", "pagesize", "per_page", "size", "rows", "max_results", "top"}
_NOT_FILTERS = {"expand", "fields", "include", "select"}
_RANGE = ("gt", "gte", "lt", "lte")
#: integer properties of a list's envelope that carry the count of every match
_TOTALS = ("total_entries", "total", "total_count", "totalcount", "total_results", "count")
#: query parameters that search a list by text (on its record's key or name)
_SEARCH = ("search", "q", "query")
_SNAKE_ID = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")
_WRITE_METHODS = ("put", "patch", "post")


# ---------------------------------------------------------------------------------------------
# What the mapping decides
# ---------------------------------------------------------------------------------------------
# Plain data: the emitter (_emit.py) writes it, the report counts it.


@dataclass
class Param:
    """One argument of a custom operation's generated handler."""

    name: str  # a Python identifier
    source: str  # the name in the document
    where: str  # path, query, header, cookie or body
    annotation: str
    required: bool
    description: str = ""


@dataclass
class Operation:
    tool: str
    service: str
    kind: str
    method: str
    path: str
    operation_id: str
    record: str | None = None
    description: str | None = None
    filter: dict[str, list[str]] = field(default_factory=dict)
    page: dict[str, Any] | None = None
    sort: list[str] = field(default_factory=list)
    scopes: list[str] = field(default_factory=list)
    idempotency_key: str | None = None
    params: list[Param] = field(default_factory=list)
    answer: Any = None
    status: str | None = None
    items: str | None = None  # a list answer's envelope key for its rows
    envelope: dict[str, Any] | None = None  # the rest of that answer
    #: declared error bodies: {status key: (component name or None, inlined JSON Schema)}
    errors: dict[str, tuple[str | None, Any]] = field(default_factory=dict)
    #: a record's answers: the properties answered as null when unset (others left out)
    nulls: list[str] | None = None
    #: the envelope's integer property that carries the count of every match
    total: str | None = None
    #: the record's natural key (the property its path parameter names), when not `id`
    key: str | None = None
    #: request names that are other tool arguments: {`pool_name_pattern`: `name_like`};
    #: `name_like %{}%` puts the request's value where `{}` is
    args: dict[str, str] = field(default_factory=dict)
    #: "integer" where the record's schema declares its `id` an integer (answered as one)
    ids: str | None = None
    #: query parameter bounds the document declares beyond the tool's (`limit >= 0`)
    bounds: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Record:
    name: str
    service: str
    schema_name: str
    fields: dict[str, Decl]
    description: str | None = None
    key: str | None = None  # the natural key (`name`) standing for the id under --rest


@dataclass
class Mapping:
    """What the importer decided: the world's parts and the coverage report's facts."""

    name: str
    title: str
    version: str
    records: dict[str, Record]
    operations: list[Operation]
    principals: dict[str, list[str]]
    skipped: list[dict[str, str]]
    fields_skipped: list[dict[str, str]]
    notes: list[str]
    total_operations: int
    total_schemas: int


# ---------------------------------------------------------------------------------------------
# Classifying operations
# ---------------------------------------------------------------------------------------------
# Each operation's kind and record, from its method, path and 2xx answer.


def _selected(path: str, op: dict[str, Any], tags: list[str], paths: list[str]) -> bool:
    if tags and not set(map(str, op.get("tags") or [])) & set(tags):
        return False
    if paths:
        return any(
            path == p or path.startswith(p.rstrip("/") + "/") or fnmatch.fnmatchcase(path, p)
            for p in paths
        )
    return True


def _description(op: dict[str, Any]) -> str | None:
    parts = [str(op[k]).strip() for k in ("summary", "description") if op.get(k)]
    if len(parts) == 2 and parts[1].startswith(parts[0]):
        parts = parts[1:]
    text = "\n\n".join(p for p in parts if p)
    return text or None


class _Mapper:
    def __init__(self, doc: Document, tags: list[str], paths: list[str]) -> None:
        self.doc = doc
        self.tags = tags
        self.paths = paths
        self.skipped: list[dict[str, str]] = []
        self.tools: set[str] = set()
        ids = [str(op.get("operationId") or "") for _p, _m, op, _i in doc.operations()]
        #: a document whose operation ids are all snake_case names (FastAPI's functions)
        #: names its tools after them
        self.by_op_id = bool(ids) and all(_SNAKE_ID.fullmatch(i) for i in ids)

    # --- records ------------------------------------------------------------------------

    def named(self, node: Any) -> str | None:
        """The component schema an answer names (first named oneOf/anyOf variant)."""
        schema, name = self.doc.deref(node)
        if name is not None and self._objectish(schema):
            return name
        for v in [*(schema.get("oneOf") or []), *(schema.get("anyOf") or [])]:
            sub, vname = self.doc.deref(v)
            if vname is not None and self._objectish(sub):
                return vname
        return None

    def _objectish(self, schema: dict[str, Any]) -> bool:
        fields = FieldTypes(self.doc, {})
        props, _ = fields.properties(schema)
        return bool(props)

    def list_item(self, node: Any) -> str | None:
        schema, _ = self.doc.deref(node)
        if schema.get("type") == "array" or "items" in schema:
            return self.named(schema.get("items"))
        props = FieldTypes(self.doc, {}).properties(schema)[0]
        arrays = {}
        for k, v in props.items():
            sub, _ = self.doc.deref(v)
            if sub.get("type") == "array" or "items" in sub:
                arrays[k] = sub
        for k in sorted(arrays, key=lambda k: (k.lower() not in _ENVELOPE, list(arrays).index(k))):
            if k.lower() in _ENVELOPE or len(arrays) == 1:
                return self.named(arrays[k].get("items"))
        return None

    def body_name(self, op: dict[str, Any]) -> str | None:
        """The component schema a JSON request body names, or None."""
        body, _ = self.doc.deref(op.get("requestBody"))
        content = body.get("content") or {}
        for media in sorted(content, key=lambda m: "json" not in str(m)):
            node = (
                (content[media] or {}).get("schema") if isinstance(content[media], dict) else None
            )
            return self.doc.deref(node)[1] if node is not None else None
        return None

    def collection(self, node: Any) -> bool:
        """Whether an answer is a list of records: an array, a schema named as one
        (`TaskInstanceCollectionResponse`, `PetList`), or an envelope (`{data: [...]}`)."""
        schema, name = self.doc.deref(node)
        if schema.get("type") == "array" or "items" in schema:
            return True
        if name is not None and {"collection", "list"} & set(snake(name).split("_")):
            return self.list_item(node) is not None
        props = FieldTypes(self.doc, {}).properties(schema)[0]
        return any(
            k.lower() in _ENVELOPE and "items" in self.doc.deref(v)[0] for k, v in props.items()
        )

    def envelope(self, node: Any) -> tuple[str | None, dict[str, Any] | None, str | None]:
        """(the key of a list answer's rows, the smallest rest of that answer, its integer
        property counting every match), or (None, None, None) for an answer that is the
        array itself."""
        schema, _ = self.doc.deref(node)
        if schema.get("type") == "array" or "items" in schema:
            return None, None, None
        props = FieldTypes(self.doc, {}).properties(schema)[0]
        arrays = [k for k, v in props.items() if "items" in self.doc.deref(v)[0]]
        key = next((k for k in arrays if k.lower() in _ENVELOPE), arrays[0] if arrays else None)
        ints = {
            k.lower(): k for k, v in props.items() if self.doc.deref(v)[0].get("type") == "integer"
        }
        total = next((ints[t] for t in _TOTALS if t in ints), None)
        rest = answer(self.doc, schema)
        if not isinstance(rest, dict) or key is None:
            return key, None, total
        rest.pop(key, None)
        return key, rest, total

    # --- operations ---------------------------------------------------------------------

    def classify(
        self, path: str, method: str, op: dict[str, Any], by_path: dict[str, str]
    ) -> tuple[str, str | None]:
        """(kind, component schema of its record)."""
        _status, node = self.doc.response(op)
        item = bool(_ITEM_PATH.fullmatch(path))
        if method == "get" and not item and node is not None:
            listed = self.list_item(node)
            if listed is not None:
                return "list", listed
        answered = self.named(node) if node is not None else None
        if method == "get" and item and answered:
            return "get", answered
        # a write answering a collection (`POST /dags/{id}/clearTaskInstances`) is an action
        one = answered is not None and node is not None and not self.collection(node)
        if method == "post" and not item and one and _names_resource(path, str(answered)):
            return "create", answered
        if method == "post" and not item and one and answered in _children(by_path, path):
            return "create", answered  # answers what a get of `path/{key}` answers
        if method in _WRITE_METHODS and item and one and _names_resource(path, str(answered)):
            return "update", answered
        if method in _WRITE_METHODS and item and one and by_path.get(path) == answered:
            return "update", answered  # answers what the path's get answers
        if method == "delete" and item:
            target = by_path.get(path)
            if target is not None:
                return "delete", target
        if method in _WRITE_METHODS and item and answered is None:
            # `PUT /state-store/{key}` with a `TaskStateStoreBody`, answering nothing: an
            # update of the record the path's get answers, when the body is about it too
            target = by_path.get(path)
            body_name = self.body_name(op)
            if (
                target is not None
                and body_name is not None
                and resource_words(body_name) == resource_words(target)
            ):
                return "update", target
        return "custom", None


def _children(by_path: dict[str, str], path: str) -> set[str]:
    """The records the gets of `path/{key}` answer."""
    base = path.rstrip("/")
    return {
        schema
        for p, schema in by_path.items()
        if _ITEM_PATH.fullmatch(p) and p.rstrip("/").rsplit("/", 1)[0] == base
    }


def _names_resource(path: str, schema: str) -> bool:
    """Whether a write's path is about the schema it answers: the last word of the schema's
    name begins a word of the path's last fixed segment (`/v1/payment_intents` and
    `payment_intent`, `/Accounts/{Sid}/Calls.json` and `api.v2010.account.call`), so that
    `POST /pet/{id}/uploadImage` answering an `ApiResponse` stays custom."""
    fixed = [s for s in path.split("/") if s and not s.startswith("{")]
    if not fixed:
        return False
    last = snake(re.sub(r"\.[A-Za-z]+$", "", fixed[-1])).split("_")
    words = resource_words(schema)
    stem = words[-1].rstrip("s") if words else ""
    return bool(stem) and any(w.startswith(stem) for w in last)


def _service(op: dict[str, Any], path: str) -> str:
    tags = op.get("tags") or []
    if tags:
        name = snake(str(tags[0]))
    else:
        segs = [
            s
            for s in path.split("/")
            if s and not s.startswith("{") and not re.fullmatch(r"v\d+(\.\d+)*|api", s)
        ]
        name = snake(segs[0]) if segs else ""
    return (name or "api")[:40]


# ---------------------------------------------------------------------------------------------
# The document, mapped
# ---------------------------------------------------------------------------------------------
# Records first (every schema a CRUD operation works on), then the operations.


def map_document(
    doc: Document,
    *,
    tags: Sequence[str] = (),
    paths: Sequence[str] = (),
    idempotency: bool = False,
) -> Mapping:
    m = _Mapper(doc, list(tags), list(paths))
    all_ops = list(doc.operations())
    chosen = []
    for path, method, op, item in all_ops:
        if not _selected(path, op, m.tags, m.paths):
            continue
        if method in ("head", "options", "trace"):
            m.skipped.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "why": f"{method.upper()} has no world operation (no state to read or change)",
                }
            )
            continue
        chosen.append((path, method, op, item))
    # A path's record, from its reads and writes, so DELETE /things/{id} knows its table.
    by_path: dict[str, str] = {}
    kinds: list[tuple[str, str | None]] = []
    for path, method, op, _item in chosen:
        kind, schema = m.classify(path, method, op, {})
        kinds.append((kind, schema))
        if kind in ("get", "update") and schema is not None:
            by_path.setdefault(path, schema)
    kinds = [
        m.classify(path, method, op, by_path) if k[0] == "custom" else k
        for (path, method, op, _i), k in zip(chosen, kinds)
    ]
    # Records: every schema a CRUD operation works on.
    # Schemas about one resource (`PoolResponse`, `Pool`) are one record, its fields those
    # of the first met.
    schema_records: dict[str, str] = {}
    by_resource: dict[str, str] = {}
    taken: set[str] = set()
    for kind, schema in kinds:
        if schema is None or schema in schema_records or kind == "custom":
            continue
        resource = "_".join(resource_words(schema)) or schema
        if resource not in by_resource:
            by_resource[resource] = record_name(resource, taken)
        schema_records[schema] = by_resource[resource]
    types = FieldTypes(doc, schema_records)
    records: dict[str, Record] = {}
    operations: list[Operation] = []
    # Names go first to the shortest paths: `create_refund` is POST /v1/refunds, not
    # POST /v1/charges/{charge}/refunds, wherever each stands in the document; the
    # operations are then written in document order.
    priority = sorted(
        range(len(chosen)),
        key=lambda i: (kinds[i][0] == "custom", chosen[i][0].count("/"), i),
    )
    made: dict[int, Operation] = {}
    for index in priority:
        (path, method, op, item), (kind, schema) = chosen[index], kinds[index]
        service = _service(op, path)
        rec = schema_records.get(schema) if schema is not None else None
        if rec is not None and rec not in records:
            sch, _ = (
                doc.deref({"$ref": f"#/components/schemas/{_escape(schema)}"})
                if schema
                else ({}, None)
            )
            fields = types.fields(sch, rec, depth=0, stack=(schema,) if schema else ())
            fields = _with_id(fields)
            desc = sch.get("description") or sch.get("title")
            records[rec] = Record(
                rec, service, schema or "", fields, str(desc).strip() if desc else None
            )
        made[index] = _operation(m, types, records, path, method, op, item, kind, rec, service)
    operations.extend(made[i] for i in range(len(chosen)))
    if idempotency:  # the API takes an Idempotency-Key on its writes, said or not
        for o in operations:
            if o.kind in ("create", "update", "delete"):
                o.idempotency_key = "idempotency_key"
    _required_by_create(doc, records, operations, chosen)
    _natural_keys(records, operations)
    principals = _principals(doc, chosen, operations)
    return Mapping(
        name=title_name(doc)[:40],
        title=str(doc.info.get("title") or ""),
        version=doc.version,
        records=records,
        operations=operations,
        principals=principals,
        skipped=m.skipped,
        fields_skipped=[{"where": w, "why": y} for w, y in types.skipped],
        notes=list(dict.fromkeys(doc.notes))
        + [
            f"{o.method.upper()} {o.path} ({o.tool}): served over MCP only; its path carries a "
            "query or a fragment, which `serve --rest` cannot route (no http: key)"
            for o in operations
            if not rest_routable(o.path)
        ],
        total_operations=len(all_ops),
        total_schemas=len(doc.schemas),
    )


def rest_routable(path: str) -> bool:
    """Whether `serve --rest` can answer at `path`: some documents key two operations on one
    path with a query (`/responses?beta=true`) or a fragment (`/files/{id}#add_shared_link`),
    which HTTP routing cannot tell apart."""
    return "?" not in path and "#" not in path


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _with_id(fields: dict[str, Decl]) -> dict[str, Decl]:
    """A record's id is always text in a world: an `id` property is declared `id: str`."""
    if "id" not in fields:
        return fields
    return {"id": "str", **{k: v for k, v in fields.items() if k != "id"}}


def _operation(
    m: _Mapper, types: FieldTypes, records: dict[str, Record], path: str, method: str,
    op: dict[str, Any], item: dict[str, Any], kind: str, rec: str | None, service: str,
) -> Operation:  # fmt: skip
    op_id = str(op.get("operationId") or f"{method}_{path}")
    if kind == "custom" or rec is None:
        kind, rec = "custom", None
    names = {
        "list": plural(rec) if rec else "",
        "get": rec or "", "create": rec or "", "update": rec or "", "delete": rec or "",
    }  # fmt: skip
    basis = fastapi_tool(op_id, method, path) if m.by_op_id else op_id
    preferred = (
        tool_name(f"{kind}_{names[kind]}")
        if kind != "custom" and not m.by_op_id
        else tool_name(basis)
    )
    tool = preferred
    if tool in m.tools:
        tool = tool_name(basis)
    n = 2
    while tool in m.tools:
        tool, n = f"{tool_name(basis)[:60]}_{n}", n + 1
    m.tools.add(tool)
    out = Operation(tool, service, kind, method, path, op_id, rec, _description(op))
    params = m.doc.parameters(op, item)
    for p in params:
        if p.get("in") == "header" and str(p["name"]).lower() == "idempotency-key":
            out.idempotency_key = "idempotency_key"
    out.status, _node = m.doc.response(op)
    out.errors = error_schemas(m.doc, op)
    if rec is not None:
        record = records[rec]
        ref = {"$ref": f"#/components/schemas/{_escape(record.schema_name)}"}
        out.nulls = null_paths(m.doc, ref, record.fields)
        props, _ = FieldTypes(m.doc, {}).properties(m.doc.deref(ref)[0])
        if m.doc.deref(props["id"])[0].get("type") == "integer" if "id" in props else False:
            out.ids = "integer"  # a world's ids are text: answered as the number they hold
    if kind == "list" and rec is not None:
        _list_options(m, records[rec], params, out)
        out.items, out.envelope, out.total = m.envelope(_node)
    if kind == "custom":
        out.params = _custom_params(m, params, op)
        out.answer = answer(m.doc, _node) if _node is not None else None
    return out


# ---------------------------------------------------------------------------------------------
# Lists, custom arguments, create's required fields
# ---------------------------------------------------------------------------------------------
# A list's filters and pages from its query; a custom handler's arguments.


def _list_options(m: _Mapper, record: Record, params: list[dict[str, Any]], out: Operation) -> None:
    by_name = {snake(k): k for k in record.fields}
    cursor = offset = False
    for p in params:
        if p.get("in") != "query":
            continue
        pname = str(p["name"])
        low = pname.lower()
        schema, _ = m.doc.deref(p.get("schema"))
        if low in _CURSOR:
            cursor = True
            continue
        if low in _OFFSET:
            # a page *token* (Stripe's search `page`) is a cursor, a page number an offset
            cursor, offset = (True, offset) if schema.get("type") == "string" else (cursor, True)
            continue
        if low in _SIZE:
            default = schema.get("default")
            maximum = schema.get("maximum")
            minimum = schema.get("minimum")
            size = default if isinstance(default, int) and default > 0 else 10
            if isinstance(maximum, int) and maximum >= size:
                top = maximum
            elif isinstance(minimum, int) and not isinstance(minimum, bool):
                top = _NO_MAX  # bounded below only: any size the document allows
            else:
                top = max(size, 100)
            out.page = {"size": size, "max_size": top}
            if pname != "limit":
                out.args[pname] = "limit"
            if isinstance(minimum, int) and not isinstance(minimum, bool) and maximum is None:
                out.bounds["limit"] = {"minimum": minimum}  # and no maximum
            continue
        if low in _OFFSET and pname != "offset":
            out.args[pname] = "offset"
        if low in _NOT_FILTERS:
            continue
        described = {**schema, "description": p.get("description") or schema.get("description")}
        searched = _searched(pname, described, record)
        if searched is not None:
            field_, op = searched
            out.filter.setdefault(field_, [])
            if op not in out.filter[field_]:
                out.filter[field_].append(op)
            out.args[pname] = f"{field_}_{op}"
            if op == "like":  # anywhere in the text, as `ILIKE '%text%'`
                out.args[pname] += " %{}%"
            continue
        if low in ("sort", "order", "order_by", "orderby", "sort_by", "sortby"):
            out.sort = _sort_keys(schema, record)
            continue
        fname = by_name.get(snake(pname))
        decl = record.fields.get(fname) if fname else None
        if fname is None or decl is None or not isinstance(decl, str) or decl.startswith("list["):
            m.skipped.append(
                {
                    "method": out.method.upper(),
                    "path": out.path,
                    "why": f"query parameter {pname!r} is not a filter: no flat field of {record.name} is called that",
                    "part": "parameter",
                }
            )
            continue
        out.filter[fname] = _operators(m, schema, decl)
    if cursor or offset:
        page = out.page or {"size": 10, "max_size": 100}
        out.page = {"style": "cursor" if cursor else "offset", **page}
    elif out.page is not None:
        out.page = None  # a size alone pages nothing: the first page is all an agent could see


#: `limit`'s max_size where the document bounds it below only
_NO_MAX = 10_000  # the most a world's page may hold


def field_named(name: str, record: Record) -> str | None:
    """The flat text-or-scalar field of `record` that a parameter names: the name itself
    (`dag_id`), the name without the record's own before it (`pool_name` of a pool ->
    `name`, `backfill_id` -> `id`), or its last word (`variable_key` -> `key`)."""
    by_name = {snake(k): k for k in record.fields if isinstance(record.fields[k], str)}
    words = snake(name).split("_")
    own = record.name.split("_")
    candidates = [snake(name)]
    if words[: len(own)] == own:
        candidates.append("_".join(words[len(own) :]))
    candidates.append(words[-1])
    return next((by_name[c] for c in candidates if c in by_name), None)


def _searched(pname: str, schema: dict[str, Any], record: Record) -> tuple[str, str] | None:
    """(field, operator) for a query parameter that searches by text: `<field>_pattern` and
    `search`/`q` (on the record's name, title, label or key) are `like` where the
    description speaks of SQL LIKE or `%` (the text then matches anywhere, as `ILIKE
    '%text%'` does), else `contains`; `<field>_prefix_pattern` is `prefix`."""
    low = snake(pname)
    op = "prefix" if low.endswith("_prefix_pattern") else None
    if low.endswith("_pattern"):
        base = low[: -len("_prefix_pattern")] if op else low[: -len("_pattern")]
        fname = field_named(base, record)
    elif low in _SEARCH:
        fname = next((f for f in ("name", "title", "label", "key") if f in record.fields), None)
    else:
        return None
    if fname is None or str(record.fields.get(fname, "")).rstrip("?") != "str":
        return None
    text = f"{schema.get('description', '')}".lower()
    if op is None:
        op = "like" if "like" in text or "%" in text else "contains"
    return fname, op


def _natural_keys(records: dict[str, Record], operations: list[Operation]) -> None:
    """A record that declares no `id` and whose get names it by a path parameter that is one
    of its properties (`GET /pools/{pool_name}` of a pool with a `name`): that property is
    its id under `serve --rest` (`http: {key: name}`), and its answers leave `id` out."""
    for op in operations:
        if op.kind != "get" or op.record is None or records[op.record].key is not None:
            continue
        rec = records[op.record]
        names = re.findall(r"\{([^{}/]+)\}", op.path)
        if not names or "id" in rec.fields:
            continue
        key = field_named(names[-1], rec)
        if key is not None and key != "id":
            rec.key = key
    for op in operations:
        if op.record is not None and records[op.record].key is not None:
            op.key = records[op.record].key


def _operators(m: _Mapper, schema: dict[str, Any], decl: str) -> list[str]:
    ops: list[str] = []
    variants = [
        schema,
        *(m.doc.deref(v)[0] for v in [*(schema.get("anyOf") or []), *(schema.get("oneOf") or [])]),
    ]
    for v in variants:
        props = v.get("properties") or {}
        if v.get("type") == "array":
            ops.append("in")
        elif props and set(props) & set(_RANGE):
            ops.extend(o for o in _RANGE if o in props)
        elif v.get("type") in ("string", "integer", "number", "boolean") or "enum" in v:
            ops.append("eq")
    ops = list(dict.fromkeys(ops or ["eq"]))
    if decl.startswith(("bool", "ref[", "enum[")):
        ops = [o for o in ops if o in ("eq", "in")] or ["eq"]
    return ops


def _sort_keys(schema: dict[str, Any], record: Record) -> list[str]:
    values = schema.get("enum") or _items_enum(schema)
    keys = []
    for v in values:
        text = str(v)
        name = text.lstrip("+-").split(":")[0]
        if name in record.fields:
            keys.append(f"-{name}" if text.startswith("-") or text.endswith(":desc") else name)
    return list(dict.fromkeys(keys))


def _items_enum(schema: dict[str, Any]) -> list[Any]:
    items = schema.get("items")
    return list(items.get("enum") or []) if isinstance(items, dict) else []


def _annotation(m: _Mapper, node: Any) -> str:
    schema, _ = m.doc.deref(node)
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


def _custom_params(m: _Mapper, params: list[dict[str, Any]], op: dict[str, Any]) -> list[Param]:
    out: list[Param] = []
    seen = {"world", "clock"}

    def add(source: str, where: str, node: Any, required: bool, description: Any) -> None:
        name = identifier(source, "arg")
        while name in seen:
            name = f"{name}_{where}"
        seen.add(name)
        text = " ".join(str(description or "").split())
        out.append(Param(name, source, where, _annotation(m, node), required, text[:300]))

    for p in params:
        if p.get("in") in ("path", "query"):
            add(
                str(p["name"]),
                str(p["in"]),
                p.get("schema"),
                bool(p.get("required")) or p.get("in") == "path",
                p.get("description"),
            )
    media, body = m.doc.body(op)
    if media is not None:
        props, required = FieldTypes(m.doc, {}).properties(body)
        for pname, pnode in props.items():
            sub, _ = m.doc.deref(pnode)
            add(pname, "body", pnode, pname in required, sub.get("description"))
    return out


def _required_by_create(
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
        answered, _ = doc.deref({"$ref": f"#/components/schemas/{_escape(rec.schema_name)}"})
        props, must = FieldTypes(doc, {}).properties(answered)
        fields: dict[str, Decl] = {}
        for k, v in rec.fields.items():
            default = server_default(doc, props.get(k), v) if k in must else None
            if k == "id" or k in required or (isinstance(v, dict) and "default" in v):
                fields[k] = v
            elif default is not None:
                fields[k] = {"type": v, "default": default}
            else:
                fields[k] = optional(v)
        rec.fields = fields


# ---------------------------------------------------------------------------------------------
# Auth
# ---------------------------------------------------------------------------------------------
# Security schemes as principals; an operation's scopes.


def _principals(
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
