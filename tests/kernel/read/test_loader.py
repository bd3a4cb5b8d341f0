"""World files that load: the README short form, the fuller form, faultbench 0.1 files."""

from __future__ import annotations

import hashlib
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from faultbench.kernel import WorldFileError
from faultbench.kernel._faults._types import ErrorRule, Latency, RateLimit
from faultbench.kernel._read._reader import merged_rule
from faultbench.kernel._spec._types import DEFAULT_CLOCK_START
from faultbench.kernel.lowlevel import load_spec

ROOT = Path(__file__).resolve().parents[3]
WORLDS = ROOT / "tests" / "worlds"

# Exactly as written in issue 2 and the README.
README_WORLD = """\
services:
  orders:
    records: { order: { id: str, status: enum[placed, delivered, returned], total: float } }
    operations: { get_order: { kind: get, record: order } }
  payments:
    records: { refund: { id: str, order_id: str, amount: float } }
    operations: { issue_refund: { kind: create, record: refund } }
faults:
  payments.issue_refund: { errors: { timeout: 0.10 } }
"""


def write(tmp_path: Path, text: str, name: str = "world.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


# -- the README short form -------------------------------------------------------------------


def test_readme_short_form_loads_as_written(tmp_path):
    path = write(tmp_path, README_WORLD, "shop.yaml")
    spec = load_spec(path)

    assert spec.name == "shop"  # the file stem when `name:` is absent
    assert spec.path == str(path.resolve())
    assert spec.seed == 0
    assert spec.clock_start == DEFAULT_CLOCK_START
    assert [s.name for s in spec.services] == ["orders", "payments"]
    order = spec.records["order"]
    assert [(f.name, f.kind) for f in order.fields] == [
        ("id", "str"),
        ("status", "enum"),
        ("total", "float"),
    ]
    assert order.field("status").choices == ("placed", "delivered", "returned")
    assert order.field("status").raw == "enum[placed, delivered, returned]"
    assert spec.records["refund"].service == "payments"
    assert spec.accessors == {
        "order": "order",
        "orders": "order",
        "refund": "refund",
        "refunds": "refund",
    }
    assert spec.operations["get_order"].kind == "get"
    assert spec.operations["issue_refund"].record == "refund"
    assert spec.operations["issue_refund"].qualname == "payments.issue_refund"
    assert spec.faults["payments.issue_refund"].errors == (ErrorRule("timeout", 0.10),)
    assert spec.seed_plans == ()
    assert spec.digest == hashlib.sha256(path.read_bytes()).hexdigest()


def test_text_argument_parses_the_string_and_names_the_source(tmp_path):
    spec = load_spec("README.md", text=README_WORLD)
    assert spec.path is None
    assert spec.name == "README"
    assert spec.digest == hashlib.sha256(README_WORLD.encode()).hexdigest()
    with pytest.raises(WorldFileError, match=r"^README\.md:4:38: unknown operation kind"):
        load_spec("README.md", text=README_WORLD.replace("kind: get", "kind: gett"))


def test_positions_are_exact_inside_flow_mappings_with_enums():
    spec = load_spec("w.yaml", text=README_WORLD)
    status, total = spec.records["order"].fields[1:]
    assert (status.loc.line, status.loc.col) == (3, 42)
    assert (total.loc.line, total.loc.col) == (3, 84)


def test_enum_and_ref_text_is_kept_inside_quotes_and_block_style():
    spec = load_spec(
        "w.yaml",
        text=textwrap.dedent("""\
            services:
              s:
                records:
                  a:
                    kind: "enum[x, y]"
                    mood: enum[happy, 'very sad', "on hold"]
                  b: { a_id: ref[a], label: { type: str, default: "ref[a, b]" } }
                seed: { a: 2, b: 1 }
        """),
    )
    a = spec.records["a"]
    assert a.field("kind").choices == ("x", "y")
    assert a.field("mood").choices == ("happy", "very sad", "on hold")
    assert spec.records["b"].field("label").default == "ref[a, b]"


# -- the fuller form --------------------------------------------------------------------------


def test_full_form_every_key():
    spec = load_spec(WORLDS / "full.yaml")
    assert spec.name == "full_world"
    assert spec.seed == 3
    assert spec.description == "A world that uses every key."
    # a naive clock start is UTC
    assert spec.clock_start == datetime(2025, 1, 15, 8, 30, tzinfo=UTC)
    catalog = spec.services[0]
    assert catalog.description == "Products for sale."
    assert catalog.records == ("category", "product")
    assert catalog.operations == (
        "get_product",
        "list_products",
        "add_product",
        "edit_product",
        "remove_product",
    )

    product = spec.records["product"]
    assert product.field("category_id").ref == "category"
    assert product.field("rating").optional
    assert product.field("color").optional
    tags = product.field("tags")
    assert (tags.has_default, tags.default, tags.optional) == (True, "none", False)
    person = spec.records["person"]
    assert person.field("status").choices == ("active", "on hold")
    favourite = person.field("favourite")
    assert (favourite.kind, favourite.ref, favourite.optional) == ("ref", "product", True)
    assert spec.records["address"].field("person_id").ref == "person"
    assert spec.accessors["people"] == "person"
    assert spec.accessors["addresses"] == "address"
    assert spec.accessors["categories"] == "category"

    ops = spec.operations
    assert ops["get_product"].description == "One product by id."
    assert ops["list_products"].filter == ("category_id", "in_stock")
    assert ops["edit_product"].record == "product"  # `catalog.product` resolved
    assert [op.kind for op in ops.values()] == [
        "get", "list", "create", "update", "delete", "list",
    ]  # fmt: skip

    plans = {p.record: p for p in spec.seed_plans}
    assert plans["category"].count == 0
    assert plans["category"].rows == ({"id": "books", "name": "Books"}, {"name": "Garden"})
    assert plans["product"].count == 6
    assert plans["person"].count == 4
    assert plans["address"].count == 4


def test_full_form_fault_rules_and_merging():
    spec = load_spec(WORLDS / "full.yaml")
    faults = spec.faults
    assert list(faults) == ["default", "catalog.*", "catalog.add_product", "people.find_people"]
    assert faults["default"].latency == Latency("fixed", lo_ms=100, hi_ms=100)
    assert faults["catalog.*"].latency == Latency("lognormal", p50_ms=80, p99_ms=900)
    add = faults["catalog.add_product"]
    assert add.errors == (
        ErrorRule("timeout", 0.1, commit=True),
        ErrorRule("http_429", 0.05, retry_after_s=2.0),
        ErrorRule("duplicate", 0.01, times=2),
    )
    assert faults["catalog.*"].errors[1] == ErrorRule("stale_read", 0.02, lag_s=60.0)
    assert add.timeout_s == 45
    assert add.script == (
        (2, ErrorRule("timeout", 1.0)),
        (5, ErrorRule("http_500", 1.0, commit=True)),
    )
    assert (add.loc.line, add.loc.col) == (55, 3)
    find = faults["people.find_people"]
    assert find.not_found_if_newer_than_s == 1800
    assert find.rate_limit == RateLimit(3, 10.0)

    merged = merged_rule(faults, "catalog", "add_product")
    assert merged.latency == Latency("lognormal", p50_ms=80, p99_ms=900)  # catalog.* wins
    assert [e.kind for e in merged.errors] == [
        "http_503", "stale_read", "timeout", "http_429", "duplicate",
    ]  # fmt: skip
    assert merged.errors[2].timeout_s == 45  # rule-level timeout_s fills the timeout kinds
    assert merged.script[0][1].timeout_s == 45
    assert merged.loc == add.loc

    people = merged_rule(faults, "people", "find_people")
    assert people.latency == Latency("fixed", lo_ms=100, hi_ms=100)  # from default
    assert people.errors == ()
    assert merged_rule({}, "people", "find_people").errors == ()


def test_a_specific_error_kind_overrides_the_general_one():
    spec = load_spec(
        "w.yaml",
        text=README_WORLD
        + "  default: { errors: { timeout: 0.5, http_500: 0.2 }, latency_ms: [1, 2] }\n"
        + "  payments.*: { errors: { http_500: 0.4 } }\n",
    )
    merged = merged_rule(spec.faults, "payments", "issue_refund")
    assert {e.kind: e.p for e in merged.errors} == {"timeout": 0.1, "http_500": 0.4}
    assert merged.latency == Latency("uniform", lo_ms=1, hi_ms=2)
    assert {e.kind: e.p for e in merged_rule(spec.faults, "orders", "get_order").errors} == {
        "timeout": 0.5,
        "http_500": 0.2,
    }


# -- faultbench 0.1 files ---------------------------------------------------------------------


def test_faultbench_01_world_with_custom_handler():
    spec = load_spec(WORLDS / "legacy.yaml")
    assert spec.accessors == {"orders": "orders", "refunds": "refunds"}
    plans = {p.record: p.count for p in spec.seed_plans}
    assert plans == {"orders": 20, "refunds": 5}
    assert spec.operations["list_orders"].filter == ("customer_id",)
    assert spec.records["refunds"].field("order_id").ref == "orders"

    op = spec.operations["create_return"]
    assert (op.kind, op.record, op.handler) == ("custom", None, "legacy_rules.create_return")
    assert op.description == "Mark a delivered order as returned."
    assert [(p.name, p.kind, p.required) for p in op.params] == [("order_id", "str", True)]
    handler = spec.handlers["create_return"]
    assert handler.__name__ == "create_return"

    faults = spec.faults
    assert faults["default"].latency == Latency("uniform", lo_ms=50, hi_ms=200)
    refund = faults["payments.issue_refund"]
    assert refund.errors == (ErrorRule("timeout", 0.1), ErrorRule("http_500", 0.02))
    assert refund.rate_limit == RateLimit(5, 60.0)
    # 0.1 wrote the condition under `errors:`
    assert faults["orders.get_order"].not_found_if_newer_than_s == 7200
    assert faults["orders.get_order"].errors == ()


def test_handlers_resolve_from_the_parent_of_the_world_directory():
    spec = load_spec(ROOT / "examples" / "shop" / "worlds" / "shop.yaml")
    assert spec.handlers["create_return"].__module__ == "shop_rules"
    reason = spec.operations["create_return"].params[1]
    assert (reason.kind, reason.required, reason.default) == ("enum", False, "other")
    assert reason.choices == ("damaged", "wrong_item", "not_needed", "other")


def test_example_worlds_load():
    shop = load_spec(ROOT / "examples" / "shop" / "worlds" / "shop.yaml")
    assert {s.name for s in shop.services} == {"customers", "orders", "returns", "payments"}
    assert "refunds" in shop.accessors
    bank = load_spec(ROOT / "examples" / "bank" / "worlds" / "bank.yaml")
    assert {"accounts", "transfers"} <= set(bank.accessors)
    params = bank.operations["transfer_money"].params
    assert [p.name for p in params] == ["from_account", "to_account", "amount", "memo"]
    assert params[3].nullable
    assert not params[3].required


def test_handler_signature_becomes_parameters(tmp_path):
    (tmp_path / "sig_rules.py").write_text(
        textwrap.dedent('''\
        from datetime import datetime
        from typing import Literal

        def op(world, clock, name: str, n: int, x: float, flag: bool, when: datetime,
               mode: Literal["a", "b"], maybe: int | None, items: list[str], extra: dict,
               anything, *, opt: str = "z", **rest):
            """Does a thing.

            More detail here.
            """
        ''')
    )
    path = write(
        tmp_path,
        """\
        services:
          s:
            operations:
              do_it: { kind: custom, handler: sig_rules.op }
        """,
    )
    op = load_spec(path).operations["do_it"]
    assert op.description == "Does a thing."
    assert [(p.name, p.kind, p.required, p.nullable) for p in op.params] == [
        ("name", "str", True, False),
        ("n", "int", True, False),
        ("x", "float", True, False),
        ("flag", "bool", True, False),
        ("when", "datetime", True, False),
        ("mode", "enum", True, False),
        ("maybe", "int", True, True),
        ("items", "list", True, False),
        ("extra", "dict", True, False),
        ("anything", "any", True, False),
        ("opt", "str", False, False),
    ]
    assert op.params[5].choices == ("a", "b")
    assert op.params[-1].default == "z"


def test_two_worlds_with_same_handler_module_name_keep_their_own(tmp_path):
    for name, answer in (("one", 1), ("two", 2)):
        d = tmp_path / name
        d.mkdir()
        (d / "same_name_rules.py").write_text(f"def op(world, clock):\n    return {answer}\n")
        write(d, "services: {s: {operations: {t: {kind: custom, handler: same_name_rules.op}}}}")
    one = load_spec(tmp_path / "one" / "world.yaml").handlers["t"]
    two = load_spec(tmp_path / "two" / "world.yaml").handlers["t"]
    assert (one(None, None), two(None, None)) == (1, 2)


@pytest.fixture
def forget_modules():
    """Names of handler modules a test loads; removed from sys.modules afterwards."""
    names: list[str] = []
    yield names
    for key in list(sys.modules):
        if any(key == n or key.endswith("_" + n) for n in names):
            del sys.modules[key]


SHARED = """\
calls = 0


def first(world, clock):
    global calls
    calls += 1
    return calls


def second(world, clock):
    global calls
    calls += 1
    return calls
"""


def test_handlers_from_one_file_share_its_globals_when_the_name_is_taken(tmp_path, forget_modules):
    forget_modules.append("counter_rules")
    other, mine = tmp_path / "other", tmp_path / "mine"
    for d in (other, mine):
        d.mkdir()
    (other / "counter_rules.py").write_text("def first(world, clock):\n    return 'other'\n")
    write(other, "services: {s: {operations: {t: {kind: custom, handler: counter_rules.first}}}}")
    (mine / "counter_rules.py").write_text(SHARED)
    write(
        mine,
        "services: {s: {operations: {\n"
        "  a: {kind: custom, handler: counter_rules.first},\n"
        "  b: {kind: custom, handler: counter_rules.second}}}}\n",
    )
    load_spec(other / "world.yaml")  # takes the name counter_rules in sys.modules
    handlers = load_spec(mine / "world.yaml").handlers
    a, b = handlers["a"], handlers["b"]
    assert a.__module__ != "counter_rules"  # loaded under a private name
    assert [a(None, None), b(None, None), a(None, None)] == [1, 2, 3]
    # loading the world again finds the same module, as an import would
    again = load_spec(mine / "world.yaml").handlers["b"]
    assert again(None, None) == 4
    assert load_spec(other / "world.yaml").handlers["t"](None, None) == "other"


def test_a_handler_module_that_failed_to_import_is_not_kept_half_run(tmp_path, forget_modules):
    forget_modules.append("retry_rules")
    other, mine = tmp_path / "other", tmp_path / "mine"
    for d in (other, mine):
        d.mkdir()
    (other / "retry_rules.py").write_text("def op(world, clock):\n    return 0\n")
    write(other, "services: {s: {operations: {t: {kind: custom, handler: retry_rules.op}}}}")
    (mine / "retry_rules.py").write_text("raise RuntimeError('not yet')\n")
    write(mine, "services: {s: {operations: {t: {kind: custom, handler: retry_rules.op}}}}")
    load_spec(other / "world.yaml")
    with pytest.raises(WorldFileError, match="not yet"):
        load_spec(mine / "world.yaml")
    (mine / "retry_rules.py").write_text("def op(world, clock):\n    return 1\n")
    assert load_spec(mine / "world.yaml").handlers["t"](None, None) == 1


def test_yaml_merge_keys_and_anchors_are_supported():
    spec = load_spec(
        "w.yaml",
        text=README_WORLD.replace(
            "faults:\n",
            "faults:\n  default: &slow { latency_ms: [100, 200] }\n"
            "  orders.*: { <<: *slow, errors: { http_500: 0.1 } }\n",
        ),
    )
    assert spec.faults["orders.*"].latency == Latency("uniform", lo_ms=100, hi_ms=200)


def test_the_pure_python_parser_gives_the_same_result(monkeypatch):
    from faultbench.kernel._read import _yaml

    fast = load_spec(WORLDS / "full.yaml")
    monkeypatch.setattr(_yaml, "_COMPOSERS", (_yaml._PyComposer,))
    slow = load_spec(WORLDS / "full.yaml")
    assert slow.records == fast.records
    assert slow.faults == fast.faults
    with pytest.raises(WorldFileError) as err:
        load_spec("w.yaml", text="a: [1, 2\nb: 3\n")
    assert str(err.value).startswith("w.yaml:2:")
