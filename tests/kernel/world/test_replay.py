"""Replay: a log plus its world file rebuilds the world, hash for hash."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultbench.kernel import (
    RecordCreated,
    ReplayError,
    World,
    WorldForked,
    decode_events,
    encode_events,
    replay,
)
from faultbench.kernel._read._reader import render_faults

from ..conftest import make_shop_spec


def _roundtrip(spec, world):
    """Replay both the live events and their JSON Lines form."""
    live = replay(spec, world.events)
    decoded = replay(spec, encode_events(world.events))
    return live, decoded


def test_replay_of_a_fresh_world(world, spec):
    live, decoded = _roundtrip(spec, world)
    assert live.state_hash() == decoded.state_hash() == world.state_hash()
    assert decoded.to_dict() == world.to_dict()


def test_replay_restores_datetimes_from_json(world, spec):
    world.call("issue_refund", {"order_id": "1", "amount": 1})
    world.clock.advance(5)
    world.orders.update("2", created_at=datetime.fromisoformat("2025-01-01T00:00:00+00:00"))
    _, decoded = _roundtrip(spec, world)
    assert isinstance(decoded.refunds.get("1").created_at, datetime)
    assert decoded.orders.get("2") == world.orders.get("2")
    assert decoded.state_hash() == world.state_hash()
    assert decoded.clock.now() == world.clock.now()
    # replayed events are the same events (JSON lines identical)
    assert encode_events(decoded.events) == encode_events(world.events)


def test_replay_from_json_keeps_field_order(world, spec):
    """JSON Lines sort keys; a replayed record still lists its fields in file order."""
    world.call("issue_refund", {"order_id": "1", "amount": 1})
    _, decoded = _roundtrip(spec, world)
    for name in ("order", "refund"):
        order = [f.name for f in spec.records[name].fields]
        for record in decoded.table(name).all():
            assert list(record.to_dict()) == order


def test_replay_after_forks_restores_and_failures(world, spec):
    snap = world.snapshot()
    world.call("get_order", {"id": 1})
    world.call("flaky_refund", {"order_id": "1"})
    world.call("issue_refund", {"order_id": "1", "amount": 2})
    world.restore(snap)
    world.call("update_order", {"id": "2", "status": "shipped"})
    fork = world.fork(run=5, faults=False)
    fork.call("delete_order", {"id": "3"})
    fork.clock.advance(60)
    for w in (world, fork):
        live, decoded = _roundtrip(spec, w)
        assert live.state_hash() == decoded.state_hash() == w.state_hash()
    rebuilt = replay(spec, fork.events)
    assert (rebuilt.run, rebuilt.faults_enabled) == (5, False)
    assert isinstance(rebuilt.events[-5], WorldForked)


def test_replayed_world_keeps_going(world, spec):
    world.call("get_order", {"id": "1"})
    w2 = replay(spec, encode_events(world.events))
    r1 = world.call("create_order", {"customer": "1", "status": "placed", "total": 3})
    r2 = w2.call("create_order", {"customer": "1", "status": "placed", "total": 3})
    assert r1 == r2
    assert encode_events(world.events) == encode_events(w2.events)
    w2.reset()
    assert w2.orders.get("4") is None


def test_replay_from_a_file(world, spec, tmp_path):
    world.call("issue_refund", {"order_id": "1", "amount": 1})
    path = tmp_path / "run.jsonl"
    path.write_bytes(encode_events(world.events))
    assert replay(spec, path).state_hash() == world.state_hash()
    assert replay(spec, str(path)).state_hash() == world.state_hash()


def test_digest_mismatch_names_both(world, spec):
    other = make_shop_spec(digest="feedfacefeedfacefeedface")
    message = rf"digest {spec.digest[:12]}\.\.\., but .*kernel_shop.yaml has digest feedfacefeed"
    with pytest.raises(ReplayError, match=message):
        replay(other, world.events)
    assert replay(other, world.events, strict=False).state_hash() == world.state_hash()


def test_gaps_and_bad_starts_are_named(world, spec):
    events = list(world.events)
    with pytest.raises(
        ReplayError, match=r"Gap in the event log: expected seq 3, found RecordCreated with seq 4"
    ):
        replay(spec, events[:3] + events[4:])
    with pytest.raises(
        ReplayError, match=r"Expected event 0 to be WorldCreated. Instead, received: RecordCreated"
    ):
        replay(spec, events[1:])
    with pytest.raises(ReplayError, match=r"no events"):
        replay(spec, [])


def test_an_event_that_does_not_fit_is_refused(world, spec):
    events = list(world.events)
    first = next(e for e in events if type(e) is RecordCreated and e.table == "order")
    bogus = RecordCreated(
        seq=len(events), at=events[-1].at, table="order", id="1", fields=first.fields
    )
    with pytest.raises(ReplayError, match=r"event 6 does not apply: .*creates order '1' twice"):
        replay(spec, [*events, bogus])


# --- the invariant, on random call sequences ---------------------------------------------------

_ids = st.sampled_from(["1", "2", "3", "4", "9", 1, None])
_calls = st.one_of(
    st.tuples(st.just("get_order"), st.fixed_dictionaries({"id": _ids})),
    st.tuples(
        st.just("list_orders"),
        st.fixed_dictionaries({}, optional={"status": st.sampled_from(["placed", "shipped", "x"])}),
    ),
    st.tuples(
        st.just("create_order"),
        st.fixed_dictionaries(
            {
                "customer": st.sampled_from(["1", "2"]),
                "status": st.sampled_from(["placed", "shipped", "lost"]),
                "total": st.one_of(
                    st.floats(0, 100, allow_nan=False), st.integers(0, 9), st.text(max_size=2)
                ),
            },
            optional={
                "created_at": st.sampled_from(
                    ["2025-06-01T10:00:00Z", "2025-06-01T10:00:00+05:00", "bad"]
                ),
                "id": st.sampled_from(["1", "7", "x"]),
            },
        ),
    ),
    st.tuples(
        st.just("update_order"),
        st.fixed_dictionaries(
            {"id": _ids},
            optional={
                "status": st.sampled_from(["shipped", "refunded"]),
                "note": st.one_of(st.none(), st.text(max_size=3)),
            },
        ),
    ),
    st.tuples(st.just("delete_order"), st.fixed_dictionaries({"id": _ids})),
    st.tuples(
        st.just("issue_refund"),
        st.fixed_dictionaries({"order_id": _ids, "amount": st.sampled_from([1, 5.5, 1000, -1])}),
    ),
    st.tuples(
        st.just("flaky_refund"),
        st.fixed_dictionaries(
            {"order_id": st.sampled_from(["1", "2"])},
            optional={"mode": st.sampled_from(["crash", "deny", "bad_return", "ok", "nope"])},
        ),
    ),
    st.tuples(st.just("no_such_tool"), st.just({})),
    st.tuples(st.just("@advance"), st.integers(0, 3600)),
    st.tuples(st.just("@snapshot"), st.none()),
    st.tuples(st.just("@restore"), st.none()),
    st.tuples(st.just("@fork"), st.integers(0, 3)),
    st.tuples(st.just("@faults"), st.integers(0, 3)),
    st.tuples(st.just("@reset"), st.none()),
    st.tuples(st.just("@together"), st.integers(2, 4)),
)

#: Rule sets a sequence may switch to at run time (`world.set_faults`).
_RUNTIME_FAULTS = [
    {},
    {"default": {"errors": {"http_500": 0.5}, "latency_ms": [10, 2000]}},
    {"shop.get_order": {"script": {1: "timeout", 2: "stale_read", 3: "not_found"}}},
    {
        "payments.*": {"errors": {"duplicate": 0.5}},
        "shop.*": {"rate_limit": {"calls": 1, "per_seconds": 30}},
    },
]
#: Calls made after the sequence, on the live world and on its replay: they must be answered
#: alike, so the replay runs under the same rules, run index and history.
_PROBES = [
    ("get_order", {"id": "1"}),
    ("list_orders", {}),
    ("issue_refund", {"order_id": "1", "amount": 1}),
    ("get_order", {"id": "2"}),
    ("update_order", {"id": "1", "status": "shipped"}),
]


#: Every kind of fault at once, so random sequences meet timeouts that commit, duplicates,
#: stale reads, rate limits and latency; the log alone must still rebuild the state.
_FAULTS = {
    "default": {"latency_ms": [0, 500]},
    "shop.*": {
        "errors": {"stale_read": {"p": 0.2, "lag_s": 600}, "http_503": 0.1, "timeout": 0.1},
        "rate_limit": {"calls": 3, "per_seconds": 60},
    },
    "payments.*": {"errors": {"duplicate": 0.2, "timeout": 0.2, "malformed_json": 0.1}},
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_calls, max_size=30))
def test_replay_invariant_on_random_call_sequences(steps):
    _check_replay_invariant(steps)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_calls, max_size=30), st.integers(0, 3))
def test_replay_invariant_under_every_kind_of_fault(steps, run):
    _check_replay_invariant(steps, faults=_FAULTS, run=run)


def _check_replay_invariant(steps, faults=None, run=0):
    spec = make_shop_spec()
    world = World.from_spec(spec, run=run)
    if faults is not None:
        world.set_faults(faults)
    snaps = [world.snapshot()]
    for tool, args in steps:
        if tool == "@advance":
            world.clock.advance(args)
        elif tool == "@snapshot":
            snaps.append(world.snapshot())
        elif tool == "@restore":
            world.restore(snaps[-1])
        elif tool == "@fork":
            world = world.fork(run=args)
        elif tool == "@faults":
            world.set_faults(_RUNTIME_FAULTS[args])
        elif tool == "@reset":
            world.reset()
        elif tool == "@together":
            world.call_together(_PROBES[:args])
        else:
            world.call(tool, args)
    live = replay(spec, world.events)
    decoded = replay(spec, decode_events(encode_events(world.events)))
    assert live.state_hash() == world.state_hash()
    assert decoded.state_hash() == world.state_hash()
    assert decoded.to_dict() == world.to_dict()
    assert render_faults(decoded.fault_rules) == render_faults(world.fault_rules)
    assert (decoded.run, decoded.faults_enabled) == (world.run, world.faults_enabled)
    # The next calls go the same way on the replay: same faults, same answers, same log.
    n = len(world.events)
    for tool, args in _PROBES:
        assert decoded.call(tool, args) == world.call(tool, args)
    assert encode_events(decoded.events[n:]) == encode_events(world.events[n:])


def test_replay_of_the_example_shop_from_its_path(tmp_path):
    from pathlib import Path

    from faultbench.kernel import load_world

    path = Path(__file__).parents[3] / "examples" / "shop" / "worlds" / "shop.yaml"
    world = load_world(path, faults=False)
    world.call("list_orders", {"status": "delivered"})
    delivered = world.orders.pick(status="delivered")
    if delivered is not None:
        world.call("create_return", {"order_id": delivered.id, "reason": "damaged"})
        world.call("issue_refund", {"order_id": delivered.id, "amount": 1.0})
    world.call("cancel_order", {"order_id": "1"})
    log = tmp_path / "shop.jsonl"
    log.write_bytes(encode_events(world.events))
    rebuilt = replay(path, log)
    assert rebuilt.state_hash() == world.state_hash()
    assert rebuilt.to_dict() == world.to_dict()


def test_state_hash_is_the_same_in_every_process():
    """The hash folds sorted items and order-free digests, never `hash()` or a map's
    iteration order, which change with PYTHONHASHSEED."""
    import os
    import subprocess
    import sys

    from ..conftest import WORLD_FILE

    session = (
        "from faultbench.kernel import load_world\n"
        f"w = load_world({str(WORLD_FILE)!r})\n"
        "w.call('issue_refund', {'order_id': '1', 'amount': 2})\n"
        "w.call('create_order', {'id': 'b', 'customer': '1', 'status': 'placed', 'total': 1})\n"
        "w.call('create_order', {'id': 'a', 'customer': '2', 'status': 'placed', 'total': 1})\n"
        "w.clock.advance(5)\n"
    )
    hashes = {
        subprocess.run(
            [sys.executable, "-c", session + "print(w.state_hash())"],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("1", "2", "3")
    }
    here: dict = {}
    exec(session, here)
    assert hashes == {here["w"].state_hash()}
