"""The HTML report shows webhook deliveries on a lane of their own: each attempt a mark,
failures red and linked to their retry, a delivery's fault marked on its first attempt."""

from __future__ import annotations

from faultbench.kernel import World, encode_events
from faultbench.kernel.lowlevel import load_spec
from faultbench.testing._artifacts._html import DELIVERIES_LANE, write_report
from faultbench.testing._gate._report import Group, Run

from .test_report_html import blocks

WORLD = """\
name: refunds
services:
  payments:
    records:
      refund: { id: str, amount: int }
    operations:
      issue_refund: { kind: create, record: refund }
events:
  refund.created: { record: refund, on: [create] }
webhooks: { secret: whsec_test, backoff: 10s }
faults:
  payments.webhooks: { script: { 2: duplicate_delivery } }
"""


def test_each_delivery_attempt_is_a_mark_on_the_deliveries_lane(tmp_path):
    world = World.from_spec(load_spec("<refunds>", text=WORLD))
    world.call("issue_refund", {"amount": 5})
    [first] = world.webhooks_due()
    world.webhook_attempted(first, status=500)
    world.clock.advance(10)
    world.call("issue_refund", {"amount": 6})
    for d in world.webhooks_due():
        world.webhook_attempted(d, status=200)
    group = Group("test_hooks.py::test_hooks", 1, None)
    group.runs[0] = Run(
        "test_hooks.py::test_hooks[run0]", 0, "failed", events=encode_events(world.events).decode()
    )
    data = blocks(write_report(tmp_path, [group]).read_text())
    (run,) = [v for k, v in data.items() if k.startswith("run-")]
    assert run["lanes"][-1] == DELIVERIES_LANE
    lane = len(run["lanes"]) - 1
    marks = [c for c in run["calls"] if c["lane"] == lane]
    assert [(m["tool"], m["k"], m["ok"], m["fault"]) for m in marks] == [
        ("dlv_1", 1, False, None),
        ("dlv_1", 2, True, None),
        ("dlv_2", 1, True, "duplicate_delivery"),
        ("dlv_2_2", 1, True, None),
    ]
    assert marks[0]["meta"]["status"] == 500
    assert marks[0]["text"] == "failed (500)"
    assert marks[1]["retry_of"] == marks[0]["i"]  # the retry is linked to the failure
    assert marks[1]["s"] - marks[0]["s"] == 10_000  # 10 s of virtual time later
