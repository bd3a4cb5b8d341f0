"""The HTML run report as a file: self-contained, and carrying what the page draws (the
browser test, test_report_browser.py, checks the drawing)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from faultbench.testing._artifacts._html import REPORT_FILE

SHOP = Path(__file__).parent / "shop"


def shop_session(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makefile(".yaml", world=(SHOP / "world.yaml").read_text())
    pytester.makepyfile(test_shop=(SHOP / "suite.py").read_text())
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def blocks(html: str) -> dict[str, object]:
    """The page's embedded JSON blocks by element id."""
    found = re.findall(r'<script type="application/json" id="([^"]+)">(.*?)</script>', html, re.S)
    return {name: json.loads(text) for name, text in found}


def test_the_report_is_one_self_contained_file(pytester):
    result = shop_session(pytester, "--faultbench-report", "out", "-k", "refund_once")
    path = pytester.path / "out" / REPORT_FILE
    result.stdout.fnmatch_lines(["faultbench report: out/faultbench-report.html"])
    html = path.read_text()
    # Nothing to fetch: no external scripts, styles, images or fonts.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<link" not in html
    assert "@import" not in html
    assert "url(http" not in html
    data = blocks(html)
    (group,) = data["faultbench-data"]["groups"]
    assert group["name"] == "test_shop.py::test_refund_once"
    assert group["total"] == 20
    assert group["min_pass_rate"] == 0.9
    assert group["gate"] is False
    assert group["line"].startswith("9/12 passed (75%)")
    assert [c[1] for c in group["cells"]].count("stopped") == group["stopped"] == 8
    assert group["ci"] == [pytest.approx(0.468, abs=1e-3), pytest.approx(0.911, abs=1e-3)]


def test_a_failing_run_carries_its_timeline_state_change_and_diff(pytester):
    shop_session(pytester, "--faultbench-report", "out", "-k", "refund_once")
    data = blocks((pytester.path / "out" / REPORT_FILE).read_text())
    group = data["faultbench-data"]["groups"][0]
    rid = next(c[3] for c in group["cells"] if c[1] == "failed")
    run = data[f"run-{rid}"]
    assert run["outcome"] == "failed"
    assert run["tolerated"]
    # the session's -p flag shaped the run: the command carries it
    assert run["reproduce"] == (
        f'pytest "test_shop.py::test_refund_once[run{run["index"]}]" -p no:cacheprovider'
    )
    assert "AssertionError" in run["message"]
    assert run["lanes"] == ["orders.get_order", "orders.update_order", "payments.issue_refund"]
    refunds = [c for c in run["calls"] if c["tool"] == "issue_refund"]
    timeout = refunds[0]
    assert timeout["fault"] == "timeout"
    assert not timeout["ok"]
    assert timeout["ghost"]
    assert timeout["writes"] == 1
    assert timeout["e"] - timeout["s"] > 30_000  # virtual ms: the 30 s wait is on the bar
    assert timeout["text"].startswith("504 Gateway Timeout")
    assert timeout["meta"]["fault"] == "timeout"
    assert timeout["meta"]["error_kind"] == "timeout"
    assert timeout["args"] == {"order_id": "1", "amount": pytest.approx(397.02)}
    assert refunds[1]["retry_of"] == timeout["i"]  # the blind retry is linked to it
    added = [(r["table"], r["id"]) for r in run["state"]["added"]]
    assert ("refund", "1") in added
    assert ("refund", "2") in added
    assert run["state"]["removed"] == []
    diff = run["diff"]
    assert diff["header"].startswith("event logs differ at event")
    right_only = [r[1] for r in diff["rows"] if r[2] == "~" and r[1]]
    assert any(line.startswith("FaultInjected issue_refund timeout") for line in right_only)
    passing = data[f"run-{next(c[3] for c in group['cells'] if c[1] == 'passed')}"]
    assert passing["diff"] is None
    assert passing["state"]["added"]


def test_faultbench_report_rebuilds_it_from_saved_logs(pytester):
    from faultbench.cli import main

    shop_session(pytester, "--faultbench-events", "ev", "--faultbench-report", "a")
    world = str(pytester.path / "world.yaml")  # a log never chooses the world file
    assert (
        main(
            ["report", str(pytester.path / "ev"), "-o", str(pytester.path / "b"), "--world", world]
        )
        == 0
    )
    a = blocks((pytester.path / "a" / REPORT_FILE).read_text())
    b = blocks((pytester.path / "b" / REPORT_FILE).read_text())
    assert a["faultbench-data"]["groups"] == b["faultbench-data"]["groups"]
    for name in a:
        if name.startswith("run-"):
            assert {**a[name], "events_file": None} == {**b[name], "events_file": None}
    # Logs copied without the session file: runs grouped by file name, outcomes unknown.
    (pytester.path / "ev" / "faultbench-session.json").unlink()
    assert (
        main(
            ["report", str(pytester.path / "ev"), "-o", str(pytester.path / "c"), "--world", world]
        )
        == 0
    )
    c = blocks((pytester.path / "c" / REPORT_FILE).read_text())
    groups = c["faultbench-data"]["groups"]
    assert {g["name"] for g in groups} == {
        "test_shop.py.test_refund_once",
        "test_shop.py.test_pings",
        "test_shop.py.test_always_broken",
    }
    assert {cell[1] for g in groups for cell in g["cells"]} == {"unknown"}


def test_faultbench_report_explains_an_empty_folder(tmp_path, capsys):
    from faultbench.cli import main

    assert main(["report", str(tmp_path)]) == 2
    assert "no event logs" in capsys.readouterr().err


def test_under_xdist_the_controller_writes_the_same_report(pytester):
    shop_session(pytester, "--faultbench-report", "one", "--faultbench-no-early-stop")
    spread = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        "--faultbench-report",
        "two",
        "--faultbench-no-early-stop",
    )
    spread.stdout.fnmatch_lines(["faultbench report: two/faultbench-report.html"])
    one = blocks((pytester.path / "one" / REPORT_FILE).read_text())
    two = blocks((pytester.path / "two" / REPORT_FILE).read_text())
    assert one["faultbench-data"]["groups"] == two["faultbench-data"]["groups"]
    assert one.keys() == two.keys()
    for name in one:
        if name.startswith("run-"):
            assert one[name] == two[name]
