"""The outbound event feed (top-level `events:`) and its generated tool `list_events`:
events derived from the log (scheduled effects included), Stripe-like pages with a
`starting_after` cursor, `since` and `type` filters, strict world-file errors."""

from __future__ import annotations

import textwrap

import pytest

from faultbench.kernel import World, WorldFileError, decode_events, encode_events, replay
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
