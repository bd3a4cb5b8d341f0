"""Tools defined in code (`add_tools`, `empty_spec`): typed, faulted, logged, replayed."""

from __future__ import annotations

from typing import Literal

import pytest

import faultbench
from faultbench import ReplayError, World, encode_events, replay
from faultbench.kernel.lowlevel import add_tools, empty_spec

README = "examples/readme/world.yaml"


def lookup(city: str, days: int = 1, unit: Literal["C", "F"] = "C") -> dict:
    """The weather forecast for a city.

    Args:
        city: the city's name
    """
    return {"city": city, "days": days, "unit": unit}


def test_a_plain_function_becomes_a_typed_tool():
    world = World.from_spec(add_tools(empty_spec(), {"lookup": lookup}, service="weather"))
    (tool,) = world.tools
    assert tool.description == "The weather forecast for a city."
    assert tool.input_schema["required"] == ["city"]
    assert tool.input_schema["properties"]["city"]["description"] == "the city's name"
    assert tool.input_schema["properties"]["unit"]["enum"] == ["C", "F"]
    assert world.call("lookup", {"city": "Oslo"}).value == {"city": "Oslo", "days": 1, "unit": "C"}
    bad = world.call("lookup", {"city": 3})
    assert bad.error_kind == "invalid_arguments"
    assert world.trace.summary() == "lookup → lookup!invalid_arguments"


def test_a_handler_taking_world_and_clock_is_used_as_it_is():
    def stamp(world, clock, note: str) -> dict:
        return {"note": note, "at": clock.now()}

    world = World.from_spec(add_tools(empty_spec(), {"stamp": stamp}))
    assert world.call("stamp", {"note": "x"}).value == {
        "note": "x",
        "at": "2025-06-01T00:00:00Z",
    }


def test_tools_join_a_world_file_and_its_fault_rules_apply():
    spec = add_tools(
        faultbench.kernel.lowlevel.load_spec(README), {"lookup": lookup}, service="payments"
    )
    world = World.from_spec(spec)
    world.set_faults({"payments.*": {"errors": {"http_503": 1.0}}})
    failed = world.call("lookup", {"city": "Oslo"})
    assert failed.text == (
        "503 Service Unavailable: payments.lookup is temporarily unavailable; try again later"
    )
    world.orders.insert(status="placed", total=1.0)
    assert world.call("get_order", {"id": "1"}).ok  # other services untouched


def test_bad_tools_are_refused_clearly():
    spec = faultbench.kernel.lowlevel.load_spec(README)
    with pytest.raises(ValueError, match="already has a tool named 'get_order'"):
        add_tools(spec, {"get_order": lookup})
    with pytest.raises(ValueError, match="tool name"):
        add_tools(spec, {"no such": lookup})
    with pytest.raises(TypeError, match="cannot be passed by name"):
        add_tools(spec, {"f": lambda x, /: x})


def test_the_log_records_the_tools_and_replay_needs_the_same():
    spec = add_tools(empty_spec(), {"lookup": lookup})
    world = World.from_spec(spec)
    world.call("lookup", {"city": "Oslo"})
    assert set(world.events[0].tools) == {"lookup"}
    again = replay(spec, encode_events(world.events))
    assert again.state_hash() == world.state_hash()
    assert again.call("lookup", {"city": "Rome"}).ok  # the replayed world has the tools

    def other(city: str, country: str = "") -> dict:
        return {}

    for different, words in (
        (
            add_tools(empty_spec(), {"lookup": other}),
            r"changed \(arguments or description\): lookup",
        ),
        (empty_spec(), "missing lookup"),
        (add_tools(empty_spec(), {"lookup": lookup, "more": other}), "not in the log: more"),
    ):
        with pytest.raises(ReplayError, match=words):
            replay(different, world.events)
    assert replay(empty_spec(), world.events, strict=False).state_hash() == world.state_hash()


def test_a_world_file_alone_records_no_tools_and_old_logs_replay():
    world = faultbench.load_world(README)
    assert world.events[0].tools == {}
    text = encode_events(world.events).replace(b',"tools":{}', b"")
    assert replay(world.spec, text).state_hash() == world.state_hash()


def test_fork_and_reset_keep_code_tools():
    world = World.from_spec(add_tools(empty_spec(), {"lookup": lookup}))
    fork = world.fork()
    assert fork.call("lookup", {"city": "Oslo"}).ok
    world.reset()
    assert world.call("lookup", {"city": "Oslo"}).ok
