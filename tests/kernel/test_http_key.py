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


@pytest.mark.parametrize(
    ("http", "message"),
    [
        ("{method: GOT, path: /v1/r}", "has method 'GOT'; expected one of GET, POST"),
        ("{method: GET, path: v1/r}", "has path 'v1/r'; expected a path starting with /"),
        ("{method: GET, path: /v1/r?x=1}", "without a query"),
        ("{method: GET, path: /r, verb: x}", "unknown key 'verb' in http of 'list_r'"),
        ("{method: GET, path: /r, status: 404}", "status must be a 2xx code"),
        ("[GET, /r]", "http of 'list_r' must be a mapping"),
    ],
)
def test_a_wrong_http_names_its_place_and_the_fix(http, message):
    with pytest.raises(WorldFileError) as info:
        load_spec("x.yaml", text=BASE + f"{{kind: list, record: r, http: {http}}}\n")
    assert message in str(info.value)
    assert "x.yaml:6:" in str(info.value)
