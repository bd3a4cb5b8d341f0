"""Every document of ../shared/openapi/ imports without a traceback into a world file that
YAML reads, whose handlers module compiles, and that `faultbench check` accepts, nested
fields, pages, filters and auth included. The small
documents run in every suite; the large ones with FAULTBENCH_SLOW=1 (a few seconds each;
benchmarks/bench_import.py times them)."""

from __future__ import annotations

import pytest
import yaml

from faultbench.cli import main
from faultbench.importers import import_openapi

from .conftest import SLOW, corpus

SMALL = [
    "swagger_petstore_v3.yaml",
    "oai_uspto.yaml",
    "oai_tictactoe.json",
    "paypal_invoicing_v2.json",
]
LARGE = [
    "adyen_management_v3.json", "box_openapi.json", "discord_openapi.json", "openai_openapi.yaml",
    "stripe_spec3.yaml", "twilio_api_v2010.json", "xero_accounting.yaml",
]  # fmt: skip


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
def test_a_corpus_document_imports_and_checks(tmp_path, capsys, name):
    spec = corpus(name)
    world = tmp_path / "world.yaml"
    assert main(["import", "openapi", str(spec), "-o", str(world)]) == 0
    capsys.readouterr()
    data = yaml.safe_load(world.read_text())
    handlers = world.with_name("world_handlers.py")
    if handlers.exists():
        compile(handlers.read_text(), str(handlers), "exec")
    report = import_openapi(spec, handlers_module="world_handlers").report
    ops = report["operations"]
    assert ops["imported"] + ops["skipped"] == ops["in_document"]
    assert ops["crud"] + ops["custom"] == ops["imported"]
    tools = [t for s in data["services"].values() for t in s.get("operations") or {}]
    assert len(tools) == ops["imported"] == len(set(tools))
    code = main(["check", str(world)])
    out, err = capsys.readouterr()
    assert code == 0, err[:2000]
    assert "OK:" in out
