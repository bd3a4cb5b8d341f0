"""Effects that happen later: an operation's `set:` and `then:`, `world.schedule`, and how
scheduled effects fire on the virtual clock (in order, as events), survive forks, restores,
resets and replays, and fire the same way under trio and asyncio."""

from __future__ import annotations

import asyncio
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest
import trio

from faultbench.kernel import (
    EffectFired,
    EffectScheduled,
    RecordError,
    RecordNotFound,
    RecordUpdated,
    World,
    WorldFileError,
    decode_events,
    encode_events,
    replay,
)
from faultbench.kernel.lowlevel import load_spec

WORLD = """\
name: refunds
seed: 7
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
        then: { after: [30s, 5m], set: { status: succeeded }, or: { p: 0.05, set: { status: failed } } }
      retry_refund:
        kind: update
        record: refund
        set: { status: pending }
        then: { after: 1m, set: { status: succeeded } }
      get_refund: { kind: get, record: refund }
      delete_refund: { kind: delete, record: refund }
"""
SPEC = load_spec("<refunds>", text=WORLD)


def fresh(run: int = 0) -> World:
    return World.from_spec(SPEC, run=run)


def effects(world: World) -> list:
    return [e for e in world.events if isinstance(e, EffectScheduled | EffectFired)]


# --- set: and then: ----------------------------------------------------------------------------


def test_set_fields_are_written_and_are_not_arguments():
    world = fresh()
    schema = world.tool("issue_refund").input_schema
    assert "status" not in schema["properties"]
    assert "status" not in world.tool("retry_refund").input_schema["properties"]
    result = world.call("issue_refund", {"amount": 5})
    assert result.value["status"] == "pending"
    refused = world.call("issue_refund", {"amount": 5, "status": "succeeded"})
    assert not refused.ok
    assert "status" in refused.error


def test_a_refund_is_pending_then_succeeds_when_the_clock_passes_its_time():
    world = fresh()
    rid = world.call("issue_refund", {"amount": 5}).value["id"]
    [pending] = world.scheduled
    assert pending["record"] == "refund"
    assert pending["id"] == rid
    assert pending["set"] == {"status": "succeeded"}
    delay = pending["due"] - world.clock.now()
    assert timedelta(seconds=30) <= delay <= timedelta(minutes=5)

    world.clock.advance(delay - timedelta(seconds=1))
    assert world.refunds.get(rid).status == "pending"
    world.clock.advance(1)
    assert world.refunds.get(rid).status == "succeeded"
    assert world.scheduled == []
    # the clock stopped at the due time, the effect fired there, the change followed
    fired = next(e for e in world.events if isinstance(e, EffectFired))
    update = world.events[fired.seq + 1]
    assert fired.at == pending["due"]
    assert fired.outcome == "applied"
    assert isinstance(update, RecordUpdated)
    assert update.call_id is None
    assert update.changes == {"status": "succeeded"}
    assert update.old == {"status": "pending"}


def test_a_later_call_fires_what_is_due_before_it_starts():
    world = fresh()
    rid = world.call("issue_refund", {"amount": 5}).value["id"]
    world.clock.set(world.scheduled[0]["due"])  # due now: fired by the next call or advance
    got = world.call("get_refund", {"id": rid})
    assert got.value["status"] == "succeeded"


def test_the_delay_and_branch_are_drawn_from_the_seed_and_run():
    def dues(run: int) -> list:
        world = fresh(run)
        for amount in range(40):
            world.call("issue_refund", {"amount": amount})
        return [(p["due"], p["set"]["status"]) for p in world.scheduled]

    assert dues(0) == dues(0)
    assert dues(0) != dues(1)
    statuses = [s for run in range(5) for _, s in dues(run)]
    # p = 0.05 over 200 refunds: some fail, most succeed
    assert 0 < statuses.count("failed") < statuses.count("succeeded")


def test_effects_fire_by_due_time_then_by_scheduling_order():
    world = fresh()
    for amount in (1, 2, 3):
        world.call("issue_refund", {"amount": amount})
    world.schedule(after=0, record="refund", id="3", set={"amount": 30})
    world.schedule(after=0, record="refunds", id="1", set={"amount": 10})
    world.clock.advance(3600)
    fired = [e for e in world.events if isinstance(e, EffectFired)]
    dues = [e.at for e in fired]
    assert dues == sorted(dues)
    assert [e.effect_id for e in fired[:2]] == ["e4", "e5"]  # the tie keeps scheduling order
    assert {r.status for r in world.refunds.all()} == {"succeeded"}


def test_an_update_with_then_schedules_and_a_deleted_record_is_left_alone():
    world = fresh()
    rid = world.call("issue_refund", {"amount": 5}).value["id"]
    world.call("retry_refund", {"id": rid})
    world.call("delete_refund", {"id": rid})
    world.clock.advance(600)
    fired = [e for e in world.events if isinstance(e, EffectFired)]
    assert [e.outcome for e in fired] == ["gone", "gone"]
    assert len(world.refunds) == 0


def test_a_call_that_fails_schedules_nothing():
    world = fresh()
    result = world.call("retry_refund", {"id": "nope"})
    assert not result.ok
    assert world.scheduled == []


# --- world.schedule ------------------------------------------------------------------------------


def test_world_schedule_checks_everything_when_it_is_called():
    world = fresh()
    rid = world.call("issue_refund", {"amount": 5}).value["id"]
    with pytest.raises(RecordError, match="no field 'stauts'"):
        world.schedule(after=60, record="refund", id=rid, set={"stauts": "failed"})
    with pytest.raises(RecordError, match="status"):
        world.schedule(after=60, record="refund", id=rid, set={"status": "lost"})
    with pytest.raises(RecordNotFound):
        world.schedule(after=60, record="refund", id="99", set={"status": "failed"})
    with pytest.raises(ValueError, match="after=: invalid duration"):
        world.schedule(after="soon", record="refund", id=rid, set={"status": "failed"})
    with pytest.raises(LookupError, match="Expected a table name"):
        world.schedule(after=60, record="refnd", id=rid, set={"status": "failed"})
    assert len(world.scheduled) == 1  # only the call's own


def test_world_schedule_takes_seconds_durations_and_timedeltas():
    world = fresh()
    rid = world.call("issue_refund", {"amount": 5}).value["id"]
    now = world.clock.now()
    ids = [
        world.schedule(after=after, record="refund", id=rid, set={"amount": n})
        for n, after in enumerate([90, "2m", timedelta(minutes=3)])
    ]
    assert ids == ["e2", "e3", "e4"]
    dues = {p["effect_id"]: p["due"] - now for p in world.scheduled}
    assert [dues[i] for i in ids] == [timedelta(seconds=s) for s in (90, 120, 180)]


HANDLER = """
def hold_refund(world, clock, id: str, minutes: int):
    world.refunds.update(id, status="pending")
    world.schedule(after=minutes * 60, record="refund", id=id, set={"status": "succeeded"})
    if minutes > 60:
        raise ValueError("too long")
    return world.refunds.get(id)
"""


def test_a_handler_schedules_as_part_of_its_call(tmp_path: Path):
    (tmp_path / "later_rules.py").write_text(textwrap.dedent(HANDLER))
    text = WORLD + "      hold_refund: { kind: custom, handler: later_rules.hold_refund }\n"
    path = tmp_path / "w.yaml"
    path.write_text(text)
    world = World.from_spec(load_spec(path))
    world.refunds.insert(id="r1", amount=1, status="succeeded")
    refused = world.call("hold_refund", {"id": "r1", "minutes": 90})
    assert not refused.ok
    assert world.scheduled == []
    assert world.call("hold_refund", {"id": "r1", "minutes": 2}).ok
    [pending] = world.scheduled
    scheduled = next(e for e in world.events if isinstance(e, EffectScheduled))
    assert scheduled.call_id == "c2"
    assert pending["effect_id"] == "e1"
    world.clock.advance(120)
    assert world.refunds.get("r1").status == "succeeded"
    assert replay(world.spec, world.events).state_hash() == world.state_hash()


# --- snapshots, forks, replay ---------------------------------------------------------------


def test_a_fork_keeps_pending_effects_and_fires_them_on_its_own():
    world = fresh()
    rid = world.call("issue_refund", {"amount": 5}).value["id"]
    child = world.fork()
    assert child.scheduled == world.scheduled
    child.clock.advance(600)
    assert child.refunds.get(rid).status == "succeeded"
    assert world.refunds.get(rid).status == "pending"
    assert len(world.scheduled) == 1


def test_restore_and_reset_take_the_effects_of_the_moment_they_go_back_to():
    world = fresh()
    before = world.snapshot()
    rid = world.call("issue_refund", {"amount": 5}).value["id"]
    mid = world.snapshot()
    world.clock.advance(600)
    assert world.scheduled == []
    world.restore(mid)
    assert len(world.scheduled) == 1
    assert world.refunds.get(rid).status == "pending"
    world.restore(before)
    assert world.scheduled == []
    world.restore(mid)
    world.reset()
    assert world.scheduled == []
    assert len(world.refunds) == 0
    assert world.state_hash() == before.state_hash()


def test_pending_effects_are_part_of_the_state_hash():
    a, b = fresh(), fresh()
    a.call("issue_refund", {"amount": 5})
    b.call("issue_refund", {"amount": 5})
    assert a.state_hash() == b.state_hash()
    b.schedule(after=60, record="refund", id="1", set={"amount": 6})
    assert a.state_hash() != b.state_hash()


def test_replay_mid_schedule_rebuilds_the_pending_effects_and_continues_the_same():
    world = fresh()
    for amount in range(5):
        world.call("issue_refund", {"amount": amount})
    world.clock.advance(120)  # some fired, some pending
    assert world.scheduled
    data = encode_events(world.events)
    again = replay(SPEC, decode_events(data))
    assert again.state_hash() == world.state_hash()
    assert again.scheduled == world.scheduled
    assert encode_events(again.events) == data
    for w in (world, again):
        w.call("get_refund", {"id": "1"})
        w.clock.advance(600)
    assert encode_events(again.events) == encode_events(world.events)


def test_replay_refuses_an_effect_fired_before_its_time():
    world = fresh()
    world.call("issue_refund", {"amount": 5})
    world.clock.advance(600)
    events = list(world.events)
    i = next(i for i, e in enumerate(events) if isinstance(e, EffectFired))
    # drop the clock's move to the due time: the effect now fires early
    tampered = list(events[: i - 1])
    rest = [
        type(e)(**{**{f: getattr(e, f) for f in e.__struct_fields__}, "seq": e.seq - 1})
        for e in events[i:]
    ]
    with pytest.raises(Exception, match=r"before it is due|stamped"):
        replay(SPEC, tampered + rest)


# --- the same order under trio and asyncio ------------------------------------------------------

PLAN = [("issue_refund", {"amount": n}) for n in range(6)] + [("get_refund", {"id": "1"})]


def run_trio() -> bytes:
    world = fresh()

    async def main() -> None:
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                for tool, args in PLAN:
                    nursery.start_soon(world.acall, tool, args)
            world.clock.advance(400)
            await world.acall("get_refund", {"id": "2"})

    trio.run(main)
    return encode_events(world.events)


def run_asyncio() -> bytes:
    world = fresh()

    async def main() -> None:
        async with asyncio.timeout(10):
            async with asyncio.TaskGroup() as group:
                for tool, args in PLAN:
                    group.create_task(world.acall(tool, args))
            world.clock.advance(400)
            await world.acall("get_refund", {"id": "2"})

    asyncio.run(main())
    return encode_events(world.events)


def test_scheduled_effects_fire_in_the_same_order_under_trio_and_asyncio():
    log = run_trio()
    assert log == run_asyncio()
    assert log == run_trio()
    fired = [e for e in decode_events(log) if isinstance(e, EffectFired)]
    assert len(fired) == 6
    assert [e.at for e in fired] == sorted(e.at for e in fired)


# --- the world file ---------------------------------------------------------------------------


def problems(text: str) -> list[str]:
    with pytest.raises(WorldFileError) as info:
        load_spec("<w>", text=text)
    return str(info.value).splitlines()


def op(line: str) -> str:
    return WORLD + "      bad:\n" + textwrap.indent(textwrap.dedent(line), " " * 8)


@pytest.mark.parametrize(
    ("decl", "expected"),
    [
        (
            "kind: get\nrecord: refund\nthen: {after: 1m, set: {status: failed}}\n",
            "<w>:26:9: 'then' is only for kind: create or update (this operation is kind: get)",
        ),
        (
            "kind: create\nrecord: refund\nset: {stauts: pending}\n",
            "<w>:26:15: set of operation 'bad': 'stauts' is not a field of record 'refund'",
        ),
        (
            "kind: create\nrecord: refund\nset: {status: done}\n",
            "<w>:26:23: set of operation 'bad': refund.status cannot be 'done'; expected one of "
            "pending, succeeded or failed",
        ),
        (
            "kind: create\nrecord: refund\nthen: {after: soon, set: {status: failed}}\n",
            "<w>:26:23: after: invalid duration 'soon'",
        ),
        (
            "kind: create\nrecord: refund\nthen: {after: [5m, 30s], set: {status: failed}}\n",
            "<w>:26:23: after range ['5m', '30s'] runs backwards",
        ),
        (
            "kind: create\nrecord: refund\nthen: {after: 1m, set: {status: failed}, or: {p: 2, set: {}}}\n",
            "<w>:26:58: p must be a probability from 0 to 1, not 2",
        ),
        (
            "kind: create\nrecord: refund\nthen: {after: 1m, sett: {status: failed}}\n",
            "<w>:26:27: unknown key 'sett' in then of operation 'bad'",
        ),
        (
            "kind: custom\nhandler: x.y\nthen: {after: 1m, set: {status: failed}}\n",
            "world.schedule(",
        ),
    ],
)
def test_world_file_mistakes_in_set_and_then(decl, expected):
    found = problems(op(decl))
    assert any(expected in p for p in found), found


def test_effect_events_read_as_one_line_each():
    from faultbench.kernel.lowlevel import format_event

    world = fresh()
    world.call("issue_refund", {"amount": 5})
    world.schedule(after=60, record="refund", id="1", set={"amount": 6})
    world.call("delete_refund", {"id": "1"})
    world.clock.advance(600)
    lines = [format_event(e) for e in world.events if isinstance(e, EffectScheduled | EffectFired)]
    assert lines[1] == "EffectScheduled e2 refund 1 {amount: 6} at 2025-06-01T00:01:00Z"
    assert lines[0].startswith('EffectScheduled e1 refund 1 {status: "')
    assert lines[0].endswith(("(then)", "(or)"))
    assert lines[2:] == ["EffectFired e2 refund 1 (gone)", "EffectFired e1 refund 1 (gone)"]


def test_many_effects_fire_in_due_then_scheduling_order_whatever_the_steps():
    import random

    rng = random.Random(21)
    world = fresh()
    for n in range(10):
        world.call("issue_refund", {"amount": n})
    expected = []
    for _ in range(60):
        rid = str(rng.randint(1, 10))
        after = rng.choice([0, 10, 10, 45, 90, 300])
        effect = world.schedule(after=after, record="refund", id=rid, set={"amount": 1})
        expected.append((world.clock.now() + timedelta(seconds=after), int(effect[1:])))
        if rng.random() < 0.3:
            world.clock.advance(rng.choice([0, 5, 10, 60]))
        if rng.random() < 0.2:
            world.call("get_refund", {"id": rid})
    world.clock.advance(3600)
    fired = [e for e in world.events if isinstance(e, EffectFired)]
    ours = [e for e in fired if int(e.effect_id[1:]) > 10]  # the 10 `then:` effects aside
    assert [e.at for e in fired] == sorted(e.at for e in fired)
    assert [int(e.effect_id[1:]) for e in ours] == [n for _, n in sorted(expected)]
    assert all(e.at == due for e, (due, _) in zip(ours, sorted(expected), strict=True))
    assert replay(SPEC, decode_events(encode_events(world.events))).state_hash() == (
        world.state_hash()
    )
