"""One naive agent per fault family of issue 21, each failing on one fault: `--faultbench-shrink`
must pin that one. In test_pages it hides among noise (the `ping` calls fail half the time and
do not matter); the others have no noise, to keep the probes (a pytest process each) few."""

import pytest

NOISE = {"desk.ping": {"errors": {"http_503": 0.5}}}
pytestmark = [pytest.mark.world("world.yaml"), pytest.mark.runs(8), pytest.mark.min_pass_rate(1.0)]


def noise(world, token):
    for _ in range(4):  # a fault-free call unless NOISE is in force
        world.call("ping", {"id": "1"}, token=token)


@pytest.mark.faults({**NOISE, "desk.list_charges": {"errors": {"truncated_page": 0.3}}})
def test_pages(world):
    token = world.issue_token("clerk")
    noise(world, token)
    seen, args = [], {"limit": 3}
    while True:  # trusts has_more
        page = world.call("list_charges", args, token=token).value
        seen += [c["id"] for c in page["data"]]
        if not page["has_more"]:
            break
        args = {"limit": 3, "starting_after": page["next_cursor"]}
    assert len(seen) == 9


@pytest.mark.faults({"desk.add_note": {"errors": {"timeout": 0.3}}})
def test_idempotency(world):
    token = world.issue_token("clerk")
    noise(world, token)
    for attempt in range(3):  # a new key per attempt: a retry after commit writes again
        if world.call("add_note", {"text": "hi", "key": f"k{attempt}"}, token=token).ok:
            break
    assert len(world.notes.all()) == 1


@pytest.mark.faults({"desk.get_ticket": {"errors": {"token_expired": 0.2}}})
def test_token_expired(world):
    token = world.issue_token("clerk")
    noise(world, token)
    for _ in range(3):  # never refreshes its token
        assert world.call("get_ticket", {"id": "1"}, token=token).ok


@pytest.mark.faults({"desk.get_ticket": {"errors": {"revoked": 0.2}}})
def test_revoked(world):
    token = world.issue_token("clerk")
    noise(world, token)
    for _ in range(3):
        assert world.call("get_ticket", {"id": "1"}, token=token).ok


@pytest.mark.faults({"desk.list_events": {"errors": {"duplicate_delivery": 0.3}}})
def test_feed(world):
    token = world.issue_token("clerk")
    for n in range(3):
        world.call("add_note", {"text": f"n{n}", "key": f"n{n}"}, token=token)
    noise(world, token)
    events = world.call("list_events", {}, token=token).value["data"]
    assert len(events) == 3  # counts deliveries, not event ids


@pytest.mark.faults({"desk.update_ticket": {"errors": {"conflict": 0.3}}})
def test_conflict(world):
    token = world.issue_token("clerk")
    noise(world, token)
    ticket = world.call("get_ticket", {"id": "1"}, token=token).value
    args = {"id": "1", "status": "solved", "expected_version": ticket["version"]}
    assert world.call("update_ticket", args, token=token).ok  # gives up on a 409
