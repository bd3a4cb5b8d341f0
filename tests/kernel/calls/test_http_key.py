"""An operation's `http:` key: the REST request it answers under `faultbench serve --rest`
(written by `faultbench import openapi`), strict like every key of a world file."""

from __future__ import annotations

import pytest

from faultbench import WorldFileError
from faultbench.kernel.lowlevel import load_spec

BASE = "name: x\nservices:\n  s:\n    records: {r: {n: int}}\n    operations:\n      list_r: "


def test_http_is_kept_as_written():
    spec = load_spec(
        "x.yaml",
        text=BASE + "{kind: list, record: r, http: {method: GET, path: /v1/r, items: data, "
        "envelope: {object: list, has_more: false}}}\n",
    )
    assert spec.operations["list_r"].http == {
        "method": "GET", "path": "/v1/r", "items": "data",
        "envelope": {"object": "list", "has_more": False},
    }  # fmt: skip


def test_error_schemas_are_kept_by_status_as_text_and_may_be_shared_by_an_alias():
    error = "{type: object, properties: {message: {type: string}}}"
    spec = load_spec(
        "x.yaml",
        text=BASE + f"{{kind: list, record: r, http: {{method: GET, path: /r, "
        f"errors: {{404: &e {error}, 5xx: {{}}, DEFAULT: {{}}}}}}}}\n"
        "      get_r: {kind: get, record: r, http: {method: GET, path: '/r/{id}', "
        "errors: {default: *e}}}\n",
    )
    errors = spec.operations["list_r"].http["errors"]
    assert errors == {
        "404": {"type": "object", "properties": {"message": {"type": "string"}}},
        "5XX": {}, "default": {},
    }  # fmt: skip
    assert spec.operations["get_r"].http["errors"] == {"default": errors["404"]}


@pytest.mark.parametrize(
    ("http", "message"),
    [
        ("{method: GOT, path: /v1/r}", "has method 'GOT'; expected one of GET, POST"),
        ("{method: GET, path: v1/r}", "has path 'v1/r'; expected a path starting with /"),
        ("{method: GET, path: /v1/r?x=1}", "without a query"),
        ("{method: GET, path: /r, verb: x}", "unknown key 'verb' in http of 'list_r'"),
        ("{method: GET, path: /r, status: 404}", "status must be a 2xx code"),
        ("[GET, /r]", "http of 'list_r' must be a mapping"),
        ("{method: GET, path: /r, errors: {200: {}}}", "errors has key '200'; expected a 4xx"),
        ("{method: GET, path: /r, errors: {4xy: {}}}", "errors has key '4xy'"),
        ("{method: GET, path: /r, errors: {404: text}}", "errors.404 must be a JSON Schema"),
        ("{method: GET, path: /r, errors: [404]}", "errors must be a mapping"),
        ("{method: GET, path: /r, nulls: a}", "nulls must be a list of property paths"),
        ("{method: GET, path: /r, nulls: [a, 3]}", "nulls must be a list of property paths"),
    ],
)
def test_a_wrong_http_names_its_place_and_the_fix(http, message):
    with pytest.raises(WorldFileError) as info:
        load_spec("x.yaml", text=BASE + f"{{kind: list, record: r, http: {http}}}\n")
    assert message in str(info.value)
    assert "x.yaml:6:" in str(info.value)
