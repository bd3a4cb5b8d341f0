"""`faultbench import mcp`: a live server's tools become a world's, with the same names,
descriptions and input schemas, against a third-party server from PyPI (mcp-server-time,
a dev dependency) and one of ours (a world served by `faultbench serve` over stdio)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from faultbench import load_world
from faultbench.cli import main
from faultbench.serve import build_server, connect_client, connect_in_process, to_wire

TIME_SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
needs_time_server = pytest.mark.skipif(
    importlib.util.find_spec("mcp_server_time") is None,
    reason="mcp-server-time is a dev dependency of both environments; not installed here",
)

NOTES = """\
name: notes
services:
  notes:
    records:
      note: { text: str, pinned: { type: bool, default: false } }
    operations:
      create_note: { kind: create, record: note, description: Write a note. }
      get_note: { kind: get, record: note }
      list_notes: { kind: list, record: note, filter: [pinned] }
      delete_note: { kind: delete, record: note }
      word_count: { kind: custom, handler: notes_rules.word_count }
"""
RULES = '''\
def word_count(world, clock, text: str) -> dict:
    """Count the words of a text."""
    return {"words": len(text.split())}
'''


def _shape(tools: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(t["name"], t.get("description", ""), t["inputSchema"]) for t in tools]


async def _real_tools(target: list[str]) -> list[dict[str, Any]]:
    async with connect_client(target) as client:
        return [to_wire(t) for t in (await client.list_tools()).tools]


async def _world_tools(world: Any) -> list[dict[str, Any]]:
    async with connect_in_process(build_server(world)) as client:
        return [to_wire(t) for t in (await client.list_tools()).tools]


@needs_time_server
def test_the_time_servers_tools_are_listed_the_same_by_the_imported_world(tmp_path, capsys):
    out = tmp_path / "time.yaml"
    code = main([
        "import", "mcp", "-o", str(out), "--record",
        "--call", 'get_current_time={"timezone": "UTC"}', "--", *TIME_SERVER,
    ])  # fmt: skip
    assert code == 0
    err = capsys.readouterr().err
    assert "2 tools" in err
    # the smallest arguments ("" for each time zone) are refused; generated ones are taken
    assert "convert_time: recorded with values generated for the required properties" in err
    real = anyio.run(_real_tools, TIME_SERVER)
    world = load_world(out)
    assert _shape(anyio.run(_world_tools, world)) == _shape(real)
    # recorded answers: get_current_time with --call's arguments, convert_time with UTC
    now = world.call("get_current_time", {"timezone": "Europe/Paris"}).value
    assert now["timezone"] == "UTC"
    assert set(now) >= {"datetime", "day_of_week", "is_dst"}
    converted = world.call(
        "convert_time", {"source_timezone": "UTC", "time": "10:00", "target_timezone": "UTC"}
    ).value
    assert (converted["source"]["timezone"], converted["target"]["timezone"]) == ("UTC", "UTC")
    assert "missing required argument `timezone`" in world.call("get_current_time", {}).error


def _import_served(
    tmp_path: Path, capsys: Any, world: str, rules: str, name: str, *options: str
) -> tuple[list[str], Path, Any]:
    """`faultbench import mcp --json` of a world served by `faultbench serve` over stdio:
    (the server's command, the imported world file, the report)."""
    served = tmp_path / "served"
    served.mkdir()
    (served / f"{name}.yaml").write_text(world)
    (served / f"{name}_rules.py").write_text(rules)
    command = [sys.executable, "-m", "faultbench", "serve", str(served / f"{name}.yaml")]
    out = tmp_path / "imported.yaml"
    assert main(["import", "mcp", "-o", str(out), *options, "--json", "--", *command]) == 0
    return command, out, yaml.safe_load(capsys.readouterr().out)


def test_our_own_server_crud_family_becomes_a_stateful_record(tmp_path, capsys):
    command, out, report = _import_served(tmp_path, capsys, NOTES, RULES, "notes")
    assert report["records"] == {"note": ["create_note", "delete_note", "get_note", "list_notes"]}
    assert (report["crud"], report["custom"]) == (4, 1)
    data = yaml.safe_load(out.read_text())
    assert data["services"]["tools"]["records"]["note"] == {"text": "str", "pinned": "bool?"}

    real = anyio.run(_real_tools, command)
    world = load_world(out)
    assert _shape(anyio.run(_world_tools, world)) == _shape(real)

    made = world.call("create_note", {"text": "call the bank", "pinned": True}).value
    world.call("create_note", {"text": "buy milk"})
    assert world.call("get_note", {"id": made["id"]}).value["text"] == "call the bank"
    pinned = world.call("list_notes", {"pinned": True}).value
    assert [n["text"] for n in pinned] == ["call the bank"]
    assert world.call("delete_note", {"id": made["id"]}).ok
    gone = world.call("get_note", {"id": made["id"]})
    assert not gone.ok
    assert "no note with id" in gone.error
    assert len(world.notes.all()) == 1
    assert world.call("word_count", {"text": "a b c"}).value is None  # no output schema


def test_a_server_that_does_not_start_is_one_line(tmp_path, capsys):
    code = main([
        "import", "mcp", "-o", str(tmp_path / "w.yaml"), "--timeout", "5", "--",
        sys.executable, "-c", "import sys; sys.exit(3)",
    ])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "cannot read the server's tools" in err
    assert not Path(tmp_path / "w.yaml").exists()


def test_a_command_or_a_url_is_required(capsys):
    assert main(["import", "mcp"]) == 2
    assert "expected a server" in capsys.readouterr().err


PICKY = """\
name: picky
services:
  picky:
    operations:
      convert:
        kind: custom
        handler: picky_rules.convert
        annotations: {readOnlyHint: true}
        input_schema:
          type: object
          properties:
            amount: {type: integer}
            currency: {type: string, enum: [XXX, USD]}
          required: [amount, currency]
      weather:
        kind: custom
        handler: picky_rules.weather
        annotations: {readOnlyHint: true}
        input_schema:
          type: object
          properties: {city: {type: string, examples: [Paris]}}
          required: [city]
      never: {kind: custom, handler: picky_rules.never, annotations: {readOnlyHint: true}}
"""
PICKY_RULES = '''\
def convert(world, clock, **args):
    """Convert an amount."""
    if args["amount"] <= 0:
        raise ValueError("amount must be positive")
    if args["currency"] == "XXX":
        raise ValueError("XXX is no currency")
    return {"converted": args["amount"] * 2}


def weather(world, clock, **args):
    """The weather of a city we know."""
    if args["city"] != "Paris":
        raise LookupError(f"no city {args['city']!r}")
    return {"sky": "grey"}


def never(world, clock, word: str):
    """Refuses everything."""
    raise PermissionError("never")
'''


def test_record_tries_more_arguments_when_the_smallest_are_refused(tmp_path, capsys):
    _command, out, report = _import_served(
        tmp_path, capsys, PICKY, PICKY_RULES, "picky", "--record"
    )
    assert report["recorded"] == ["convert", "weather"]
    convert, weather = report["recorded_with"]["convert"], report["recorded_with"]["weather"]
    # 0 and the first enum value are refused; 1 and the enum's next value are taken
    assert convert["arguments"] == {"amount": 1, "currency": "USD"}
    assert convert["refused"] >= 2
    assert weather["arguments"] == {"city": "Paris"}  # the property's example
    assert weather["from"] == "examples, defaults and enums of the required properties"
    assert weather["refused"] == 1  # the smallest, ""
    assert list(report["fell_back"]) == ["never"]
    assert all("never" in why for why in report["fell_back"]["never"])
    notes = "\n".join(report["notes"])
    assert "convert: recorded with" in notes
    assert "never: the server refused all" in notes
    world = load_world(out)
    assert world.call("convert", {"amount": 7, "currency": "USD"}).value == {"converted": 2}
    assert world.call("weather", {"city": "Oslo"}).value == {"sky": "grey"}
    assert world.call("never", {"word": "x"}).value is None  # the default: no output schema
