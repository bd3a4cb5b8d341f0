"""`expect(result).keeps(policy)`: policies from the Attest-style chain, with a scenario's
user turns confirming for `requires_confirmation`."""

from __future__ import annotations

from pathlib import Path

import pytest

from faultbench import load_world
from faultbench.testing import expect, scenario

WORLD = Path(__file__).parent / "worlds" / "refund.yaml"


def test_keeps_confirmation_from_the_user_turns():
    @scenario(world=str(WORLD), user=["Please return order 1.", "Yes, go ahead."], max_turns=2)
    def careful(conv):
        if conv.turn == 0:
            conv.call("get_order", {"id": "1"})
            return "Shall I mark order 1 returned?"
        conv.call("update_order", {"id": "1", "status": "returned"})
        return "Done."

    @scenario(world=str(WORLD), user=["Please return order 1.", "Thanks."], max_turns=2)
    def hasty(conv):
        if conv.turn == 0:
            conv.call("update_order", {"id": "1", "status": "returned"})
            return "Done."
        return "You're welcome."

    policy = {"requires_confirmation": ["update_*"], "before": {"update_order": "get_order"}}
    expect(careful()).keeps(policy)
    with pytest.raises(AssertionError) as err:
        expect(hasty()).keeps(policy)
    assert str(err.value) == (
        "expect(result).keeps(...): Expected the run to keep its checks. Instead, received: "
        'before: {update_order: get_order}: call 1 update_order(id="1", status="returned") had '
        "no successful get_order sharing an argument value before it; requires_confirmation: "
        '[update_*]: call 1 update_order(id="1", status="returned") had no confirming user '
        "turn before it"
    )


def test_keeps_takes_a_world_or_a_trace():
    world = load_world(WORLD)
    world.set_faults({})
    world.call("get_order", {"id": "1"})
    expect(world).keeps({"max_calls": {"get_order": 1}})
    with pytest.raises(AssertionError, match=r"max_calls: \{get_order: 0\}"):
        expect(world.trace).keeps({"max_calls": {"get_order": 0}})
    with pytest.raises(TypeError, match="Expected a ScenarioResult, a World or a Trace"):
        expect("some output").keeps({"never": ["x"]})
