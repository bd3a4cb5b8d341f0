"""Forks: O(1) branches that share their parent's past and never its future."""

from __future__ import annotations

from faultbench.kernel import WorldForked


def test_fork_starts_with_world_forked_and_shares_the_prefix(world):
    world.call("get_order", {"id": "1"})
    n = len(world.events)
    fork = world.fork(run=3, faults=False)
    assert (fork.run, fork.faults_enabled, fork.seed) == (3, False, world.seed)
    ev = fork.events
    assert len(ev) == n + 1
    assert isinstance(ev[n], WorldForked)
    assert (ev[n].parent_seq, ev[n].run, ev[n].faults) == (n - 1, 3, False)
    # the prefix is the parent's events themselves, not copies
    assert all(ev[i] is world.events[i] for i in range(n))
    assert fork.state_hash() == world.state_hash()


def test_writes_in_a_fork_never_show_in_parent_or_sibling(world):
    a = world.fork()
    b = world.fork()
    parent_before = world.to_dict()
    a.orders.update("1", status="shipped")
    a.call("create_order", {"customer": "1", "status": "placed", "total": 1})
    a.clock.advance(30)
    assert world.to_dict() == parent_before
    assert b.orders.get("1").status == "placed"
    assert b.orders.get("4") is None
    assert b.clock.now() == world.clock.now()
    # ... and the other way round
    world.orders.delete("2")
    b.call("issue_refund", {"order_id": "3", "amount": 1})
    assert a.orders.get("2") is not None
    assert a.refunds.all() == []
    assert world.refunds.all() == []
    assert world.orders.get("3").status == "placed"
    assert len({world.state_hash(), a.state_hash(), b.state_hash()}) == 3


def test_fork_from_an_earlier_snapshot(world):
    snap = world.snapshot()
    world.orders.update("1", status="shipped")
    world.call("get_order", {"id": "1"})
    fork = world.fork(snap)
    assert fork.orders.get("1").status == "placed"
    assert len(fork.events) == snap.seq + 1
    assert fork.events[-1].parent_seq == snap.seq - 1
    assert world.orders.get("1").status == "shipped"


def test_fork_inherits_call_counts_and_continues_k(world):
    world.call("get_order", {"id": "1"})
    world.call("get_order", {"id": "2"})
    fork = world.fork()
    r = fork.call("get_order", {"id": "3"})
    assert r.k == 3
    assert r.call_id == "c3"
    assert world.call("get_order", {"id": "3"}).k == 3  # the parent's own third call


def test_fork_of_a_fork_and_restore_across_the_fork_point(world):
    root_snap = world.snapshot()
    f1 = world.fork()
    f1.orders.update("1", note="f1")
    f2 = f1.fork()
    f2.orders.update("1", note="f2")
    assert world.orders.get("1").note is None
    assert f1.orders.get("1").note == "f1"
    assert f2.orders.get("1").note == "f2"
    # a fork may go back to a snapshot its parent took before the fork
    f2.restore(root_snap)
    assert f2.orders.get("1").note is None
    assert list(f2.events) == list(world.events)[: root_snap.seq]
    assert f1.orders.get("1").note == "f1"


def test_restore_in_a_loop_keeps_the_log_chain_short(world):
    snap = world.snapshot()
    for _ in range(1000):
        world.call("update_order", {"id": "1", "note": "x"})
        world.restore(snap)
    assert len(world.events.parts()) <= 3  # segments the log is read through
    assert len(world.events) == snap.seq


def test_reset_of_a_fork_stays_a_fork(world):
    fork = world.fork(run=2)
    fork.orders.update("1", status="shipped")
    fork.reset()
    assert fork.orders.get("1").status == "placed"
    assert isinstance(fork.events[-1], WorldForked)
    assert fork.events[-1].run == 2
    assert fork.run == 2
