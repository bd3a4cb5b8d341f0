"""`faultbench import mcp` reads every page of `tools/list` and says the real cause of a
failure on one line (issue 41, items 8 and 13), against a server made for the test."""

from __future__ import annotations

import sys
from pathlib import Path

from faultbench.cli import main
from faultbench.importers import import_mcp

SERVER = [sys.executable, str(Path(__file__).with_name("mcp_fixture_server.py"))]


def test_every_page_of_tools_list_is_read():
    for page in ("2", "5", "100"):
        imported = import_mcp([*SERVER, page], timeout=20)
        assert imported.report["tools"] == 13, page


def test_a_server_that_exits_is_one_line_naming_the_cause(tmp_path, capsys):
    code = main([
        "import", "mcp", "-o", str(tmp_path / "w.yaml"), "--timeout", "5", "--",
        sys.executable, "-c", "import sys; sys.exit(3)",
    ])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "ExceptionGroup" not in err
    assert "unhandled errors in a TaskGroup" not in err


def test_line_separators_in_a_schema_come_back_as_they_were(tmp_path):
    import yaml

    imported = import_mcp(SERVER, timeout=20)
    data = yaml.safe_load(imported.world)
    ops = data["services"]["tools"]["operations"]
    schema = ops["nul"]["input_schema"]
    assert schema["properties"]["s"]["description"] == "line\u2028sep\x85nel"
    assert ops["nul"]["description"] == "a\x00b \u2028 c\x85d"


def test_distinct_tools_stay_distinct_and_the_world_loads(tmp_path, capsys):
    from faultbench import load_world

    out = tmp_path / "fixture.yaml"
    assert main(["import", "mcp", "-o", str(out), "--json", "--", *SERVER]) == 0
    import json

    report = json.loads(capsys.readouterr().out)
    world = load_world(out)
    names = [t.name for t in world.tools]
    assert len(names) == 13
    assert len(set(names)) == 13
    assert {"a-b", "a_b", "twice", "twice_2", "peek"} <= set(names)
    renamed = {r["server"]: r["world"] for r in report["renamed"]}
    assert set(renamed) == {"café", "日本", "x" * 300, "", "twice"}
    assert all(len(n) <= 64 for n in names)
    # a-b and a_b answer from handlers of their own
    assert world.call("a-b", {}).ok
    assert world.call("a_b", {}).ok
