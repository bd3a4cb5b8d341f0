"""`faultbench shrink NODEID`: from a saved event log, one pytest process per probe."""

from __future__ import annotations

from pathlib import Path

import pytest

from faultbench.cli import main

SHOP = Path(__file__).resolve().parents[1] / "testing" / "shop"


@pytest.fixture
def shop(tmp_path, monkeypatch):
    (tmp_path / "world.yaml").write_text((SHOP / "world.yaml").read_text())
    (tmp_path / "test_shop.py").write_text((SHOP / "suite.py").read_text())
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_run_that_fails_without_faults_is_told_so(shop, capsys):
    assert main(["shrink", "test_shop.py::test_always_broken[run0]"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-3] == (
        "test_shop.py::test_always_broken[run0]: fails without faults: the bug is not fault "
        "handling"
    )
    assert out[-2] == "    1 probe"
    assert (
        out[-1]
        == "    Reproduce: pytest 'test_shop.py::test_always_broken[run0]' --faultbench-faults '{}'"
    )


def test_bad_input_exits_2(shop, capsys):
    assert main(["shrink", "test_shop.py::test_pings[run0]", "--budget", "0"]) == 2
    assert "Expected --budget N with N >= 1" in capsys.readouterr().err
    assert main(["shrink", "x", "--events", str(shop / "missing.jsonl")]) == 2
