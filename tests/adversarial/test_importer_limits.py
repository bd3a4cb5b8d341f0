"""Hostile documents through `faultbench import openapi` (issue 41, items 3, 6 and 11): what
an importer writes into YAML or Python is escaped whatever the document holds, input is
bounded where it arrives, and every document it cannot import is one line on stderr, never
a traceback or a hang."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from faultbench import load_world
from faultbench.cli import main

SMALL: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Things", "version": "1"},
    "paths": {
        "/things/{id}": {
            "get": {
                "operationId": "getThing",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}
                        },
                    }
                },
            }
        }
    },
    "components": {
        "schemas": {"Thing": {"type": "object", "properties": {"id": {"type": "string"}}}}
    },
}


def _import(tmp_path: Path, doc: Any, capsys: Any, *, text: str | None = None) -> tuple[int, str]:
    src = tmp_path / "doc.json"
    src.write_text(text if text is not None else json.dumps(doc), encoding="utf-8")
    code = main(["import", "openapi", str(src), "-o", str(tmp_path / "world.yaml")])
    return code, capsys.readouterr().err


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# ---------------------------------------------------------------------------------------------
# Item 3: whatever the document says, it never adds a line to the world file or its handlers
# ---------------------------------------------------------------------------------------------

_BREAKS = ["\n", "\r", "\r\n", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("brk", _BREAKS, ids=[repr(b) for b in _BREAKS])
def test_a_path_with_line_breaks_adds_no_operation(tmp_path, capsys, brk):
    marker = tmp_path / "ran"
    (tmp_path / "this.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\ndef s(world, clock):\n    return 1\n"
    )
    evil = f"/x{brk}      injected:{brk}        kind: custom{brk}        handler: this.s{brk}#"
    doc = json.loads(json.dumps(SMALL))
    doc["paths"][evil] = {
        "post": {
            "operationId": f"op{brk}injected2:{brk}  kind: custom",
            "summary": f'ends"""{brk}import os{brk}"""',
            "responses": {"200": {"description": "ok"}},
        }
    }
    doc["components"]["schemas"][f"Evil{brk}injected3: {{}}"] = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
    }
    code, err = _import(tmp_path, doc, capsys)
    assert code == 0, err
    world = (tmp_path / "world.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(world)
    ops = {n: o for svc in data["services"].values() for n, o in svc["operations"].items()}
    records = {n for svc in data["services"].values() for n in svc.get("records") or {}}
    # two operations, as the document has; the texts that look like keys are inside names
    assert len(ops) == 2, sorted(ops)
    assert "injected" not in ops
    assert "injected3" not in records
    assert not any(o.get("handler") == "this.s" for o in ops.values())
    assert "handler: this.s" not in world.replace(" ", "")
    # every comment the importer wrote is one line of its own
    for line in world.splitlines():
        assert line.isprintable(), repr(line)
    handlers = tmp_path / "world_handlers.py"
    if handlers.exists():
        compile(handlers.read_text(encoding="utf-8"), str(handlers), "exec")
    sys.path.insert(0, str(tmp_path))
    try:
        world_obj = load_world(tmp_path / "world.yaml")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("world_handlers", None)
    assert not marker.exists()
    assert len(world_obj.tools) == 2


def test_nul_surrogates_and_bidi_in_names_give_a_world_that_loads(tmp_path, capsys):
    doc = json.loads(json.dumps(SMALL))
    doc["info"]["title"] = "T\x00\u202e\ud800itle"
    doc["info"]["version"] = "1\x00"
    doc["paths"]["/odd\x00\ud800/{id}"] = {
        "get": {
            "operationId": "odd\x00",
            "description": "a\x00b\ud800c\u2028d\nline two\x85",
            "parameters": [
                {
                    "name": "id",
                    "in": "path",
                    "required": True,
                    "schema": {"type": "string"},
                    "description": "the\x00id\ud800",
                }
            ],
            "responses": {"200": {"description": "ok"}},
        }
    }
    src = tmp_path / "doc.json"
    src.write_text(json.dumps(doc))  # JSON escapes keep NUL and the lone surrogate
    out = tmp_path / "odd.yaml"
    assert main(["import", "openapi", str(src), "-o", str(out)]) == 0, capsys.readouterr().err
    handlers = tmp_path / "odd_handlers.py"
    compile(handlers.read_text(encoding="utf-8"), str(handlers), "exec")
    sys.path.insert(0, str(tmp_path))
    try:
        world = load_world(out)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("odd_handlers", None)
    assert len(world.tools) == 2


def test_version_and_file_name_cannot_add_lines(tmp_path, capsys):
    doc = json.loads(json.dumps(SMALL))
    doc["openapi"] = "3.0.3\nseed: 99\nname: evil"
    src = tmp_path / "x\nseed: 7.json"
    src.write_text(json.dumps(doc))
    out = tmp_path / "world.yaml"
    assert main(["import", "openapi", str(src), "-o", str(out)]) == 0, capsys.readouterr().err
    text = out.read_text()
    data = yaml.safe_load(text)
    assert data["seed"] == 1
    assert data["name"] != "evil"
    # PyYAML keeps a duplicate key's last value, so look at the lines: no key was added
    # before the real ones (the world loader would refuse the file as duplicate keys)
    assert [ln for ln in text.splitlines() if ln.startswith("seed:")] == ["seed: 1"]
    assert [ln for ln in text.splitlines() if ln.startswith("name:")] == [f"name: {data['name']}"]
    assert len(load_world(out).tools) == 1


# ---------------------------------------------------------------------------------------------
# Item 6: bounded input
# ---------------------------------------------------------------------------------------------


def test_a_yaml_alias_bomb_is_refused_quickly(tmp_path, capsys):
    lines = ['openapi: "3.0.3"', "info: {title: bomb, version: '1'}", "paths: {}", "x:"]
    lines.append('  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]')
    for i, name in enumerate("bcdefghi"):
        prev = "abcdefghi"[i]
        lines.append(f"  {name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    src = tmp_path / "bomb.yaml"
    src.write_text("\n".join(lines) + "\n")
    assert src.stat().st_size < 1000
    code = main(["import", "openapi", str(src)])
    line = _one_line(capsys.readouterr().err)
    assert code == 2
    assert "alias" in line
    assert "100,000" in line


def _cli(*args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "faultbench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "doc.yaml"
    os.mkfifo(fifo)
    proc = _cli("import", "openapi", str(fifo))
    assert proc.returncode == 2
    line = _one_line(proc.stderr)
    assert "FIFO" in line
    assert "regular file" in line


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_dev_zero_is_refused_not_read(tmp_path):
    proc = _cli("import", "openapi", "/dev/zero")
    assert proc.returncode == 2
    assert "character device" in _one_line(proc.stderr)


def test_a_document_over_the_size_limit_is_refused(tmp_path, capsys, monkeypatch):
    from faultbench.importers import _document

    monkeypatch.setattr(_document, "MAX_DOCUMENT_BYTES", 1000)
    src = tmp_path / "big.json"
    src.write_text(json.dumps({**SMALL, "x-pad": "a" * 2000}))
    assert main(["import", "openapi", str(src)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "larger than" in line


# ---------------------------------------------------------------------------------------------
# Item 11: a document that breaks the mapping is one line
# ---------------------------------------------------------------------------------------------


def _with_schema(schema: Any) -> dict[str, Any]:
    doc = json.loads(json.dumps(SMALL))
    doc["components"]["schemas"]["Thing"] = schema
    return doc


@pytest.mark.parametrize(
    "case",
    ["allof-cycle", "responses-7", "deep-schema", "deep-json", "huge-int", "paths-list"],
)
def test_a_hostile_document_is_one_line_or_a_world(tmp_path, capsys, case):
    text = None
    if case == "allof-cycle":
        doc = _with_schema({"allOf": [{"$ref": "#/components/schemas/Thing"}]})
        doc["components"]["schemas"]["Loop"] = {"allOf": [{"$ref": "#/components/schemas/Loop"}]}
    elif case == "responses-7":
        doc = json.loads(json.dumps(SMALL))
        doc["paths"]["/things/{id}"]["get"]["responses"] = 7
    elif case == "deep-schema":  # 3,000 schemas deep, written out (json.dumps would recurse)
        doc = None
        deep = '{"type": "object", "properties": {"a": ' * 3000 + "{}" + "}}" * 3000
        text = json.dumps(_with_schema({"type": "string"})).replace('{"type": "string"}', deep)
    elif case == "deep-json":
        doc = None
        text = json.dumps(SMALL)[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    elif case == "huge-int":
        doc = None
        text = json.dumps(_with_schema({"type": "integer", "maximum": 1})).replace(
            '"maximum": 1', '"maximum": ' + "9" * 5000
        )
    else:
        doc = json.loads(json.dumps(SMALL))
        doc["paths"]["/things/{id}"] = ["get"]
    code, err = _import(tmp_path, doc, capsys, text=text)
    assert "Traceback" not in err
    if code == 0:  # imported: the world loads
        load_world(tmp_path / "world.yaml")
    else:
        assert code == 2
        _one_line(err)


def test_a_missing_output_folder_is_one_line(tmp_path, capsys):
    src = tmp_path / "doc.json"
    src.write_text(json.dumps(SMALL))
    code = main(["import", "openapi", str(src), "-o", str(tmp_path / "no" / "such" / "w.yaml")])
    assert code == 2
    line = _one_line(capsys.readouterr().err)
    assert "cannot write" in line


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_dev_full_as_output_is_one_line(tmp_path, capsys):
    src = tmp_path / "doc.json"
    src.write_text(json.dumps(SMALL))
    code = main(["import", "openapi", str(src), "-o", "/dev/full"])
    assert code == 2
    line = _one_line(capsys.readouterr().err)
    assert "cannot write" in line
    assert "/dev/full" in line
