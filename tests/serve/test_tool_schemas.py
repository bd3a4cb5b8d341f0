"""Every tool of every example world and of every world imported from the OpenAPI corpus
(../shared/openapi/, skipped where absent; the large documents with FAULTBENCH_SLOW=1) is
listed with an input schema that every MCP client of docs/INTEGRATIONS.md reads: JSON Schema
keywords from a small set, a nullable value as `anyOf` [its schema, null] (as the MCP SDK
writes one), never a list of types, which AutoGen's `mcp_server_tools`, DSPy's
`Tool.from_mcp_tool` and Semantic Kernel's `add_plugin` cannot take (.ci/clients feeds these
worlds to the three themselves)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

import faultbench
from faultbench.cli import main
from faultbench.serve import build_server

from ..mcp_client import open_client

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(ROOT.glob("examples/*/worlds/*.yaml"))
CORPUS = ROOT.parent / "shared" / "openapi"
SLOW = os.environ.get("FAULTBENCH_SLOW") == "1"
SMALL = ["swagger_petstore_v3.yaml", "oai_uspto.yaml", "oai_tictactoe.json",
         "paypal_invoicing_v2.json"]  # fmt: skip
LARGE = ["adyen_management_v3.json", "box_openapi.json", "discord_openapi.json",
         "openai_openapi.yaml", "stripe_spec3.yaml", "twilio_api_v2010.json",
         "xero_accounting.yaml"]  # fmt: skip

#: the keywords a tool's schema may use: what every listed client reads
KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "format",
    "description", "default", "anyOf", "title",
}  # fmt: skip
TYPES = {"string", "integer", "number", "boolean", "object", "array", "null"}


def problems(schema: Any, path: str = "$") -> list[str]:
    """What in `schema` some client cannot read, each with its JSON path."""
    if not isinstance(schema, dict):
        return [f"{path}: a schema must be an object, got {schema!r}"]
    out = [f"{path}: keyword {k!r}" for k in schema if k not in KEYWORDS]
    kind = schema.get("type")
    if "type" in schema and (not isinstance(kind, str) or kind not in TYPES):
        out.append(f"{path}: type {kind!r} (one type name, not a list)")
    if "anyOf" in schema:
        branches = schema["anyOf"]
        if (
            not isinstance(branches, list)
            or len(branches) != 2
            or branches[1] != {"type": "null"}
            or "type" in schema
        ):
            out.append(f"{path}: anyOf must be [a schema, {{'type': 'null'}}], got {branches!r}")
        else:
            out += problems(branches[0], f"{path}.anyOf[0]")
    for name, sub in (schema.get("properties") or {}).items():
        out += problems(sub, f"{path}.{name}")
    if "items" in schema:
        out += problems(schema["items"], f"{path}[]")
    extra = schema.get("additionalProperties")
    if not isinstance(extra, bool | type(None)):
        out += problems(extra, f"{path}.*")
    return out


def test_the_checker_finds_what_clients_cannot_read():
    assert problems({"type": ["string", "null"]}) == [
        "$: type ['string', 'null'] (one type name, not a list)"
    ]
    assert problems({"type": "object", "properties": {"a": {"$ref": "#/x"}}}) == [
        "$.a: keyword '$ref'"
    ]
    assert problems({"anyOf": [{"type": "null"}, {"type": "string"}]})
    assert problems({"anyOf": [{"type": "string"}, {"type": "null"}]}) == []


def assert_readable(world: Any, where: str) -> int:
    bad = [f"{t.name}{p[1:]}" for t in world.tools for p in problems(t.input_schema)]
    assert not bad, f"{where}: " + "; ".join(bad[:20])
    assert world.tools, where
    return len(world.tools)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_worlds_tools_read_everywhere(path):
    assert_readable(faultbench.load_world(path, faults=False), str(path))


@pytest.mark.parametrize(
    "name",
    [
        *SMALL,
        *(
            pytest.param(n, marks=pytest.mark.skipif(not SLOW, reason="FAULTBENCH_SLOW=1 runs it"))
            for n in LARGE
        ),
    ],
)
def test_every_imported_worlds_tools_read_everywhere(tmp_path, capsys, monkeypatch, name):
    doc = CORPUS / name
    if not doc.is_file():
        pytest.skip(f"{doc} is absent: the OpenAPI corpus lives in ../shared/openapi/")
    world = tmp_path / "world.yaml"
    assert main(["import", "openapi", str(doc), "-o", str(world)]) == 0
    capsys.readouterr()
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("world_handlers", None)
    assert_readable(faultbench.load_world(world, faults=False), name)


@pytest.mark.anyio
async def test_the_sdks_client_lists_an_optional_argument_as_anyof():
    """What a client receives, not only what the kernel holds: the shop's `list_orders`
    filter (optional, no null) is its plain type, `issue_refund`'s `currency: str | None`
    is `anyOf`."""
    world = faultbench.load_world(EXAMPLES[[p.stem for p in EXAMPLES].index("shop")])
    async with open_client(build_server(world)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    status = tools["list_orders"].input_schema["properties"]["status"]
    assert status["type"] == "string"
    assert "anyOf" not in status
    currency = tools["issue_refund"].input_schema["properties"]["currency"]
    assert currency["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert not problems(tools["issue_refund"].input_schema)


@pytest.mark.anyio
async def test_a_client_that_sends_null_for_what_the_model_left_out_is_answered():
    """Some MCP clients send every argument the model left out as null: an optional one that
    takes no null is taken as left out; a required one stays an error."""
    world = faultbench.load_world(EXAMPLES[[p.stem for p in EXAMPLES].index("shop")], faults=False)
    async with open_client(build_server(world)) as client:
        every = await client.call_tool("list_orders", {})
        nulls = await client.call_tool("list_orders", {"customer_id": None, "status": None})
        assert not nulls.is_error, nulls.content[0].text
        assert nulls.content[0].text == every.content[0].text
        bad = await client.call_tool("get_order", {"id": None})
        assert bad.is_error
        assert bad.content[0].text.endswith("`id`: expected a string, got null")
