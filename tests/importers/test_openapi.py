"""`faultbench import openapi`: documents in, world files out that the loader reads, whose
tools behave as the mapping says (tests/importers/README: small documents here, the whole
corpus with FAULTBENCH_SLOW=1 in test_corpus.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from faultbench import load_world
from faultbench.cli import main
from faultbench.importers import ImportProblem, import_openapi

from .conftest import corpus

# A small API of the usual shape, flat enough for the loader as it is before issue 21.
THINGS: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Things API", "version": "1"},
    "paths": {
        "/v1/things": {
            "get": {
                "operationId": "listThings",
                "summary": "List things.",
                "parameters": [
                    {"name": "status", "in": "query", "schema": {"$ref": "#/components/schemas/Status"}},
                    {"name": "owner", "in": "query", "schema": {"type": "string"}},
                    {"name": "color", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {"application/json": {"schema": {
                            "type": "object",
                            "properties": {
                                "data": {"type": "array", "items": {"$ref": "#/components/schemas/Thing"}},
                                "has_more": {"type": "boolean"},
                            },
                        }}},
                    }
                },
            },
            "post": {
                "operationId": "createThing",
                "description": "Create a thing.",
                "requestBody": {"content": {"application/json": {"schema": {
                    "type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"}, "count": {"type": "integer"}},
                }}}},
                "responses": {"201": {"description": "made", "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/Thing"}}}}},
            },
        },
        "/v1/things/{thing}": {
            "parameters": [{"name": "thing", "in": "path", "required": True, "schema": {"type": "string"}}],
            "get": {"operationId": "getThing", "responses": {"200": {"description": "ok", "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}}}},
            "patch": {"operationId": "updateThing", "responses": {"200": {"description": "ok", "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}}}},
            "delete": {"operationId": "deleteThing", "responses": {"204": {"description": "gone"}}},
        },
        "/v1/things/{thing}/archive": {
            "post": {
                "operationId": "archiveThing",
                "summary": "Archive a thing.",
                "parameters": [
                    {"name": "thing", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "reason", "in": "query", "schema": {"type": "string", "enum": ["old", "broken"]}},
                ],
                "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {
                    "type": "object", "required": ["archived", "at", "kind"],
                    "properties": {
                        "archived": {"type": "boolean"},
                        "at": {"type": "string", "format": "date-time"},
                        "kind": {"type": "string", "enum": ["archive"]},
                        "note": {"type": "string"},
                    },
                }}}}},
            }
        },
    },
    "components": {"schemas": {
        "Status": {"type": "string", "enum": ["new", "used"]},
        "Thing": {
            "type": "object",
            "required": ["id", "name", "status", "object"],
            "properties": {
                "id": {"type": "string"},
                "object": {"type": "string", "enum": ["thing"]},
                "name": {"type": "string", "description": "What it is called."},
                "count": {"type": "integer", "nullable": True},
                "status": {"$ref": "#/components/schemas/Status"},
                "created_at": {"type": "string", "format": "date-time", "readOnly": True},
                "weight": {"type": "number"},
                "meta": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
    }},
}  # fmt: skip


def _write(tmp_path: Path, doc: dict[str, Any], name: str = "things.json") -> Path:
    path = tmp_path / name
    if name.endswith(".json"):
        path.write_text(json.dumps(doc))
    else:
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _import(tmp_path: Path, spec: Path, *extra: str) -> tuple[Path, dict[str, Any]]:
    world = tmp_path / "world.yaml"
    assert main(["import", "openapi", str(spec), "-o", str(world), *extra]) == 0
    return world, yaml.safe_load(world.read_text())


# ---------------------------------------------------------------------------------------------
# A small document, end to end
# ---------------------------------------------------------------------------------------------


def test_a_small_api_becomes_a_world_whose_tools_behave_as_its_paths(tmp_path, capsys):
    world_file, data = _import(tmp_path, _write(tmp_path, THINGS))
    ops = {n: op for svc in data["services"].values() for n, op in svc["operations"].items()}
    assert {k: (v["kind"], v.get("record")) for k, v in ops.items()} == {
        "list_things": ("list", "thing"),
        "create_thing": ("create", "thing"),
        "get_thing": ("get", "thing"),
        "update_thing": ("update", "thing"),
        "delete_thing": ("delete", "thing"),
        "archive_thing": ("custom", None),
    }
    # query parameters naming fields are filters; `color` names none and is reported
    assert ops["list_things"]["filter"] == ["status"]
    thing = data["services"]["things"]["records"]["thing"]
    # required in answers, not by the create: the server's value, the first of its enum
    assert thing["status"] == {"type": "enum[new, used]", "default": "new"}
    assert thing["name"] == "str"  # required by create and by the answer
    assert thing["count"] == "int?"  # nullable
    assert thing["created_at"] == "datetime?"  # readOnly: set by the server
    assert thing["object"] == {"type": "enum[thing]", "default": "thing"}
    assert "meta" not in thing  # a free-form map has no field type
    text = world_file.read_text()
    assert "# GET /v1/things (listThings)" in text
    assert "# DELETE /v1/things/{thing} (deleteThing)" in text
    assert ops["archive_thing"]["handler"] == "world_handlers.archive_thing"

    assert main(["check", str(world_file)]) == 0
    assert "OK:" in capsys.readouterr().out

    world = load_world(world_file)
    made = world.call("create_thing", {"name": "lamp", "status": "new"})
    assert made.ok, made.error
    thing_id = made.value["id"]
    assert world.call("get_thing", {"id": thing_id}).value["name"] == "lamp"
    assert world.call("update_thing", {"id": thing_id, "status": "used"}).ok
    listed = world.call("list_things", {"status": "used"})
    assert [r["id"] for r in _rows(listed.value)] == [thing_id]
    assert world.call("delete_thing", {"id": thing_id}).ok
    assert world.things.get(thing_id) is None


def _rows(value: Any) -> list[dict[str, Any]]:
    return value["data"] if isinstance(value, dict) and "data" in value else value


def test_a_custom_operation_answers_what_its_response_schema_accepts(tmp_path):
    world_file, _ = _import(tmp_path, _write(tmp_path, THINGS))
    world = load_world(world_file)
    tool = world.tool("archive_thing")
    assert set(tool.input_schema["properties"]) == {"thing", "reason"}
    assert tool.input_schema["required"] == ["thing"]
    assert (
        tool.input_schema["properties"]["reason"].get("enum")
        or "anyOf" in tool.input_schema["properties"]["reason"]
    )
    assert "Archive a thing." in tool.description
    result = world.call("archive_thing", {"thing": "t1", "reason": "old"})
    assert result.ok, result.error
    schema = THINGS["paths"]["/v1/things/{thing}/archive"]["post"]["responses"]["200"]
    jsonschema.validate(result.value, schema["content"]["application/json"]["schema"])


def test_json_and_yaml_31_give_the_same_world_byte_for_byte(tmp_path):
    doc31 = json.loads(json.dumps(THINGS))
    doc31["openapi"] = "3.1.0"
    count = doc31["components"]["schemas"]["Thing"]["properties"]["count"]
    count.pop("nullable")
    count["type"] = ["integer", "null"]
    a = import_openapi(_write(tmp_path, THINGS, "api.json"))
    b = import_openapi(_write(tmp_path, doc31, "api.yaml"))
    body = lambda text: text.split("\n", 1)[1].replace("3.1.0", "3.0.3")  # noqa: E731
    assert body(a.world) == body(b.world)
    assert a.handlers == b.handlers.replace("api.yaml", "api.json")
    again = import_openapi(_write(tmp_path, THINGS, "api.json"))
    assert (again.world, again.handlers, again.report) == (a.world, a.handlers, a.report)


def test_the_coverage_report_says_what_was_mapped_and_what_was_not(tmp_path, capsys):
    spec = _write(tmp_path, THINGS)
    world = tmp_path / "w.yaml"
    assert main(["import", "openapi", str(spec), "-o", str(world), "--json"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["operations"] == {
        "in_document": 6, "imported": 6, "crud": 5, "custom": 1, "skipped": 0,
    }  # fmt: skip
    assert report["schemas"] == {"in_document": 2, "records": 1}
    assert {"where": "thing.meta", "why": "a free-form map (no declared properties)"} in report[
        "fields_skipped"
    ]
    assert any("'color'" in p["why"] for p in report["parameters_not_mapped"])
    assert {"method": "POST", "path": "/v1/things/{thing}/archive", "operation_id": "archiveThing",
            "tool": "archive_thing", "kind": "custom"} in report["mapped"]  # fmt: skip
    assert "1 records, 6 tools (5 CRUD, 1 custom)" in err


def test_tags_and_paths_select_a_slice(tmp_path):
    spec = _write(tmp_path, THINGS)
    only = import_openapi(spec, paths=["/v1/things/{thing}"])
    tools = [m["tool"] for m in only.report["mapped"]]
    assert tools == ["get_thing", "update_thing", "delete_thing", "archive_thing"]
    glob = import_openapi(spec, paths=["/v1/things/*/archive"])
    assert [m["tool"] for m in glob.report["mapped"]] == ["archive_thing"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"swagger": "2.0", "paths": {}}', "expected an OpenAPI 3.0 or 3.1 document"),
        ("- a\n- list\n", "a mapping at the top"),
        ("{not json", "not valid JSON"),
        ("a: [unclosed\n", "not valid YAML"),
    ],
)
def test_a_document_that_is_not_openapi_3_is_one_clear_line(tmp_path, capsys, content, message):
    spec = tmp_path / "bad.yaml"
    spec.write_text(content)
    assert main(["import", "openapi", str(spec), "-o", str(tmp_path / "w.yaml")]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    with pytest.raises(ImportProblem):
        import_openapi(spec)


def test_a_missing_file_and_an_empty_selection_are_errors(tmp_path, capsys):
    assert main(["import", "openapi", str(tmp_path / "nope.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    spec = _write(tmp_path, THINGS)
    assert main(["import", "openapi", str(spec), "--tags", "nothing"]) == 2
    assert "no operation selected (of 6)" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# Composition: allOf merged, oneOf/anyOf as nullable, id-or-object, or reported
# ---------------------------------------------------------------------------------------------


def test_allof_is_merged_and_polymorphism_is_reported(tmp_path):
    doc = json.loads(json.dumps(THINGS))
    schemas = doc["components"]["schemas"]
    schemas["Base"] = {
        "type": "object",
        "required": ["label"],
        "properties": {"label": {"type": "string"}},
    }
    schemas["Thing"] = {"allOf": [{"$ref": "#/components/schemas/Base"}, schemas["Thing"]]}
    props = schemas["Thing"]["allOf"][1]["properties"]
    props["shape"] = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    props["unset"] = {
        "anyOf": [{"type": "string", "maxLength": 5}, {"type": "string", "enum": [""]}]
    }
    props["owner"] = {"anyOf": [{"type": "string"}, {"$ref": "#/components/schemas/Thing"}]}
    imported = import_openapi(_write(tmp_path, doc))
    thing = yaml.safe_load(imported.world)["services"]["things"]["records"]["thing"]
    # required by the answer, not by the create: the smallest value the server could set
    assert thing["label"] == {"type": "str", "default": ""}
    assert thing["unset"] == "str?"  # Stripe's "send '' to unset" variant
    assert thing["owner"] == "ref[thing]?"  # an id or the object: a reference
    assert "shape" not in thing
    why = {s["where"]: s["why"] for s in imported.report["fields_skipped"]}
    assert why["thing.shape"].startswith("polymorphic (oneOf/anyOf of 2 shapes")


def test_references_outside_the_document_are_reported_not_fetched(tmp_path):
    doc = json.loads(json.dumps(THINGS))
    doc["components"]["schemas"]["Thing"]["properties"]["remote"] = {"$ref": "other.yaml#/X"}
    imported = import_openapi(_write(tmp_path, doc))
    assert (
        "$ref 'other.yaml#/X' points outside the document; not followed" in imported.report["notes"]
    )


def test_a_path_keyed_with_a_query_or_fragment_is_served_over_mcp_only(tmp_path, capsys):
    # Box keys operations `/files/{id}#add_shared_link`, OpenAI `/responses?beta=true`:
    # HTTP routing cannot tell them from their plain path, so they get no http: key
    doc = json.loads(json.dumps(THINGS))
    doc["paths"]["/v1/things#archive"] = {
        "post": {"operationId": "ArchiveAll", "responses": {"200": {"description": "ok"}}}
    }
    doc["paths"]["/v1/things?beta=true"] = {
        "get": {"operationId": "BetaThings", "responses": {"200": {"description": "ok"}}}
    }
    world, data = _import(tmp_path, _write(tmp_path, doc))
    ops = {n: op for svc in data["services"].values() for n, op in svc["operations"].items()}
    mcp_only = {n for n, op in ops.items() if "http" not in op}
    assert len(mcp_only) == 2
    assert all("http" in op for n, op in ops.items() if n not in mcp_only)
    notes = import_openapi(_write(tmp_path, doc)).report["notes"]
    assert sum("served over MCP only" in n for n in notes) == 2
    assert main(["check", str(world)]) == 0
    capsys.readouterr()


# ---------------------------------------------------------------------------------------------
# Small real documents
# ---------------------------------------------------------------------------------------------


def test_petstore_pets_orders_and_users_with_nested_fields_and_oauth_scopes(tmp_path):
    world_file, data = _import(tmp_path, corpus("swagger_petstore_v3.yaml"))
    pet = data["services"]["pet"]["records"]["pet"]
    assert pet["status"] == "enum[available, pending, sold]?"
    assert pet["photoUrls"] == "list[str]"
    assert pet["category"] == {"object": {"id": "int?", "name": "str?"}, "optional": True}
    assert pet["tags"] == {"list": {"object": {"id": "int?", "name": "str?"}}, "optional": True}
    assert data["services"]["store"]["records"]["order"]["shipDate"] == "datetime?"
    ops = data["services"]["pet"]["operations"]
    assert ops["create_pet"]["kind"] == "create"
    assert ops["list_pets"] | {"description": ""} == {
        "kind": "list", "record": "pet", "filter": ["status"],
        "scopes": ["write:pets", "read:pets"], "description": "",
        # Pet.id is an integer (int64): answered as a number under --rest
        "http": {"method": "GET", "path": "/pet/findByStatus", "ids": "integer", "nulls": []},
    }  # fmt: skip
    assert ops["delete_pet"]["kind"] == "delete"
    assert ops["upload_file"]["kind"] == "custom"  # answers an ApiResponse, not a pet
    assert data["auth"] == {
        "principals": {
            "petstore_auth": {"scopes": ["write:pets", "read:pets"]},
            # GET /pet/{petId} admits an api_key or petstore_auth with both scopes
            "api_key": {"scopes": ["write:pets", "read:pets"]},
        }
    }
    assert main(["check", str(world_file)]) == 0


def test_every_custom_answer_of_small_documents_is_schema_valid(tmp_path):
    from faultbench.importers._document import Document, read_document

    for name in ("swagger_petstore_v3.yaml", "oai_tictactoe.json", "oai_uspto.yaml"):
        spec = corpus(name)
        imported = import_openapi(spec)
        namespace: dict[str, Any] = {}
        exec(compile(imported.handlers, name, "exec"), namespace)
        doc = Document(read_document(spec))
        for m in imported.report["mapped"]:
            if m["kind"] != "custom":
                continue
            op = doc.data["paths"][m["path"]][m["method"].lower()]
            _status, schema = doc.response(op)
            value = _call(namespace[m["tool"]])
            if schema is not None:
                resolved = _resolve(doc, schema)
                jsonschema.validate(value, resolved)


def _call(func: Any) -> Any:
    kw = dict.fromkeys(
        func.__code__.co_varnames[2 : func.__code__.co_argcount + func.__code__.co_kwonlyargcount]
    )
    return func(None, None, **kw)


def _resolve(doc: Any, schema: Any) -> Any:
    """The schema with its local refs inlined, for jsonschema (documents here have no cycles)."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            target, _ = doc.lookup(schema["$ref"])
            return _resolve(doc, target)
        out = {k: _resolve(doc, v) for k, v in schema.items()}
        if out.get("nullable") is True and isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        return out
    if isinstance(schema, list):
        return [_resolve(doc, v) for v in schema]
    return schema


def test_tictactoe_per_operation_security_and_a_board_of_enums(tmp_path):
    imported = import_openapi(corpus("oai_tictactoe.json"))
    data = yaml.safe_load(imported.world)
    # each operation admits an API key / bearer token OR an OAuth2 token with a scope: the
    # scope-less schemes' principals hold the scopes of the operations they admit
    assert data["auth"]["principals"] == {
        "defaultApiKey": {"scopes": ["board:read"]},
        "bearerHttpAuthentication": {"scopes": ["board:read", "board:write"]},
        "app2AppOauth": {"scopes": ["board:read"]},
        "user2AppOauth": {"scopes": ["board:read", "board:write"]},
    }
    ops = {k: v for s in data["services"].values() for k, v in s["operations"].items()}
    assert {k: v.get("scopes") for k, v in ops.items()} == {
        "get_board": ["board:read"], "get_square": ["board:read"], "put_square": ["board:write"],
    }  # fmt: skip
    board = next(m for m in imported.report["mapped"] if m["tool"] == "get_board")
    assert board["kind"] == "custom"


# ---------------------------------------------------------------------------------------------
# A slice of Stripe's document
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stripe_slice() -> Any:
    return import_openapi(
        corpus("stripe_spec3.yaml"), paths=["/v1/charges", "/v1/customers", "/v1/refunds"]
    )


def test_stripe_charges_customers_and_refunds(stripe_slice):
    data = yaml.safe_load(stripe_slice.world)
    records = {k: v for s in data["services"].values() for k, v in (s.get("records") or {}).items()}
    assert {"charge", "customer", "refund"} <= set(records)
    charge = records["charge"]
    assert charge["customer"] == "ref[customer]?"  # expandable: an id or a customer
    assert charge["object"] == {"type": "enum[charge]", "default": "charge"}  # a constant
    # POST /v1/charges does not require it, a charge always has one: the server's 0
    assert charge["amount"] == {"type": "int", "default": 0}
    assert charge["billing_details"]["object"]["address"]["object"]["city"] == "str?"
    ops = {k: v for s in data["services"].values() for k, v in s["operations"].items()}
    lc = ops["list_charges"]
    assert (lc["kind"], lc["record"]) == ("list", "charge")
    assert lc["filter"]["created"] == ["gt", "gte", "lt", "lte", "eq"]
    assert lc["filter"]["customer"] == ["eq"]
    assert lc["page"] == {"style": "cursor", "size": 10, "max_size": 100}
    # Stripe's `default` error response, inlined once (an anchor) and shared by every operation
    errors = lc["http"].pop("errors")
    assert errors["default"]["required"] == ["error"]
    api_errors = errors["default"]["properties"]["error"]
    assert api_errors["properties"]["type"]["enum"] == [
        "api_error", "card_error", "idempotency_error", "invalid_request_error",
    ]  # fmt: skip
    assert api_errors["properties"]["payment_intent"] == {"type": "object"}  # cut short
    assert ops["create_refund"]["http"]["errors"]["default"] is errors["default"]
    assert stripe_slice.world.count("default: &error\n") == 1
    # the REST answer `faultbench serve --rest` gives: the rows under `data`, in Stripe's list
    assert lc["http"] == {
        "method": "GET", "path": "/v1/charges", "items": "data",
        "envelope": {"has_more": False, "object": "list", "url": ""}, "nulls": [],
        "fill": {"metadata": {}},  # required, a free-form map no field holds
    }  # fmt: skip
    assert ops["create_refund"]["kind"] == "create"
    assert ops["get_customer"]["kind"] == "get"  # anyOf [customer, deleted_customer]
    assert ops["delete_customer"] == ops["delete_customer"] | {
        "kind": "delete",
        "record": "customer",
    }
    assert ops["post_charges_charge_capture"]["kind"] == "custom"
    assert ops["get_charges_search"]["page"]["style"] == "cursor"  # a page token
    assert data["auth"]["principals"] == {"basicAuth": {"scopes": []}, "bearerAuth": {"scopes": []}}


def test_petstore_pets_keep_their_nested_category_and_tags(tmp_path):
    world_file, _ = _import(tmp_path, corpus("swagger_petstore_v3.yaml"))
    world = load_world(world_file)
    token = world.issue_token("petstore_auth") if world.spec.auth is not None else None
    pet = {
        "name": "Rex",
        "photoUrls": ["https://example.com/rex.png"],
        "category": {"id": 1, "name": "dogs"},
        "tags": [{"id": 7, "name": "good"}],
        "status": "available",
    }
    made = world.call("create_pet", pet, token=token)
    assert made.ok, made.error
    got = world.call("get_pet", {"id": made.value["id"]}, token=token).value
    assert got["category"] == {"id": 1, "name": "dogs"}
    assert got["tags"] == [{"id": 7, "name": "good"}]
    bad = world.call("create_pet", {**pet, "tags": [{"id": "seven"}]}, token=token)
    assert not bad.ok
