"""The REST face of a world (`faultbench serve --rest`): every operation with an `http:` key
answers its method and path, on the same loopback HTTP server as MCP and the control API.

A request becomes one call through `WorldCalls.settle`, the handler MCP's calls go through
(token, log line, after-call hooks, webhooks), so faults, the log, replay, hooks and the
control API see it as they see an MCP call: an injected timeout after commit is an HTTP 504
after the write, a journal that cannot write a 503 `journal_error`. Every request first
passes the HTTP guard of all routes (`_guard.py`: Host and Origin, header and body limits).

- Arguments: path parameters (the last one is the `id` of a get, update or delete), the query
  string (GET, DELETE) and the body (JSON, or `application/x-www-form-urlencoded` with
  bracketed keys as Stripe and other deepObject APIs send them: `address[city]=Paris`,
  `expand[]=customer`), text converted to the type the tool's schema gives. Keys the tool
  does not take are ignored (SDKs send options a world does not model, such as `expand`),
  and with `--debug-meta` named in the `X-Faultbench-Ignored` header.
- Answers: the operation's value as JSON with `http.status` (200 by default); a list's rows
  under `http.items` inside `http.envelope`. With `http.nulls`, null properties are left out
  but for the paths it lists (those the API requires even when unset). Failures: the fault's HTTP status (`http_503` is
  503, a timeout 504, a rate limit 429; 401/403 for auth, 409 for conflicts), 404 for a
  missing record, 400 for arguments or a
  handler's refusal. The body is in the error schema the operation declares for that status
  (`http: {errors:}`, see `_rest_errors.py`), else `{"error": {"type", "message"}}`. Nothing
  tells an injected fault from the real failure it stands for; with `--debug-meta`, the
  `X-Faultbench-Call` header carries the call id, `X-Faultbench-Fault` an injected fault's
  kind, and faultbench's own error body a `fault`. HEAD on a GET route answers as GET does,
  without the body.
- Limits (a 400 past them, before the world is called): `MAX_FIELDS` query and form pairs,
  `MAX_KEY_DEPTH` brackets in a key, indexes up to `MAX_INDEX`, JSON bodies nested at most
  `_stdio.MAX_DEPTH` deep.
- An `Idempotency-Key` header is the argument an operation's `idempotency: {key:}` names.
- Auth (worlds with `auth:`): the request's bearer token (or HTTP basic's user name, as
  Stripe's API keys travel; `_calls.token_of`, the parser MCP uses too) is the caller's
  token: 401 without one (or with an unreadable one), 403 without the scope.
- Webhooks (`--webhook-url`): the deliveries a request made due are POSTed after it, as after
  an MCP tool call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from faultbench.kernel import CallResult, CallStarted, FaultInjected
from faultbench.kernel.lowlevel import fault_headers, http_status

from . import _rest_contract as contract
from ._calls import CallFailure
from ._rest_errors import error_body, error_schema
from ._stdio import MAX_DEPTH, too_deep

if TYPE_CHECKING:
    from faultbench.kernel import World

    from ._server import WorldServer

_PARAM = re.compile(r"\{([^{}/]+)\}")
_BRACKETS = re.compile(r"\[([^\[\]]*)\]")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RESERVED = ("/mcp", "/faultbench")
_WITH_ID = ("get", "update", "delete")
#: the largest index a bracketed key may give (`a[999]=x`): a list of that many slots is built
MAX_INDEX = 999
#: the most brackets one key may hold (`a[b][c]...`), and the deepest a JSON body may nest
MAX_KEY_DEPTH = 32
#: the most key-value pairs a query string and a form body may hold together
MAX_FIELDS = 10_000


# ---------------------------------------------------------------------------------------------
# Requests -> arguments
# ---------------------------------------------------------------------------------------------


def nest(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Form or query pairs with bracketed keys as nested data: `a[b]=1` -> {a: {b: '1'}},
    `a[]=x&a[]=y` and `a[0]=x` -> {a: ['x', 'y']}.

    Bounded, so a short query cannot hold the event loop or its memory: a `ValueError` (a 400)
    for more than `MAX_FIELDS` pairs, a key with more than `MAX_KEY_DEPTH` brackets, or an
    index past `MAX_INDEX`."""
    if len(pairs) > MAX_FIELDS:
        raise ValueError(f"{len(pairs)} query and form fields; expected at most {MAX_FIELDS}")
    out: dict[str, Any] = {}
    for raw, value in pairs:
        head = raw.split("[", 1)[0]
        if raw.count("[", len(head)) > MAX_KEY_DEPTH:
            raise ValueError(
                f"the key {raw[:60]!r}... holds more than {MAX_KEY_DEPTH} brackets; expected "
                f"keys such as a[b][0] at most {MAX_KEY_DEPTH} deep"
            )
        path = [head, *_BRACKETS.findall(raw[len(head) :])]
        node: Any = out
        for i, part in enumerate(path):
            last = i == len(path) - 1
            nxt = path[i + 1] if not last else None
            if isinstance(node, list):
                if part == "" or not part.isdigit():
                    node.append(value if last else ([] if nxt in ("",) else {}))
                    node = node[-1]
                    continue
                idx = int(part) if len(part) <= 4 else MAX_INDEX + 1
                if idx > MAX_INDEX:
                    raise ValueError(
                        f"the key {raw[:60]!r} gives the index {part[:20]}; expected indexes "
                        f"from 0 to {MAX_INDEX}"
                    )
                while len(node) <= idx:
                    node.append(None)
                if last:
                    node[idx] = value
                else:
                    if node[idx] is None:
                        node[idx] = [] if nxt == "" else {}
                    node = node[idx]
                continue
            if last:
                if part in node and isinstance(node[part], list):
                    node[part].append(value)
                else:
                    node[part] = value
            else:
                if part not in node or not isinstance(node[part], dict | list):
                    node[part] = [] if nxt == "" or (nxt or "").isdigit() else {}
                node = node[part]
    return out


def _types(schema: dict[str, Any]) -> tuple[list[str], bool]:
    raw = schema.get("type")
    types = [raw] if isinstance(raw, str) else list(raw or [])
    return [t for t in types if t != "null"], "null" in types or (
        "enum" in schema and None in schema["enum"]
    )


def _or_null(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """(the schema, whether null is allowed) of an optional argument's `anyOf` [schema, null]
    (the kernel's `or_null`); any other schema as it is."""
    branches = schema.get("anyOf")
    if isinstance(branches, list) and {"type": "null"} in branches:
        rest = [b for b in branches if b != {"type": "null"}]
        if len(rest) == 1 and isinstance(rest[0], dict):
            return rest[0], True
    return schema, False


def coerce(value: Any, schema: dict[str, Any]) -> Any:
    """Text from a query or a form in the type `schema` asks for (JSON bodies pass as is)."""
    schema, or_null = _or_null(schema)
    types, nullable = _types(schema)
    nullable = nullable or or_null
    kind = types[0] if len(types) == 1 else None
    if isinstance(value, str):
        if value == "" and nullable:
            return None
        if kind == "integer" and re.fullmatch(r"-?\d+", value):
            return int(value)
        if kind == "number":
            try:
                return float(value)
            except ValueError:
                return value
        if kind == "boolean" and value in ("true", "false"):
            return value == "true"
        if kind == "array":
            return [coerce(value, schema.get("items") or {})]
        return value
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)  # JSON's 10043.0 is an integer (JSON Schema says so too)
    if isinstance(value, dict) and kind == "array":
        value = [value[k] for k in sorted(value, key=lambda k: int(k) if k.isdigit() else 0)]
    if isinstance(value, list):
        return [coerce(v, schema.get("items") or {}) for v in value]
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        # an object field's keys it does not take are ignored, as the top level's are
        return {
            k: coerce(v, props[k] if props else {})
            for k, v in value.items()
            if k in props or not props
        }
    return value


async def _arguments(
    request: Request, op: Any, schema: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    props = schema.get("properties") or {}
    given: dict[str, Any] = {}
    if request.method in ("GET", "DELETE"):
        given.update(nest(list(request.query_params.multi_items())))
    else:
        given.update(nest(list(request.query_params.multi_items())))
        body = await request.body()
        ctype = request.headers.get("content-type", "")
        if body and "json" in ctype:
            text = body.decode("utf-8")
            if too_deep(text)[0]:
                raise ValueError(
                    f"a JSON body nested deeper than {MAX_DEPTH} levels; expected the "
                    "operation's arguments as a JSON object"
                )
            data = json.loads(text)
            if isinstance(data, dict):
                given.update(data)
        elif body:
            form = parse_qsl(
                body.decode("utf-8"), keep_blank_values=True, max_num_fields=MAX_FIELDS
            )
            given.update(nest(form))
    names = _PARAM.findall(op.http["path"])
    params = request.path_params
    for i, name in enumerate(names):
        value = params.get(_route_name(name, i))
        if value is None:
            continue
        if op.kind in _WITH_ID and i == len(names) - 1:
            given["id"] = value
        else:
            given[_key(name, props)] = value
    for header, arg in (op.http.get("headers") or {}).items():  # header parameters
        if header in request.headers:
            given[arg] = request.headers[header]
    idem = getattr(op, "idempotency", None)
    header = request.headers.get("idempotency-key")
    if idem is not None and header:  # Stripe's and others' header: the declared key argument
        given[idem.key] = header
    given = contract.rename(op.http, op.kind, given)
    args: dict[str, Any] = {}
    ignored: list[str] = []
    for k, v in given.items():
        key = _key(k, props)
        if key in props:
            args[key] = coerce(v, props[key])
        else:
            ignored.append(k)
    return contract.unset_nulls(op.kind, args, props), ignored


def _key(name: str, props: dict[str, Any]) -> str:
    """The tool argument a request key names: as written, else as an identifier."""
    if name in props:
        return name
    alt = re.sub(r"\W+", "_", name).strip("_")
    return alt if alt in props else name


def _route_name(name: str, i: int) -> str:
    return name if _IDENT.fullmatch(name) else f"p{i}"


# ---------------------------------------------------------------------------------------------
# Results -> responses
# ---------------------------------------------------------------------------------------------


def status_of(result: CallResult) -> int:
    """The HTTP status of a failed call: the kernel's, per error kind (`http_status`: a fault
    kind's own `status`, then the kernel's errors)."""
    return http_status(result.error_kind)


def fault_headers_of(world: World, result: CallResult) -> dict[str, str]:
    """The headers the fault of a failed call answers with (a 429's `Retry-After`, a 401's
    `WWW-Authenticate`: the registry's `headers`), filled from its `FaultInjected`, found
    walking back from the end of the log to the call's start."""
    if result.ok or not result.fault or not result.call_id:
        return {}
    detail: dict[str, Any] = {}
    for ev in reversed(world.events):
        if isinstance(ev, FaultInjected) and ev.call_id == result.call_id:
            detail = ev.detail
            break
        if isinstance(ev, CallStarted) and ev.call_id == result.call_id:
            break
    return fault_headers(result.fault, detail)


def without_nulls(value: Any, keep: frozenset[str], prefix: str) -> Any:
    """`value` without its null properties, but for the paths in `keep` (`a`, `a.b`, `a[].b`;
    the rows of a list answer are at the top)."""
    if isinstance(value, list):
        return [without_nulls(v, keep, prefix) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for k, v in value.items():
        path = f"{prefix}{k}"
        if v is None and path not in keep:
            continue
        out[k] = without_nulls(v, keep, path + ("[]." if isinstance(v, list) else "."))
    return out


def respond(
    op: Any,
    result: CallResult,
    ignored: list[str],
    floor: int | None = None,
    world: World | None = None,
    *,
    debug: bool = False,
) -> Response:
    """`result` as the API answers it (`world`: whose log holds a fault's detail): by default
    exactly as the failure it stands for would (status, body, headers such as Retry-After),
    with nothing that names faultbench or the fault; with `debug` (`--debug-meta`),
    `X-Faultbench-Call` and `X-Faultbench-Fault` headers and a `fault` in faultbench's own
    error body."""
    headers = {"X-Faultbench-Call": result.call_id} if result.call_id and debug else {}
    if ignored and debug:
        # percent-encoded: a header is latin-1, and request keys are any text
        headers["X-Faultbench-Ignored"] = ",".join(quote(k, safe="[]") for k in sorted(ignored))[
            :500
        ]
    if not result.ok:
        status = contract.refusal_status(op.http, status_of(result))
        schema = error_schema(op.http, status)
        if result.fault and debug:
            headers["X-Faultbench-Fault"] = result.fault
        if result.fault and world is not None:  # Retry-After, WWW-Authenticate: as a real API
            headers.update(fault_headers_of(world, result))
        body = (
            error_body(schema, status, result)
            if schema is not None
            else contract.plain_error(result.error_kind, result.error, result.fault if debug else None)
        )  # fmt: skip
        return JSONResponse(body, status_code=status, headers=headers)
    value = result.value
    if "nulls" in op.http:  # unset properties left out, but for those the API requires
        keep = frozenset(op.http["nulls"])
        if isinstance(value, dict) and isinstance(value.get("data"), list) and op.kind == "list":
            value = {**value, "data": without_nulls(value["data"], keep, "")}  # a page's rows
        else:
            value = without_nulls(value, keep, "")
    value = contract.filled(op.http, op.kind, value)
    if op.http.get("total") or op.http.get("key") or op.http.get("ids"):  # the document's shape
        value = contract.shape(op.http, op.kind, value, floor)
        status = int(op.http.get("status", 200))
        return JSONResponse(value, status_code=status, headers=_located(op, value, headers))
    items = op.http.get("items")
    envelope = dict(op.http.get("envelope") or {})
    if "url" in envelope:  # a list object names where it was read (Stripe's SDK pages on it)
        envelope["url"] = op.http["path"]
    if items and isinstance(value, list):
        value = {**envelope, items: value}
    elif items and isinstance(value, dict) and isinstance(value.get("data"), list):
        page = dict(value)  # a paginated list: rows, has_more, next_cursor
        value = {**envelope, **page, items: page.pop("data")}
    status = int(op.http.get("status", 200))
    if status == 204:  # No Content: the answer has no body
        return Response(status_code=204, headers=headers)
    return JSONResponse(value, status_code=status, headers=_located(op, value, headers))


# ---------------------------------------------------------------------------------------------
# Routes
# ---------------------------------------------------------------------------------------------

Endpoint = Callable[[Request], Coroutine[Any, Any, Response]]


def _endpoint(server: WorldServer, by_method: dict[str, Any]) -> Endpoint:
    world = server.world
    if "GET" in by_method and "HEAD" not in by_method:
        by_method = {**by_method, "HEAD": by_method["GET"]}  # a GET without its body

    async def endpoint(request: Request) -> Response:
        op = by_method.get(request.method)
        if op is None:
            return contract.method_not_allowed(world, request, sorted(by_method))
        schema = world.tool(op.name).input_schema
        try:
            args, ignored = await _arguments(request, op, schema)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            # refused before the world is called (no call id), in the API's error schema
            # like any other 400
            return respond(
                op, _refused(op.name, f"unreadable request: {exc}"), [], debug=server.debug
            )
        floor = contract.page_limit(op.http, op.page, args)
        # the one handler of calls (`WorldCalls.settle`): token, log line, after-call hooks,
        # webhook deliveries, as for an MCP call
        outcome = await server.settle(world, op.name, args, request=request)
        if isinstance(outcome, CallFailure):
            outcome = _refused(op.name, outcome.message, outcome.kind)
        return respond(op, outcome, ignored, floor, world, debug=server.debug)

    return endpoint


def _refused(tool: str, message: str, kind: str = "invalid_arguments") -> CallResult:
    """A call that did not run (no call id) as a failed result, answered like one."""
    return CallResult(
        call_id="", tool=tool, args={}, ok=False, text=message, error=message, error_kind=kind
    )


def rest_routes(server: WorldServer) -> list[Route]:
    """One route per path of the world's operations that have `http:`, in file order."""
    world = server.world
    by_path: dict[str, dict[str, Any]] = {}
    for op in world.spec.operations.values():
        if op.http is None or op.http["path"].startswith(_RESERVED):
            continue
        by_path.setdefault(op.http["path"], {}).setdefault(op.http["method"], op)
    routes = []
    for path, methods in by_path.items():
        names = _PARAM.findall(path)
        route_path = path
        for i, name in enumerate(names):
            route_path = route_path.replace("{" + name + "}", "{" + _route_name(name, i) + "}", 1)
        # every method reaches the endpoint, which answers one it does not serve with 405
        routes.append(Route(route_path, _endpoint(server, methods), methods=_ALL_METHODS))
    # a fixed segment beats a parameter (`/v1/charges/search` before `/v1/charges/{charge}`)
    routes.sort(key=lambda r: [s.startswith("{") for s in r.path.split("/")])
    return [*routes, contract.not_found_route(world)] if routes else routes


_ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"]


def _located(op: Any, value: Any, headers: dict[str, str]) -> dict[str, str]:
    """A create's answer names where the new record is read back (`Location`)."""
    key = op.http.get("key") or "id"
    if op.kind == "create" and isinstance(value, dict) and value.get(key) is not None:
        base = op.http["path"].rstrip("/")
        return {**headers, "Location": f"{base}/{quote(str(value[key]), safe='')}"}
    return headers
