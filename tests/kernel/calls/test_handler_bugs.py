"""A handler's bug reads as a bug: KeyError and IndexError are internal errors with a
traceback (in the CallResult and the trace, never in what the agent reads); only faultbench's
errors, ValueError, PermissionError and LookupError raised on purpose are refusals."""

from __future__ import annotations

import textwrap

import pytest

import faultbench

WORLD = """\
name: bugs
services:
  shop:
    records:
      order: { status: "enum[placed, paid]" }
    seed: { order: { rows: [{ id: "1", status: placed }] } }
    operations:
      pay: { kind: custom, handler: bug_handlers.pay }
"""

HANDLERS = """\
PRICES = {"tea": 3}


def pay(world, clock, order_id: str, mode: str):
    world.orders.update(order_id, status="paid")
    if mode == "key":
        return PRICES["coffee"]
    if mode == "index":
        return [][0]
    if mode == "lookup":
        raise LookupError("no such order")
    if mode == "value":
        raise ValueError("amount too large")
    if mode == "permission":
        raise PermissionError("refunds are frozen")
    return {"ok": True}
"""


@pytest.fixture
def world(tmp_path):
    (tmp_path / "bug_handlers.py").write_text(textwrap.dedent(HANDLERS))
    path = tmp_path / "bugs.yaml"
    path.write_text(WORLD)
    return faultbench.load_world(path)


@pytest.mark.parametrize(
    ("mode", "error"), [("key", "KeyError: 'coffee'"), ("index", "IndexError")]
)
def test_key_and_index_errors_are_internal_errors_with_a_traceback(world, mode, error):
    result = world.call("pay", {"order_id": "1", "mode": mode})
    assert not result.ok
    assert result.error_kind == "internal_error"
    assert result.text.startswith(f"internal error in handler bug_handlers.pay: {error}")
    assert "Traceback" not in result.text  # the agent reads no traceback
    tb = result.traceback
    assert tb is not None
    assert tb.startswith("Traceback (most recent call last):")
    assert 'File "bug_handlers.py", line' in tb  # file names only: the same on every machine
    assert tb.splitlines()[-1].startswith(error)
    assert world.orders.get("1").status == "placed"  # and its write is gone
    # The trace keeps it, and prints it under the call, for a failing test to show.
    assert world.trace[-1].traceback == tb
    assert 'File "bug_handlers.py"' in str(world.trace)
    # It is in the log, so a replay has it too.
    again = faultbench.replay(
        world.spec, faultbench.decode_events(faultbench.encode_events(world.events))
    )
    assert again.trace[-1].traceback == tb


@pytest.mark.parametrize(
    ("mode", "text"),
    [
        ("lookup", "no such order"),
        ("value", "amount too large"),
        ("permission", "refunds are frozen"),
    ],
)
def test_deliberate_refusals_are_clean_tool_errors(world, mode, text):
    result = world.call("pay", {"order_id": "1", "mode": mode})
    assert (result.ok, result.error_kind, result.text) == (False, "handler_error", text)
    assert result.traceback is None
    assert world.orders.get("1").status == "placed"


def test_a_table_refusal_inside_a_handler_is_still_a_refusal(world):
    # A RecordNotFound from the world's own tables is the tool's 404, not a bug.
    result = world.call("pay", {"order_id": "9", "mode": "ok"})
    assert result.error_kind == "not_found"
    assert result.traceback is None
