"""Operations through World.call: semantics, validation errors, handlers, transactions."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from faultbench.kernel import (
    CallFailed,
    CallStarted,
    CallSucceeded,
    RecordCreated,
    RecordDeleted,
    RecordUpdated,
)

from ..conftest import T0

# --- built-in operations ---------------------------------------------------------------------


def test_get(world):
    r = world.call("get_order", {"id": "2"})
    assert r.ok
    assert r.value == {
        "id": "2",
        "customer": "1",
        "status": "placed",
        "total": 20.0,
        "qty": 1,
        "created_at": "2025-05-02T00:00:00Z",
        "note": None,
    }
    assert json.loads(r.text) == r.value
    assert (r.call_id, r.tool, r.k, r.args) == ("c1", "get_order", 1, {"id": "2"})
    assert r.started_at == r.finished_at == T0


def test_get_missing_is_a_not_found_error(world):
    r = world.call("get_order", {"id": "9"})
    assert not r.ok
    assert r.error_kind == "not_found"
    assert r.text == r.error == "404 Not Found: shop.get_order: no order with id '9'"
    assert r.value is None


def test_list_filters_are_optional_equality_in_id_order(world):
    world.orders.insert(id="10", customer="2", status="shipped", total=1.0)
    assert [o["id"] for o in world.call("list_orders").value] == ["1", "2", "3", "10"]
    assert [o["id"] for o in world.call("list_orders", {"customer": "2"}).value] == ["1", "3", "10"]
    r = world.call("list_orders", {"customer": "2", "status": "placed"})
    assert [o["id"] for o in r.value] == ["1", "3"]
    assert world.call("list_orders", {"status": "refunded"}).value == []
    assert world.call("list_orders", {"status": "refunded"}).text == "[]"


def test_create_required_optional_defaults_and_explicit_id(world):
    r = world.call("create_order", {"customer": "1", "status": "placed", "total": 7})
    assert r.value == {
        "id": "4",
        "customer": "1",
        "status": "placed",
        "total": 7.0,
        "qty": 1,
        "created_at": None,
        "note": None,
    }
    r = world.call(
        "create_order",
        {
            "id": "A-1",
            "customer": "1",
            "status": "shipped",
            "total": 1.5,
            "qty": 3,
            "created_at": "2025-06-01T10:00:00+02:00",
            "note": None,
        },
    )
    assert r.ok, r.text
    assert r.value["created_at"] == "2025-06-01T08:00:00Z"
    assert world.orders.get("A-1").created_at == T0 + timedelta(hours=8)
    dup = world.call("create_order", {"id": "A-1", "customer": "1", "status": "placed", "total": 1})
    assert dup.error_kind == "invalid_arguments"
    assert "order 'A-1' already exists" in dup.text


def test_update_and_delete(world):
    r = world.call("update_order", {"id": "1", "status": "shipped", "note": "x"})
    assert (r.value["status"], r.value["note"], r.value["total"]) == ("shipped", "x", 10.0)
    assert world.call("update_order", {"id": "1", "note": None}).value["note"] is None
    assert world.call("update_order", {"id": "9", "note": "x"}).error_kind == "not_found"
    r = world.call("delete_order", {"id": "1"})
    assert r.value["id"] == "1"
    assert world.orders.get("1") is None
    r = world.call("delete_order", {"id": "1"})
    assert (r.ok, r.error_kind) == (False, "not_found")
    assert r.text == "404 Not Found: shop.delete_order: no order with id '1'"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("get_order", {"id": "9"}),
        ("update_order", {"id": "9", "status": "shipped"}),
        ("delete_order", {"id": "9"}),
    ],
)
def test_a_missing_record_reads_exactly_like_an_injected_not_found(world, tool, args):
    real = world.call(tool, args)
    faulty = world.fork()
    faulty.set_faults({f"shop.{tool}": {"errors": {"not_found": 1.0}}})
    fake = faulty.call(tool, args)
    assert fake.fault == "not_found"
    assert real.fault is None
    assert (real.error_kind, real.text) == (fake.error_kind, fake.text)
    assert real.text == f"404 Not Found: shop.{tool}: no order with id '9'"


def test_a_handler_finding_no_record_answers_the_tools_404(world):
    r = world.call("flaky_refund", {"order_id": "9", "mode": "ok"})
    assert (r.error_kind, r.text) == (
        "not_found",
        "404 Not Found: payments.flaky_refund: no order with id '9'",
    )
    assert len(world.refunds) == 0  # its insert went with the transaction


def test_call_events_carry_the_call_id(world):
    n = len(world.events)
    world.call("update_order", {"id": "1", "status": "shipped"})
    world.call("create_order", {"customer": "1", "status": "placed", "total": 1})
    world.call("delete_order", {"id": "2"})
    new = world.events_since(n)
    assert [type(e) for e in new] == [
        CallStarted,
        RecordUpdated,
        CallSucceeded,
        CallStarted,
        RecordCreated,
        CallSucceeded,
        CallStarted,
        RecordDeleted,
        CallSucceeded,
    ]
    assert [e.call_id for e in new] == ["c1"] * 3 + ["c2"] * 3 + ["c3"] * 3
    assert [e.k for e in new if isinstance(e, CallStarted)] == [1, 1, 1]


def test_k_counts_valid_calls_per_tool_only(world):
    assert world.call("get_order", {"id": "1"}).k == 1
    assert world.call("get_order", {"id": 1}).k is None  # invalid: does not count
    assert world.call("get_ordr", {"id": "1"}).k is None
    assert world.call("list_orders").k == 1
    assert world.call("get_order", {"id": "9"}).k == 2  # not found still counts
    assert dict(world.snapshot().state.k) == {"get_order": 2, "list_orders": 1}


# --- validation: every kind of bad arguments -------------------------------------------------


def test_a_null_for_an_optional_argument_is_taken_as_left_out(world):
    # What CrewAI's mcpadapt sends for the arguments a model left out: every one, as null.
    everything = world.call("list_orders", {})
    assert world.call("list_orders", {"status": None, "customer": None}).value == everything.value
    before = world.orders.get("1")
    updated = world.call("update_order", {"id": "1", "status": None})
    assert updated.ok
    assert world.orders.get("1") == before
    # A required argument sent as null stays an error.
    bad = world.call("update_order", {"id": None, "status": "shipped"})
    assert bad.error == "invalid arguments for update_order: `id`: expected a string, got null"


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        (
            "get_order",
            {"id": 42},
            "invalid arguments for get_order: `id`: expected a string, got 42",
        ),
        (
            "get_order",
            {"id": None},
            "invalid arguments for get_order: `id`: expected a string, got null",
        ),
        (
            "get_order",
            {},
            "invalid arguments for get_order: missing required argument `id` (a string)",
        ),
        (
            "get_order",
            {"id": "1", "verbose": True},
            "invalid arguments for get_order: unknown argument `verbose`; this tool takes: `id`.",
        ),
        (
            "list_orders",
            {"stauts": "placed"},
            "invalid arguments for list_orders: unknown argument `stauts`; this tool takes: "
            "`status`, `customer`. Did you mean `status`?",
        ),
        (
            "list_orders",
            {"status": "sent"},
            "invalid arguments for list_orders: `status`: expected one of 'placed', 'shipped', "
            "'refunded', got \"sent\"",
        ),
        (
            "create_order",
            {"customer": "1", "status": "placed", "total": "12.50"},
            'invalid arguments for create_order: `total`: expected a number, got "12.50"',
        ),
        (
            "create_order",
            {"customer": "1", "status": "placed", "total": 1, "qty": 1.5},
            "invalid arguments for create_order: `qty`: expected an integer, got 1.5",
        ),
        (
            "create_order",
            {"customer": "1", "status": "placed"},
            "invalid arguments for create_order: missing required argument `total` (a number)",
        ),
        (
            "create_order",
            {"customer": "1", "status": "placed", "total": 1, "created_at": "yesterday"},
            "invalid arguments for create_order: `created_at`: expected a date-time string with a "
            'timezone (RFC 3339, e.g. 2025-06-01T00:00:00Z) or null, got "yesterday"',
        ),
        (
            "create_order",
            {"customer": "1", "status": "placed", "total": 1, "created_at": "2025-06-01T00:00:00"},
            "invalid arguments for create_order: `created_at`: expected a date-time string with a "
            'timezone (RFC 3339, e.g. 2025-06-01T00:00:00Z) or null, got "2025-06-01T00:00:00"',
        ),
        (
            "update_order",
            {"id": "1", "total": True},
            "invalid arguments for update_order: `total`: expected a number, got true",
        ),
        (
            "issue_refund",
            {"order_id": "1", "amount": "5"},
            'invalid arguments for issue_refund: `amount`: expected a number, got "5"',
        ),
        (
            "flaky_refund",
            {"order_id": "1", "mode": "explode"},
            "invalid arguments for flaky_refund: `mode`: expected one of 'crash', 'deny', "
            "'bad_return', 'ok', got \"explode\"",
        ),
        # numbers a JSON log cannot carry back, and booleans, which Python counts as ints
        (
            "create_order",
            {"customer": "1", "status": "placed", "total": 1, "qty": 2**63},
            "invalid arguments for create_order: `qty`: expected an integer from "
            "-9223372036854775808 to 9223372036854775807, got 9223372036854775808",
        ),
        (
            "create_order",
            {"customer": "1", "status": "placed", "total": float("nan")},
            "invalid arguments for create_order: `total`: expected a finite number, got NaN",
        ),
        (
            "issue_refund",
            {"order_id": "1", "amount": float("inf")},
            "invalid arguments for issue_refund: `amount`: expected a finite number, got Infinity",
        ),
        (
            "create_order",
            {"customer": "1", "status": "placed", "total": 1, "qty": True},
            "invalid arguments for create_order: `qty`: expected an integer, got true",
        ),
        # containers and nulls where a scalar belongs
        (
            "create_order",
            {"customer": {"id": "1"}, "status": "placed", "total": 1},
            "invalid arguments for create_order: `customer`: expected a string (a record id), "
            'got {"id":"1"}',
        ),
        (
            "list_orders",
            {"status": ["placed"]},
            "invalid arguments for list_orders: `status`: expected one of 'placed', 'shipped', "
            "'refunded', got [\"placed\"]",
        ),
        (
            "get_order",
            {1: "1"},
            "invalid arguments for get_order: expected argument names (strings). Instead, "
            "received the key 1",
        ),
        (
            "get_order",
            ["1"],
            'invalid arguments for get_order: expected an object of named arguments. Instead, received: ["1"]',
        ),
    ],
)
def test_invalid_arguments(world, tool, args, message):
    before = world.snapshot()
    n = len(world.events)
    r = world.call(tool, args)
    assert not r.ok
    assert r.error_kind == "invalid_arguments"
    assert r.text == message
    assert not world.diff(before)
    assert [type(e) for e in world.events_since(n)] == [CallStarted, CallFailed]
    assert world.events[n].k is None
    assert world.events[n + 1].message == message
    assert world.trace.failures()[-1].error == message


def test_enum_typo_gets_a_suggestion(world):
    r = world.call("list_orders", {"status": "shiped"})
    assert r.text.endswith("got \"shiped\". Did you mean 'shipped'?")


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


MEGA = "x" * 1_000_000


@pytest.mark.parametrize(
    ("tool", "args", "kind", "shown"),
    [
        ("get_order", {"id": MEGA}, "not_found", "'xxx"),
        ("update_order", {"id": MEGA}, "not_found", "'xxx"),
        (
            "create_order",
            {"customer": "1", "status": MEGA, "total": 1},
            "invalid_arguments",
            '"xxx',
        ),
        ("get_order", {MEGA: "1"}, "invalid_arguments", "`xxx"),
        ("get_order", {"id": "1", "`\n" + MEGA: 1}, "invalid_arguments", "``\nxxx"),
        ("get_order", {"id": list(range(1_000_000))}, "invalid_arguments", "[0,1,2,"),
        ("get_order", {"id": nested(254)}, "invalid_arguments", "[[[[...]]]]"),
    ],
)
def test_messages_quote_agent_input_short(world, tool, args, kind, shown):
    """A megabyte (or a deep nest) sent by an agent comes back as a few hundred characters."""
    r = world.call(tool, args)
    assert r.error_kind == kind
    assert shown in r.text
    assert len(r.text) < 400
    assert world.trace.failures()[-1].error == r.text


def test_long_values_are_cut_with_their_size():
    from faultbench.kernel._text._show import show_value
    from faultbench.kernel.lowlevel import show_repr

    assert show_value(MEGA) == '"' + "x" * 196 + "... (1000000 characters)"
    assert show_repr(MEGA) == "'" + "x" * 200 + "...' (1000000 characters)"
    assert show_value(list(range(1000))).endswith("... (an array of 1000 items)")
    assert show_value({"a": {"b": {"c": {"d": 1}}, "e": []}}) == '{"a":{"b":{"c":{...}},"e":[]}}'
    assert show_value(nested(100_000)) == "[[[[...]]]]"
    assert show_value(10**5000) == "<an integer of about 5001 digits>"
    assert show_value(float("-inf")) == "-Infinity"

    class Broken:
        def __repr__(self):
            raise RuntimeError("no")

    assert show_value(Broken()) == "<Broken>"


def test_deep_arguments_are_invalid_arguments_in_the_validator(world):
    from faultbench.kernel import InvalidArguments

    with pytest.raises(InvalidArguments) as info:
        world._ops["get_order"].validator.validate({"id": nested(2_000)})
    assert str(info.value) == (
        "invalid arguments for get_order: `id`: expected a string, got [[[[...]]]]"
    )


def test_deep_arguments_are_invalid_arguments(world):
    r = world.call("get_order", {"id": nested(2_000)})
    assert r.error_kind == "invalid_arguments"
    assert r.text == "invalid arguments for get_order: `id`: expected a string, got [[[[...]]]]"


def test_unknown_tool_with_a_megabyte_name(world):
    r = world.call(MEGA, {})
    assert r.error_kind == "unknown_tool"
    assert r.text.startswith("unknown tool '" + "x" * 100 + "...' (1000000 characters). ")
    assert "Did you mean" not in r.text
    assert r.text.endswith("Available tools: " + ", ".join(t.name for t in world.tools))
    assert len(r.text) < 400


def test_unknown_tool(world):
    r = world.call("refund_order", {"id": "1"})
    assert r.error_kind == "unknown_tool"
    assert r.text.startswith("unknown tool 'refund_order'.")
    assert "Available tools: get_order, list_orders" in r.text
    assert world.call("get_ordr").text.startswith(
        "unknown tool 'get_ordr'. Did you mean 'get_order'?"
    )


def test_unencodable_arguments_are_logged_readably(world):
    r = world.call("get_order", {"id": object()})
    assert r.error_kind == "invalid_arguments"
    assert isinstance(world.events[-2].args["id"], str)


# --- custom handlers -------------------------------------------------------------------------


def test_custom_handler_writes_through_tables_with_virtual_time(world):
    world.clock.advance(3600)
    r = world.call("issue_refund", {"order_id": "2", "amount": 5})
    assert r.ok, r.text
    assert r.value == {"id": "1", "order": "2", "amount": 5.0, "created_at": "2025-06-01T01:00:00Z"}
    assert world.refunds.get("1").created_at == T0 + timedelta(hours=1)
    assert world.orders.get("2").status == "refunded"
    recs = [e for e in world.events if getattr(e, "call_id", None) == r.call_id]
    assert [type(e) for e in recs] == [CallStarted, RecordCreated, RecordUpdated, CallSucceeded]


def test_handler_value_errors_become_clean_tool_errors(world):
    r = world.call("issue_refund", {"order_id": "2", "amount": 500})
    assert (r.ok, r.error_kind, r.text) == (
        False,
        "handler_error",
        "amount must be between 0 and 20.0",
    )
    r = world.call("issue_refund", {"order_id": "9", "amount": 1})
    assert r.text == "order '9' does not exist"
    r = world.call("flaky_refund", {"order_id": "1", "mode": "deny"})
    assert (r.error_kind, r.text) == ("handler_error", "refunds are frozen")


@pytest.mark.parametrize("mode", ["crash", "deny", "bad_return"])
def test_a_raising_handler_leaves_nothing_behind(world, mode):
    before = world.snapshot()
    n = len(world.events)
    r = world.call("flaky_refund", {"order_id": "1", "mode": mode})
    assert not r.ok
    assert not world.diff(before)
    assert world.clock.now() == T0  # its clock.advance was rolled back too
    assert world.refunds.all() == []
    assert [type(e) for e in world.events_since(n)] == [CallStarted, CallFailed]


def test_crash_message_names_the_handler(world):
    r = world.call("flaky_refund", {"order_id": "1"})
    assert r.error_kind == "internal_error"
    assert r.text == (
        "internal error in handler kernel_handlers.flaky_refund: ZeroDivisionError: division by zero"
    )
    r = world.call("flaky_refund", {"order_id": "1", "mode": "bad_return"})
    assert r.text.startswith("internal error in handler kernel_handlers.flaky_refund: its return")


def test_a_handler_that_returns_commits_its_clock_and_writes(world):
    r = world.call("flaky_refund", {"order_id": "1", "mode": "ok"})
    assert r.value == {"refunded": "1"}
    assert world.clock.now() == T0 + timedelta(seconds=5)
    assert r.finished_at == T0 + timedelta(seconds=5)
    assert r.latency_s == 5.0


def test_handler_return_values_become_json(world):
    r = world.call("stats")
    assert r.value["orders"] == 3
    assert r.value["first"]["id"] == "1"  # a Record became a dict
    assert r.value["now"] == "2025-06-01T00:00:00Z"
    assert json.loads(r.text) == r.value


# --- schemas ---------------------------------------------------------------------------------


def test_schemas_are_inline_closed_and_typed(world):
    s = world.tool("create_order").input_schema
    assert s["type"] == "object"
    assert s["additionalProperties"] is False
    assert s["required"] == ["customer", "status", "total"]
    props = s["properties"]
    assert list(props)[:3] == ["customer", "status", "total"]
    assert props["status"]["enum"] == ["placed", "shipped", "refunded"]
    assert props["total"]["type"] == "number"
    assert props["qty"]["type"] == "integer"
    assert props["created_at"] == {
        "anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}],
        "description": "created_at of the order, an RFC 3339 date-time with timezone (optional)",
    }
    assert "omit it" in props["id"]["description"]
    assert "$ref" not in json.dumps(s)
    u = world.tool("update_order").input_schema
    assert u["required"] == ["id"]
    lst = world.tool("list_orders").input_schema
    assert lst["required"] == []
    assert set(lst["properties"]) == {"status", "customer"}
    assert world.tool("get_order").description.startswith("Get one order by id.")
    assert world.tool("issue_refund").description == "Refund part of an order."
    f = world.tool("flaky_refund").input_schema
    assert f["required"] == ["order_id"]
    assert f["properties"]["mode"]["enum"] == ["crash", "deny", "bad_return", "ok"]


# --- handlers that push at the transaction's edges -------------------------------------------

_EDGE_WORLD = """
name: edges
services:
  s:
    records:
      item:
        name: str
        n: { type: int, default: 0 }
    seed:
      item:
        rows:
          - { id: "1", name: a }
    operations:
      get_item: { kind: get, record: item }
      read_own_writes: { kind: custom, handler: edge_handlers.read_own_writes }
      call_a_tool: { kind: custom, handler: edge_handlers.call_a_tool }
      reach_the_world: { kind: custom, handler: edge_handlers.reach_the_world }
      write_the_world: { kind: custom, handler: edge_handlers.write_the_world }
      cyclic_answer: { kind: custom, handler: edge_handlers.cyclic_answer }
      commit_early: { kind: custom, handler: edge_handlers.commit_early }
"""

_EDGE_HANDLERS = """
WORLD = {}  # a test puts the World itself here, as a careless handler module might


def read_own_writes(world, clock, name: str):
    item = world.items.insert(name=name)
    world.items.update(item.id, n=5)
    return {
        "name": world.items.get(item.id).name,
        "n": world.items.get(item.id).n,
        "ids": [i.id for i in world.items.all()],
        "count": len(world.items),
        "pending": len(world.events),
    }


def call_a_tool(world, clock):
    world.items.insert(name="x")
    return world.call("get_item", {"id": "1"})


def reach_the_world(world, clock):
    world.items.insert(name="x")
    return WORLD["world"].call("get_item", {"id": "1"})


def write_the_world(world, clock):
    world.items.insert(name="x")
    WORLD["world"].items.insert(name="around the transaction")


def commit_early(world, clock):
    world.items.insert(name="x")
    world.commit()
    raise ValueError("changed my mind")


def cyclic_answer(world, clock):
    world.items.insert(name="x")
    a = []
    a.append(a)
    return a
"""


@pytest.fixture
def edges(tmp_path):
    from faultbench.kernel import load_world

    (tmp_path / "edges.yaml").write_text(_EDGE_WORLD)
    (tmp_path / "edge_handlers.py").write_text(_EDGE_HANDLERS)
    world = load_world(tmp_path / "edges.yaml")
    for handler in world.spec.handlers.values():
        handler.__globals__["WORLD"]["world"] = world
    return world


def test_a_handler_reads_its_own_pending_writes(edges):
    r = edges.call("read_own_writes", {"name": "b"})
    assert r.value == {"name": "b", "n": 5, "ids": ["1", "2"], "count": 2, "pending": 2}
    assert edges.items.get("2").n == 5


@pytest.mark.parametrize(
    ("tool", "message"),
    [
        (
            "call_a_tool",
            "internal error in handler edge_handlers.call_a_tool: AttributeError: handlers "
            "cannot call tools (world.call): a call is one transaction with its own fault "
            "decision. Read and write records through the tables instead: world.items.get(id)",
        ),
        (
            "reach_the_world",
            "internal error in handler edge_handlers.reach_the_world: RuntimeError: handler "
            "edge_handlers.reach_the_world tried world.call('get_item') while its call is "
            "running.",
        ),
        (
            "write_the_world",
            "internal error in handler edge_handlers.write_the_world: RuntimeError: handler "
            "edge_handlers.write_the_world tried to write to the world (RecordCreated) while "
            "its call is running.",
        ),
        (
            "commit_early",
            "internal error in handler edge_handlers.commit_early: RuntimeError: handler "
            "edge_handlers.commit_early tried world.commit() (a call commits when its handler "
            "returns) while its call is running.",
        ),
        (
            "cyclic_answer",
            "internal error in handler edge_handlers.cyclic_answer: its return value is not "
            "JSON: maximum recursion depth exceeded",
        ),
    ],
)
def test_handlers_cannot_reach_around_their_transaction(edges, tool, message):
    """Calling a tool from a handler is refused (a call is one transaction with one fault
    decision), so is writing to the World object itself; the call fails cleanly, logged,
    with nothing written, and the world keeps working."""
    from faultbench.kernel import replay

    before = edges.snapshot()
    n = len(edges.events)
    r = edges.call(tool)
    assert (r.ok, r.error_kind) == (False, "internal_error"), r.text
    assert r.text.startswith(message)
    assert not edges.diff(before)
    assert [type(e) for e in edges.events_since(n)] == [CallStarted, CallFailed]
    assert edges.call("get_item", {"id": "1"}).ok
    assert replay(edges.spec, edges.events).state_hash() == edges.state_hash()


def _world_files():
    from pathlib import Path

    root = Path(__file__).parents[3]
    return sorted(
        [
            *(root / "tests" / "worlds").glob("*.yaml"),
            *(root / "examples").glob("*/worlds/*.yaml"),
            *(root / "examples").glob("*/world.yaml"),
        ]
    )


@pytest.mark.parametrize("path", _world_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_schema_is_valid_draft_2020_12_and_self_contained(path):
    jsonschema = pytest.importorskip("jsonschema")
    from faultbench.kernel import load_world

    world = load_world(path)
    assert world.tools
    for tool in world.tools:
        schema = tool.input_schema
        jsonschema.Draft202012Validator.check_schema(schema)
        text = json.dumps(schema)
        assert "$ref" not in text
        assert "$defs" not in text
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        assert tool.description, tool.name
        for name, prop in schema["properties"].items():
            assert prop.get("description"), (tool.name, name)
            if "enum" in prop:
                assert prop["enum"], (tool.name, name)


def test_descriptions_say_what_which_record_and_how_it_fails(world):
    d = {t.name: t.description for t in world.tools}
    assert d["create_order"] == "Create an order. Returns the new order, including its id."
    assert d["delete_order"].startswith("Delete an order by id.")
    assert d["update_order"].endswith("Fails with a not-found error if there is none.")
    assert d["list_orders"] == (
        "List orders, optionally filtered by status and customer (exact match). Returns an array "
        "of orders in id order."
    )
    props = world.tool("list_orders").input_schema["properties"]
    assert props["customer"]["description"] == (
        "only orders of this customer (its id); omit to not filter on it"
    )
    note = world.tool("update_order").input_schema["properties"]["note"]["description"]
    assert note.endswith("omit to keep the current value, null to clear it")


# --- argument descriptions of custom handlers ------------------------------------------------

_DOC_WORLD = """
name: docs
services:
  shop:
    records:
      order: { status: enum[placed, shipped], placed_at: datetime }
      line_item: { order_id: ref[order], qty: int }
    operations:
      google: { kind: custom, handler: doc_handlers.google }
      numpy: { kind: custom, handler: doc_handlers.numpy }
      sphinx: { kind: custom, handler: doc_handlers.sphinx }
      bare: { kind: custom, handler: doc_handlers.bare, record: line_item }
"""

_DOC_HANDLERS = '''
from datetime import datetime
from typing import Literal


def google(world, clock, order_id: str, amount: float, mode: Literal["a", "b"] = "a",
           note: str | None = None):
    """Google style.

    Args:
        order_id: the order to charge.
        amount (float): how much, in the order's
            currency; more than zero.
        mode: how to charge.
        note: a note for the customer.

    Returns:
        dict: the charge.
    """


def numpy(world, clock, order_id: str, when: datetime):
    """NumPy style.

    Parameters
    ----------
    order_id : str
        The order
        to ship.
    when : datetime
        When it leaves.

    Returns
    -------
    dict
    """


def sphinx(world, clock, order_id: str, qty: int = 1):
    """Sphinx style.

    :param order_id: the order to split.
    :param int qty: how many parts.
    :returns: the parts.
    """


def bare(world, clock, order_id: str, line_item_id: str, qty: int, reason: Literal["x", "y"],
         at: datetime | None = None, extra=None, count: int = 3):
    """No argument documented."""
'''


@pytest.fixture
def doc_world(tmp_path):
    from faultbench.kernel import load_world

    (tmp_path / "docs.yaml").write_text(_DOC_WORLD)
    (tmp_path / "doc_handlers.py").write_text(_DOC_HANDLERS)
    return load_world(tmp_path / "docs.yaml")


def arg_texts(world, tool):
    props = world.tool(tool).input_schema["properties"]
    return {name: prop.get("description") for name, prop in props.items()}


@pytest.mark.parametrize(
    ("tool", "texts"),
    [
        (
            "google",
            {
                "order_id": "the order to charge.",
                "amount": "how much, in the order's currency; more than zero.",
                "mode": 'how to charge: one of a, b (optional, default: "a")',
                "note": "a note for the customer. Optional.",
            },
        ),
        (
            "numpy",
            {
                "order_id": "The order to ship.",
                "when": "When it leaves: an RFC 3339 date-time with timezone",
            },
        ),
        (
            "sphinx",
            {"order_id": "the order to split.", "qty": "how many parts. Optional, default: 1."},
        ),
        (
            "bare",
            {
                "order_id": "id of the order",
                "line_item_id": "id of the line item",
                "qty": "qty of the line item",
                "reason": "reason: one of x, y",
                "at": "at: an RFC 3339 date-time with timezone (optional)",
                "extra": "extra: any JSON value (optional)",
                "count": "count (optional, default: 3)",
            },
        ),
    ],
)
def test_handler_arguments_are_described(doc_world, tool, texts):
    assert arg_texts(doc_world, tool) == texts


def test_arguments_with_defaults_carry_a_json_schema_default(world, doc_world):
    """Clients that fill in defaults (or show them) read `default`, not the description."""
    created = world.tool("create_order").input_schema["properties"]
    with_default = {name for name, p in created.items() if "default" in p}
    assert with_default, created
    for name in with_default:
        assert f"default: {json.dumps(created[name]['default'])}" in created[name]["description"]
    assert "default" not in created["total"]  # required: no default
    handler = doc_world.tool("google").input_schema["properties"]
    assert handler["mode"]["default"] == "a"
    assert "default" not in handler["note"]  # optional, None when omitted
    assert doc_world.tool("bare").input_schema["properties"]["count"]["default"] == 3
