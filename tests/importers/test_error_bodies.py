"""Error bodies in each API's declared error schema: for every operation of a corpus document
that declares error responses, the body `serve --rest` would send for each faultbench failure
(404, 409, 400, 401, 403, 429, 5xx, 504) is valid, by `jsonschema`, against the schema the
document itself declares for that status (its `$ref`s resolved in the whole document), and
carries the failure's message or code where the schema has room for them. The small
documents run here; every document with error responses runs under FAULTBENCH_SLOW=1."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from faultbench.importers import import_openapi
from faultbench.kernel import CallResult
from faultbench.serve._rest import status_of
from faultbench.serve._rest_errors import error_body, error_schema

from .conftest import SLOW, corpus

FAILURES = [
    "invalid_arguments", "unauthorized", "insufficient_scope", "not_found", "conflict",
    "rate_limit", "http_500", "http_503", "timeout",
]  # fmt: skip
SMALL = ["paypal_invoicing_v2.json", "discord_openapi.json", "box_openapi.json"]
LARGE = ["adyen_management_v3.json", "xero_accounting.yaml", "openai_openapi.yaml"]


def _declared(data: dict[str, Any], op: dict[str, Any], status: int) -> Any:
    """The document's own schema for `status` of `op` (code, class, default: the first with
    a JSON body), refs absolute."""
    responses = {str(k).upper(): v for k, v in (op.get("responses") or {}).items()}
    for key in (str(status), f"{str(status)[0]}XX", "DEFAULT"):
        if key in responses:
            resp = responses[key]
            while "$ref" in resp:
                resp = _pointer(data, resp["$ref"])
            content = resp.get("content") or {}
            media = next((m for m in content if "json" in m), None)
            if media is None:
                continue
            text = json.dumps(content[media].get("schema", {}))
            return json.loads(text.replace('"#/', '"urn:doc#/'))
    return None


def _pointer(data: Any, ref: str) -> Any:
    for part in ref.removeprefix("#/").split("/"):
        data = data[part.replace("~1", "/").replace("~0", "~")]
    return data


@pytest.mark.parametrize("name", SMALL + (LARGE if SLOW else []))
def test_error_bodies_are_valid_against_the_documents_declared_schema(name, tmp_path):
    import yaml

    path = corpus(name)
    text = path.read_text()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data = json.loads(text) if name.endswith(".json") else yaml.load(text, Loader=loader)
    registry = Registry().with_resource(
        "urn:doc", Resource.from_contents(data, default_specification=DRAFT202012)
    )
    imported = import_openapi(path, handlers_module="handlers")
    world = yaml.load(imported.world, Loader=loader)
    ops = {t: o for s in world["services"].values() for t, o in (s.get("operations") or {}).items()}
    checked = told = 0
    for mapped in imported.report["mapped"]:
        http = ops[mapped["tool"]].get("http")
        if http is None:  # served over MCP only
            continue
        raw = data["paths"][mapped["path"]][mapped["method"].lower()]
        for kind in FAILURES:
            message = f"{kind}: thing 'th_1' is not there"
            result = CallResult("c9", mapped["tool"], {}, False, message, error=message,
                                error_kind=kind)  # fmt: skip
            status = status_of(result)
            schema = error_schema({**http, "errors": {
                str(k): v for k, v in (http.get("errors") or {}).items()}}, status)  # fmt: skip
            declared = _declared(data, raw, status)
            assert (schema is None) == (declared is None), (mapped["path"], status)
            if schema is None:
                continue
            body = error_body(schema, status, result)
            errors = list(Draft202012Validator(declared, registry=registry).iter_errors(body))
            assert errors == [], (mapped["path"], status, body, errors[0].message)
            checked += 1
            told += message in json.dumps(body) or kind in json.dumps(body)
    assert checked > 0
    # PayPal's schemas fix their messages by enum; the others have room for ours
    assert told > (0 if name.startswith("paypal") else checked // 2)


def test_an_enum_slot_takes_the_value_that_reads_like_the_failure():
    schema = {
        "type": "object",
        "required": ["error"],
        "properties": {"error": {
            "type": "object", "required": ["type"],
            "properties": {
                "type": {"enum": ["api_error", "card_error", "idempotency_error",
                                  "invalid_request_error"]},
                "code": {"type": "string"},
                "message": {"type": "string"},
                "payment_intent": {"type": "object"},
            },
        }},
    }  # fmt: skip

    def body(kind: str, status: int) -> Any:
        result = CallResult("c1", "t", {}, False, "m", error="m", error_kind=kind)
        return error_body(schema, status, result)["error"]

    assert body("not_found", 404) == {"type": "invalid_request_error", "code": "not_found",
                                      "message": "m"}  # fmt: skip
    assert body("idempotency_conflict", 409)["type"] == "idempotency_error"
    assert body("http_503", 503)["type"] == "api_error"
    assert body("timeout", 504)["type"] == "api_error"


def test_one_of_picks_the_variant_for_the_status():
    variants = [
        {"type": "object", "properties": {"name": {"enum": [n]}, "message": {"enum": [m]}}}
        for n, m in [("INVALID_REQUEST", "bad"), ("RESOURCE_NOT_FOUND", "gone"),
                     ("INTERNAL_SERVER_ERROR", "oops")]
    ]  # fmt: skip
    schema = {"oneOf": variants}
    result = CallResult("c1", "t", {}, False, "m", error="m", error_kind="not_found")
    assert error_body(schema, 404, result) == {"name": "RESOURCE_NOT_FOUND", "message": "gone"}
    result = CallResult("c1", "t", {}, False, "m", error="m", error_kind="timeout")
    assert error_body(schema, 504, result)["name"] == "INTERNAL_SERVER_ERROR"
