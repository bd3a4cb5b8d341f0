"""An OpenAPI document mapped to a world: records, operations, filters, pages, auth.

The rules (docs/IMPORT.md says them for users):

- An operation's record is the component schema its 2xx JSON answer names (the first named
  variant of a oneOf/anyOf answer); a list's is the item schema of the answer's array, found
  at the top or in one array property of an envelope (`data`, `items`, `results`...).
- By method and path: `GET /things` answering a list -> `list`; `POST /things` answering a
  thing -> `create`; `GET /things/{id}` -> `get`; `PUT|PATCH|POST /things/{id}` -> `update`;
  `DELETE /things/{id}` -> `delete` (of the record its path's other methods name). Anything
  else -> `custom`, with a generated handler whose answer the response schema accepts.
- A list's query parameters that name a field of its record become filters, and its paging
  parameters set `page:` (`_openapi_lists.py`); security schemes become principals and an
  operation's first security requirement gives its `scopes:` (`_openapi_args.py`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from typing import Any

from faultbench.kernel.lowlevel import plural

from ._document import Document, title_name
from ._errors import error_schemas
from ._mapping import Mapping, Operation, Record, schema_ref
from ._names import fastapi_tool, identifier, record_name, resource_words, snake, tool_name
from ._openapi_args import custom_params, required_by_create
from ._openapi_args import principals as principals_of
from ._openapi_lists import list_options, natural_keys
from ._shapes import Decl, FieldTypes, answer, null_paths

_ITEM_PATH = re.compile(r".*/\{[^/{}]+\}/?$")
_ENVELOPE = ("data", "items", "results", "records", "entries", "values", "value", "list", "content")
#: integer properties of a list's envelope that carry the count of every match
_TOTALS = ("total_entries", "total", "total_count", "totalcount", "total_results", "count")
_SNAKE_ID = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")
_WRITE_METHODS = ("put", "patch", "post")


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
            sch, _ = doc.deref(schema_ref(schema)) if schema else ({}, None)
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
    required_by_create(doc, records, operations, chosen)
    natural_keys(records, operations)
    principals = principals_of(doc, chosen, operations)
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
        ref = schema_ref(record.schema_name)
        out.nulls = null_paths(m.doc, ref, record.fields)
        props, _ = FieldTypes(m.doc, {}).properties(m.doc.deref(ref)[0])
        if m.doc.deref(props["id"])[0].get("type") == "integer" if "id" in props else False:
            out.ids = "integer"  # a world's ids are text: answered as the number they hold
        _unheld(m.doc, record, ref, op, kind, out)
    if kind == "list" and rec is not None:
        list_options(m.doc, m.skipped, records[rec], params, out)
        out.items, out.envelope, out.total = m.envelope(_node)
    if kind == "custom":
        out.params = custom_params(m.doc, params, op)
        out.headers = {p.source: p.name for p in out.params if p.where == "header"}
        out.answer = answer(m.doc, _node) if _node is not None else None
    return out


def _any_json(schema: dict[str, Any]) -> bool:
    """A schema that accepts any JSON value (`JsonValue: {}`, `{title: Value}`)."""
    shaping = ("type", "properties", "items", "enum", "const", "anyOf", "oneOf", "allOf", "$ref")
    return not any(k in schema for k in shaping)


def _unheld(
    doc: Document, record: Record, ref: dict[str, Any], op: dict[str, Any], kind: str,
    out: Operation,
) -> None:  # fmt: skip
    """What the record cannot hold as the document has it: a property every answer carries
    that is no field (a free-form map, any JSON value) is answered with the smallest value
    its schema accepts (`fill:`); a write's body property taking any JSON value that the
    record holds as text is held as its JSON text (`text:`, Airflow's variable `value`)."""
    props, required = FieldTypes(doc, {}).properties(doc.deref(ref)[0])
    fill = {
        name: answer(doc, props[name])
        for name in sorted(required)
        if name in props and identifier(name) not in record.fields and name != "id"
    }
    out.fill = fill
    if kind not in ("create", "update"):
        return
    _media, body = doc.body(op)
    given, _ = FieldTypes(doc, {}).properties(body)
    out.text = [
        name
        for name, node in given.items()
        if _any_json(doc.deref(node)[0])
        and str(record.fields.get(name, "")).removesuffix("?") == "str"
    ]
