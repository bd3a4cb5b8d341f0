"""The outbound event feed (top-level `events:`) and its generated tool `list_events`:
events derived from the log (scheduled effects included), Stripe-like pages with a
`starting_after` cursor, `since` and `type` filters, strict world-file errors."""

from __future__ import annotations

import textwrap

import pytest

from faultbench.kernel import (
    FaultInjected,
    World,
    WorldFileError,
    decode_events,
    encode_events,
    replay,
)
from faultbench.kernel.lowlevel import load_spec

WORLD = """\
name: feed
seed: 3
services:
  payments:
    records:
      refund:
        id: str
        amount: int
        status: enum[pending, succeeded, failed]
    operations:
      issue_refund:
        kind: create
        record: refund
        set: { status: pending }
        then: { after: 2m, set: { status: succeeded } }
      delete_refund: { kind: delete, record: refund }
    seed:
      refund: 5
events:
  refund.created: { record: refund, on: [create] }
  refund.updated: { record: refund, on: [update] }
  refund.deleted: { record: refund, on: [delete] }
"""
SPEC = load_spec("<feed>", text=WORLD)


def fresh() -> World:
    return World.from_spec(SPEC)


def ids_and_types(value: dict) -> list[tuple[str, str]]:
    return [(e["id"], e["type"]) for e in value["data"]]


def test_the_feed_tool_is_generated_with_a_documented_schema():
    world = fresh()
    tool = world.tool("list_events")
    assert tool.service == "payments"
    assert set(tool.input_schema["properties"]) == {"limit", "starting_after", "since", "type"}
    assert tool.input_schema["properties"]["type"]["enum"] == [
        "refund.created",
        "refund.updated",
        "refund.deleted",
    ]
    assert tool.input_schema["required"] == []


def test_seed_rows_are_not_news_and_changes_are_in_log_order():
    world = fresh()
    assert world.call("list_events").value == {
        "object": "list",
        "data": [],
        "has_more": False,
        "next_cursor": None,
    }
    rid = world.call("issue_refund", {"amount": 7}).value["id"]
    world.clock.advance(120)  # the scheduled effect makes a refund.updated too
    world.call("delete_refund", {"id": "1"})
    value = world.call("list_events").value
    assert [t for _, t in ids_and_types(value)] == [
        "refund.created",
        "refund.updated",
        "refund.deleted",
    ]
    created, updated, deleted = value["data"]
    assert created["object"] == "event"
    assert created["data"] == {"object": {"id": rid, "amount": 7, "status": "pending"}}
    assert updated["data"]["object"]["status"] == "succeeded"
    assert updated["data"]["previous_attributes"] == {"status": "pending"}
    assert updated["created"] == "2025-06-01T00:02:00Z"
    assert deleted["data"]["object"]["id"] == "1"  # a seed row, as it was
    seqs = [int(e["id"].removeprefix("evt_")) for e in value["data"]]
    assert seqs == sorted(seqs)


def test_paging_with_starting_after_returns_every_event_once():
    world = fresh()
    for n in range(23):
        world.call("issue_refund", {"amount": n})
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        args = {"limit": 5} if cursor is None else {"limit": 5, "starting_after": cursor}
        value = world.call("list_events", args).value
        pages += 1
        seen += [e["id"] for e in value["data"]]
        if not value["has_more"]:
            assert value["next_cursor"] is None
            break
        cursor = value["next_cursor"]
        world.call("issue_refund", {"amount": 100 + pages})  # news while paging
    assert len(seen) == len(set(seen))
    everything = [e["id"] for e in world.call("list_events", {"limit": 100}).value["data"]]
    assert seen == everything


def test_a_poller_gets_only_what_is_new_and_filters_by_type_and_time():
    world = fresh()
    world.call("issue_refund", {"amount": 1})
    last = world.call("list_events").value["data"][-1]["id"]
    world.clock.advance(120)
    new = world.call("list_events", {"starting_after": last}).value
    assert [t for _, t in ids_and_types(new)] == ["refund.updated"]
    later = world.call("list_events", {"since": "2025-06-01T00:01:00Z"}).value
    assert ids_and_types(later) == ids_and_types(new)
    only = world.call("list_events", {"type": "refund.created"}).value
    assert [t for _, t in ids_and_types(only)] == ["refund.created"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"starting_after": "evt_999"}, "is not the id of an event of this feed"),
        ({"starting_after": "cus_1"}, "is not the id of an event of this feed"),
        ({"limit": 0}, "limit must be from 1 to 100"),
        ({"limit": 101}, "limit must be from 1 to 100"),
        ({"type": "refund.lost"}, "type"),
    ],
)
def test_bad_cursors_and_limits_are_tool_errors(args, expected):
    world = fresh()
    world.call("issue_refund", {"amount": 1})
    result = world.call("list_events", args)
    assert not result.ok
    assert result.error_kind == "invalid_arguments"
    assert expected in result.error


def test_the_feed_follows_restores_forks_and_replays():
    world = fresh()
    world.call("issue_refund", {"amount": 1})
    snap = world.snapshot()
    world.call("issue_refund", {"amount": 2})
    assert len(world.call("list_events").value["data"]) == 2
    child = world.fork(snap)
    assert len(child.call("list_events").value["data"]) == 1
    world.restore(snap)
    assert len(world.call("list_events").value["data"]) == 1
    world.clock.advance(300)
    again = replay(SPEC, decode_events(encode_events(world.events)))
    assert again.call("list_events").value == world.call("list_events").value
    assert encode_events(again.events) == encode_events(world.events)


def problems(text: str) -> list[str]:
    with pytest.raises(WorldFileError) as info:
        load_spec("<w>", text=text)
    return str(info.value).splitlines()


BASE = WORLD.split("events:")[0]


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (
            "events:\n  refund.updated: { record: refnd, on: [update] }\n",
            "<w>:20:29: event type 'refund.updated' names an unknown record 'refnd'; expected "
            "one of refund; did you mean 'refund'?",
        ),
        (
            "events:\n  refund.updated: { record: refund, on: [updated] }\n",
            "<w>:20:42: unknown change 'updated'; expected one of create, update or delete; did "
            "you mean 'update'?",
        ),
        (
            "events:\n  refund: { record: refund }\n",
            "<w>:20:3: invalid event type 'refund'; expected dotted words",
        ),
        (
            "events:\n  refund.updated: { record: refund, when: [update] }\n",
            "<w>:20:37: unknown key 'when' in event type 'refund.updated'",
        ),
    ],
)
def test_world_file_mistakes_in_events(block, expected):
    found = problems(BASE + block)
    assert any(expected in p for p in found), found


def test_a_feed_next_to_a_tool_called_list_events_is_an_error():
    text = BASE.replace(
        "      delete_refund:",
        "      list_events: { kind: list, record: refund }\n      delete_refund:",
    ) + textwrap.dedent("""\
        events:
          refund.updated: { record: refund }
    """)
    found = problems(text)
    assert any("already defines one" in p for p in found), found


# --- feed faults ------------------------------------------------------------------------------


def feed_world(kind: str, **options) -> World:
    world = fresh()
    for n in range(4):
        world.call("issue_refund", {"amount": n})
        world.clock.advance(30)
    step = {"kind": kind, **options} if options else kind
    world.set_faults({"payments.list_events": {"script": {1: step}}})
    return world


def page_ids(world: World, args: dict | None = None) -> tuple[list[str], object]:
    result = world.call("list_events", args or {})
    assert result.ok
    return [e["id"] for e in result.value["data"]], result


def test_duplicate_delivery_repeats_one_event_in_a_row():
    world = feed_world("duplicate_delivery")
    clean = world.fork(faults=False)
    ids, result = page_ids(world)
    expected, _ = page_ids(clean)
    assert result.fault == "duplicate_delivery"
    assert len(ids) == len(expected) + 1
    assert ids[0] == ids[1] == expected[0]  # the first call touches the first event
    assert list(dict.fromkeys(ids)) == expected


def test_out_of_order_swaps_an_event_with_the_one_after_it():
    world = feed_world("out_of_order")
    expected, _ = page_ids(world.fork(faults=False))
    ids, result = page_ids(world)
    assert result.fault == "out_of_order"
    assert ids == [expected[1], expected[0], *expected[2:]]


def test_dropped_loses_an_event_for_good():
    world = feed_world("dropped")
    expected, _ = page_ids(world.fork(faults=False))
    ids, result = page_ids(world)
    assert result.fault == "dropped"
    assert ids == expected[1:]
    # a cursor past it never brings it back
    later, _ = page_ids(world, {"starting_after": ids[-1]})
    assert expected[0] not in later


def test_delayed_holds_back_the_newest_events_until_later():
    world = feed_world("delayed", delay_s=100)
    expected, _ = page_ids(world.fork(faults=False))
    ids, result = page_ids(world)
    assert result.fault == "delayed"
    assert result.value["has_more"] is False
    assert ids == expected[: len(ids)]
    assert 0 < len(ids) < len(expected)
    world.clock.advance(100)
    again, _ = page_ids(world, {"starting_after": ids[-1]})
    assert (ids + again)[: len(expected)] == expected  # (and the effects that fired since)


def test_feed_faults_are_logged_with_the_events_they_touched_and_replay():
    world = feed_world("dropped")
    ids, _ = page_ids(world)
    [event] = [e for e in world.events if isinstance(e, FaultInjected)]
    assert event.kind == "dropped"
    assert event.detail["events"]
    assert event.detail["events"][0] not in ids
    again = replay(SPEC, decode_events(encode_events(world.events)))
    assert again.state_hash() == world.state_hash()
    # same seed, same calls, same faults: the same log, byte for byte
    twin = feed_world("dropped")
    page_ids(twin)
    assert encode_events(twin.events) == encode_events(world.events)


def test_feed_faults_are_pinned_as_a_script():
    from faultbench.kernel.lowlevel import faults_received, pin_block

    world = fresh()
    world.call("issue_refund", {"amount": 1})
    world.set_faults({"payments.list_events": {"errors": {"delayed": {"p": 1.0, "delay_s": 90}}}})
    world.call("list_events")
    pins = faults_received(world.events)
    assert [str(p) for p in pins] == ["list_events#1 delayed"]
    block = pin_block(pins, SPEC)
    assert block == {"payments.list_events": {"script": {1: {"kind": "delayed", "delay_s": 90}}}}


def test_a_feed_kind_on_another_operation_is_a_load_error():
    with pytest.raises(WorldFileError, match=r"dropped cannot happen to payments\.issue_refund"):
        World.from_spec(SPEC).set_faults({"payments.issue_refund": {"errors": {"dropped": 0.5}}})
