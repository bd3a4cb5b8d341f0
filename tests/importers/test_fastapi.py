"""FastAPI's conventions in `faultbench import openapi`, and the document's contract answered
by `faultbench serve --rest` (issue 42): role-named schemas are one record, a natural key in
the path is its id, the collection envelope and its total come back exactly, tools follow
the operation ids; refusals are the declared 422, bounds are the document's, unknown paths
and methods are JSON. Also on Airflow's own document where its wheel is installed."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from pathlib import Path

import httpx
import jsonschema
import pytest

from faultbench import load_world
from faultbench.importers import import_openapi
from faultbench.serve import serve_in_thread

from .fastapi_doc import WIDGETS


def _imported(tmp_path: Path, doc: dict | Path, name: str = "widgets"):
    if isinstance(doc, dict):
        spec = tmp_path / f"{name}.json"
        spec.write_text(json.dumps(doc))
    else:
        spec = doc
    imported = import_openapi(spec, handlers_module=f"{name}_handlers")
    (tmp_path / f"{name}.yaml").write_text(imported.world)
    (tmp_path / f"{name}_handlers.py").write_text(imported.handlers)
    return imported, tmp_path / f"{name}.yaml"


def test_role_named_schemas_are_one_record_keyed_by_the_path_and_tools_follow_op_ids(tmp_path):
    imported, world_file = _imported(tmp_path, WIDGETS)
    kinds = {m["tool"]: (m["kind"], m.get("record")) for m in imported.report["mapped"]}
    assert kinds == {
        "get_widgets": ("list", "widget"),
        "post_widget": ("create", "widget"),
        "get_widget": ("get", "widget"),
        "patch_widget": ("update", "widget"),
        "delete_widget": ("delete", "widget"),
        "get_version": ("custom", None),
    }
    world = load_world(world_file, faults=False)
    assert list(world.spec.records) == ["widget"]
    listed = world.spec.operations["get_widgets"].http
    assert listed is not None
    assert (listed["items"], listed["total"], listed["key"]) == ("widgets", "total_entries", "name")
    assert listed["args"] == {"widget_name_pattern": "name_like %{}%"}
    assert listed["bounds"] == {"limit": {"minimum": 0}}
    # over MCP the list filters by the LIKE pattern too
    world.call("post_widget", {"name": "big_one", "size": 3})
    world.call("post_widget", {"name": "small", "size": 1})
    found = world.call("get_widgets", {"name_like": "%G\\_O%"}).value
    assert [w["name"] for w in found["data"]] == ["big_one"]


@pytest.fixture
def widgets_url(tmp_path):
    _, world_file = _imported(tmp_path, WIDGETS)
    world = load_world(world_file, faults=False)
    with serve_in_thread(world, rest=True) as url:
        yield url.removesuffix("/mcp")


def test_rest_answers_the_documents_shapes_statuses_and_bounds(widgets_url):
    schemas = WIDGETS["components"]["schemas"]

    def valid(body, name):
        resolver = {"components": {"schemas": schemas}, "$ref": f"#/components/schemas/{name}"}
        jsonschema.validate(body, resolver)

    with httpx.Client(base_url=widgets_url) as http:
        made = http.post("/api/v2/widgets", json={"name": "lamp", "size": 2})
        assert made.status_code == 201, made.text
        assert made.json() == {"name": "lamp", "size": 2, "description": None}  # no `id`
        assert made.headers["location"] == "/api/v2/widgets/lamp"
        assert http.get(made.headers["location"]).json()["name"] == "lamp"
        for n in ("chair", "customer_desk", "customers"):
            assert http.post("/api/v2/widgets", json={"name": n, "size": 1}).status_code == 201
        page = http.get("/api/v2/widgets", params={"limit": 2, "offset": 1})
        assert page.status_code == 200
        assert set(page.json()) == {"widgets", "total_entries"}
        assert page.json()["total_entries"] == 4
        assert [w["name"] for w in page.json()["widgets"]] == ["customer_desk", "customers"]
        valid(page.json(), "WidgetCollectionResponse")
        # `limit=0` is allowed (minimum 0): no rows, the total; a large one is not refused
        assert http.get("/api/v2/widgets?limit=0").json() == {"total_entries": 4, "widgets": []}
        assert len(http.get("/api/v2/widgets?limit=500").json()["widgets"]) == 4
        # a SQL LIKE pattern: `_` is one character, `\_` a real underscore, any case
        like = http.get("/api/v2/widgets", params={"widget_name_pattern": "CUSTOMER\\_"})
        assert [w["name"] for w in like.json()["widgets"]] == ["customer_desk"]
        assert like.json()["total_entries"] == 1
        changed = http.patch("/api/v2/widgets/lamp", json={"size": 7})
        assert changed.json() == {"name": "lamp", "size": 7, "description": None}
        # FastAPI's optional PATCH fields sent as null: a field that cannot be null is kept
        kept = http.patch("/api/v2/widgets/lamp", json={"size": None, "description": "d"})
        assert kept.json() == {"name": "lamp", "size": 7, "description": "d"}
        cleared = http.patch("/api/v2/widgets/lamp", json={"description": None})
        assert cleared.json()["description"] is None
        # refusals: the declared 422 in FastAPI's HTTPValidationError
        for bad in (
            http.post("/api/v2/widgets", json={"name": "x", "size": "many"}),
            http.get("/api/v2/widgets?limit=-1"),
        ):
            assert bad.status_code == 422, bad.text
            valid(bad.json(), "HTTPValidationError")
            assert (
                "size" in bad.json()["detail"][0]["msg"]
                or "limit" in bad.json()["detail"][0]["msg"]
            )
        missing = http.get("/api/v2/widgets/nope")
        assert missing.status_code == 404
        valid(missing.json(), "HTTPExceptionResponse")
        # an undeclared method: 405 with Allow; an unknown path: a JSON 404 in the API's schema
        put = http.put("/api/v2/widgets")
        assert (put.status_code, put.headers["allow"]) == (405, "GET, HEAD, POST")
        unknown = http.get("/api/v2/nothing/here")
        assert unknown.status_code == 404
        assert unknown.headers["content-type"] == "application/json"
        valid(unknown.json(), "HTTPExceptionResponse")
        assert http.delete("/api/v2/widgets/lamp").status_code == 204
        assert http.get("/api/v2/widgets/lamp").status_code == 404
        # MCP and the control API stay where they were
        assert http.get("/faultbench/state").status_code == 200


# --- Airflow's REST API, read from its installed wheel -----------------------------------------


def airflow_document() -> Path:
    """The FastAPI-generated document shipped in the `apache-airflow-core` wheel, else in
    `apache-airflow-client`'s."""
    spec = importlib.util.find_spec("airflow")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for base in locations:
        doc = Path(base) / "api_fastapi/core_api/openapi/v2-rest-api-generated.yaml"
        if doc.is_file():
            return doc
    try:  # the same document as the generated SDK (a dev dependency) ships it
        dist = importlib.metadata.distribution("apache-airflow-client")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("neither apache-airflow-core nor apache-airflow-client is installed")
    doc = Path(str(dist.locate_file("v2.yaml")))
    if not doc.is_file():
        pytest.skip("apache-airflow-client ships no v2.yaml in this version")
    return doc


def _answers_a_collection(doc: dict, path: str, method: str) -> bool:
    ok = doc["paths"][path][method.lower()]["responses"].get("200") or {}
    ref = json.dumps(ok.get("content") or {})
    return "CollectionResponse" in ref


def test_airflow_creates_and_updates_every_resource_with_a_post_or_patch_and_a_get(tmp_path):
    import yaml

    source = airflow_document()
    doc = yaml.safe_load(source.read_text())
    imported, world_file = _imported(tmp_path, source, "airflow")
    ops = imported.report["mapped"]
    by_path: dict[str, dict[str, str]] = {}
    for m in ops:
        by_path.setdefault(m["path"], {})[m["method"]] = m["kind"]
    kinds = {(m["method"], m["path"]): m["kind"] for m in ops}
    # every resource with a GET by key and a POST (create) or PATCH (update) maps both
    for path, methods in by_path.items():
        if not path.endswith("}") or methods.get("GET") != "get":
            continue
        collection = path.rsplit("/", 1)[0]
        # a PATCH answering a collection (a task instance and its mapped ones) is an action
        if "PATCH" in methods and not _answers_a_collection(doc, path, "PATCH"):
            assert methods["PATCH"] == "update", (path, methods)
        post = kinds.get(("POST", collection))
        if post is not None and kinds.get(("GET", collection)) == "list":
            assert post == "create", collection
    for resource, key in (("pools", "pool_name"), ("variables", "variable_key"),
                          ("connections", "connection_id")):  # fmt: skip
        assert kinds[("POST", f"/api/v2/{resource}")] == "create"
        assert kinds[("PATCH", f"/api/v2/{resource}/{{{key}}}")] == "update"
    tools = {m["tool"] for m in ops}
    assert {"get_pools", "post_pool", "get_pool", "patch_pool", "delete_pool"} <= tools
    world = load_world(world_file, faults=False)
    assert world.spec.operations["get_pool"].http["key"] == "name"
    assert world.spec.operations["get_variable"].http["key"] == "key"


def test_bad_http_contract_keys_are_load_errors_that_say_the_fix(tmp_path):
    from faultbench import WorldFileError

    world = tmp_path / "w.yaml"
    world.write_text(
        "services:\n  s:\n    records:\n      pool: {name: str}\n    operations:\n"
        "      get_pools:\n        kind: list\n        record: pool\n"
        "        http: {method: GET, path: /pools, total: 3, args: [x], bounds: {limit: 0}}\n"
    )
    with pytest.raises(WorldFileError) as info:
        load_world(world)
    text = str(info.value)
    assert "total must be a property name" in text
    assert "args must map request names to tool arguments" in text
    assert "bounds must map arguments to {minimum:}" in text
