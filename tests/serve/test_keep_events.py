"""`serve --events FILE --keep-events N`: a long session keeps a window of its latest events in
memory while the journal keeps every event, so the file replays to the live world and holds
the bytes a server without the bound would have written."""

from __future__ import annotations

import urllib.request

import pytest

import faultbench
from faultbench.cli import main
from faultbench.kernel import decode_events, encode_events
from faultbench.serve import JournalError, Journals
from tests.soak.test_kill import mcp_call, open_session, request

from .serve_helpers import SHOP, ServeProcess


def rule_free():
    world = faultbench.load_world(SHOP)
    world.set_faults({})
    return world


def step(world, i: int) -> None:
    if i % 2:
        world.call("update_order", {"id": str(i % 4 + 1), "total": float(i)})
    else:
        world.call("get_order", {"id": "2"})


def test_the_journal_holds_every_event_through_cuts_restores_and_resets(tmp_path):
    path = tmp_path / "events.jsonl"
    bounded, whole = rule_free(), rule_free()
    Journals(path, bounded, keep_events=15)

    def same() -> None:
        assert bounded.state_hash() == whole.state_hash()
        data = path.read_bytes()
        assert encode_events(decode_events(data)) == encode_events(whole.events)
        assert faultbench.replay(SHOP, data).state_hash() == bounded.state_hash()

    snaps = []
    for i in range(400):
        step(bounded, i)
        step(whole, i)
        if i % 90 == 0:
            snaps.append((bounded.snapshot(), whole.snapshot()))
        if i % 50 == 0:
            same()
    assert bounded.events.first > 800
    same()
    # back to snapshots taken after cuts, newest first, then to the one before any cut
    for b, w in reversed(snaps):
        bounded.restore(b)
        whole.restore(w)
        same()
        for i in range(40):  # enough to cut the window again
            step(bounded, i)
            step(whole, i)
        same()
    bounded.reset()
    whole.reset()
    same()


def test_a_restore_the_journal_cannot_express_is_refused_and_nothing_changes(tmp_path):
    path = tmp_path / "events.jsonl"
    world = rule_free()
    Journals(path, world, keep_events=10)
    start = world.snapshot()
    for i in range(100):
        step(world, i)
    late = world.snapshot()  # a window beginning well after event 0
    assert late.events.first > 0
    world.restore(start)  # the file goes back before `late`'s window
    for i in range(100):
        step(world, i + 1)  # other calls: another history
    before = (world.state_hash(), path.read_bytes())
    with pytest.raises(ValueError, match=r"Cannot restore this snapshot.*--keep-events"):
        world.restore(late)
    assert (world.state_hash(), path.read_bytes()) == before
    step(world, 3)  # the journal was never broken: changes go on
    assert faultbench.replay(SHOP, path.read_bytes()).state_hash() == world.state_hash()


def test_a_deleted_journal_cannot_be_rebuilt_once_events_were_dropped(tmp_path):
    path = tmp_path / "events.jsonl"
    world = rule_free()
    Journals(path, world, keep_events=10)
    for i in range(60):
        step(world, i)
    path.unlink()
    with pytest.raises(JournalError, match="deleted"):
        step(world, 1)
    with pytest.raises(JournalError, match=r"lacks events before seq \d+.*--keep-events"):
        step(world, 1)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--keep-events", "10"], "--keep-events needs --events FILE"),
        (["--keep-events", "0", "--events", "x.jsonl"], "Expected --keep-events of 1 or more"),
    ],
)
def test_keep_events_flags_that_do_not_fit(flags, message, capsys):
    assert main(["serve", str(SHOP), *flags]) == 2
    assert message in capsys.readouterr().err


def test_keep_events_is_refused_for_a_world_with_an_events_feed(tmp_path, capsys):
    from tests.kernel.calls.test_feed import WORLD

    world, events = tmp_path / "feed.yaml", tmp_path / "events.jsonl"
    world.write_text(WORLD)
    assert main(["serve", str(world), "--events", str(events), "--keep-events", "5"]) == 2
    assert "events: feed" in capsys.readouterr().err
    assert not events.exists()  # refused before the file was touched


def test_a_served_session_keeps_a_window_and_says_so(tmp_path):
    events = tmp_path / "events.jsonl"
    server = ServeProcess(
        str(SHOP), "--http", "--port", "0", "--no-faults", "--events", str(events),
        "--keep-events", "20",
    )  # fmt: skip
    try:
        session = open_session(server.base)
        for i in range(60):
            mcp_call(server.base, session, i + 1, "update_order", {"id": "1", "total": i})
        trace = request(server.base, "GET", "trace")
        first = trace["first_seq"]
        assert first > 0
        assert trace["count"] < 60
        with urllib.request.urlopen(f"{server.base}/faultbench/events", timeout=30) as answer:
            assert answer.headers["Faultbench-First-Seq"] == str(first)
            held = decode_events(answer.read())
        assert held[0].seq == first
        state = request(server.base, "GET", "state")
    finally:
        server.stop()
    replayed = faultbench.replay(SHOP, events.read_bytes())
    assert replayed.state_hash() == state["hash"]
    assert len(replayed.events) == held[-1].seq + 1


def test_a_session_forked_from_a_window_gets_a_file_that_replays_alone(tmp_path):
    """With --isolate, a session's world is a fork of the shared one: when the shared world
    no longer holds its first events, the session's file begins with the shared file's."""
    path = tmp_path / "events.jsonl"
    shared = rule_free()
    journals = Journals(path, shared, keep_events=2)
    for i in range(30):
        step(shared, i)
    shared.reset()  # a LogRewound line in the shared file, copied as it is
    for i in range(5):
        step(shared, i)
    assert shared.events.first > 0
    session = shared.fork()
    journals.add_session("s1", session)
    for i in range(30):
        step(session, i)
    assert session.events.first > 0
    own = journals.session_path("s1").read_bytes()
    assert faultbench.replay(SHOP, own).state_hash() == session.state_hash()
    twin = rule_free()
    for i in range(5):
        step(twin, i)
    twin = twin.fork()
    for i in range(30):
        step(twin, i)
    assert encode_events(decode_events(own)) == encode_events(twin.events)
    journals.close()
