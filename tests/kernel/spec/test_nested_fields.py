"""Nested fields: `list[T]`, `{object: {...}}` and `{list: {object: {...}}}` in records, through
the loader, tool schemas and arguments, table writes, seed rows, replay and diffs."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from faultbench.kernel import (
    RecordError,
    World,
    WorldFileError,
    encode_events,
    replay,
)
from faultbench.kernel.lowlevel import load_spec

WORLD = """\
name: billing
seed: 7
services:
  billing:
    records:
      payment_method:
        brand: enum[visa, amex]
      customer:
        email: str
        tags: list[str]
        address: { object: { line1: str, city: str, postal_code: str? } }
        payment_method_ids: list[ref[payment_method]]
      invoice:
        customer_id: ref[customer]
        lines:
          list:
            object:
              description: str
              amount: int
              quantity: { type: int, default: 1 }
              at: datetime?
              meta: { object: { source: enum[web, api], notes: list[str]? }, optional: true }
    seed: { payment_method: 3, customer: 4, invoice: 5 }
    operations:
      get_customer: { kind: get, record: customer }
      create_customer: { kind: create, record: customer }
      update_customer: { kind: update, record: customer }
      create_invoice: { kind: create, record: invoice }
      get_invoice: { kind: get, record: invoice }
"""


TYPES = (
    "expected one of str, int, float, bool, datetime, version, enum[a, b] or ref[service.record]"
)


def load(tmp_path: Path, text: str = WORLD, seed: int | None = None) -> World:
    path = tmp_path / "world.yaml"
    path.write_text(textwrap.dedent(text))
    return World.from_spec(load_spec(path), seed=seed)


def problems(tmp_path: Path, text: str) -> list[tuple[int, int, str]]:
    path = tmp_path / "world.yaml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(WorldFileError) as info:
        load_spec(path)
    return [(e.line, e.col, e.message) for e in info.value.errors]


# -- the loader --------------------------------------------------------------------------------


def test_nested_field_specs(tmp_path):
    spec = load(tmp_path).spec
    customer = spec.records["customer"]
    tags = customer.field("tags")
    assert tags is not None
    assert tags.kind == "list"
    assert tags.item is not None
    assert tags.item.kind == "str"
    address = customer.field("address")
    assert address is not None
    assert address.kind == "object"
    assert [(g.name, g.kind, g.optional) for g in address.fields] == [
        ("line1", "str", False), ("city", "str", False), ("postal_code", "str", True),
    ]  # fmt: skip
    pm = customer.field("payment_method_ids")
    assert pm is not None
    assert pm.item is not None
    assert pm.item.ref == "payment_method"
    lines = spec.records["invoice"].field("lines")
    assert lines is not None
    assert lines.written() == (
        "list[{description: str, amount: int, quantity: int, at: datetime?, "
        "meta: {source: enum[web, api], notes: list[str]?}?}]"
    )


def test_nested_loader_errors_name_the_place(tmp_path):
    text = """\
        services:
          s:
            records:
              r:
                a: list[strr]
                b: { object: { x: int, y: { object: { z: decimal } } } }
                c: { list: { object: { n: int } }, default: [{n: "x"}] }
                d: { object: { x: int }, list: str }
                e: { object: [] }
                f: list[ref[nope]]
        """
    assert problems(tmp_path, text) == [
        (5, 12, f"unknown field type 'strr'; {TYPES}; did you mean 'str'?"),
        (6, 50, f"unknown field type 'decimal'; {TYPES}"),
        (7, 53, "default [{'n': 'x'}] of field 'r.c' does not fit at [0].n: expected an integer, "
                'got "x"'),
        (8, 34, "field 'r.d' declares both object: and list:; expected one of them"),
        (9, 22, "field 'r.e': object must map field names to types; expected e.g. "
                "{object: {city: str, postal_code: str?}}"),
        (10, 12, "'ref[nope]' refers to a record that does not exist; expected one of s.r"),
    ]  # fmt: skip


def test_old_flat_worlds_still_load_the_same(tmp_path):
    text = "services: {s: {records: {r: {tags: str, n: {type: int, default: 2}}}}}\n"
    spec = load(tmp_path, text).spec
    assert [f.kind for f in spec.records["r"].fields] == ["str", "str", "int"]


# -- tool schemas and arguments -------------------------------------------------------------


def test_tool_schemas_have_nested_properties_and_items(tmp_path):
    world = load(tmp_path)
    create = world.tool("create_invoice").input_schema
    lines = create["properties"]["lines"]
    assert lines["type"] == "array"
    item = lines["items"]
    assert item["type"] == "object"
    assert item["required"] == ["description", "amount"]
    assert item["additionalProperties"] is False
    assert item["properties"]["amount"] == {"type": "integer"}
    assert item["properties"]["quantity"] == {"type": "integer", "default": 1}
    # optional: anyOf the value's schema or null, as the MCP SDK writes it (no type lists)
    assert item["properties"]["at"] == {
        "anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]
    }
    meta, null = item["properties"]["meta"]["anyOf"]
    assert meta["type"] == "object"
    assert null == {"type": "null"}
    assert meta["properties"]["notes"] == {
        "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]
    }
    customer = world.tool("create_customer").input_schema["properties"]
    assert customer["tags"]["items"] == {"type": "string"}
    assert customer["address"]["required"] == ["line1", "city"]
    # an update merges objects: no field of the object is required
    update = world.tool("update_customer").input_schema["properties"]
    assert "required" not in update["address"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {
                "lines": [
                    {"description": "a", "amount": 1},
                    {"description": "b", "amount": 2},
                    {"description": "c", "amount": "x"},
                ]
            },
            '`lines[2].amount`: expected an integer, got "x"',
        ),
        ({"lines": [{"description": "a"}]}, "`lines[0].amount`: required, expected an integer"),
        (
            {"lines": [{"description": "a", "amount": 1, "colour": "red"}]},
            "`lines[0].colour`: unknown field; expected one of description, amount, quantity, "
            "at, meta",
        ),
        ({"lines": {"description": "a"}}, "`lines`: expected a list of objects {description"),
        (
            {"lines": [{"description": "a", "amount": 1, "meta": {"source": "fax"}}]},
            "`lines[0].meta.source`: expected one of 'web', 'api', got \"fax\"",
        ),
        (
            {"lines": [{"description": "a", "amount": 1, "at": "yesterday"}]},
            "`lines[0].at`: expected a date-time string",
        ),
    ],
)
def test_argument_errors_carry_a_json_path(tmp_path, args, message):
    world = load(tmp_path)
    result = world.call("create_invoice", {"customer_id": "1", **args})
    assert not result.ok
    assert result.error_kind == "invalid_arguments"
    assert result.error is not None
    assert result.error.startswith("invalid arguments for create_invoice: " + message)


def test_create_fills_nested_defaults_and_returns_json(tmp_path):
    world = load(tmp_path)
    result = world.call(
        "create_invoice",
        {"customer_id": "1", "lines": [{"description": "a", "amount": 3,
                                         "at": "2025-01-02T03:04:05+01:00"}]},
    )  # fmt: skip
    assert result.ok, result.error
    assert result.value["lines"] == [
        {"description": "a", "amount": 3, "quantity": 1, "at": "2025-01-02T02:04:05Z",
         "meta": None},
    ]  # fmt: skip
    stored = world.invoices.get(result.value["id"])
    assert stored is not None
    assert stored["lines"][0]["at"] == datetime(2025, 1, 2, 2, 4, 5, tzinfo=UTC)


# -- reading and writing in Python ----------------------------------------------------------


def test_nested_values_read_as_attributes_and_items(tmp_path):
    world = load(tmp_path)
    customer = world.customers.get("1")
    assert customer is not None
    assert customer.address.city == customer["address"]["city"]
    assert customer.address == dict(customer["address"])
    invoice = world.invoices.get("1")
    assert invoice is not None
    assert isinstance(invoice["lines"][0]["amount"], int)
    assert invoice.lines[0].amount == invoice["lines"][0]["amount"]
    with pytest.raises(AttributeError, match="records are read-only"):
        customer.address.city = "x"


def test_update_merges_objects_and_replaces_lists(tmp_path):
    world = load(tmp_path)
    before = world.customers.get("1")
    assert before is not None
    result = world.call("update_customer", {"id": "1", "address": {"city": "Oslo"}, "tags": ["x"]})
    assert result.ok, result.error
    after = world.customers.get("1")
    assert after is not None
    assert after.address == {**before.address, "city": "Oslo"}
    assert after.tags == ["x"]
    # the same merge for handler code, through the table
    world.customers.update("1", address={"postal_code": None})
    assert world.customers.get("1").address == {
        **before.address,
        "city": "Oslo",
        "postal_code": None,
    }  # type: ignore[union-attr]  # the record exists


def test_table_writes_are_checked_at_every_level(tmp_path):
    world = load(tmp_path)
    n = len(world.events)
    with pytest.raises(RecordError, match=r"invoice\.lines\[0\]\.amount: expected an integer"):
        world.invoices.insert(customer_id="1", lines=[{"description": "a", "amount": 1.5}])
    with pytest.raises(RecordError, match=r"invoice\.lines\[0\]\.at: expected a date-time"):
        world.invoices.insert(
            customer_id="1", lines=[{"description": "a", "amount": 1, "at": datetime(2025, 1, 1)}]
        )
    with pytest.raises(RecordError, match=r"customer\.address\.line1: required"):
        world.customers.insert(email="a@b.c", tags=[], address={"city": "x"}, payment_method_ids=[])
    assert len(world.events) == n  # nothing partial was written


# -- seed rows ----------------------------------------------------------------------------------


def test_seed_rows_fill_nested_fields_deterministically(tmp_path):
    a = load(tmp_path)
    b = load(tmp_path)
    assert a.to_dict() == b.to_dict()
    assert a.state_hash() == b.state_hash()
    c = load(tmp_path, seed=8)
    assert c.to_dict() != a.to_dict()
    methods = {r.id for r in a.payment_methods}
    for customer in a.customers:
        assert set(customer.payment_method_ids) <= methods
        assert 1 <= len(customer.tags) <= 3
        assert set(customer.address) == {"line1", "city", "postal_code"}
    for invoice in a.invoices:
        for line in invoice.lines:
            assert line.quantity == 1  # the default, as a create leaving it out
            assert isinstance(line.amount, int)


def test_explicit_seed_rows_are_checked_with_paths_and_refs(tmp_path):
    text = """\
        services:
          s:
            records:
              pm: { brand: str }
              c:
                pms: list[ref[pm]]
                lines: { list: { object: { n: int } } }
            seed:
              pm: 2
              c:
                rows:
                  - { pms: ["1", "9"], lines: [] }
                  - { pms: [], lines: [{n: 1}, {n: "two"}] }
        """
    got = problems(tmp_path, text)
    assert got == [
        (12, 20, "c.pms[1] '9' is not the id of any seeded 'pm'; expected one of its ids"),
        (13, 31, 'invalid value for c.lines[1].n: expected an integer, got "two"'),
    ]


# -- replay and diffs ---------------------------------------------------------------------------


def test_nested_writes_replay_byte_for_byte(tmp_path):
    world = load(tmp_path)
    world.call("update_customer", {"id": "2", "address": {"city": "Bergen"}})
    world.call(
        "create_invoice",
        {"customer_id": "1", "lines": [{"description": "a", "amount": 1,
                                         "at": "2025-01-01T00:00:00Z"}]},
    )  # fmt: skip
    data = encode_events(world.events)
    again = replay(world.spec, data)
    assert again.state_hash() == world.state_hash()
    assert encode_events(again.events) == data
    fork = world.fork()
    fork.call("update_customer", {"id": "1", "tags": []})
    assert fork.customers.get("1").tags == []  # type: ignore[union-attr]  # the record exists
    assert world.customers.get("1").tags != []  # type: ignore[union-attr]  # the record exists


def test_diffs_show_the_nested_field_that_changed(tmp_path):
    world = load(tmp_path)
    snap = world.snapshot()
    old = world.customers.get("2").address.city  # type: ignore[union-attr]  # the record exists
    world.call("update_customer", {"id": "2", "address": {"city": "Bergen"}, "tags": ["a"]})
    text = str(world.diff(snap))
    assert f'address.city: "{old}" -> "Bergen"' in text
    assert "tags: [" in text
    assert '-> ["a"]' in text
