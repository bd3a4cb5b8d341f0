"""`lowlevel.watch_log`: a watcher sees every change of a world once, under its lock, and a
watcher that raises undoes the change (the seam `serve --events` journals through)."""

from __future__ import annotations

import asyncio

import pytest

import faultbench
from faultbench.kernel import encode_events, replay
from faultbench.kernel.lowlevel import watch_log
from tests.serve.serve_helpers import SHOP


class Refused(Exception):
    pass


class Watcher:
    def __init__(self):
        self.seen: list[int] = []  # the log length at each change
        self.refuse = False

    def __call__(self, log):
        if self.refuse:
            raise Refused("disk full")
        self.seen.append(len(log))


def rule_free():
    world = faultbench.load_world(SHOP)
    world.set_faults({})
    return world


@pytest.fixture
def watched():
    world = rule_free()
    watcher = Watcher()
    watch_log(world, watcher)
    return world, watcher


def same(world, before):
    hash_, log = before
    assert world.state_hash() == hash_
    assert encode_events(world.events) == log


def test_every_change_is_seen_once_with_the_log_it_made(watched):
    world, watcher = watched
    world.call("get_order", {"id": "1"})
    assert watcher.seen == [len(world.events)]
    snap = world.snapshot()
    world.clock.advance(5)
    world.orders.insert(status="placed", total=1.0)
    world.set_faults({})
    world.restore(snap)
    world.reset()
    # one each: a call, a clock move, a table write, new rules, a restore, a reset (a
    # rewind plus what it carries over is one change)
    assert len(watcher.seen) == 6
    assert watcher.seen[-1] == len(world.events)


@pytest.mark.parametrize(
    "change",
    [
        lambda w: w.call("update_order", {"id": "1", "status": "shipped"}),
        lambda w: w.call_together([("get_order", {"id": "1"}), ("delete_order", {"id": "2"})]),
        lambda w: w.clock.advance(60),
        lambda w: w.orders.insert(status="placed", total=2.0),
        lambda w: w.set_faults({"orders.get_order": {"errors": {"timeout": 1.0}}}),
        lambda w: w.reset(),
        lambda w: w.restore(w._first),
    ],
    ids=["call", "batch", "clock", "insert", "faults", "reset", "restore"],
)
def test_a_watcher_that_raises_undoes_the_change(watched, change):
    world, watcher = watched
    world._first = world.snapshot()
    world.call("update_order", {"id": "3", "total": 9.5})
    before = (world.state_hash(), encode_events(world.events))
    rules = world.fault_rules
    watcher.refuse = True
    with pytest.raises(Refused):
        change(world)
    same(world, before)
    assert world.fault_rules == rules
    # the world goes on as if the change had never been asked for: the next call gets the
    # id and the log the refused one would have had, and the log still replays
    watcher.refuse = False
    refused_id = world.call("get_order", {"id": "1"}).call_id
    fresh = rule_free()
    fresh.call("update_order", {"id": "3", "total": 9.5})
    assert refused_id == fresh.call("get_order", {"id": "1"}).call_id
    assert replay(world.spec, world.events).state_hash() == world.state_hash()


def test_acall_raises_to_every_caller_of_a_refused_batch(watched):
    world, watcher = watched
    before = (world.state_hash(), encode_events(world.events))
    watcher.refuse = True

    async def both():
        return await asyncio.gather(
            world.acall("get_order", {"id": "1"}),
            world.acall("get_order", {"id": "2"}),
            return_exceptions=True,
        )

    results = asyncio.run(both())
    assert [type(r) for r in results] == [Refused, Refused]
    same(world, before)


def test_none_stops_watching_and_a_fork_starts_unwatched(watched):
    world, watcher = watched
    fork = world.fork()
    watcher.refuse = True
    fork.call("get_order", {"id": "1"})  # not watched
    watch_log(world, None)
    world.call("get_order", {"id": "1"})
    assert watcher.seen == []
