"""`lowlevel.keep_events`: a long-lived world keeps only a window of its latest events in memory.
The world itself does not change (state hash, answers, the events it logs); `world.events`
and `world.trace` say which window they hold; a short session is exactly as before."""

from __future__ import annotations

import pytest

import faultbench
from faultbench.kernel import ReplayError, WorldCreated, encode_events, replay
from faultbench.kernel.lowlevel import keep_events
from tests.serve.serve_helpers import SHOP


def rule_free(keep: int | None = None):
    world = faultbench.load_world(SHOP)
    world.set_faults({})
    if keep is not None:
        keep_events(world, keep)
    return world


def step(world, i: int):
    if i % 3 == 0:
        return world.call("update_order", {"id": "1", "total": float(i)})
    if i % 3 == 1:
        return world.call("get_order", {"id": str(i % 5 + 1)})
    return world.call("get_order", {"id": "nope"})  # a failure too


def held(world) -> int:
    return len(world.events) - world.events.first


def test_the_log_holds_between_n_and_2n_events_and_nothing_else_changes():
    bounded, whole = rule_free(keep=40), rule_free()
    most = 0
    for i in range(600):
        a, b = step(bounded, i), step(whole, i)
        assert (a.ok, a.text) == (b.ok, b.text)
        assert bounded.state_hash() == whole.state_hash()
        assert len(bounded.events) == len(whole.events)
        most = max(most, held(bounded))
    assert held(bounded) >= 40
    assert most <= 80
    assert bounded.events.first > 1000  # ~2,400 events logged, the first ones long dropped
    # the window is the unbounded log's tail, byte for byte
    first = bounded.events.first
    assert encode_events(bounded.events) == encode_events(whole.events[first:])
    assert list(bounded.events) == bounded.events[first:] == bounded.events_since(0)
    assert [e.seq for e in reversed(bounded.events)][-1] == first
    assert bounded.events[-1] is bounded.events[len(bounded.events) - 1]
    assert isinstance(bounded.events.origin, WorldCreated)
    assert encode_events([bounded.events.origin]) == encode_events([whole.events[0]])
    assert f"from seq {first} held" in repr(bounded.events)


def test_reading_an_event_before_the_window_says_where_it_went():
    world = rule_free(keep=10)
    for i in range(50):
        step(world, i)
    first = world.events.first
    assert world.events[first].seq == first
    with pytest.raises(IndexError, match=rf"event 0 is no longer in memory.*from seq {first}"):
        world.events[0]
    with pytest.raises(IndexError, match="journal"):
        world.events[first - 1]


def test_a_short_session_is_exactly_as_without_a_bound():
    bounded, whole = rule_free(keep=1000), rule_free()
    for i in range(30):
        step(bounded, i)
        step(whole, i)
    assert bounded.events.first == 0
    assert encode_events(bounded.events) == encode_events(whole.events)
    assert bounded.trace.to_dict() == whole.trace.to_dict()
    assert str(bounded.trace) == str(whole.trace)
    assert replay(bounded.spec, bounded.events).state_hash() == bounded.state_hash()


def test_the_trace_covers_the_calls_of_the_window_and_says_so():
    bounded, whole = rule_free(keep=30), rule_free()
    for i in range(200):
        step(bounded, i)
        step(whole, i)
        if i % 17 == 0:  # asked for as an agent loop would, while the window moves
            bounded.trace.count()
    trace = bounded.trace
    first = trace.first_seq
    assert first == bounded.events.first > 0
    assert trace.n_events == held(bounded)
    # the calls that started in the window: the unbounded world's last ones
    started = [c for c in whole.trace.calls if whole.events[_start_seq(whole, c)].seq >= first]
    assert [c.call_id for c in trace.calls] == [c.call_id for c in started]
    assert trace.count() < whole.trace.count()
    assert trace.to_dict()["first_seq"] == first
    assert "first_seq" not in whole.trace.to_dict()
    assert f"the calls from event {first} on" in str(trace)
    # offsets still count from the world's creation (numbers count the window's calls)
    last = str(trace).splitlines()[-1]
    assert last.split(None, 1)[1] == str(whole.trace).splitlines()[-1].split(None, 1)[1]
    assert last.split(None, 1)[0] == str(trace.count())


def _start_seq(world, call) -> int:
    return next(e.seq for e in world.events if getattr(e, "call_id", None) == call.call_id)


def test_replaying_a_window_is_refused_with_the_way_out():
    world = rule_free(keep=10)
    for i in range(40):
        step(world, i)
    with pytest.raises(ReplayError, match=r"only the events from seq \d+ on.*journal"):
        replay(world.spec, world.events)


def test_reset_restore_and_fork_work_in_a_bounded_world():
    bounded, whole = rule_free(keep=20), rule_free()
    early = (bounded.snapshot(), whole.snapshot())
    for i in range(100):
        step(bounded, i)
        step(whole, i)
    later = (bounded.snapshot(), whole.snapshot())
    for i in range(100, 200):
        step(bounded, i)
        step(whole, i)
    for snaps in (later, early):
        bounded.restore(snaps[0])
        whole.restore(snaps[1])
        assert bounded.state_hash() == whole.state_hash()
        assert len(bounded.events) == len(whole.events)
        step(bounded, 7)
        step(whole, 7)
        assert bounded.state_hash() == whole.state_hash()
    fork, twin = bounded.fork(), whole.fork()
    step(fork, 3)
    step(twin, 3)
    assert fork.state_hash() == twin.state_hash()
    for world in (bounded, whole):
        for i in range(100):
            step(world, i)
        world.reset()
    assert bounded.events.first == 0
    assert encode_events(bounded.events) == encode_events(whole.events)


def test_a_replayed_world_resets_from_the_origin_its_window_keeps():
    source = rule_free()
    for i in range(20):
        step(source, i)
    world = replay(source.spec, source.events)
    keep_events(world, 5)
    for i in range(60):
        step(world, i)
    assert world.events.first > 0
    world.reset()
    fresh = rule_free()
    assert world.state_hash() == fresh.state_hash()


@pytest.mark.parametrize("latency_ms", [0, 100])
def test_a_window_keeps_what_stale_reads_reach_back_to(latency_ms):
    """A stale read answers from the state of lag_s ago: the window keeps every event of
    that last lag_s (so a world whose clock stands still keeps them all), and every answer
    is the one an unbounded world gives."""
    bounded, whole = rule_free(keep=10), rule_free()
    stale = {"errors": {"stale_read": {"p": 0.5, "lag_s": 1}}}
    for world in (bounded, whole):
        world.set_faults({"orders.get_order": stale, "default": {"latency_ms": [latency_ms] * 2}})
    for i in range(300):
        a, b = step(bounded, i), step(whole, i)
        assert (a.ok, a.text, a.fault) == (b.ok, b.text, b.fault)
        if latency_ms:  # ~10 calls a second of virtual time: the last second is kept
            assert held(bounded) <= 2 * 10 + 60
    assert bounded.state_hash() == whole.state_hash()
    assert any(c.fault == "stale_read" and c.ok for c in whole.trace)
    if latency_ms:
        assert bounded.events.first > 0
    else:  # every event is within the last second: none may go
        assert bounded.events.first == 0


def test_bad_bounds_and_worlds_with_a_feed_are_refused():
    world = rule_free()
    for bad in (0, -1, True, 2.5, "10"):
        with pytest.raises(ValueError, match="1 or more"):
            keep_events(world, bad)  # type: ignore[arg-type]
    keep_events(world, 5)
    keep_events(world, None)  # every event kept again from now on
    for i in range(40):
        step(world, i)
    first = world.events.first
    assert held(world) == len(world.events) - first


def test_a_world_with_an_events_feed_cannot_keep_a_window():
    from tests.kernel.calls.test_feed import fresh

    world = fresh()
    with pytest.raises(ValueError, match="events: feed"):
        keep_events(world, 10)
    assert world.events.first == 0


def admitted_calls(world) -> int:
    """How many admitted calls the state keeps for the rate windows, over every tool."""
    total = 0
    for head in world.snapshot().state.admitted.values():
        node = head
        while node is not None:
            total, node = total + 1, node[2]
    return total


def test_the_rate_windows_are_cut_with_the_log():
    # Without a rate rule no window counts a call, so the state keeps none past a cut; with
    # one (3 calls a minute, 7 s of latency a call) it keeps the last minute's calls, and
    # every 429 falls exactly where the unbounded world's does.
    bounded, whole = rule_free(keep=40), rule_free()
    for i in range(600):
        step(bounded, i)
        step(whole, i)
    assert admitted_calls(whole) == 600  # every call, kept for no window at all
    assert admitted_calls(bounded) <= 80
    limited = {"orders.get_order": {"rate_limit": {"calls": 3, "per_seconds": 60}}}
    bounded, whole = rule_free(keep=40), rule_free()
    for world in (bounded, whole):
        world.set_faults({**limited, "orders.*": {"latency_ms": 7000}})
    most = 0
    for i in range(600):
        a, b = step(bounded, i), step(whole, i)
        assert (a.ok, a.text, a.error_kind) == (b.ok, b.text, b.error_kind)
        most = max(most, admitted_calls(bounded))
    assert sum(r.error_kind == "rate_limit" for r in whole.trace.failures()) > 100
    assert bounded.state_hash() == whole.state_hash()
    assert most <= 2 * 80  # a minute of calls at 7 s each, per tool, and at most 2N events
    assert admitted_calls(whole) > 300
