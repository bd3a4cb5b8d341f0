"""The shop suite the HTML report and shrinking are tested on: copied into a pytester folder
as test_shop.py (tests/testing/test_report_html.py, test_shrink.py, test_report_browser.py),
never collected here.

`test_refund_once` is a naive agent: it retries a failed refund blindly, so a `timeout` that
fired after the refund was written refunds the customer twice. `test_pings` fails only when
the 3rd and the 7th of ten failing sends coincide. `test_always_broken` fails with or
without faults.
"""

import pytest


def naive_refund(world, order_id="1"):
    order = None
    for _ in range(3):
        got = world.call("get_order", {"id": order_id})
        if got.ok:
            order = got.value
            break
    for _ in range(3):
        if world.call("issue_refund", {"order_id": order_id, "amount": order["total"]}).ok:
            break
    world.call("update_order", {"id": order_id, "status": "returned"})


@pytest.mark.world("world.yaml")
@pytest.mark.faults
@pytest.mark.runs(20)
@pytest.mark.min_pass_rate(0.9)
def test_refund_once(world, trace):
    naive_refund(world)
    assert len(world.refunds.where(order_id="1")) == 1, trace.summary()


@pytest.mark.world("world.yaml")
@pytest.mark.faults({"net.send": {"errors": {"http_503": 1.0}}})
def test_pings(world, trace):
    for n in range(10):
        world.call("send", {"n": n})
    failed = {r.k for r in trace if not r.ok}
    assert not {3, 7} <= failed, f"sends {sorted(failed)} failed"


@pytest.mark.world("world.yaml")
@pytest.mark.faults
def test_always_broken(world):
    naive_refund(world, "2")
    assert world.orders.get("2").status == "delivered", "the agent returned the order"
