"""The document's contract under `faultbench serve --rest`: what an imported operation's
`http:` key says beyond its method and path, applied to requests and answers.

- `args: {pool_name_pattern: name_like}`: a request name that is another tool argument;
  `"name_like %{}%"` puts the request's value in a template (an `ILIKE '%text%'` search).
- `key: name`: the record's natural key is its id (`GET /pools/{pool_name}`): a create's
  `name` is also its `id`, and answers leave `id` out (the document declares none).
- `ids: integer`: the record's schema declares its `id` an integer: answered as the number
  the world's text id holds.
- `total: total_entries`: a list answers exactly `{**envelope, <items>: rows, <total>: every
  match}`, without the world's own `data`, `has_more`, `total` or `next_cursor`.
- `fill: {conf: {}}`: properties every answer carries that the record holds no field for (a
  free-form map, any JSON value), answered with that value.
- `text: [value]`: body properties the document takes as any JSON and the record holds as
  text: a value that is not text is held as its JSON text (Airflow's variables).
- `bounds: {limit: {minimum: 0}}`: the document's bounds of `limit` where the world's (1 to
  `max_size`) are narrower: `limit=0` answers no rows and the total, a limit above
  `max_size` with no declared maximum answers `max_size` rows.
- Refusals of arguments answer the status the document declares for them: 400 where it
  declares 400 (or none of these), else 422 (FastAPI's `HTTPValidationError`), else its
  `4XX` or `default`.
- A path the world does not serve is a JSON 404 in the error schema most operations declare
  for 404 (else `4XX`, else `default`); a method a path does not serve is a 405 with `Allow`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from faultbench.kernel import CallResult

from ._rest_errors import error_body, error_schema

if TYPE_CHECKING:
    from faultbench.kernel import World

_VALIDATION = ("400", "422")
_I64 = (-(2**63), 2**63 - 1)


def rename(http: dict[str, Any], kind: str, given: dict[str, Any]) -> dict[str, Any]:
    """A request's keys as the tool's arguments (`args:`, and `key:` on a create)."""
    renames = http.get("args") or {}
    out: dict[str, Any] = {}
    for k, v in given.items():
        target = renames.get(k)
        if target is None:
            out.setdefault(k, v)
            continue
        arg, _, template = str(target).partition(" ")
        if template and isinstance(v, str):
            v = template.replace("{}", v)
        out[arg] = v
    for name in http.get("text") or ():  # any JSON, held as its JSON text
        if name in out and not isinstance(out[name], str | None):
            out[name] = json.dumps(out[name], ensure_ascii=False)
    key = http.get("key")
    value = out.get(key) if key else None
    # an empty key names no path (`/pools/`): the world gives that record an id of its own
    if kind == "create" and isinstance(value, str | int) and str(value) and "id" not in out:
        out["id"] = str(value)
    return out


def unset_nulls(kind: str, args: dict[str, Any], props: dict[str, Any]) -> dict[str, Any]:
    """An update's `null` for a field that cannot be null is "leave it as it is" (a
    PATCH body of FastAPI's optional fields sends them as null)."""
    if kind != "update":
        return args
    return {k: v for k, v in args.items() if v is not None or _nullable(props.get(k) or {})}


def _nullable(schema: dict[str, Any]) -> bool:
    kinds = schema.get("type")
    variants = [*(schema.get("anyOf") or []), *(schema.get("oneOf") or [])]
    return (
        kinds == "null"
        or (isinstance(kinds, list) and "null" in kinds)
        or any(isinstance(v, dict) and v.get("type") == "null" for v in variants)
    )


def page_limit(http: dict[str, Any], page: Any, args: dict[str, Any]) -> int | None:
    """A limit the document allows outside the world's 1 to `max_size` (`bounds: {limit:
    {minimum: 0}}`, no maximum): the call asks for the nearest the world takes, and the
    answer keeps at most the limit asked for (returned); None for any other request.
    A list's integer past 64 bits (`offset=10**30`, which the API's own server takes) is
    the nearest a world holds: past every row all the same."""
    if page is not None:
        for k, v in args.items():
            if isinstance(v, int) and not isinstance(v, bool) and not _I64[0] <= v <= _I64[1]:
                args[k] = max(_I64[0], min(v, _I64[1]))
    bounds = (http.get("bounds") or {}).get("limit")
    limit = args.get("limit")
    if not isinstance(bounds, dict) or not isinstance(limit, int) or page is None:
        return None
    minimum, maximum = bounds.get("minimum"), bounds.get("maximum")
    if isinstance(minimum, int) and minimum <= limit < 1:
        args["limit"] = 1
        return limit
    if maximum is None and limit > page.max_size:
        args["limit"] = page.max_size
        return limit
    return None


def shape(http: dict[str, Any], kind: str, value: Any, cut: int | None) -> Any:
    """An answer in the document's shape (`key:` and `total:`); `value` as it is otherwise."""
    key = http.get("key")
    total_key = http.get("total")
    items = http.get("items")
    if kind == "list" and items and total_key:
        if isinstance(value, dict) and isinstance(value.get("data"), list):
            rows, total = value["data"], value.get("total", len(value["data"]))
        elif isinstance(value, list):
            rows, total = value, len(value)
        else:
            return value
        if cut is not None:
            rows = rows[: max(cut, 0)]
        value = {**(http.get("envelope") or {}), items: rows, total_key: total}
    if key:
        value = _without_id(value, items if kind == "list" else None)
    elif http.get("ids") == "integer":
        value = _int_ids(value, items if kind == "list" else None)
    return value


def filled(http: dict[str, Any], kind: str, value: Any) -> Any:
    """`fill:`: a record's answer given the properties it holds no field for."""
    fill = http.get("fill")
    if not fill or kind == "delete":
        return value
    items = http.get("items") if kind == "list" else None
    if kind == "list" and isinstance(value, dict) and isinstance(value.get("data"), list):
        items = "data"  # a page's rows, before the document's envelope
    return _each_row(value, items, lambda r: {**fill, **r})


def _each_row(value: Any, items: str | None, row: Callable[[dict[str, Any]], Any]) -> Any:
    """`row` applied to the record an answer is, or to each of its rows (at the top, or
    under the envelope key `items`)."""
    if isinstance(value, list):
        return [_each_row(v, None, row) for v in value]
    if not isinstance(value, dict):
        return value
    if items is not None and isinstance(value.get(items), list):
        return {**value, items: _each_row(value[items], None, row)}
    return row(value)


def _without_id(value: Any, items: str | None) -> Any:
    return _each_row(value, items, lambda r: {k: v for k, v in r.items() if k != "id"})


def _int_ids(value: Any, items: str | None) -> Any:
    """`ids: integer`: a record's id answered as the number its text holds."""

    def number(r: dict[str, Any]) -> dict[str, Any]:
        rid = r.get("id")
        return {**r, "id": int(rid)} if isinstance(rid, str) and rid.isdigit() else r

    return _each_row(value, items, number)


def refusal_status(http: dict[str, Any], status: int) -> int:
    """The status a refusal of arguments (faultbench's 400) answers: 400 where the document
    declares it, else 422 where it declares that (FastAPI), else 400."""
    errors = http.get("errors") or {}
    if status != 400 or "400" in errors:
        return status
    return 422 if "422" in errors else status


# ---------------------------------------------------------------------------------------------
# Paths and methods the world does not serve
# ---------------------------------------------------------------------------------------------


def _common_schema(world: World, status: int) -> dict[str, Any] | None:
    """The error schema most operations with `http:` declare for `status`."""
    seen: Counter[str] = Counter()
    by_text: dict[str, dict[str, Any]] = {}
    for op in world.spec.operations.values():
        if op.http is None:
            continue
        schema = error_schema(op.http, status)
        if schema is not None:
            text = repr(schema)
            seen[text] += 1
            by_text[text] = schema
    return by_text[seen.most_common(1)[0][0]] if seen else None


def unserved(world: World, status: int, message: str, headers: dict[str, str]) -> Response:
    """A JSON answer for a path or method the world does not serve, in the document's error
    schema where its operations declare one."""
    kind = "not_found" if status == 404 else "method_not_allowed"
    result = CallResult(
        call_id="", tool="", args={}, ok=False, text=message, error=message, error_kind=kind
    )
    schema = _common_schema(world, status)
    body = error_body(schema, status, result) if schema is not None else plain_error(kind, message)
    return JSONResponse(body, status_code=status, headers=headers)


def plain_error(kind: str | None, message: str | None, fault: str | None = None) -> dict[str, Any]:
    """faultbench's own error body, for an operation that declares none: `type` and
    `message`, and `fault` only when `--debug-meta` names it."""
    error: dict[str, Any] = {"type": kind, "message": message}
    if fault is not None:
        error["fault"] = fault
    return {"error": error}


def not_found_route(world: World) -> Route:
    """The last route: any other path is a JSON 404 (not Starlette's text)."""

    async def endpoint(request: Request) -> Response:
        message = f"{request.method} {request.url.path}: no operation of this world is here"
        return unserved(world, 404, message, {})

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    return Route("/{rest_of_path:path}", endpoint, methods=methods)


def method_not_allowed(world: World, request: Request, allowed: list[str]) -> Response:
    message = f"{request.method} {request.url.path}: expected one of {', '.join(allowed)}"
    return unserved(world, 405, message, {"Allow": ", ".join(allowed)})
