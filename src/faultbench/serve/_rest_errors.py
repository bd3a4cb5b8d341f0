"""Error bodies in the API's own shape: a failed REST call answered with a body the
operation's declared error schema (`http: {errors: {404: ..., 4XX: ..., default: ...}}`,
written by `faultbench import openapi` from the document's error responses) accepts.

The schema is walked once per answer. Properties whose names say what they hold are filled
from the call's result: a message (`message`, `detail`, `error_description`...), a code
(`code`, `error_code`, `name`...: the faultbench error kind, or for an enum the value that
reads most like it), a category (`type`: `invalid_request_error`, `api_error`... chosen the
same way), the status (`status`, `status_code`, an integer `code`), a request id (the call
id) and, for a 429, `retry_after`. Nested objects that carry such properties (Stripe's and
OpenAI's `{"error": {...}}`) are filled too; every other required property gets the smallest
value its schema accepts; optional ones are left out. Of `oneOf`/`anyOf` variants the one
whose enums best fit the status is taken (PayPal's `error_404` for a 404). An operation
without a schema for the status answers faultbench's own `{"error": {type, message}}`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from faultbench.kernel import CallResult

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_MESSAGE = {"message", "msg", "detail", "errormessage", "errordescription", "errordetail"}
_CODE = {"code", "errorcode", "error", "name", "errortype", "reason", "kind"}
_TYPE = {"type", "category"}
_STATUS = {"status", "statuscode", "httpstatus", "httpcode", "httpstatuscode", "errornumber"}
_TITLE = {"title", "summary"}
_REQUEST = {"requestid", "debugid", "traceid", "correlationid", "instance"}
_RETRY = {"retryafter", "retryafterseconds"}
_SLOTS = _MESSAGE | _CODE | _TYPE | _STATUS | _TITLE | _REQUEST | _RETRY

# words an enum value that fits a status would contain (an enum is scored by them)
_HINTS: dict[int, tuple[str, ...]] = {
    400: ("invalid", "bad", "validation", "param", "argument", "unprocessable"),
    401: ("authentication", "unauthorized", "unauthenticated", "auth", "token"),
    403: ("permission", "forbidden", "scope", "insufficient", "authorized", "authorization"),
    404: ("not", "found", "missing", "resource", "unknown"),
    409: ("conflict", "idempotency", "duplicate", "concurrent"),
    429: ("rate", "limit", "limited", "too", "many", "throttled", "quota"),
    500: ("api", "server", "internal", "unavailable", "service", "timeout", "gateway"),
}
_CLIENT = ("invalid", "request", "client")
_REASONS = {
    400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
    409: "Conflict", 429: "Too Many Requests", 500: "Internal Server Error",
    502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
}  # fmt: skip


def error_schema(http: dict[str, Any], status: int) -> dict[str, Any] | None:
    """The schema declared for `status`: its own code, then its class (`4XX`), then
    `default`; None when the operation declares none of them."""
    errors = http.get("errors") or {}
    for key in (str(status), f"{str(status)[0]}XX", "default"):
        schema = errors.get(key)
        if isinstance(schema, dict):
            return schema
    return None


def error_body(schema: dict[str, Any], status: int, result: CallResult) -> Any:
    """A body `schema` accepts, telling what `result` says."""
    return _Filler(status, result).value(schema, "", depth=0)


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORDS.findall(text)]


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _types(schema: dict[str, Any]) -> list[str]:
    raw = schema.get("type")
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list):
        return [str(t) for t in raw]
    if "properties" in schema:
        return ["object"]
    if "items" in schema:
        return ["array"]
    return []


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    """Whether a scalar `value` passes `schema`'s type, enum and length checks (the
    properties the filler writes are scalars)."""
    if "enum" in schema and value not in schema["enum"]:
        return False
    if "const" in schema and value != schema["const"]:
        return False
    types = _types(schema)
    kinds = {str: "string", bool: "boolean", int: "integer", float: "number"}
    kind = kinds.get(type(value), "")
    if types and kind not in types and not (kind == "integer" and "number" in types):
        return False
    if isinstance(value, str):
        if len(value) > int(schema.get("maxLength", len(value))):
            return False
        if len(value) < int(schema.get("minLength", 0)):
            return False
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                return re.search(pattern, value) is not None
            except re.error:
                return True
    return True


class _Filler:
    def __init__(self, status: int, result: CallResult) -> None:
        self.status = status
        self.result = result
        self.kind = result.error_kind or "error"
        cls = 500 if status >= 500 else status
        hints = set(_HINTS.get(cls, ())) | set(_words(self.kind))
        self.hints = hints
        self.weak = set(_CLIENT) if status < 500 else set()

    # --- choosing -----------------------------------------------------------------------

    def score(self, value: Any) -> int:
        words = _words(str(value))
        return 2 * sum(w in self.hints for w in words) + sum(w in self.weak for w in words)

    def pick_enum(self, values: list[Any]) -> Any:
        best = max(range(len(values)), key=lambda i: (self.score(values[i]), -i))
        return values[best]

    def fit(self, schema: dict[str, Any]) -> int:
        """How well a variant's enums match the status (for oneOf/anyOf)."""
        total = 0
        for name, sub in (schema.get("properties") or {}).items():
            slot = _norm(str(name)) in _SLOTS
            if isinstance(sub, dict) and isinstance(sub.get("enum"), list) and slot:
                total += max((self.score(v) for v in sub["enum"]), default=0)
            if isinstance(sub, dict) and "properties" in sub:
                total += self.fit(sub)
        for part in schema.get("allOf") or []:
            if isinstance(part, dict):
                total += self.fit(part)
        return total

    # --- filling ------------------------------------------------------------------------

    def slot(self, name: str, schema: dict[str, Any]) -> Any:
        """The value of a property whose name says what it holds, or None."""
        key = _norm(name)
        if key not in _SLOTS:
            return None
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            if key in _MESSAGE | _CODE | _TYPE | _TITLE:
                return self.pick_enum([v for v in schema["enum"] if v is not None] or [None])
            return None
        types = _types(schema)
        r = self.result
        if key in _STATUS or (key == "code" and "string" not in types and types):
            candidates: list[Any] = [self.status, str(self.status)]
        elif key in _MESSAGE:
            candidates = [r.error or self.kind]
        elif key in _TITLE:
            candidates = [_REASONS.get(self.status, "Error")]
        elif key in _TYPE:
            category = "api_error" if self.status >= 500 else "invalid_request_error"
            candidates = [category, self.kind]
        elif key in _REQUEST:
            candidates = [r.call_id]
        elif key in _RETRY:
            candidates = [1, 1.0, "1"] if self.status == 429 else []
        else:
            candidates = [self.kind]
        for c in candidates:
            if _fits(c, schema):
                return c
        return None

    def value(self, schema: dict[str, Any], name: str, *, depth: int) -> Any:
        if depth > 12:
            return None
        if "const" in schema:
            return schema["const"]
        filled = self.slot(name, schema) if name else None
        if filled is not None:
            return filled
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return schema["enum"][0]
        variants = [
            v for v in [*(schema.get("oneOf") or []), *(schema.get("anyOf") or [])]
            if isinstance(v, dict)
        ]  # fmt: skip
        if variants:
            best = max(range(len(variants)), key=lambda i: (self.fit(variants[i]), -i))
            return self.value(_merge(schema, variants[best]), name, depth=depth + 1)
        parts = [p for p in schema.get("allOf") or [] if isinstance(p, dict)]
        if parts:
            merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            for p in parts:
                merged = _merge(merged, p)
            return self.value(merged, name, depth=depth + 1)
        types = _types(schema)
        if "object" in types:
            return self.obj(schema, depth)
        if "array" in types:
            raw = schema.get("items")
            items: dict[str, Any] = raw if isinstance(raw, dict) else {}
            count = int(schema.get("minItems", 0))
            if name and _norm(name) in _MESSAGE and (_says(items) or _free(items)):
                count = max(count, 1)  # FastAPI's `detail: [{loc, msg, type}]`: one error
            if count and _free(items):
                message = self.result.error or self.kind
                return [{"loc": [], "msg": message, "type": self.kind} for _ in range(count)]
            return [self.value(items, "", depth=depth + 1) for _ in range(count)]
        return _smallest(schema, types)

    def obj(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        props = schema.get("properties") or {}
        required = [str(k) for k in schema.get("required") or []]
        out: dict[str, Any] = {}
        for pname, sub in props.items():
            sub = sub if isinstance(sub, dict) else {}
            if pname in required or self.carries(pname, sub):
                out[pname] = self.value(sub, pname, depth=depth + 1)
        for pname in required:
            if pname not in out:  # required but not described: the smallest text
                out[pname] = self.slot(pname, {"type": "string"}) or ""
        return out

    def carries(self, name: str, schema: dict[str, Any]) -> bool:
        """Whether an optional property is worth writing: a slot the result fills, or an
        object holding a message (`{"error": {"message": ...}}`)."""
        if _norm(name) in _SLOTS and self.slot(name, schema) is not None:
            return True
        if _says(schema):
            return True
        items = schema.get("items")
        return (
            _norm(name) in _MESSAGE and isinstance(items, dict) and (_says(items) or _free(items))
        )


def _free(schema: dict[str, Any]) -> bool:
    """An object schema that names no property (any object passes it)."""
    return (
        _types(schema) == ["object"]
        and not schema.get("properties")
        and not any(
            k in schema for k in ("oneOf", "anyOf", "allOf", "required", "additionalProperties")
        )
    )


def _says(schema: dict[str, Any]) -> bool:
    """Whether an object schema holds a message property."""
    props = schema.get("properties")
    return isinstance(props, dict) and any(_norm(str(k)) in _MESSAGE for k in props)


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = {**a, **{k: v for k, v in b.items() if k not in ("properties", "required")}}
    for k in ("oneOf", "anyOf"):
        if k in a and k not in b:
            out.pop(k, None)
    props = {**(a.get("properties") or {}), **(b.get("properties") or {})}
    if props:
        out["properties"] = props
    required = [*(a.get("required") or []), *(b.get("required") or [])]
    if required:
        out["required"] = list(dict.fromkeys(required))
    return out


def _smallest(schema: dict[str, Any], types: list[str]) -> Any:
    """The smallest value of a scalar schema."""
    if "default" in schema and _fits(schema["default"], schema):
        return schema["default"]
    kind = next((t for t in types if t != "null"), "null" if "null" in types else "string")
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "number":
        return float(schema.get("minimum", 0))
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "x" * int(schema.get("minLength", 0))
