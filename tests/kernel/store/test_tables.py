"""Tables and records: the API tests and handlers read and write worlds with."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from faultbench.kernel import (
    Record,
    RecordCreated,
    RecordDeleted,
    RecordError,
    RecordNotFound,
    RecordUpdated,
)


def test_get_all_where_pick(world):
    assert world.orders.get("2").total == 20.0
    assert world.orders.get(2)["total"] == 20.0  # ints are accepted as ids
    assert world.orders.get("99") is None
    assert [o.id for o in world.orders.all()] == ["1", "2", "3"]
    assert [o.id for o in world.orders.where(customer="2")] == ["1", "3"]
    assert world.orders.pick(customer="2").id == "1"
    with pytest.raises(RecordNotFound, match=r"none of the \d+ order records matches"):
        world.orders.pick(status="shipped")
    assert len(world.orders) == 3
    assert "1" in world.orders
    assert "9" not in world.orders
    assert [o.id for o in world.orders] == ["1", "2", "3"]


def test_where_unknown_field_names_the_fields(world):
    with pytest.raises(RecordError, match=r"order has no field 'stauts'.*Did you mean 'status'"):
        world.orders.where(stauts="placed")


def test_ids_sort_numerically_then_text(world):
    for _ in range(4, 12):
        world.orders.insert(customer="1", status="placed", total=1.0)
    world.orders.insert(id="abc", customer="1", status="placed", total=1.0)
    ids = [o.id for o in world.orders.all()]
    assert ids == [str(i) for i in range(1, 12)] + ["abc"]


def test_insert_assigns_next_ids_after_explicit_numeric_ones(world):
    assert world.orders.insert(customer="1", status="placed", total=1).id == "4"
    assert world.orders.insert(id="10", customer="1", status="placed", total=1).id == "10"
    assert world.orders.insert(customer="1", status="placed", total=1).id == "11"
    world.orders.delete("11")
    assert world.orders.insert(customer="1", status="placed", total=1).id == "12"  # never reused


def test_insert_fills_defaults_and_nulls_and_normalizes(world):
    r = world.orders.insert(customer="1", status="placed", total=5)
    assert r.to_dict() == {
        "id": "4",
        "customer": "1",
        "status": "placed",
        "total": 5.0,
        "qty": 1,
        "created_at": None,
        "note": None,
    }
    assert type(r.total) is float
    local = datetime(2025, 6, 1, 2, 0, tzinfo=timezone(timedelta(hours=2)))
    r2 = world.orders.insert(customer="1", status="placed", total=1.0, created_at=local)
    assert r2.created_at == datetime(2025, 6, 1, tzinfo=UTC)
    assert r2.created_at.tzinfo is UTC


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"total": "abc"}, r"order.total: expected a number. Instead, received: \"abc\""),
        ({"total": True}, r"order.total: expected a number. Instead, received: true"),
        ({"qty": 1.5}, r"order.qty: expected an integer. Instead, received: 1.5"),
        (
            {"status": "shiped"},
            r"order.status: expected one of 'placed', 'shipped', 'refunded'. Instead, received: "
            r"\"shiped\" Did you mean 'shipped'\?",
        ),
        (
            {"customer": None},
            r"order.customer: expected a string \(a record id\). Instead, received: null",
        ),
        ({"note": 3}, r"order.note: expected a string or null. Instead, received: 3"),
        (
            {"created_at": datetime(2025, 1, 1)},
            r"order.created_at: expected a timezone-aware datetime",
        ),
        ({"colour": "red"}, r"order has no field 'colour'; expected one of: id, customer"),
        # Out of range values: a NaN or an int beyond int64 would not survive a JSON log.
        ({"total": float("nan")}, r"order.total: expected a finite number. Instead, received: NaN"),
        ({"total": -float("inf")}, r"order.total: expected a finite number. .*: -Infinity"),
        ({"total": 10**400}, r"order.total: expected a finite number. Instead, received: 1000"),
        (
            {"qty": 2**63},
            r"order.qty: expected an integer from -9223372036854775808 to 9223372036854775807. "
            r"Instead, received: 9223372036854775808",
        ),
    ],
)
def test_insert_type_errors_name_field_expected_and_received(world, fields, message):
    base = {"customer": "1", "status": "placed", "total": 1.0}
    before = world.state_hash()
    with pytest.raises(RecordError, match=message):
        world.orders.insert(**{**base, **fields})
    assert world.state_hash() == before


def test_insert_required_and_duplicate_ids(world):
    with pytest.raises(RecordError, match=r"order.total is required: expected a number"):
        world.orders.insert(customer="1", status="placed")
    with pytest.raises(RecordError, match=r"order '1' already exists"):
        world.orders.insert(id="1", customer="1", status="placed", total=1.0)
    with pytest.raises(RecordError, match=r"order.id: expected a non-empty string"):
        world.orders.insert(id=5, customer="1", status="placed", total=1.0)


def test_update_changes_only_given_fields_and_logs_old_values(world):
    n = len(world.events)
    r = world.orders.update("1", status="shipped", note="fast")
    assert (r.status, r.note, r.total) == ("shipped", "fast", 10.0)
    ev = world.events[n]
    assert isinstance(ev, RecordUpdated)
    assert ev.changes == {"status": "shipped", "note": "fast"}
    assert ev.old == {"status": "placed", "note": None}
    assert ev.call_id is None
    # a no-op update writes nothing
    world.orders.update("1", status="shipped")
    assert len(world.events) == n + 1


def test_update_takes_the_id_by_position_or_keyword(world):
    assert world.orders.update(id="1", status="shipped").status == "shipped"
    assert world.orders.update(2, status="shipped").id == "2"
    with pytest.raises(TypeError, match=r"order.update\(\) needs the record id"):
        world.orders.update(status="shipped")


def test_update_errors(world):
    # Tests get the plain words; only tools answer as an HTTP API would (see test_ops.py).
    with pytest.raises(RecordNotFound, match=r"^order '9' not found$") as info:
        world.orders.update("9", status="shipped")
    assert (info.value.table, info.value.id, info.value.kind) == ("order", "9", "not_found")
    with pytest.raises(RecordNotFound, match=r"^order '9' not found$"):
        world.orders.delete(9)
    with pytest.raises(RecordError, match=r"order.id cannot change"):
        world.orders.update("1", id="2")
    with pytest.raises(RecordError, match=r"order has no field 'staus'"):
        world.orders.update("1", staus="shipped")
    with pytest.raises(RecordError, match=r"order.status: expected one of"):
        world.orders.update("1", status="lost")


def test_delete(world):
    old = world.orders.delete("2")
    assert old.id == "2"
    assert world.orders.get("2") is None
    assert isinstance(world.events[-1], RecordDeleted)
    assert world.events[-1].old["total"] == 20.0
    with pytest.raises(RecordNotFound):
        world.orders.delete("2")


def test_writes_become_events(world):
    n = len(world.events)
    world.orders.insert(customer="1", status="placed", total=1.0)
    ev = world.events[n]
    assert isinstance(ev, RecordCreated)
    assert (ev.table, ev.id, ev.seq, ev.call_id) == ("order", "4", n, None)
    assert list(ev.fields) == ["id", "customer", "status", "total", "qty", "created_at", "note"]


def test_record_access_equality_and_read_only(world):
    o = world.orders.get("1")
    assert o.status == o["status"] == "placed"
    assert o == o.to_dict()
    assert o == {**o.to_dict()}
    assert o != {**o.to_dict(), "status": "shipped"}
    assert o == world.order.get("1")
    assert isinstance(o, Record)
    assert dict(o) == o.to_dict()
    d = o.to_dict()
    d["status"] = "mutated"
    assert world.orders.get("1").status == "placed"  # to_dict is a copy
    with pytest.raises(AttributeError, match=r"records are read-only.*update\('1', status=...\)"):
        o.status = "shipped"
    with pytest.raises(AttributeError, match=r"order has no field 'stats'.*Did you mean 'status'"):
        _ = o.stats
    assert repr(o).startswith("order(id='1', customer='2', status='placed'")


def test_records_from_an_old_state_do_not_change(world):
    o = world.orders.get("1")
    world.orders.update("1", status="shipped")
    assert o.status == "placed"
    assert world.orders.get("1").status == "shipped"


def test_pick_on_an_empty_table_says_so_and_how_to_seed_it(tmp_path):
    from faultbench import load_world

    path = tmp_path / "world.yaml"
    path.write_text(
        "services:\n"
        "  orders:\n"
        "    records: { order: { id: str, status: 'enum[placed, delivered]', total: float } }\n"
        "    operations: { get_order: { kind: get, record: order } }\n"
    )
    world = load_world(path)
    with pytest.raises(RecordNotFound) as info:
        world.orders.pick(status="delivered")
    assert str(info.value) == (
        "orders.pick(status='delivered'): the order table is empty (the world file seeds no "
        "order records): seed it in the world file (services.orders.seed: { order: { rows: "
        "[{ status: 'delivered', ... }] } }), or insert it in the test "
        "(world.orders.insert(...)) before the agent runs."
    )
    assert isinstance(info.value, LookupError)
