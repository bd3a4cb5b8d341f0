"""Table indexes in the state (`_store/_indexes.py`), the rate-limit window and the log's skip pointers:
the fast paths answer exactly what the slow ones did."""

from __future__ import annotations

import random
from datetime import timedelta

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultbench.kernel import (
    CallStarted,
    FaultInjected,
    RecordNotFound,
    World,
    decode_events,
    encode_events,
    replay,
)
from faultbench.kernel._faults._kinds import REFUSED_KINDS
from faultbench.kernel._faults._plan import _rate_limited
from faultbench.kernel._faults._window import older_by, wait
from faultbench.kernel._store._indexes import IdSet, id_order
from faultbench.kernel._store._sorted import TOP, KeySet, entry

from ..conftest import make_shop_spec

IDS = ["1", "2", "9", "10", "010", "0", "a", "b10", "B", "100", "11"]


def expected(world: World, **eq):
    """`where(**eq)` the slow way: every record, sorted, filtered."""
    rows = world.snapshot().state.tables["order"]
    return [
        dict(rows[rid])
        for rid in sorted(rows.keys(), key=id_order)
        if all(rows[rid][k] == v for k, v in eq.items())
    ]


QUERIES = [
    {},
    {"customer": "1"},
    {"customer": "2"},
    {"customer": "nobody"},
    {"status": "shipped"},
    {"customer": "1", "status": "placed"},
    {"id": "10"},
    {"id": "10", "status": "placed"},
    {"total": 1.0},
    {"qty": 1, "customer": "2"},
    {"qty": True},  # 1 == True, as a scan compares
    {"customer": ["not", "hashable"]},
]

step = st.one_of(
    st.tuples(st.just("insert"), st.sampled_from([None, *IDS]), st.sampled_from(["1", "2"])),
    st.tuples(st.just("update"), st.sampled_from(IDS), st.sampled_from(["1", "2"])),
    st.tuples(st.just("status"), st.sampled_from(IDS), st.sampled_from(["placed", "shipped"])),
    st.tuples(st.just("delete"), st.sampled_from(IDS), st.none()),
    st.tuples(st.just("call"), st.sampled_from(["1", "2", "nobody"]), st.none()),
    st.tuples(st.just("snap"), st.none(), st.none()),
    st.tuples(st.just("restore"), st.none(), st.none()),
    st.tuples(st.just("fork"), st.none(), st.none()),
    st.tuples(st.just("stale"), st.none(), st.none()),
)


def _check(world: World) -> None:
    orders = world.orders
    for q in QUERIES:
        want = expected(world, **q)
        assert [r.to_dict() for r in orders.where(**q)] == want, q
        if want:
            assert orders.pick(**q).to_dict() == want[0], q
        else:
            with pytest.raises(RecordNotFound):
                orders.pick(**q)
    assert [r["id"] for r in orders.all()] == [r["id"] for r in expected(world)]
    got = world.call("list_orders", {"customer": "2"})
    assert [r["id"] for r in got.value] == [r["id"] for r in expected(world, customer="2")]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, max_size=30))
def test_indexed_reads_equal_sorting_and_scanning(steps):
    world = World.from_spec(make_shop_spec())
    snap = world.snapshot()
    for what, a, b in steps:
        orders = world.orders
        if what == "insert":
            fields = {"customer": b, "status": "placed", "total": 1.0}
            if a is None or orders.get(a) is None:
                orders.insert(**fields, **({} if a is None else {"id": a}))
        elif what in ("update", "status") and orders.get(a) is not None:
            orders.update(a, **({"customer": b} if what == "update" else {"status": b}))
        elif what == "delete" and orders.get(a) is not None:
            orders.delete(a)
        elif what == "call":
            world.call("list_orders", {"customer": a})
        elif what == "snap":
            snap = world.snapshot()
        elif what == "restore":
            world.restore(snap)
        elif what == "fork":
            world = world.fork()
        elif what == "stale":
            # a stale read answers from the past: the index of that past state, too
            world.clock.advance(1)
            past = world.snapshot()
            world.orders.insert(customer="2", status="placed", total=3.0)
            world.set_faults({"shop.list_orders": {"errors": {"stale_read": {"p": 1, "lag_s": 1}}}})
            got = world.call("list_orders", {"customer": "2"})
            want = [r["id"] for r in expected_at(past, customer="2")]
            assert [r["id"] for r in got.value] == want
            world.set_faults({})
        _check(world)
    again = replay(world.spec, decode_events(encode_events(list(world.events))))
    assert again.state_hash() == world.state_hash()
    _check(again)


def expected_at(snap, **eq):
    rows = snap.state.tables["order"]
    return [
        dict(rows[rid])
        for rid in sorted(rows.keys(), key=id_order)
        if all(rows[rid][k] == v for k, v in eq.items())
    ]


def test_id_set_keeps_id_order_through_adds_and_removes():
    import random

    rng = random.Random(5)
    pool = [str(i) for i in range(3000)] + [f"x{i}" for i in range(500)]
    s, live = IdSet(), set()
    for _ in range(6000):
        rid = rng.choice(pool)
        if rid in live and rng.random() < 0.5:
            s, _ = s.remove(rid), live.discard(rid)
        else:
            s, _ = s.add(rid), live.add(rid)
    assert list(s) == sorted(live, key=id_order)
    assert len(s) == len(live)
    assert all(rid in s for rid in live)
    assert "nope" not in s


def test_id_set_walks_from_any_key_forwards_and_backwards():
    # IdSet.walk seeks by bisection and iterates its chunks in C: from every kind of start
    # (an id it holds, one it does not, a key just above an id) and both ways, it gives what
    # filtering the sorted ids gives, across chunk boundaries (_CAP is 1024).
    rng = random.Random(11)
    pool = [str(i) for i in range(1, 4000)] + [f"x{i}" for i in range(300)] + ["007", "0"]
    live = set(rng.sample(pool, 3000))
    s = IdSet.of_sorted(sorted(live, key=id_order))
    for rid in rng.sample(pool, 200):
        s, _ = (s.remove(rid), live.discard(rid)) if rid in live else (s.add(rid), live.add(rid))
    order = sorted(live, key=id_order)
    assert list(s.walk()) == order
    assert list(s.walk(reverse=True)) == order[::-1]
    for rid in [*rng.sample(pool, 150), order[0], order[-1], "zzz", "00"]:
        for start in (id_order(rid), (*id_order(rid), "")):
            assert list(s.walk(start)) == [r for r in order if id_order(r) >= start]
            assert list(s.walk(start, reverse=True)) == [
                r for r in reversed(order) if id_order(r) < start
            ]
    assert list(IdSet().walk(("x",))) == list(IdSet().walk(("x",), reverse=True)) == []


def test_sorted_sets_skip_and_count_by_position():
    # An offset page skips, and its total counts, by the chunks' positions (`Ranked`), not
    # by reading entries: from any bounds, both ways, on sets whose chunks differ in size
    # after inserts and removes, they agree with slicing the sorted list.
    rng = random.Random(12)
    ids = [str(i) for i in range(1, 5000)]
    live = set(rng.sample(ids, 3500))
    s = IdSet.of_sorted(sorted(live, key=id_order))
    ks = KeySet.of([entry(int(r) % 97, r) for r in live])
    for rid in rng.sample(ids, 1500):  # inserts in the middle split chunks, removes shrink them
        if rid in live:
            s, ks = s.remove(rid), ks.remove(entry(int(rid) % 97, rid))
            live.discard(rid)
        else:
            s, ks = s.add(rid), ks.add(entry(int(rid) % 97, rid))
            live.add(rid)
    # each write carries its set's chunk fences forward instead of remaking them
    assert ks._fences == [chunk[-1] for chunk in ks._chunks]
    order = sorted(live, key=id_order)
    entries = sorted(entry(int(r) % 97, r) for r in live)
    for _ in range(300):
        skip = rng.choice([0, 1, rng.randrange(50), rng.randrange(4000)])
        start = id_order(rng.choice(ids)) if rng.random() < 0.8 else None
        for reverse in (False, True):
            want = [r for r in order if start is None or (id_order(r) < start) == reverse]
            want = want[::-1] if reverse else want
            assert list(s.walk(start, reverse=reverse, skip=skip)) == want[skip:]
            assert s.count(start, reverse=reverse) == len(want)
        lo = (True, rng.randrange(100)) if rng.random() < 0.7 else None
        hi = (True, rng.randrange(100), TOP) if rng.random() < 0.7 else None
        inside = [e for e in entries if (lo is None or e >= lo) and (hi is None or e < hi)]
        assert ks.count(lo, hi) == len(inside)
        assert list(ks.walk(lo, hi, skip=skip)) == inside[skip:]
        assert list(ks.walk(lo, hi, reverse=True, skip=skip)) == inside[::-1][skip:]


# --- rate limits: the window kept in the state is the log's ------------------------------------


def scanned(world: World, tool: str, per_seconds: float):
    """The window as it was computed before it was kept in the state: a scan of the log."""
    now = world.clock.now()
    cutoff = now - timedelta(seconds=per_seconds)
    refused, times = set(), []
    for ev in reversed(list(world.events)):
        if ev.at <= cutoff:
            break
        if type(ev) is FaultInjected and ev.tool == tool and ev.kind in REFUSED_KINDS:
            refused.add(ev.call_id)
        elif (
            type(ev) is CallStarted
            and ev.tool == tool
            and ev.k is not None
            and ev.call_id not in refused
        ):
            times.append(ev.at)
    return times


def walked(head, now, per_seconds: float):
    """The start times the window's list holds after `now - per_seconds`, newest first,
    walking it node by node (what the pipeline read before it kept depths and jumps)."""
    cutoff = now - timedelta(seconds=per_seconds)
    times = []
    while head is not None and head[0] > cutoff:
        times.append(head[0])
        head = head[2]
    return times


def check_window(world: World, tool: str = "get_order") -> None:
    """The state's window answers every limit as the log scan does, and its nodes are a
    well-formed list: depths count down to 0, every jump lands on an older node of it."""
    state = world.snapshot().state
    now = world.clock.now()
    head = state.admitted.get(tool)
    nodes = []
    node = head
    while node is not None:
        nodes.append(node)
        node = node[2]
    assert [n[3] for n in nodes] == list(range(len(nodes) - 1, -1, -1))
    on_list = {id(n) for n in nodes}
    assert all(n[4] is None or (id(n[4]) in on_list and n[3] - n[4][3] == n[5]) for n in nodes)
    assert all(older_by(head, d) is nodes[d] for d in range(len(nodes)))
    for per in (1.0, 3.0, 10.0, 10.0000004, 60.0):
        old = scanned(world, tool, per)
        assert walked(head, now, per) == old
        for calls in (1, 2, 3, 4, 7):
            assert wait(head, calls, per, now) == _rate_limited(calls, per, now, old), (
                calls,
                per,
            )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("call"), st.sampled_from(["1", "2", "x"])),
            st.tuples(st.just("wait"), st.sampled_from([1, 3, 5, 20])),
            st.tuples(st.just("batch"), st.integers(2, 6)),
            st.tuples(st.just("fork"), st.none()),
            st.tuples(st.just("restore"), st.none()),
        ),
        max_size=40,
    )
)
def test_rate_window_in_state_equals_the_log_scan(steps):
    # 429s from the window and from a script, inside batches too (3 calls per 10 s, batches
    # of up to 6), windows that empty as the clock moves, forks and restores.
    world = World.from_spec(make_shop_spec())
    world.set_faults(
        {
            "shop.get_order": {
                "rate_limit": {"calls": 3, "per_seconds": 10},
                "script": {4: "http_429", 7: "http_500", 9: "http_429"},
                "latency_ms": [0, 3000],
            }
        }
    )
    snap = world.snapshot()
    for what, arg in steps:
        if what == "call":
            world.call("get_order", {"id": arg})
        elif what == "wait":
            world.clock.advance(arg)
        elif what == "batch":
            world.call_together([("get_order", {"id": str(i)}) for i in range(arg)])
        elif what == "fork":
            snap = world.snapshot()
            world = world.fork()
        else:
            world.restore(snap)
        check_window(world)
    again = replay(world.spec, decode_events(encode_events(list(world.events))))
    assert again.state_hash() == world.state_hash()
    check_window(again)


def test_a_log_that_refuses_an_older_call_replays_to_the_scanned_window():
    # The pipeline logs a 429 right after its own CallStarted; a log written otherwise (by
    # hand, or by another tool) refuses a call that is no longer the newest, and replay
    # takes it out of the middle of the window.
    world = World.from_spec(make_shop_spec())
    world.set_faults(
        {
            "shop.get_order": {
                "rate_limit": {"calls": 2, "per_seconds": 60},
                "script": {1: "http_429"},
            }
        }
    )
    world.call_together([("get_order", {"id": str(i)}) for i in range(4)])
    world.clock.advance(5)
    world.call("get_order", {"id": "1"})
    events = list(world.events)
    refused = [e for e in events if type(e) is FaultInjected]
    assert [(e.call_id, e.kind) for e in refused] == [
        ("c1", "http_429"),
        ("c4", "rate_limit"),
        ("c5", "rate_limit"),
    ]
    # c1's refusal moves after c2's start: c2 is then the newest admitted call
    first = events.index(refused[0])
    moved = [*events[:first], events[first + 1], events[first], *events[first + 2 :]]
    assert type(moved[first]) is CallStarted
    assert moved[first].call_id == "c2"
    moved = [msgspec.structs.replace(e, seq=n) for n, e in enumerate(moved)]
    again = replay(world.spec, moved)
    assert again.state_hash() == world.state_hash()
    check_window(again)
    head = again.snapshot().state.admitted["get_order"]
    assert [older_by(head, d)[1] for d in range(head[3] + 1)] == ["c3", "c2"]


# --- the log ---------------------------------------------------------------------------------


def test_event_index_and_tail_after_many_nested_forks(world):
    flat = list(world.events)
    for i in range(1500):
        if i % 3 == 0:
            world.call("get_order", {"id": "1"})
        world = world.fork()
        if i % 7 == 0:
            snap = world.snapshot()
            world.call("get_order", {"id": "2"})
            world.restore(snap)
    flat = list(world.events)
    log = world.events
    assert len(flat) == len(log)
    assert all(log[i] is flat[i] for i in range(0, len(flat), 17))
    assert log[-1] is flat[-1]
    for p in (0, 1, len(flat) // 2, len(flat) - 5, len(flat)):
        assert log[p:] == flat[p:]
        assert world.events_since(p) == flat[p:]
    assert list(reversed(log)) == flat[::-1]
    assert [e.seq for e in flat] == list(range(len(flat)))
