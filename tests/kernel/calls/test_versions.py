"""`version` fields, `expected_version` and the `conflict` fault."""

from __future__ import annotations

import pytest

from faultbench.kernel import RecordError, World, WorldFileError, replay
from faultbench.kernel.lowlevel import load_spec

WORLD = """
services:
  support:
    records:
      ticket: { subject: str, status: "enum[open, solved]", version: version }
      note: { text: str }
    seed:
      ticket: { rows: [{ id: T-1, subject: printer, status: open }] }
      note: { rows: [{ id: N-1, text: hello }] }
    operations:
      get_ticket: { kind: get, record: ticket }
      create_ticket: { kind: create, record: ticket }
      update_ticket: { kind: update, record: ticket }
      delete_ticket: { kind: delete, record: ticket }
      update_note: { kind: update, record: note }
"""
SPEC = load_spec("<versions>", text=WORLD)


def world() -> World:
    return World.from_spec(SPEC)


def test_a_version_starts_at_1_and_moves_on_with_every_write():
    w = world()
    assert w.tickets.get("T-1").version == 1
    created = w.call("create_ticket", {"subject": "x", "status": "open"})
    assert created.value["version"] == 1
    w.call("update_ticket", {"id": "T-1", "status": "solved"})
    assert w.tickets.get("T-1").version == 2
    w.tickets.update("T-1", subject="printer on floor 2")  # a direct write too
    assert w.tickets.get("T-1").version == 3
    w.call("update_ticket", {"id": "T-1", "status": "solved"})  # no change, no write
    assert w.tickets.get("T-1").version == 3


def test_the_version_is_no_argument_and_updates_take_expected_version():
    w = world()
    create = w.tool("create_ticket").input_schema["properties"]
    update = w.tool("update_ticket").input_schema["properties"]
    assert "version" not in create
    assert "version" not in update
    assert update["expected_version"]["type"] == "integer"
    assert "expected_version" not in w.tool("update_note").input_schema["properties"]
    refused = w.call("update_note", {"id": "N-1", "text": "x", "expected_version": 1})
    assert refused.error_kind == "invalid_arguments"


def test_a_stale_expected_version_is_a_409_with_the_current_version():
    w = world()
    assert w.call("update_ticket", {"id": "T-1", "status": "solved", "expected_version": 1}).ok
    stale = w.call("update_ticket", {"id": "T-1", "subject": "y", "expected_version": 1})
    assert not stale.ok
    assert stale.error_kind == "conflict"
    assert "is at version 2, not the expected 1" in stale.text
    assert "expected_version: 2" in stale.text
    assert w.tickets.get("T-1").subject == "printer"


def test_the_conflict_fault_writes_as_another_client_and_answers_409():
    w = world()
    w.set_faults({"support.update_ticket": {"script": {1: "conflict"}}})
    lost = w.call("update_ticket", {"id": "T-1", "status": "solved", "expected_version": 1})
    assert not lost.ok
    assert lost.fault == "conflict"
    assert "now at version 2" in lost.text
    ticket = w.tickets.get("T-1")
    assert ticket.version == 2
    assert ticket.status == "open"
    other = [e for e in w.events if type(e).__name__ == "RecordUpdated"]
    assert other[-1].call_id is None
    assert other[-1].changes == {"version": 2}
    # the blind retry with the old version meets the real check; the careful one succeeds
    blind = w.call("update_ticket", {"id": "T-1", "status": "solved", "expected_version": 1})
    assert blind.error_kind == "conflict"
    assert blind.fault is None
    careful = w.call("update_ticket", {"id": "T-1", "status": "solved", "expected_version": 2})
    assert careful.ok
    assert careful.value["version"] == 3
    assert replay(SPEC, w.events).state_hash() == w.state_hash()


def test_the_conflict_fault_on_a_record_without_a_version_only_answers_409():
    w = world()
    w.set_faults({"support.update_note": {"script": {1: "conflict"}}})
    r = w.call("update_note", {"id": "N-1", "text": "x"})
    assert r.fault == "conflict"
    assert r.text.startswith("409 Conflict: support.update_note")
    assert w.notes.get("N-1").text == "hello"


def test_conflict_only_fits_writes_by_id():
    with pytest.raises(WorldFileError, match=r"conflict cannot happen to support\.get_ticket"):
        load_spec("<x>", text=WORLD + "faults:\n  support.get_ticket: {errors: {conflict: 0.1}}\n")


def test_version_fields_are_checked():
    w = world()
    with pytest.raises(RecordError, match=r"ticket\.version: expected an integer from 1"):
        w.tickets.insert(subject="x", status="open", version=0)
    with pytest.raises(WorldFileError, match="cannot be optional"):
        load_spec("<x>", text="services: {s: {records: {r: {v: version?}}}}")
