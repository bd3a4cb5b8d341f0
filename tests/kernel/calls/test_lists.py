"""List operations with operators, `sort:` and `page:`: the loader, the tool schema, the
answers, cursors, the page fault kinds, and replay of all of it."""

from __future__ import annotations

import random
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import immutables
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultbench.kernel import World, WorldFileError, encode_events, replay
from faultbench.kernel._calls._lists import ListRunner
from faultbench.kernel._text._keys import id_order
from faultbench.kernel.lowlevel import load_spec

WORLD = """\
name: pay
seed: 3
services:
  payments:
    records:
      customer: { email: str }
      charge:
        status: enum[pending, succeeded, failed]
        amount: int
        email: str
        customer_id: ref[customer]
        created_at: datetime
        note: str?
    seed: { customer: 3, charge: 40 }
    operations:
      list_charges:
        kind: list
        record: charge
        filter: { status: [eq, in], amount: [gt, gte, lt, lte], created_at: [gte, lt],
                  email: [eq, prefix, contains], customer_id: [eq] }
        sort: [created_at, -amount]
        page: { style: cursor, size: 10, max_size: 100 }
      list_by_id: { kind: list, record: charge, filter: [status], page: { style: cursor, size: 4 } }
      list_offset: { kind: list, record: charge, filter: [status], page: { style: offset, size: 7 } }
      find_charges: { kind: list, record: charge, filter: { amount: [gte, lt] } }
      create_charge: { kind: create, record: charge }
      update_charge: { kind: update, record: charge }
      delete_charge: { kind: delete, record: charge }
"""


def load(tmp_path: Path, text: str = WORLD, faults: str = "") -> World:
    path = tmp_path / "world.yaml"
    path.write_text(textwrap.dedent(text) + textwrap.dedent(faults))
    return World.from_spec(load_spec(path))


def problems(tmp_path: Path, ops: str) -> list[tuple[int, int, str]]:
    text = textwrap.dedent(
        """\
        services:
          s:
            records:
              charge: { status: enum[a, b], amount: int, email: str, tags: list[str], paid: bool }
            operations:
        """
    ) + textwrap.indent(textwrap.dedent(ops), "      ")
    path = tmp_path / "world.yaml"
    path.write_text(text)
    with pytest.raises(WorldFileError) as info:
        load_spec(path)
    return [(e.line, e.col, e.message) for e in info.value.errors]


def ok(world: World, tool: str, args: dict) -> dict:
    result = world.call(tool, args)
    assert result.ok, result.error
    return result.value


def filled(text: str, rows, drops: int, rng: random.Random) -> World:
    """A world of `text` given `rows` through its `add` tool, then `drops` of them deleted
    through `drop` (ids freed in the middle of the indexes' chunks)."""
    world = World.from_spec(load_spec("<filled>", text=text))
    for row in rows:
        assert world.call("add", row).ok
    for rid in rng.sample([r.id for r in world.charges], drops):
        assert world.call("drop", {"id": rid}).ok
    return world


def walk(world: World, tool: str, limit: int, **args) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        page = ok(
            world, tool, {"limit": limit, **args, **({"starting_after": cursor} if cursor else {})}
        )
        ids += [r["id"] for r in page["data"]]
        if not page["has_more"]:
            return ids
        cursor = page["next_cursor"]


# -- the loader --------------------------------------------------------------------------------


def test_operators_sort_and_page_are_read(tmp_path):
    op = load(tmp_path).spec.operations["list_charges"]
    assert op.where[:2] == (("status", ("eq", "in")), ("amount", ("gt", "gte", "lt", "lte")))
    assert op.filter == ("status", "email", "customer_id")  # the eq ones, as the old form
    assert op.sort == ("created_at", "-amount")
    assert op.page is not None
    assert (op.page.style, op.page.size, op.page.max_size) == ("cursor", 10, 100)
    old = load(tmp_path).spec.operations["list_offset"]
    assert old.where == (("status", ("eq",)),)


def test_list_loader_errors(tmp_path):
    got = problems(
        tmp_path,
        """\
        a: { kind: list, record: charge, filter: { status: [gt], amount: [eq, near], tags: [eq] } }
        b: { kind: list, record: charge, filter: { colour: [eq] }, sort: [-amout, tags] }
        c: { kind: list, record: charge, page: { style: pages, size: 5 } }
        d: { kind: list, record: charge, page: { size: 500, max_size: 100 } }
        e: { kind: get, record: charge, sort: [amount] }
        f: { kind: list, record: charge, filter: { email: [contains], paid: [in] } }
        g: { kind: list, record: charge, filter: { amount: [eq] }, page: { style: offset } }
        """,
    )
    messages = [m for _, _, m in got]
    assert got[0][:2] == (6, 59)
    assert messages[0] == (
        "operator 'gt' does not apply to charge.status, an enum field; expected one of eq or in"
    )
    assert "unknown filter operator 'near'" in messages[1]
    assert messages[2] == (
        "operator 'eq' does not apply to charge.tags, a list[str] field; lists and objects "
        "cannot be filtered on; remove it"
    )
    assert messages[3].startswith("filter field 'colour' is not a field of record 'charge'")
    assert messages[4].startswith("sort key 'amout' is not a field of record 'charge'")
    assert "did you mean 'amount'" in messages[4]
    assert messages[5].startswith("sort key 'tags' is a list[str] field")
    assert messages[6].startswith("unknown page style 'pages'; expected cursor or offset")
    assert messages[7] == "page size 500 is above max_size 100; expected size <= max_size"
    assert messages[8] == "'sort' is only for kind: list (this operation is kind: get); remove it"
    assert messages[9].startswith("operator 'in' does not apply to charge.paid, a bool field")
    assert len(got) == 10


def test_filter_arguments_may_not_collide_with_page_arguments(tmp_path):
    text = """\
        services:
          s:
            records:
              charge: { limit: int, amount: int, amount_gt: int }
            operations:
              a: { kind: list, record: charge, filter: { amount: [gt], amount_gt: [eq] } }
        """
    path = tmp_path / "w.yaml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(WorldFileError, match="makes the argument 'amount_gt', which filter"):
        load_spec(path)


# -- the tool schema ----------------------------------------------------------------------------


def test_schema_has_one_argument_per_operator(tmp_path):
    world = load(tmp_path)
    schema = world.tool("list_charges").input_schema
    props = schema["properties"]
    assert list(props) == [
        "status", "status_in", "amount_gt", "amount_gte", "amount_lt", "amount_lte",
        "created_at_gte", "created_at_lt", "email", "email_prefix", "email_contains",
        "customer_id", "sort", "limit", "starting_after", "ending_before",
    ]  # fmt: skip
    assert schema["required"] == []
    assert props["status_in"]["items"] == {
        "type": "string", "enum": ["pending", "succeeded", "failed"],
    }  # fmt: skip
    assert props["amount_gt"]["type"] == "integer"
    assert props["created_at_gte"]["format"] == "date-time"
    assert props["sort"]["enum"] == ["created_at", "-amount"]
    assert props["sort"]["default"] == "created_at"
    assert props["limit"]["default"] == 10
    offset = world.tool("list_offset").input_schema["properties"]
    assert list(offset) == ["status", "limit", "offset"]
    assert "next_cursor" in world.tool("list_charges").description


# -- answers ------------------------------------------------------------------------------------


def test_filters_select_and_sort_orders(tmp_path):
    world = load(tmp_path)
    rows = list(world.charges)
    page = ok(world, "list_charges", {"amount_gte": 30000, "amount_lt": 70000, "limit": 100})
    want = sorted(
        (r for r in rows if 30000 <= r.amount < 70000), key=lambda r: (r.created_at, int(r.id))
    )
    assert [r["id"] for r in page["data"]] == [r.id for r in want]
    assert page["has_more"] is False
    assert page["next_cursor"] is None
    desc = ok(world, "list_charges", {"sort": "-amount", "status_in": ["pending", "failed"],
                                      "limit": 100})  # fmt: skip
    want = sorted((r for r in rows if r.status in ("pending", "failed")), key=lambda r: -r.amount)
    assert [r["amount"] for r in desc["data"]] == [r.amount for r in want]
    email = rows[0].email
    assert [r["id"] for r in ok(world, "list_charges", {"email_prefix": email[:4], "limit": 100})[
        "data"]] == [r.id for r in sorted(rows, key=lambda r: (r.created_at, int(r.id)))
                     if r.email.startswith(email[:4])]  # fmt: skip
    part = email.split("@")[0][1:4]
    got = ok(world, "list_charges", {"email_contains": part, "limit": 100})["data"]
    assert {r["id"] for r in got} == {r.id for r in rows if part in r.email}
    start = datetime(2025, 5, 15, tzinfo=UTC)
    got = ok(world, "list_charges", {"created_at_gte": "2025-05-15T00:00:00Z", "limit": 100})
    assert {r["id"] for r in got["data"]} == {r.id for r in rows if r.created_at >= start}
    unpaged = ok(world, "find_charges", {"amount_gte": 50000})
    assert [r["id"] for r in unpaged] == [r.id for r in rows if r.amount >= 50000]


def test_cursor_pages_walk_every_record_once_in_order(tmp_path):
    world = load(tmp_path)
    ids = walk(world, "list_charges", 7)
    rows = sorted(world.charges, key=lambda r: (r.created_at, int(r.id)))
    assert ids == [r.id for r in rows]
    by_id = walk(world, "list_by_id", 4)
    assert by_id == [str(i) for i in range(1, 41)]
    desc = walk(world, "list_charges", 6, sort="-amount")
    assert desc == [r.id for r in sorted(world.charges, key=lambda r: (-r.amount, int(r.id)))]
    first = ok(world, "list_charges", {"limit": 5})
    second = ok(world, "list_charges", {"limit": 5, "starting_after": first["next_cursor"]})
    back = ok(world, "list_charges", {"limit": 5, "ending_before": second["next_cursor"]})
    # the 5 before the last of page two: four of page two's start plus page one's last
    assert [r["id"] for r in back["data"]] == ids[4:9]
    assert back["has_more"] is True


def test_offset_pages_report_the_total(tmp_path):
    world = load(tmp_path)
    first = ok(world, "list_offset", {})
    assert [r["id"] for r in first["data"]] == [str(i) for i in range(1, 8)]
    assert (first["total"], first["has_more"]) == (40, True)
    last = ok(world, "list_offset", {"offset": 35})
    assert [r["id"] for r in last["data"]] == ["36", "37", "38", "39", "40"]
    assert last["has_more"] is False
    pending = ok(world, "list_offset", {"status": "pending", "limit": 100})
    assert pending["total"] == len(pending["data"]) == len(world.charges.where(status="pending"))


def test_cursors_survive_inserts_and_deletes_between_pages(tmp_path):
    world = load(tmp_path)
    first = ok(world, "list_by_id", {"limit": 4})
    assert [r["id"] for r in first["data"]] == ["1", "2", "3", "4"]
    world.charges.delete("4")  # the cursor's own record
    world.charges.delete("5")
    ok(world, "create_charge", {"id": "4a", "status": "pending", "amount": 1, "email": "x",
                                "customer_id": "1", "created_at": "2025-01-01T00:00:00Z"})  # fmt: skip
    second = ok(world, "list_by_id", {"limit": 4, "starting_after": first["next_cursor"]})
    assert [r["id"] for r in second["data"]] == ["6", "7", "8", "9"]
    rest = walk(world, "list_by_id", 40, starting_after=second["next_cursor"])
    # numeric ids first, then text ones: "4a" comes last, once
    assert rest == [*(str(i) for i in range(10, 41)), "4a"]


def test_the_id_of_a_listed_record_names_its_place_as_in_stripe(tmp_path):
    # Stripe's SDKs page with `starting_after=<last object's id>`, not a cursor
    world = load(tmp_path)
    for sort in ("created_at", "-amount"):
        first = ok(world, "list_charges", {"limit": 5, "sort": sort})
        last = first["data"][-1]["id"]
        by_cursor = ok(
            world,
            "list_charges",
            {"limit": 5, "sort": sort, "starting_after": first["next_cursor"]},
        )
        by_id = ok(world, "list_charges", {"limit": 5, "sort": sort, "starting_after": last})
        assert by_id["data"] == by_cursor["data"]
        before = ok(world, "list_charges", {"limit": 4, "sort": sort, "ending_before": last})
        assert [r["id"] for r in before["data"]] == [r["id"] for r in first["data"][:4]]
    world.charges.delete("7")
    gone = world.call("list_by_id", {"starting_after": "7"})  # no longer a place in the list
    assert "nor the id of a record it lists" in (gone.error or "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"starting_after": "bm9wZQ.0000"}, "`starting_after`: not a cursor list_charges gave out"),
        ({"ending_before": "garbage"}, "`ending_before`: not a cursor list_charges gave out"),
        ({"limit": 0}, "`limit`: expected 1 to 100, got 0"),
        ({"limit": 101}, "`limit`: expected 1 to 100, got 101"),
        ({"sort": "amount"}, "`sort`: expected one of 'created_at', '-amount'"),
        ({"amount_gt": "5"}, "`amount_gt`: expected an integer"),
        ({"status_in": ["pending", "nope"]}, "`status_in[1]`: expected one of 'pending'"),
    ],
)
def test_bad_list_arguments_are_clear_errors(tmp_path, args, message):
    world = load(tmp_path)
    result = world.call("list_charges", args)
    assert not result.ok
    assert result.error_kind == "invalid_arguments"
    assert message in (result.error or "")


def test_a_cursor_is_tied_to_its_tool_and_its_order(tmp_path):
    world = load(tmp_path)
    cursor = ok(world, "list_charges", {"limit": 3})["next_cursor"]
    assert cursor is not None
    other = world.call("list_by_id", {"starting_after": cursor})
    assert "not a cursor list_by_id gave out" in (other.error or "")
    resorted = world.call("list_charges", {"starting_after": cursor, "sort": "-amount"})
    assert "belongs to a walk in created_at order, not -amount" in (resorted.error or "")
    tampered = cursor[:-1] + ("0" if cursor[-1] != "0" else "1")
    assert not world.call("list_charges", {"starting_after": tampered}).ok


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.integers(1, 9),
    st.lists(st.tuples(st.sampled_from(["insert", "delete"]), st.integers(0, 10_000)), max_size=30),
    st.sampled_from(["created_at", "-amount", None]),
)
def test_cursor_walks_return_every_surviving_record_exactly_once(tmp_path, limit, churn, sort):
    """While another session inserts and deletes between page fetches, a cursor walk
    returns every record that existed throughout exactly once, in order, and never a
    record twice."""
    world = load(tmp_path)
    before = {r.id for r in world.charges}
    deleted: set[str] = set()
    seen: list[str] = []
    cursor = None
    steps = iter(churn)
    n = 0
    while True:
        args: dict = {"limit": limit, **({"sort": sort} if sort else {})}
        if cursor:
            args["starting_after"] = cursor
        page = ok(world, "list_charges", args)
        seen += [r["id"] for r in page["data"]]
        for _ in range(2):  # the other session's writes between this page and the next
            step = next(steps, None)
            if step is None:
                break
            what, x = step
            if what == "insert":
                n += 1
                world.charges.insert(
                    id=f"new{n}", status="pending", amount=x * 10, email="n@x",
                    customer_id="1", created_at=datetime(2025, 5, 1, tzinfo=UTC).replace(
                        minute=x % 60, second=x % 59),
                )  # fmt: skip
            else:
                alive = sorted(r.id for r in world.charges)
                if alive:
                    victim = alive[x % len(alive)]
                    world.charges.delete(victim)
                    deleted.add(victim)
        if not page["has_more"]:
            break
        cursor = page["next_cursor"]
    assert len(seen) == len(set(seen))
    assert before - deleted <= set(seen)


# -- the page fault kinds ------------------------------------------------------------------------

FAULTS = """\
faults:
  payments.list_by_id: { script: { 2: page_drift, 3: truncated_page, 4: expired_cursor } }
  payments.list_offset: { script: { 2: page_drift } }
"""


def test_page_drift_repeats_a_record_on_cursor_and_offset_pages(tmp_path):
    world = load(tmp_path, faults=FAULTS)
    first = ok(world, "list_by_id", {})
    second = world.call("list_by_id", {"starting_after": first["next_cursor"]})
    assert second.fault == "page_drift"
    assert [r["id"] for r in second.value["data"]] == ["4", "5", "6", "7"]  # "4" again
    o1 = ok(world, "list_offset", {})
    o2 = world.call("list_offset", {"offset": 7})
    assert o2.fault == "page_drift"
    assert [r["id"] for r in o1["data"]][-1] == next(r["id"] for r in o2.value["data"]) == "7"


def test_truncated_page_and_expired_cursor(tmp_path):
    world = load(tmp_path, faults=FAULTS)
    first = ok(world, "list_by_id", {})
    ok(world, "list_by_id", {"starting_after": first["next_cursor"]})
    third = world.call("list_by_id", {"starting_after": first["next_cursor"]})
    assert third.fault == "truncated_page"
    assert third.value["has_more"] is False
    assert third.value["next_cursor"] is None
    assert len(third.value["data"]) == 4  # the page itself is whole
    fourth = world.call("list_by_id", {"starting_after": first["next_cursor"]})
    assert not fourth.ok
    assert fourth.error == "400 Bad Request: cursor expired; start again (payments.list_by_id)"
    assert fourth.fault == "expired_cursor"
    assert world.call("list_by_id", {}).ok  # starting again works


def test_page_faults_replay_and_fork_byte_for_byte(tmp_path):
    world = load(tmp_path, faults=FAULTS)
    first = ok(world, "list_by_id", {})
    fork = world.fork()
    for w in (world, fork):
        for _ in range(3):
            w.call("list_by_id", {"starting_after": first["next_cursor"]})
        w.call("list_offset", {})
        w.call("list_offset", {"offset": 7})
    data = encode_events(world.events)
    again = replay(world.spec, data)
    assert encode_events(again.events) == data
    assert again.state_hash() == world.state_hash()
    assert [str(e) for e in world.trace.calls][-5:] == [str(e) for e in fork.trace.calls][-5:]


UNPAGED = (
    "cannot happen to payments.find_charges, a list without `page:`: it answers every record "
    "at once, so there is no page to break; give find_charges pages (`page: {style: cursor}` "
    "or `page: {style: offset}` in its operation) or remove it"
)


@pytest.mark.parametrize("kind", ["page_drift", "truncated_page", "expired_cursor"])
def test_a_page_kind_on_a_list_without_pages_is_a_load_error(tmp_path, kind):
    faults = f"faults:\n  payments.find_charges:\n    errors: {{ {kind}: 0.1 }}\n"
    path = tmp_path / "world.yaml"
    path.write_text(WORLD + faults)
    line = WORLD.count("\n") + 3
    with pytest.raises(WorldFileError) as info:
        load_spec(path)
    [error] = info.value.errors
    assert (error.line, error.col) == (line, 15)
    assert error.message == f"{kind} {UNPAGED}"
    assert f"world.yaml:{line}:15: {kind} cannot happen" in str(info.value)


def test_a_page_kind_in_a_script_or_set_faults_on_a_list_without_pages(tmp_path):
    path = tmp_path / "world.yaml"
    path.write_text(WORLD + "faults:\n  payments.find_charges: { script: { 2: page_drift } }\n")
    with pytest.raises(WorldFileError) as info:
        load_spec(path)
    [error] = info.value.errors
    assert (error.line, error.message) == (WORLD.count("\n") + 2, f"page_drift {UNPAGED}")
    world = load(tmp_path)  # a test's rules, or a faults marker's, are read the same way
    with pytest.raises(WorldFileError) as info:
        world.set_faults({"payments.find_charges": {"errors": {"truncated_page": 0.5}}})
    assert f"truncated_page {UNPAGED}" in str(info.value)
    assert world.fault_rules == {}  # nothing was set


def test_a_default_page_kind_skips_the_lists_without_pages(tmp_path):
    # As for every kind: a default: or service.* rule may name it; what it cannot happen to
    # runs as usual (a list without pages answers all its records), the paged lists get it.
    world = load(tmp_path, faults="faults:\n  default: { errors: { truncated_page: 1.0 } }\n")
    full = [r.id for r in world.charges if r.amount >= 0]
    plain = world.call("find_charges", {"amount_gte": 0})
    assert plain.fault is None
    assert [r["id"] for r in plain.value] == full
    paged = world.call("list_by_id", {})
    assert paged.fault == "truncated_page"
    assert paged.value["has_more"] is False


RANGED = """
name: ranged
services:
  pay:
    records:
      charge: { amount: int?, status: "enum[a, b]" }
    operations:
      add: { kind: create, record: charge }
      ranged:
        kind: list
        record: charge
        filter: { amount: [eq, gt, gte, lt, lte], status: [eq] }
        sort: [amount, -amount]
        page: { style: cursor, size: 5 }
"""

_HOLDS = {
    "eq": lambda v, x: v == x,
    "gt": lambda v, x: v is not None and v > x,
    "gte": lambda v, x: v is not None and v >= x,
    "lt": lambda v, x: v is not None and v < x,
    "lte": lambda v, x: v is not None and v <= x,
}


def test_conditions_on_the_sort_field_bound_its_walk_and_leave_out_unset_values():
    # Conditions on the sort field are kept by the walk of its index between their bounds
    # (not checked again record by record): every page walk gives what a scan gives, unset
    # amounts included, under only an upper bound too.
    world = World.from_spec(load_spec("<ranged>", text=RANGED))
    rng = random.Random(3)
    for _ in range(200):
        row = {"status": rng.choice("ab")}
        if rng.random() < 0.8:
            row["amount"] = rng.randrange(40)
        assert world.call("add", row).ok
    rows = world.charges.all()
    assert any(r.amount is None for r in rows)
    for _ in range(150):
        ops = rng.sample(sorted(_HOLDS), rng.randint(1, 2))
        args = {("amount" if o == "eq" else f"amount_{o}"): rng.randrange(40) for o in ops}
        if rng.random() < 0.3:
            args["status"] = rng.choice("ab")
        got, cursor, sort = [], None, rng.choice(["amount", "-amount"])
        while True:
            page = {**args, "sort": sort, "limit": 5}
            if cursor is not None:
                page["starting_after"] = cursor
            answer = world.call("ranged", page)
            assert answer.ok, answer.text
            got += [d["id"] for d in answer.value["data"]]
            if not answer.value["has_more"]:
                break
            cursor = answer.value["next_cursor"]

        def holds(r, args=args):
            for key, x in args.items():
                if key == "status" and r.status != x:
                    return False
                if key.startswith("amount"):
                    op = "eq" if key == "amount" else key.split("_")[1]
                    if not _HOLDS[op](r.amount, x):
                        return False
            return True

        assert sorted(got) == sorted(r.id for r in rows if holds(r)), args


BUCKETS = """\
name: buckets
seed: 5
services:
  s:
    records:
      charge: { status: enum[a, b, c], kind: enum[x, y] }
    operations:
      by_status:
        kind: list
        record: charge
        filter: { status: [eq, in], kind: [eq] }
        page: { style: cursor, size: 5, max_size: 50 }
      add: { kind: create, record: charge }
      drop: { kind: delete, record: charge }
"""


def test_equality_filtered_pages_in_id_order_read_the_bucket_as_a_scan_would():
    # A list in id order filtered by equality walks the smallest equality bucket from the
    # cursor's place (not the whole id order, filtered): whatever the bucket's share of the
    # table, forwards from a cursor or a record's id, backwards with ending_before, with a
    # second equality checked per record, through deletes, the pages are a scan's.
    rng = random.Random(8)

    def row(n):  # status a ~90%, b ~9%, c ~1%; numeric ids, then text ones
        status = "a" if rng.random() < 0.9 else "b" if rng.random() < 0.9 else "c"
        return {
            "status": status,
            "kind": rng.choice("xy"),
            **({"id": f"t{n}"} if n % 7 == 0 else {}),
        }

    world = filled(BUCKETS, map(row, range(3000)), 300, rng)
    rows = world.charges.all()  # in id order
    everyone = [r.id for r in rows]

    def scan(status, kind=None):
        return [r.id for r in rows if r.status == status and kind in (None, r.kind)]

    for status, kind in [("a", None), ("b", None), ("c", None), ("b", "x"), ("a", "y")]:
        eq = {"status": status, **({"kind": kind} if kind else {})}
        want = scan(status, kind)
        assert walk(world, "by_status", 50, **eq) == want
        for rid in rng.sample(everyone, 25):  # a record's id names its place
            at = everyone.index(rid)
            after = [r for r in want if everyone.index(r) > at]
            before = [r for r in want if everyone.index(r) < at]
            page = ok(world, "by_status", {**eq, "limit": 7, "starting_after": rid})
            assert [r["id"] for r in page["data"]] == after[:7]
            assert page["has_more"] == (len(after) > 7)
            page = ok(world, "by_status", {**eq, "limit": 7, "ending_before": rid})
            assert [r["id"] for r in page["data"]] == before[-7:]
            assert page["has_more"] == (len(before) > 7)
    # another condition on the bucket's field is still checked
    assert walk(world, "by_status", 50, status="a", status_in=["b", "c"]) == []
    assert walk(world, "by_status", 50, status="c", status_in=["c", "b"]) == scan("c")
    # a cursor whose record is deleted before the next page keeps its place
    first = ok(world, "by_status", {"status": "b", "limit": 5})
    assert world.call("drop", {"id": first["data"][-1]["id"]}).ok
    second = ok(world, "by_status", {"status": "b", "limit": 5, "starting_after": first[
        "next_cursor"]})  # fmt: skip
    assert [r["id"] for r in second["data"]] == scan("b")[5:10]


def test_page_drift_on_an_equality_filtered_page_repeats_the_record_before(tmp_path):
    world = World.from_spec(
        load_spec(
            "<buckets>", text=BUCKETS + "faults:\n  s.by_status: { script: { 2: page_drift } }\n"
        )
    )
    for n in range(40):
        assert world.call("add", {"status": "ab"[n % 2], "kind": "x"}).ok
    first = ok(world, "by_status", {"status": "b", "limit": 4})
    second = ok(world, "by_status", {"status": "b", "limit": 4, "starting_after": first[
        "next_cursor"]})  # fmt: skip
    assert [r["id"] for r in first["data"]] == ["2", "4", "6", "8"]
    assert [r["id"] for r in second["data"]] == ["8", "10", "12", "14"]


OFFSETS = """\
name: offsets
seed: 6
services:
  s:
    records:
      charge: { status: enum[a, b, c], amount: int?, email: str }
    operations:
      pages:
        kind: list
        record: charge
        filter: { status: [eq], amount: [eq, gte, lt], email: [prefix] }
        sort: [amount, -amount]
        page: { style: offset, size: 10, max_size: 100 }
      by_id:
        kind: list
        record: charge
        filter: { status: [eq], id: [gte, lt] }
        sort: [id, -id]
        page: { style: offset, size: 10, max_size: 100 }
      add: { kind: create, record: charge }
      drop: { kind: delete, record: charge }
"""


def test_offset_pages_at_any_depth_are_a_slice_of_a_scan():
    # An offset page skips and counts through the index where the index answers every
    # condition (O(log n) at any offset), and reads records only for the conditions it
    # cannot answer (`email_prefix` here); either way each page is the slice of a scan, and
    # `total` its length. Several thousand records: chunks of the indexes (1,024) are crossed.
    rng = random.Random(9)

    def row(n):
        data = {
            "status": rng.choice("aab" if n % 3 else "abc"),
            "email": f"{rng.choice('xyz')}{n}@e",
        }
        if n % 9:
            data["amount"] = rng.randrange(300)
        if n % 11 == 0:
            data["id"] = f"t{n}"  # text ids come after the numeric ones
        return data

    world = filled(OFFSETS, map(row, range(4000)), 500, rng)
    rows = world.charges.all()

    def holds(r, args):
        if "amount" in args and r.amount != args["amount"]:
            return False
        if ("amount_gte" in args or "amount_lt" in args) and (
            r.amount is None
            or not args.get("amount_gte", -1) <= r.amount < args.get("amount_lt", 10**9)
        ):
            return False
        low, high = args.get("id_gte"), args.get("id_lt")
        return (
            r.status == args.get("status", r.status)
            and r.email.startswith(args.get("email_prefix", ""))
            and (low is None or id_order(r.id) >= id_order(low))
            and (high is None or id_order(r.id) < id_order(high))
        )

    def scan(args, sort):
        keep = [r for r in rows if holds(r, args)]  # in id order
        if sort in ("amount", "-amount"):  # nulls first, then by value; ties in id order
            keep.sort(key=lambda r: (r.amount is not None, r.amount or 0))
        return [r.id for r in (keep[::-1] if sort.startswith("-") else keep)]

    no_index = SimpleNamespace(state=world.snapshot().state.derived(index=immutables.Map()))

    for _ in range(120):
        args = {}
        if rng.random() < 0.5:
            args["status"] = rng.choice("abc")
        if rng.random() < 0.5:
            args["amount_gte"] = rng.randrange(300)
            if rng.random() < 0.7:
                args["amount_lt"] = args["amount_gte"] + rng.randrange(1, 200)
        if rng.random() < 0.2:
            args["email_prefix"] = rng.choice("xyz")
        tool = "pages" if rng.random() < 0.7 else "by_id"
        if tool == "pages" and rng.random() < 0.2:
            args = {"amount": None, **({"status": "b"} if rng.random() < 0.5 else {})}
        if tool == "by_id":
            args = {k: v for k, v in args.items() if k == "status"}
            for bound in ("id_gte", "id_lt"):
                if rng.random() < 0.4:
                    args[bound] = rng.choice(rows).id
        sort = rng.choice(["amount", "-amount"] if tool == "pages" else ["id", "-id"])
        want = scan(args, sort)
        limit = rng.choice([1, 10, 100])
        offset = rng.choice([0, 1, rng.randrange(len(want) + 5), len(want) - 1, len(want)])
        offset = max(offset, 0)
        call = {**args, "sort": sort, "limit": limit, "offset": offset}
        page = ok(world, tool, call)
        assert [r["id"] for r in page["data"]] == want[offset : offset + limit], (tool, call)
        assert page["total"] == len(want), (tool, call)
        assert page["has_more"] == (offset + limit < len(want))
        # a state without indexes (sorted per call) answers the same
        runner = ListRunner(world.spec, world.spec.operations[tool])
        assert runner.run(no_index, dict(call)) == page


DRIFTS = """\
name: drifts
seed: 2
services:
  s:
    records:
      charge: { status: enum[a, b], amount: int }
    seed: { charge: 9000 }
    operations:
      first: { kind: list, record: charge, filter: [status], page: { style: cursor, size: 5 } }
      skip: { kind: list, record: charge, filter: [status], page: { style: offset, size: 5 } }
      big:
        kind: list
        record: charge
        filter: [status]
        sort: [amount]
        page: { style: offset, size: 5, max_size: 100 }
faults:
  s.first: { script: { 1: page_drift } }
  s.skip: { script: { 1: page_drift, 2: page_drift } }
"""


def test_page_drift_through_a_bucket_and_an_equality_beside_a_sort():
    world = World.from_spec(load_spec("<drifts>", text=DRIFTS))
    rows = world.charges.all()
    b = [r.id for r in rows if r.status == "b"]
    assert len(b) > 4096  # above _SORT_HERE: the sort field's index, the equality per record
    # page_drift on a first cursor page skips the first record; on offset pages, the offset
    # is one off (0 -> 1, 7 -> 6)
    assert [r["id"] for r in ok(world, "first", {"status": "b"})["data"]] == b[1:6]
    assert [r["id"] for r in ok(world, "skip", {"status": "b"})["data"]] == b[1:6]
    assert [r["id"] for r in ok(world, "skip", {"status": "b", "offset": 7})["data"]] == b[6:11]
    assert [r["id"] for r in ok(world, "skip", {"status": "b", "offset": 7})["data"]] == b[7:12]
    by_amount = [r.id for r in sorted(rows, key=lambda r: r.amount) if r.status == "b"]
    for offset in (0, 1, 2500, len(b) - 3):
        page = ok(world, "big", {"status": "b", "offset": offset, "limit": 100})
        assert [r["id"] for r in page["data"]] == by_amount[offset : offset + 100]
        assert page["total"] == len(b)


def test_like_matches_sql_like_patterns_in_any_case(tmp_path):
    world = load(
        tmp_path,
        """\
        name: pools
        services:
          s:
            records:
              pool: { name: str, note: str? }
            operations:
              create_pool: { kind: create, record: pool }
              list_pools: { kind: list, record: pool, filter: { name: [like] } }
        """,
    )
    for name in ("default_pool", "Customer_A", "customers", "a%b", "a_b"):
        ok(world, "create_pool", {"name": name})

    def names(pattern: str) -> list[str]:
        return [p["name"] for p in ok(world, "list_pools", {"name_like": pattern})]

    assert names("%customer\\_%") == ["Customer_A"]  # `\_` is an underscore, any case
    assert names("customer%") == ["Customer_A", "customers"]
    assert names("a_b") == ["a%b", "a_b"]  # `_` is one character
    assert names("a\\%b") == ["a%b"]
    assert names("%POOL") == ["default_pool"]
    assert names("pool") == []  # the whole text must match
    schema = world.tool("list_pools").input_schema["properties"]["name_like"]
    assert schema["type"] == "string"
    assert "SQL LIKE" in schema["description"]
