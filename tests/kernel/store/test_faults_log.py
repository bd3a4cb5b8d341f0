"""Fault rules set at run time are in the event log: replay, forks, restores and resets run
under exactly the rules the live world ran under."""

from __future__ import annotations

from faultbench.kernel import (
    FaultsChanged,
    World,
    decode_events,
    encode_events,
    replay,
)

ALWAYS_500 = {"default": {"errors": {"http_500": 1.0}}}


def _changes(world: World) -> list[FaultsChanged]:
    return [ev for ev in world.events if isinstance(ev, FaultsChanged)]


def test_rules_set_at_run_time_replay(world, spec):
    # The case that failed before: the replay had no rules, so its next call succeeded.
    world.set_faults(ALWAYS_500)
    assert not world.call("get_order", {"id": "1"}).ok
    for through_json in (False, True):
        events = decode_events(encode_events(world.events)) if through_json else world.events
        again = replay(spec, events)
        assert set(again.fault_rules) == {"default"}
        replayed = again.call("get_order", {"id": "1"})
        live = world.call("get_order", {"id": "1"})
        assert (replayed.ok, replayed.error_kind) == (live.ok, live.error_kind)
        assert live.error_kind == "http_500"
        assert encode_events(again.events) == encode_events(world.events)


def test_set_faults_logs_the_block_it_installs(world):
    world.set_faults("default: {latency_ms: [10, 20]}\nshop.get_order: {script: {2: timeout}}")
    (change,) = _changes(world)
    assert change.rules == {
        "default": {"latency_ms": [10, 20]},
        "shop.get_order": {"script": {"2": "timeout"}},  # as JSON carries it
    }
    world.set_faults({})
    assert _changes(world)[-1].rules == {}
    assert world.fault_rules == {}


def test_a_restore_keeps_the_rules_in_force_and_says_so(world, spec):
    snap = world.snapshot()
    world.set_faults(ALWAYS_500)
    world.restore(snap)
    assert len(world.events) == snap.seq + 1  # the snapshot's log, then the rules again
    assert _changes(world)[-1].rules == {"default": {"errors": {"http_500": 1.0}}}
    assert not world.call("get_order", {"id": "1"}).ok
    assert replay(spec, world.events).call("get_order", {"id": "1"}).error_kind == "http_500"


def test_a_restore_under_the_same_rules_adds_nothing(world):
    world.set_faults(ALWAYS_500)
    snap = world.snapshot()
    world.call("get_order", {"id": "1"})
    world.restore(snap)
    assert world.events == snap.events


def test_a_reset_keeps_the_rules_and_a_fork_keeps_its_run(world, spec):
    world.set_faults(ALWAYS_500)
    fork = world.fork(run=3)
    fork.reset()
    assert fork.run == 3
    assert set(fork.fault_rules) == {"default"}
    again = replay(spec, fork.events)
    assert (again.run, again.faults_enabled) == (3, True)
    assert again.call("get_order", {"id": "1"}).error_kind == "http_500"


def test_a_fork_of_an_old_snapshot_takes_the_rules_in_force_now(world, spec):
    snap = world.snapshot()
    world.set_faults(ALWAYS_500)
    child = world.fork(snap)
    assert not child.call("get_order", {"id": "1"}).ok
    assert replay(spec, child.events).fault_rules.keys() == {"default"}


def test_a_fork_without_faults_logs_it(world, spec):
    world.set_faults(ALWAYS_500)
    quiet = world.fork(faults=False)
    assert quiet.call("get_order", {"id": "1"}).ok
    again = replay(spec, quiet.events)
    assert not again.faults_enabled
    assert again.call("get_order", {"id": "1"}).ok
