"""What a record cannot hold as the document has it, answered as the document says under
`serve --rest` (issue 42): a required list or date-time the create does not take gets the
value a server would set, a required free-form map is answered (`http: {fill:}`), a body
property taking any JSON that the record holds as text is held as its JSON text (`http:
{text:}`), a record's schema met alone is embedded (not an id), an object's unknown keys are
ignored, a list's offset past 64 bits reads past every row, and `3.0` is an integer."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from faultbench import load_world
from faultbench.importers import import_openapi
from faultbench.serve import serve_in_thread

_STR = {"type": "string"}
DOC = {
    "openapi": "3.1.0",
    "info": {"title": "Runs", "version": "1"},
    "paths": {
        "/runs": {
            "get": {
                "operationId": "get_runs",
                "parameters": [
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 0}},
                    {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0}},
                ],
                "responses": {"200": {"description": "ok", "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/RunCollectionResponse"}}}}},
            },
            "post": {
                "operationId": "post_run",
                "requestBody": {"content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/RunBody"}}}},
                "responses": {"201": {"description": "made", "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/RunResponse"}}}}},
            },
        },
        "/runs/{run_name}": {
            "get": {
                "operationId": "get_run",
                "parameters": [{"name": "run_name", "in": "path", "required": True, "schema": _STR}],
                "responses": {"200": {"description": "ok", "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/RunResponse"}}}}},
            },
        },
        "/steps": {
            "get": {
                "operationId": "get_steps",
                "responses": {"200": {"description": "ok", "content": {"application/json": {
                    "schema": {"type": "array", "items": {"$ref": "#/components/schemas/Step"}}}}}},
            },
        },
    },
    "components": {"schemas": {
        "JsonValue": {},
        "Step": {"type": "object", "required": ["name"], "properties": {"name": _STR}},
        "RunBody": {
            "type": "object", "required": ["name"],
            "properties": {
                "name": _STR, "value": {"$ref": "#/components/schemas/JsonValue"},
                "retries": {"type": "integer"},
                "steps": {"type": "array", "items": {"$ref": "#/components/schemas/Step"}},
            },
        },
        "RunResponse": {
            "type": "object",
            "required": ["name", "created_at", "events", "conf"],
            "properties": {
                "name": _STR, "value": {"type": ["string", "null"]},
                "retries": {"type": "integer"},
                "created_at": {"type": "string", "format": "date-time"},
                "events": {"type": "array", "items": _STR},
                "conf": {"type": "object", "additionalProperties": True},
                "steps": {"type": "array", "items": {"$ref": "#/components/schemas/Step"}},
            },
        },
        "RunCollectionResponse": {
            "type": "object", "required": ["runs", "total_entries"],
            "properties": {
                "runs": {"type": "array", "items": {"$ref": "#/components/schemas/RunResponse"}},
                "total_entries": {"type": "integer"},
            },
        },
    }},
}  # fmt: skip


def test_what_a_record_cannot_hold_is_answered_as_the_document_says(tmp_path: Path):
    (tmp_path / "runs.json").write_text(json.dumps(DOC))
    imported = import_openapi(tmp_path / "runs.json")
    (tmp_path / "runs.yaml").write_text(imported.world)
    world = load_world(tmp_path / "runs.yaml", faults=False)
    post = world.spec.operations["post_run"]
    assert post.http["fill"] == {"conf": {}}  # a free-form map: no field holds it
    assert post.http["text"] == ["value"]  # any JSON, held as text
    with serve_in_thread(world, rest=True) as url:
        base = url.removesuffix("/mcp")
        body = {
            "name": "nightly", "value": {"a": [1, 2]}, "retries": 3.0,
            "steps": [{"name": "build", "colour": "red"}],  # an unknown key: ignored
        }  # fmt: skip
        made = httpx.post(f"{base}/runs", json=body)
        assert made.status_code == 201, made.text
        run = made.json()
        assert run == {
            "name": "nightly",
            "value": '{"a": [1, 2]}',  # its JSON text, as the API's server keeps it
            "retries": 3,
            "created_at": "2025-06-01T00:00:00Z",  # set by the server
            "events": [],
            "conf": {},
            "steps": [{"name": "build"}],  # the objects themselves, not ids
        }
        assert httpx.get(f"{base}{made.headers['location']}").json() == run
        page = httpx.get(f"{base}/runs", params={"offset": 10**30}).json()
        assert page == {"runs": [], "total_entries": 1}  # past every row, not refused


def test_a_header_parameter_is_an_argument(tmp_path: Path):
    doc = {
        "openapi": "3.1.0",
        "info": {"title": "Echo", "version": "1"},
        "paths": {"/echo": {"get": {
            "operationId": "echo",
            "parameters": [
                {"name": "X-Depth", "in": "header", "required": True,
                 "schema": {"type": "integer"}},
                {"name": "Accept", "in": "header", "schema": _STR},  # transport: no argument
            ],
            "responses": {"200": {"description": "ok", "content": {"application/json": {
                "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}}},
        }}},
    }  # fmt: skip
    (tmp_path / "echo.json").write_text(json.dumps(doc))
    imported = import_openapi(tmp_path / "echo.json", handlers_module="echo_handlers")
    assert "*, x_depth: int) -> Any:" in imported.handlers  # not `accept`
    (tmp_path / "echo.yaml").write_text(imported.world)
    (tmp_path / "echo_handlers.py").write_text(imported.handlers)
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        world = load_world(tmp_path / "echo.yaml", faults=False)
    finally:
        sys.path.remove(str(tmp_path))
    assert world.spec.operations["echo"].http["headers"] == {"X-Depth": "x_depth"}
    with serve_in_thread(world, rest=True) as url:
        base = url.removesuffix("/mcp")
        missing = httpx.get(f"{base}/echo")
        assert missing.status_code == 400
        assert "x_depth" in missing.text
        assert httpx.get(f"{base}/echo", headers={"X-Depth": "abc"}).status_code == 400
        assert httpx.get(f"{base}/echo", headers={"X-Depth": "3"}).status_code == 200
