"""The HTML report in a real browser: headless Chromium opens the report of the shop suite,
finds the failing run, reads its fault markers and its diff through the DOM, and takes a
screenshot kept as a CI artifact (`.ci/artifacts/`, or $FAULTBENCH_ARTIFACTS)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from faultbench.testing._artifacts._html import REPORT_FILE

from .chromium import CHROMIUM, MISSING, body_attribute, dump_dom, screenshot
from .test_report_html import blocks, shop_session

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=MISSING)

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("FAULTBENCH_ARTIFACTS", ROOT / ".ci" / "artifacts"))


def test_chromium_shows_the_failing_run_its_faults_and_its_diff(pytester):
    shop_session(pytester, "--faultbench-report", "out", "-k", "refund_once")
    report = pytester.path / "out" / REPORT_FILE
    data = blocks(report.read_text())["faultbench-data"]
    failing = [c for c in data["groups"][0]["cells"] if c[1] == "failed"]

    # Opened without a fragment, the page shows the first failing run.
    dom = dump_dom(report)
    assert body_attribute(dom, "data-ready") == "1"
    cells = re.findall(r'<button class="cell (\w+)( open)?" data-rid="([\w-]+)"', dom)
    assert len(cells) == 20
    assert [c[2] for c in cells if c[1]] == [failing[0][3]]
    assert sum(c[0] == "stopped" for c in cells) == 8  # early-stopped runs, as such
    assert f"test_shop.py::test_refund_once[run{failing[0][0]}]" in dom
    assert '<span class="gate FAIL">FAIL</span>' in dom

    # Any run opens by its fragment; read the failing run's markers and diff off the DOM.
    rid = failing[-1][3]
    dom = dump_dom(report, f"#run={rid}")
    run = json.loads(re.search(rf'id="run-{rid}">(.*?)</script>', report.read_text(), re.S)[1])
    markers = re.findall(r'<path class="fault-marker" data-kind="(\w+)" data-i="(\d+)"', dom)
    faulted = [(c["fault"], str(c["i"])) for c in run["calls"] if c["fault"]]
    assert markers == faulted
    assert ("timeout", str(next(c["i"] for c in run["calls"] if c["ghost"]))) in markers
    assert 'class="bar ghost faulted"' in dom
    assert 'class="retry-link"' in dom
    added = re.findall(r'<td class="add">([^<]*)</td>', dom)
    assert any(a.startswith("FaultInjected issue_refund timeout") for a in added)
    assert "(closest passing run)" in dom
    assert f'pytest "test_shop.py::test_refund_once[run{run["index"]}]"' in dom
    assert '<td class="added">added</td><td>refund 2</td>' in dom

    png = screenshot(report, ARTIFACTS / "report-shop.png", f"#run={rid}")
    assert png.stat().st_size > 10_000


def test_a_run_of_ten_thousand_calls_is_drawn(tmp_path):
    from faultbench.kernel import World, encode_events
    from faultbench.kernel.lowlevel import load_spec
    from faultbench.testing._artifacts._html import write_report
    from faultbench.testing._gate._report import Group, Run

    world = World.from_spec(load_spec(Path(__file__).parent / "shop" / "world.yaml"), run=1)
    for n in range(10_000):
        world.call("get_order", {"id": str(n % 3 + 1)})
    group = Group("bench.py::test_long", 1, None)
    group.runs[0] = Run(
        "bench.py::test_long[run0]", 0, "failed", events=encode_events(world.events).decode()
    )
    report = write_report(tmp_path, [group])
    dom = dump_dom(report)
    assert body_attribute(dom, "data-ready") == "1"
    assert len(re.findall(r'<rect class="bar[^"]*" data-i="\d+"', dom)) == 10_000
    faulted = sum(1 for c in world.trace if c.fault)
    assert 1_000 < dom.count('<path class="fault-marker" data-kind="http_503"') == faulted
    # benchmarks/bench_report.py measures the load time; here only a generous bound.
    assert int(body_attribute(dom, "data-loaded-ms") or 0) < 20_000
