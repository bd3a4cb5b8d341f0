"""The HTML report shows effects that happen later: a refund that goes pending -> succeeded
on the virtual clock is a mark on its own lane of the run's timeline, with the change it made
(in the page's data, and drawn: checked through Chromium's DOM when it is installed)."""

from __future__ import annotations

import html
import re

import pytest

from faultbench.kernel import World, encode_events
from faultbench.kernel.lowlevel import load_spec
from faultbench.testing._artifacts._html import EFFECTS_LANE, write_report
from faultbench.testing._gate._report import Group, Run

from .chromium import CHROMIUM, MISSING, body_attribute, dump_dom
from .test_report_html import blocks

WORLD = """\
name: refunds
services:
  payments:
    records:
      refund: { id: str, amount: int, status: "enum[pending, succeeded, failed]" }
    operations:
      issue_refund:
        kind: create
        record: refund
        set: { status: pending }
        then: { after: [30s, 5m], set: { status: succeeded } }
      get_refund: { kind: get, record: refund }
"""


def report_of_a_pending_refund(tmp_path):
    world = World.from_spec(load_spec("<refunds>", text=WORLD))
    rid = world.call("issue_refund", {"amount": 5}).value["id"]
    world.clock.advance(600)
    world.call("get_refund", {"id": rid})
    group = Group("test_refunds.py::test_pending", 1, None)
    group.runs[0] = Run(
        "test_refunds.py::test_pending[run0]",
        0,
        "failed",
        events=encode_events(world.events).decode(),
    )
    return write_report(tmp_path, [group]), rid


def test_a_fired_effect_is_a_state_change_on_its_own_lane(tmp_path):
    report, rid = report_of_a_pending_refund(tmp_path)
    data = blocks(report.read_text())
    (run,) = [v for k, v in data.items() if k.startswith("run-")]
    assert run["lanes"][-1] == EFFECTS_LANE
    [mark] = run["effects"]
    assert mark["lane"] == len(run["lanes"]) - 1
    assert mark["record"] == "refund"
    assert mark["id"] == rid
    assert mark["changes"] == {"status": ["pending", "succeeded"]}
    # after the issue_refund call, before the get_refund call
    issue, get = run["calls"]
    assert issue["e"] < mark["t"] < get["s"]


@pytest.mark.skipif(CHROMIUM is None, reason=MISSING)
def test_chromium_draws_the_effect_with_its_change(tmp_path):
    report, rid = report_of_a_pending_refund(tmp_path)
    dom = dump_dom(report)
    assert body_attribute(dom, "data-ready") == "1"
    [(effect, change, title)] = re.findall(
        r'<path class="effect" data-effect="(\w+)" data-change="([^"]*)"[^>]*><title>([^<]*)</title>',
        dom,
    )
    assert effect == "e1"
    assert html.unescape(change) == 'status "pending" → "succeeded"'
    assert html.unescape(title) == f'e1 refund {rid}: status "pending" → "succeeded"'
    assert '<text class="lane" x="4" y="' in dom
    assert EFFECTS_LANE in dom
