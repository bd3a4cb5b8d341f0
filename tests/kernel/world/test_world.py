"""World: genesis, accessors, clock, events, snapshots, restore, reset, diff, acall."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from faultbench.kernel import (
    CallFailed,
    CallStarted,
    CallSucceeded,
    ClockAdvanced,
    RecordCreated,
    RecordUpdated,
    Snapshot,
    Table,
    UnknownTool,
    World,
    WorldCreated,
)
from faultbench.kernel._spec._types import WORLD_ATTRIBUTES

from ..conftest import T0


def test_log_starts_with_world_created_then_seed_rows(world, spec):
    ev = world.events
    assert isinstance(ev[0], WorldCreated)
    assert (ev[0].world, ev[0].seed, ev[0].run, ev[0].digest) == ("shop", 7, 0, spec.digest)
    assert ev[0].path == spec.path
    assert ev[0].at == T0
    seeds = ev[1:]
    assert all(isinstance(e, RecordCreated) and e.call_id is None for e in seeds)
    assert [(e.table, e.id) for e in seeds] == [
        ("customer", "1"),
        ("customer", "2"),
        ("order", "1"),
        ("order", "2"),
        ("order", "3"),
    ]
    assert [e.seq for e in ev] == list(range(len(ev)))
    assert world.seed == 7
    assert World.from_spec(spec, seed=3).seed == 3


@pytest.mark.parametrize("seed", [7, 8])
def test_a_repeated_genesis_equals_a_fresh_one(spec, seed, monkeypatch):
    """Worlds of one spec and seed start from the last genesis made (a suite's runs do):
    each must equal, event for event and field for field, one seeded from nothing."""
    import immutables
    import msgspec

    from faultbench.kernel._world import _world as world_module

    def unindexed(world: World) -> object:
        return msgspec.structs.replace(world.snapshot()._state, index=immutables.Map())

    def fresh(run: int, faults: bool) -> World:
        monkeypatch.setattr(world_module, "_last_genesis", None)
        return World.from_spec(spec, seed=seed, run=run, faults=faults)

    World.from_spec(spec, seed=seed)  # the one the others reuse
    for run, faults in [(0, True), (3, True), (5, False)]:
        reused = World.from_spec(spec, seed=seed, run=run, faults=faults)
        assert world_module._last_genesis is not None  # the path under test was taken
        made = fresh(run, faults)
        assert unindexed(reused) == unindexed(made)  # every field but the derived indexes
        assert reused.state_hash() == made.state_hash()
        assert msgspec.json.encode(list(reused.events)) == msgspec.json.encode(list(made.events))
        assert (reused.events[0].run, reused.events[0].faults) == (run, faults)
    # worlds from one genesis stay independent: a write to one is not seen by another
    one, other = World.from_spec(spec, seed=seed), World.from_spec(spec, seed=seed, run=1)
    one.order.update("1", status="shipped")
    assert (one.order.get("1")["status"], other.order.get("1")["status"]) == ("shipped", "placed")
    assert World.from_spec(spec, seed=seed).state_hash() == other.state_hash() != one.state_hash()


def test_public_attributes_match_the_reserved_list(world):
    public = {n for n in dir(world) if not n.startswith("_")}
    assert public == set(WORLD_ATTRIBUTES)


def test_accessors_and_table_lookup(world):
    assert isinstance(world.orders, Table)
    assert world.orders is world.order
    assert world.table("order") is world.orders
    assert world.table("orders") is world.orders
    assert list(world.tables) == ["customer", "order", "refund"]
    with pytest.raises(LookupError, match=r"Instead, received: 'ordr'.*Did you mean 'order'"):
        world.table("ordr")
    with pytest.raises(
        AttributeError, match=r"no attribute or table 'oders'.*Did you mean 'orders'"
    ):
        _ = world.oders
    with pytest.raises(AttributeError, match=r"Did you mean 'snapshot'"):
        world.snapshto()


def test_identity_attributes(world, spec):
    assert world.name == "shop"
    assert world.spec is spec
    assert world.run == 0
    assert world.faults_enabled is True
    assert World.from_spec(spec, run=4, faults=False).faults_enabled is False


def test_clock_is_virtual_and_logged(world):
    assert world.clock.now() == T0
    n = len(world.events)
    assert world.clock.advance(90) == T0 + timedelta(seconds=90)
    assert world.clock.now() == T0 + timedelta(seconds=90)
    ev = world.events[n]
    assert isinstance(ev, ClockAdvanced)
    assert (ev.at, ev.to) == (T0, T0 + timedelta(seconds=90))
    world.clock.advance(timedelta(minutes=1))
    world.clock.set(datetime(2025, 6, 2))  # naive means UTC
    assert world.clock.now() == datetime(2025, 6, 2, tzinfo=UTC)
    world.clock.set("2025-06-03T00:00:00Z")
    assert world.clock.now().day == 3
    world.clock.advance(0)  # no event for a zero step
    assert len(world.events) == n + 4


def test_clock_refuses_to_go_backwards(world):
    world.clock.advance(10)
    with pytest.raises(ValueError, match=r"cannot go backwards: it is 2025-06-01T00:00:10\+00:00"):
        world.clock.set(T0)
    with pytest.raises(ValueError, match=r"only moves forward"):
        world.clock.advance(-1)
    with pytest.raises(TypeError, match=r"Expected a number of seconds"):
        world.clock.advance("5s")


@pytest.mark.parametrize("seconds", [float("nan"), float("inf"), 1e12, 10**30])
def test_clock_refuses_steps_a_datetime_cannot_take(world, seconds):
    with pytest.raises(ValueError, match=r"Expected a finite number of seconds that keeps the"):
        world.clock.advance(seconds)
    assert world.clock.now() == T0


def test_events_is_a_fixed_view_and_events_since(world):
    view = world.events
    n = len(view)
    world.orders.update("1", status="shipped")
    assert len(view) == n
    assert len(world.events) == n + 1
    assert world.events_since(n) == [world.events[n]]
    assert world.events_since(0) == list(world.events)
    assert world.events[-1] is world.events[n]
    assert world.events[1:3] == list(world.events)[1:3]


def test_to_dict(world):
    d = world.to_dict()
    assert list(d) == ["customer", "order", "refund"]
    assert d["customer"] == [
        {"id": "1", "name": "cust1", "vip": False},
        {"id": "2", "name": "cust2", "vip": False},
    ]
    assert d["refund"] == []


def test_snapshot_restore_rewinds_state_and_log(world):
    snap = world.snapshot()
    assert isinstance(snap, Snapshot)
    h, n = world.state_hash(), len(world.events)
    world.orders.update("1", status="shipped")
    world.call("create_order", {"customer": "1", "status": "placed", "total": 3})
    world.clock.advance(60)
    later = world.snapshot()
    assert world.state_hash() != h
    world.restore(snap)
    assert world.state_hash() == h
    assert len(world.events) == n
    assert world.orders.get("1").status == "placed"
    assert world.clock.now() == T0
    # the call counter went back too: the next call is c1 again
    assert world.call("get_order", {"id": "1"}).call_id == "c1"
    # and forward again
    world.restore(later)
    assert world.orders.get("4") is not None
    assert world.clock.now() == T0 + timedelta(seconds=60)


def test_snapshot_is_unaffected_by_later_writes(world):
    snap = world.snapshot()
    world.orders.delete("1")
    assert snap.to_dict()["order"][0]["id"] == "1"
    assert snap.seq == len(snap.events)
    assert snap.at == T0


def test_restore_and_fork_reject_foreign_snapshots(world, spec):
    from ..conftest import make_shop_spec

    other = World.from_spec(make_shop_spec(digest="other"))
    for use in (world.restore, world.fork):
        with pytest.raises(ValueError, match=r"snapshot of world 'shop'"):
            use(other.snapshot())
        with pytest.raises(TypeError, match=r"Expected a Snapshot"):
            use("nope")


def test_reset_returns_to_the_seeded_state(world):
    seeded_hash, seeded_events = world.state_hash(), list(world.events)
    world.call("issue_refund", {"order_id": "1", "amount": 5})
    world.clock.advance(10)
    world.reset()
    assert world.state_hash() == seeded_hash
    assert list(world.events) == seeded_events
    assert world.refunds.all() == []


def test_diff_against_snapshot_and_world(world):
    before = world.snapshot()
    world.call("update_order", {"id": "1", "status": "shipped"})
    d = world.diff(before)
    assert bool(d)
    assert [c.id for c in d.changed] == ["1"]
    assert "placed" in str(d)
    assert "shipped" in str(d)
    fork = world.fork()
    assert not fork.diff(world)
    with pytest.raises(TypeError):
        world.diff({"order": {}})


def test_invalid_call_changes_no_record_but_is_logged(world):
    before = world.snapshot()
    n = len(world.events)
    r = world.call("create_order", {"customer": "1", "status": "lost", "total": 3})
    assert not r.ok
    assert not world.diff(before)
    new = world.events_since(n)
    assert [type(e) for e in new] == [CallStarted, CallFailed]
    assert new[0].k is None
    assert world.trace.count("create_order") == 1
    assert world.trace.count("create_order", ok=False) == 1


def test_trace_summary(world):
    world.call("get_order", {"id": "1"})
    world.call("issue_refund", {"order_id": "1", "amount": 500})
    world.call("issue_refund", {"order_id": "1", "amount": 5})
    assert world.trace.summary() == "get_order → issue_refund!handler_error → issue_refund"
    assert len(world.trace.calls_to("issue_refund")) == 2
    assert [c.tool for c in world.trace.failures()] == ["issue_refund"]


def test_tools_and_tool(world):
    names = [t.name for t in world.tools]
    assert names[:3] == ["get_order", "list_orders", "create_order"]
    t = world.tool("get_order")
    assert t.input_schema["required"] == ["id"]
    assert t.service == "shop"
    assert t.kind == "get"
    with pytest.raises(UnknownTool, match=r"Did you mean 'get_order'"):
        world.tool("get_ordre")


async def _two_calls(world):
    a = await world.acall("get_order", {"id": "1"})
    b = await world.acall("update_order", {"id": "1", "status": "shipped"})
    return a, b


@pytest.mark.trio
async def test_acall_under_trio(world):
    a, b = await _two_calls(world)
    assert a.ok
    assert b.value["status"] == "shipped"
    assert [type(e) for e in world.events_since(len(world.events) - 2)] == [
        RecordUpdated,
        CallSucceeded,
    ]
    assert world.orders.get("1").status == "shipped"


@pytest.mark.asyncio
async def test_acall_under_asyncio(world):
    a, b = await _two_calls(world)
    assert a.ok
    assert b.ok
    assert world.orders.get("1").status == "shipped"


def test_acall_without_an_event_loop(world):
    coro = world.acall("get_order", {"id": "2"})
    with pytest.raises(StopIteration) as stop:
        coro.send(None)
    assert stop.value.value.ok


def test_stale_reads_see_the_records_as_of_an_earlier_virtual_time(world):
    world.orders.update("1", status="shipped")  # at T0
    world.clock.advance(60)
    world.orders.update("1", status="refunded")
    world.clock.advance(60)
    world.orders.delete("2")  # at T0 + 120 s, now

    def read(order_id, lag_s):
        world.set_faults({"default": {"errors": {"stale_read": {"p": 1.0, "lag_s": lag_s}}}})
        return world.call("get_order", {"id": order_id})

    assert read("1", 120).value["status"] == "shipped"  # as of T0, after that write
    assert read("1", 61).value["status"] == "shipped"
    assert read("1", 60).value["status"] == "refunded"
    assert read("2", 1).ok  # a second before its deletion
    assert not read("2", 0).ok
    assert world.orders.get("1").status == "refunded"  # stale reads change nothing


# --- fault rules on a world without faults ---------------------------------------------------


def test_set_faults_on_a_world_without_faults_says_how_to_get_them(spec):
    from faultbench.kernel import FaultbenchError, FaultsDisabled

    world = World.from_spec(spec, faults=False)
    before = world.fault_rules
    n = len(world.events)
    rules = {"shop.get_order": {"errors": {"http_500": 1.0}}}
    with pytest.raises(FaultsDisabled) as info:
        world.set_faults(rules)
    assert isinstance(info.value, FaultbenchError)
    assert str(info.value) == (
        f"faults are disabled for the world {spec.name!r} (faults=False), so rules for "
        "shop.get_order would never apply. Create it with faults=True (and set_faults({}) to "
        "start without rules), or set them on world.fork(faults=True)."
    )
    assert world.fault_rules == before
    assert len(world.events) == n
    world.set_faults({})  # no rules on a world without faults: nothing to refuse
    assert world.fault_rules == {}
    # the two fixes the message names
    fork = world.fork(faults=True)
    fork.set_faults(rules)
    assert fork.call("get_order", {"id": "1"}).error_kind == "http_500"
    enabled = World.from_spec(spec)
    enabled.set_faults({})
    enabled.set_faults(rules)
    assert enabled.call("get_order", {"id": "1"}).error_kind == "http_500"
