"""Table indexes in the state (`_order.py`), the rate-limit window and the log's skip pointers:
the fast paths answer exactly what the slow ones did."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultbench.kernel import (
    CallStarted,
    FaultInjected,
    World,
    decode_events,
    encode_events,
    replay,
)
from faultbench.kernel._calls._pipeline import admitted_since
from faultbench.kernel._faults._kinds import REFUSED_KINDS
from faultbench.kernel._store._indexes import IdSet, id_order

from .conftest import make_shop_spec

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
        first = orders.pick(**q)
        assert (first.to_dict() if first else None) == (want[0] if want else None), q
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


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("call"), st.sampled_from(["1", "2", "x"])),
            st.tuples(st.just("wait"), st.sampled_from([1, 5, 20])),
            st.tuples(st.just("batch"), st.integers(2, 4)),
            st.tuples(st.just("fork"), st.none()),
        ),
        max_size=40,
    )
)
def test_rate_window_in_state_equals_the_log_scan(steps):
    world = World.from_spec(make_shop_spec())
    world.set_faults(
        {
            "shop.get_order": {
                "rate_limit": {"calls": 3, "per_seconds": 10},
                "script": {4: "http_429", 7: "http_500"},
                "latency_ms": [0, 3000],
            }
        }
    )
    for what, arg in steps:
        if what == "call":
            world.call("get_order", {"id": arg})
        elif what == "wait":
            world.clock.advance(arg)
        elif what == "batch":
            world.call_together([("get_order", {"id": str(i)}) for i in range(arg)])
        else:
            world = world.fork()
        for per in (1.0, 10.0, 60.0):
            state = world.snapshot().state
            assert admitted_since(state, "get_order", world.clock.now(), per) == scanned(
                world, "get_order", per
            )


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
