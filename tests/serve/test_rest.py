"""`faultbench serve --rest`: a world imported from an OpenAPI document answers its REST paths
(JSON and form bodies with bracketed keys, path ids, query filters, list envelopes, errors
with HTTP statuses), every request through World.acall: faults are real HTTP statuses and
the control API sees the calls."""

from __future__ import annotations

import json

import httpx
import pytest

from faultbench import load_world
from faultbench.serve import build_server, serve_in_thread
from tests.importers.test_openapi import THINGS


@pytest.fixture
def things_world(tmp_path):
    from faultbench.importers import import_openapi

    spec = tmp_path / "things.json"
    spec.write_text(json.dumps(THINGS))
    imported = import_openapi(spec, handlers_module="things_handlers")
    world_file = tmp_path / "things.yaml"
    world_file.write_text(
        imported.world + "faults:\n  things.create_thing:\n    script: {3: timeout}\n"
    )
    (tmp_path / "things_handlers.py").write_text(imported.handlers)
    return load_world(world_file)


def test_a_world_answers_its_rest_paths(things_world):
    # --debug-meta: the X-Faultbench-Ignored header names the keys the tool does not take
    with serve_in_thread(build_server(things_world, debug=True), rest=True) as url:
        base = url.removesuffix("/mcp")
        with httpx.Client(base_url=base) as http:
            made = http.post("/v1/things", json={"name": "lamp", "status": "new", "count": 2})
            assert made.status_code == 201, made.text
            lamp = made.json()
            assert lamp["name"] == "lamp"
            assert lamp["object"] == "thing"
            # a form body, as Stripe's SDK sends it
            form = http.post(
                "/v1/things",
                content="name=chair&status=used&count=4&weight=2.5",
                headers={"content-type": "application/x-www-form-urlencoded"},
            )
            assert form.status_code == 201, form.text
            assert (form.json()["count"], form.json()["weight"]) == (4, 2.5)
            got = http.get(f"/v1/things/{lamp['id']}")
            assert got.json()["name"] == "lamp"
            listed = http.get("/v1/things", params={"status": "used", "expand[]": "x"})
            assert listed.status_code == 200
            assert [t["name"] for t in listed.json()["data"]] == ["chair"]
            assert listed.headers["x-faultbench-ignored"] == "expand"
            changed = http.patch(f"/v1/things/{lamp['id']}", json={"status": "used"})
            assert changed.json()["status"] == "used"
            assert http.get("/v1/things/nope").status_code == 404
            bad = http.post("/v1/things", json={"name": "x", "count": "many"})
            assert bad.status_code == 400
            assert bad.json()["error"]["type"] == "invalid_arguments"
            archived = http.post(f"/v1/things/{lamp['id']}/archive?reason=old")
            assert archived.json()["kind"] == "archive"
            assert http.delete(f"/v1/things/{lamp['id']}").status_code == 204
            assert http.get(f"/v1/things/{lamp['id']}").status_code == 404
            assert http.put("/v1/things").status_code == 405


def test_a_timeout_after_commit_is_a_504_and_the_write_is_there(things_world):
    with serve_in_thread(things_world, rest=True) as url:
        base = url.removesuffix("/mcp")
        with httpx.Client(base_url=base) as http:
            for name in ("a", "b"):
                assert http.post("/v1/things", json={"name": name}).status_code == 201
            third = http.post("/v1/things", json={"name": "c"})
            assert third.status_code == 504
            assert third.json() == {
                "error": {"type": "timeout", "message": third.json()["error"]["message"]}
            }  # no sign of the fault: a gateway's 504 (the log names it)
            assert "faultbench" not in str(third.headers).lower()
            names = [t["name"] for t in http.get("/v1/things").json()["data"]]
            assert names == ["a", "b", "c"]  # committed, then the answer was lost
            events = http.get("/faultbench/events").text
            assert "create_thing" in events
    calls = things_world.trace.calls_to("create_thing")
    assert [c.tool for c in calls] == ["create_thing"] * 3
    assert calls[-1].fault == "timeout"


def test_a_fault_answers_the_status_and_headers_of_the_kernels_registry(tmp_path):
    # the registry (`FaultKind.status`, `.headers`) is what REST answers: a 429's
    # Retry-After in whole seconds, rounded up from the rule's retry_after_s
    from faultbench.importers import import_openapi

    spec = tmp_path / "things.json"
    spec.write_text(json.dumps(THINGS))
    imported = import_openapi(spec, handlers_module="things_handlers")
    world_file = tmp_path / "things.yaml"
    world_file.write_text(
        imported.world
        + "faults:\n  things.list_things:\n"
        + "    script: {1: {kind: http_429, retry_after_s: 2.5}, 2: http_503}\n"
    )
    (tmp_path / "things_handlers.py").write_text(imported.handlers)
    with (
        serve_in_thread(load_world(world_file), rest=True) as url,
        httpx.Client(base_url=url.removesuffix("/mcp")) as http,
    ):
        limited = http.get("/v1/things")
        unavailable = http.get("/v1/things")
        fine = http.get("/v1/things")
    assert (limited.status_code, limited.headers["retry-after"]) == (429, "3")
    assert "x-faultbench-fault" not in limited.headers  # a real 429, no telltale
    assert unavailable.status_code == 503
    assert "retry-after" not in unavailable.headers
    assert fine.status_code == 200


def test_nested_form_keys_become_nested_values():
    from faultbench.serve._rest import nest

    pairs = [
        ("address[city]", "Paris"), ("address[line1]", "1 rue"), ("expand[]", "a"),
        ("expand[]", "b"), ("items[0][price]", "p1"), ("items[1][price]", "p2"), ("n", "1"),
    ]  # fmt: skip
    assert nest(pairs) == {
        "address": {"city": "Paris", "line1": "1 rue"},
        "expand": ["a", "b"],
        "items": [{"price": "p1"}, {"price": "p2"}],
        "n": "1",
    }


NULLS_WORLD = """\
name: notes
services:
  notes:
    records:
      note:
        title: str
        body: str?
        archived_at: datetime?
        meta: {object: {tag: str?, owner: str?}, optional: true}
        lines: {list: {object: {text: str, note: str?}}, optional: true}
    operations:
      create_note: {kind: create, record: note, http: {method: POST, path: /notes, status: 201,
                    nulls: [archived_at, meta.owner, "lines[].note"]}}
      get_note: {kind: get, record: note, http: {method: GET, path: "/notes/{id}"}}
      list_notes: {kind: list, record: note, page: {style: cursor, size: 5},
                   http: {method: GET, path: /notes, items: data, nulls: [archived_at]}}
"""


def test_nulls_lists_what_an_answer_carries_as_null_and_the_rest_is_left_out(tmp_path):
    world_file = tmp_path / "notes.yaml"
    world_file.write_text(NULLS_WORLD)
    world = load_world(world_file)
    with (
        serve_in_thread(world, rest=True) as url,
        httpx.Client(base_url=url.removesuffix("/mcp")) as http,
    ):
        made = http.post(
            "/notes", json={"title": "a", "meta": {"tag": "x"}, "lines": [{"text": "t"}]}
        ).json()
        assert made == {
            "id": made["id"], "title": "a", "archived_at": None,
            "meta": {"tag": "x", "owner": None}, "lines": [{"text": "t", "note": None}],
        }  # fmt: skip
        rows = http.get("/notes").json()["data"]
        assert rows == [{"id": made["id"], "title": "a", "archived_at": None,
                         "meta": {"tag": "x"}, "lines": [{"text": "t"}]}]  # fmt: skip
        # without `nulls:` the answer carries the world's nulls, as over MCP
        assert http.get(f"/notes/{made['id']}").json()["body"] is None
