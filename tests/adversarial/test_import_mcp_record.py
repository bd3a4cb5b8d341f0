"""`faultbench import mcp --record` is safe and faithful (issue 42) and bounded (issue 41,
item 13's answer nested 5,000 deep), against a server made for the test that writes down
every call it gets: a read-only tool (`peek`), a destructive one (`wipe`), an unannotated
one (`touch`), a read-only one that answers with an error (`fail_ro`), and, with `extra`,
deep answers and a `select` that says "Error: ..." as a success."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from faultbench import load_world
from faultbench.cli import main
from faultbench.importers import import_mcp
from faultbench.serve._calls import tool_wire

FIXTURE = str(Path(__file__).with_name("mcp_fixture_server.py"))
PEEK_TEXT = 'Repository status:\n  "clean"\u2028next\x85end \\ done'


def _server(calls: Path, extra: bool = False) -> list[str]:
    return [sys.executable, FIXTURE, "3", str(calls), *(["extra"] if extra else [])]


def _called(calls: Path) -> list[tuple[str, Any]]:
    if not calls.exists():
        return []
    return [(c["name"], c["arguments"]) for c in map(json.loads, calls.read_text().splitlines())]


def _import(tmp_path: Path, capsys: Any, *options: str, extra: bool = False) -> dict[str, Any]:
    out = tmp_path / "fixture.yaml"
    server = _server(tmp_path / "calls.jsonl", extra)
    code = main(["import", "mcp", "-o", str(out), "--record", "--json", *options, "--", *server])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report: dict[str, Any] = json.loads(captured.out)
    report["stderr"] = captured.err
    return report


def test_record_calls_only_the_tools_the_server_marks_read_only(tmp_path, capsys):
    report = _import(tmp_path, capsys)
    called = {name for name, _ in _called(tmp_path / "calls.jsonl")}
    assert called == {"peek", "fail_ro"}  # the two marked readOnlyHint: true
    assert "wipe" in report["not_called"]
    assert "destructiveHint: true" in report["not_called"]["wipe"]
    assert "no destructiveHint" in report["not_called"]["touch"]
    assert report["warnings"] == []
    assert (
        "not called, as the server does not mark them read-only: 'wipe', 'touch'"
        in (report["stderr"])
    )
    # the world still has every tool; the ones never called answer the default
    world = load_world(tmp_path / "fixture.yaml")
    assert world.call("wipe", {}).value is None
    # listed with the server's title and hints, not the ones a custom operation gets
    peek, wipe = tool_wire(world.tool("peek")), tool_wire(world.tool("wipe"))
    # (a hint the server left out: the value MCP gives an absent one)
    absent = {"destructiveHint": True, "idempotentHint": False, "openWorldHint": True}
    assert (peek["title"], peek["annotations"]) == ("Peek at it", absent | {"readOnlyHint": True})
    assert wipe["annotations"] == absent | {"readOnlyHint": False, "destructiveHint": True}
    assert world.call("peek", {}).value == PEEK_TEXT  # the server's text, every character


def test_a_destructive_tool_is_called_only_when_call_names_it_with_a_warning(tmp_path, capsys):
    report = _import(tmp_path, capsys, "--call", "wipe={}")
    called = [name for name, _ in _called(tmp_path / "calls.jsonl")]
    assert called.count("wipe") == 1  # once, with the given arguments, never with candidates
    assert "touch" not in called
    (warning,) = report["warnings"]
    assert warning.startswith("wipe: called with the arguments of --call")
    assert "destructiveHint: true" in warning
    assert "warning: wipe: called" in report["stderr"]
    assert "wipe" not in report["not_called"]


def test_the_python_api_calls_no_destructive_tool_either(tmp_path):
    calls = tmp_path / "calls.jsonl"
    imported = import_mcp(_server(calls), record=True, timeout=20)
    assert {name for name, _ in _called(calls)} == {"peek", "fail_ro"}
    assert imported.report["recorded"] == ["peek"]


def test_an_answer_the_server_gave_as_an_error_is_recorded_as_that_error(tmp_path, capsys):
    report = _import(tmp_path, capsys)
    assert report["answers"]["fail_ro"] == [
        {"arguments": {}, "from": "the smallest arguments", "error": True, "structured": False}
    ]
    world = load_world(tmp_path / "fixture.yaml")
    failed = world.call("fail_ro", {})
    assert not failed.ok
    assert failed.error == "Error: not allowed"  # the server's words


def test_answers_are_recorded_per_argument_set(tmp_path, capsys):
    report = _import(
        tmp_path, capsys, "--call", 'peek={"path": "src"}', "--call", "peek={}",
    )  # fmt: skip
    assert [a["arguments"] for a in report["answers"]["peek"]] == [{"path": "src"}, {}]
    world = load_world(tmp_path / "fixture.yaml")
    assert world.call("peek", {"path": "src"}).value == "status of src"
    assert world.call("peek", {}).value == PEEK_TEXT
    # arguments never recorded: the first answer recorded
    assert world.call("peek", {"path": "elsewhere"}).value == "status of src"


def test_error_text_answered_as_a_success_is_not_the_tools_answer(tmp_path, capsys):
    """The reference SQLite server answers "Error: Only SELECT queries are allowed" without
    isError: the importer tries other arguments, and keeps that text only for the
    arguments that got it."""
    report = _import(tmp_path, capsys, extra=True)
    assert "select" not in report["recorded"]
    assert "select" in report["fell_back"]
    tried = [a["arguments"] for a in report["answers"]["select"]]
    assert len(tried) >= 2
    world = load_world(tmp_path / "fixture.yaml")
    assert world.call("select", tried[0]).value == "Error: Only SELECT queries are allowed"
    assert world.call("select", {"query": "SELECT 2"}).value is None  # the default


def test_an_answer_nested_5000_deep_is_kept_as_text_and_the_import_goes_on(tmp_path, capsys):
    report = _import(tmp_path, capsys, extra=True)
    assert {"deep", "deep_structured", "peek"} <= set(report["recorded"])
    assert (
        "deep: answer kept as text: its text is JSON nested deeper than 100 levels"
        in (report["notes"])
    )
    world = load_world(tmp_path / "fixture.yaml")
    assert world.call("deep", {}).value == "[" * 5000 + "]" * 5000  # nothing lost
    kept = world.call("deep_structured", {}).value
    value = json.loads(kept)
    for _ in range(149):
        value = value["a"]
    assert value == {"end": True}


@pytest.mark.parametrize("source", ["mcp", "openapi"])
def test_a_world_that_does_not_load_is_not_called_a_success(tmp_path, capsys, monkeypatch, source):
    """The round trip: each importer loads what it wrote; a world that does not load (here
    made so on purpose) is exit 2 naming the loader's problem, and the files stay."""
    import faultbench.importers._mcp as mcp_importer
    import faultbench.importers._openapi_import as openapi_importer

    if source == "mcp":
        real = mcp_importer.world_text

        def broken(*args: Any, **kwargs: Any) -> str:
            return real(*args, **kwargs).replace("seed: 1", "seed: one")

        monkeypatch.setattr(mcp_importer, "world_text", broken)
        command = ["mcp", "--", *_server(tmp_path / "calls.jsonl")]
    else:
        real_oa = openapi_importer.world_text

        def broken_oa(*args: Any, **kwargs: Any) -> str:
            return real_oa(*args, **kwargs) + "unknown_top_level_key: 1\n"

        monkeypatch.setattr(openapi_importer, "world_text", broken_oa)
        spec = tmp_path / "spec.json"
        spec.write_text(json.dumps(_PETS))
        command = ["openapi", str(spec)]
    out = tmp_path / "w.yaml"
    code = main(["import", *command[:1], "-o", str(out), *command[1:]])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{out}: made, but it does not load" in err
    assert ("seed" if source == "mcp" else "unknown_top_level_key") in err
    assert out.exists()  # kept, to be read
    # without -o, the copy in a temporary folder is loaded: the same refusal
    code = main(["import", *command[:1], *command[1:]])
    captured = capsys.readouterr()
    assert code == 2
    assert "the imported world: made, but it does not load" in captured.err
    assert captured.out == ""


_PETS = {
    "openapi": "3.0.3",
    "info": {"title": "Pets", "version": "1"},
    "paths": {
        "/pets": {
            "post": {
                "operationId": "createPet",
                "requestBody": {
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}
                    }
                },
                "responses": {"201": {"description": "made"}},
            },
            "get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}},
        }
    },
    "components": {
        "schemas": {"Pet": {"type": "object", "properties": {"name": {"type": "string"}}}}
    },
}


@pytest.mark.parametrize("source", ["mcp", "openapi"])
def test_each_importer_loads_what_it_wrote(tmp_path, capsys, source):
    """The round trip passes for a real import of each kind (the check runs, and says
    nothing)."""
    if source == "mcp":
        command = ["mcp", "--", *_server(tmp_path / "calls.jsonl", extra=True)]
    else:
        spec = tmp_path / "spec.json"
        spec.write_text(json.dumps(_PETS))
        command = ["openapi", str(spec)]
    out = tmp_path / "w.yaml"
    assert main(["import", command[0], "-o", str(out), *command[1:]]) == 0
    assert "does not load" not in capsys.readouterr().err
    load_world(out)
