"""Every mistake in a world file is a WorldFileError at `path:line:col` that says what was
expected, with a did-you-mean where a close name exists; all of them, not just the first."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from faultbench.kernel import WorldFileError
from faultbench.kernel.lowlevel import load_spec

DURATION_HELP = "expected a number of seconds or a number with a unit: 500ms, 30s, 5m, 2h or 1d"
KINDS = (
    "timeout, timeout_before_commit, http_500, http_502, http_503, http_429, not_found, "
    "empty_result, malformed_json, stale_read, duplicate, inject, wrong_value, schema_violation, "
    "oversized_result, conflict, token_expired, revoked, duplicate_delivery, out_of_order, "
    "delayed, dropped, page_drift, truncated_page, expired_cursor, rug_pull, tool_removed, "
    "tool_added, renamed_args, answer_after_cancel, ignore_cancel, progress_stall, "
    "list_changed_burst, invalid_structured_content or lying_annotations"
)
TYPES = (
    "expected one of str, int, float, bool, datetime, version, enum[a, b] or ref[service.record]"
)


def problems(tmp_path: Path, text: str, **modules: str) -> list[tuple[int, int, str]]:
    """Load `text` as tmp_path/world.yaml (with handler modules beside it) and return every
    problem as (line, col, message), checking the `path:line:col: message` rendering."""
    for name, source in modules.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    path = tmp_path / "world.yaml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(WorldFileError) as info:
        load_spec(path)
    err = info.value
    lines = str(err).splitlines()
    assert lines == [f"{path}:{e.line}:{e.col}: {e.message}" for e in err.errors]
    assert isinstance(err, ValueError)
    return [(e.line, e.col, e.message) for e in err.errors]


# -- YAML itself ------------------------------------------------------------------------------


def test_yaml_syntax_error(tmp_path):
    text = """\
        services:
          orders:
            records: { order: { status: str }
            operations: {}
        """
    assert problems(tmp_path, text) == [
        (
            4, 5,
            "invalid YAML: did not find expected ',' or '}' (while parsing a flow mapping at "
            "3:14); a '{' is not closed; expected '}' at the end of the mapping",
        ),
    ]  # fmt: skip


def test_yaml_tab_indentation(tmp_path):
    assert problems(tmp_path, "services:\n\torders: {}\n") == [
        (
            2, 1,
            "invalid YAML: found character that cannot start any token (while scanning for "
            "the next token at 2:1); indent with spaces; YAML does not allow tabs",
        ),
    ]  # fmt: skip


def test_duplicate_keys_name_both_positions(tmp_path):
    text = """\
        services:
          orders:
            records:
              order: { status: str, status: int }
          orders:
            records: {}
        """
    path = tmp_path / "world.yaml"
    assert problems(tmp_path, text) == [
        (
            4, 29,
            f"duplicate key 'status' (first written at {path}:4:16); expected each key once "
            "per mapping; remove or rename one of them",
        ),
        (
            5, 3,
            f"duplicate key 'orders' (first written at {path}:2:3); expected each key once "
            "per mapping; remove or rename one of them",
        ),
    ]  # fmt: skip


SERVICES_EXAMPLE = "e.g. 'services: {orders: {records: {order: {status: str}}}}'"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "",
            f"the world file is empty; expected a mapping with a 'services:' key, "
            f"{SERVICES_EXAMPLE}",
        ),
        (
            "- a\n- b\n",
            f"the world file is a list; expected a mapping with a 'services:' key, "
            f"{SERVICES_EXAMPLE}",
        ),
        (
            "orders\n",
            "the world file is the single value 'orders'; expected a mapping with a "
            f"'services:' key, {SERVICES_EXAMPLE}",
        ),
        (
            "name: x\n",
            "missing 'services:'; expected e.g. "
            "'services: {orders: {records: {order: {status: str}}}}'",
        ),
    ],
)
def test_not_a_world(tmp_path, text, expected):
    assert problems(tmp_path, text) == [(1, 1, expected)]


def test_a_misspelled_services_key_is_reported_once(tmp_path):
    assert problems(tmp_path, "servics:\n  orders: {}\n") == [
        (
            1, 1,
            "unknown key 'servics' in the world file; expected one of name, seed, clock, "
            "description, services, faults, auth, events, webhooks, expect_state, nothing_else_changes, "
            "policies or milestones; did you mean 'services'?",
        ),
    ]  # fmt: skip


def test_a_file_that_is_not_utf8_text(tmp_path):
    path = tmp_path / "world.yaml"
    path.write_bytes("services:\n  caf\u00e9: {}\n".encode("latin-1"))
    with pytest.raises(WorldFileError) as info:
        load_spec(path)
    assert str(info.value) == (
        f"{path}:2:6: not UTF-8 text: byte 0xe9 cannot be decoded; expected a YAML file "
        "encoded as UTF-8; save it as UTF-8 (is this a binary file?)"
    )


def test_control_characters_are_reported_where_they_are(tmp_path):
    assert problems(tmp_path, "services:\n  orders: {}\x00\x01\n") == [
        (
            2, 13,
            "invalid YAML: non-printable character #x0000; expected text; remove the "
            "character (is this a binary file?)",
        ),
    ]  # fmt: skip


def test_more_than_one_document(tmp_path):
    assert problems(tmp_path, "services: {}\n---\nservices: {}\n") == [
        (
            2, 1,
            "invalid YAML: but found another document (expected a single document in the "
            "stream at 1:1); a world file is one YAML document; remove the '---' line and "
            "what follows",
        ),
    ]  # fmt: skip


def test_yaml_tags_are_refused_on_values_lists_and_mappings(tmp_path):
    text = """\
        services:
          a: !!python/object:os.system {}
          b: !!set { x: null }
          c: !custom [1]
        name: !!python/name:os.system x
        """
    fix = "expected plain values (text, numbers, lists and mappings); remove the tag"
    assert problems(tmp_path, text) == [
        (2, 6, f"unsupported YAML tag 'tag:yaml.org,2002:python/object:os.system'; {fix}"),
        (3, 6, f"unsupported YAML tag 'tag:yaml.org,2002:set'; {fix}"),
        (4, 6, f"unsupported YAML tag '!custom'; {fix}"),
        (5, 7, f"unsupported YAML tag 'tag:yaml.org,2002:python/name:os.system'; {fix}"),
    ]  # fmt: skip


def test_values_yaml_cannot_build_and_keys_that_are_not_names(tmp_path):
    text = "clock: { start: 2025-13-01 }\nservices:\n  ? [a]\n  : {}\n"
    assert problems(tmp_path, text) == [
        (
            1, 17,
            "invalid timestamp '2025-13-01': month must be in 1..12; expected a date such as "
            "2025-05-01 or a time such as 2025-05-01T10:00:00Z, or quote it (without a tag) "
            "to mean text",
        ),
        (3, 5, "a key must be a plain name, not a list or mapping; expected 'name: value'"),
    ]  # fmt: skip


def test_tagged_values_yaml_cannot_build(tmp_path):
    """pyyaml's constructors raise IndexError, KeyError or AttributeError on these: each is a
    problem at its position, all of them reported."""
    text = """\
        a: !!int ''
        b: !!float ''
        c: !!bool maybe
        d: !!timestamp nope
        """
    quote = "or quote it (without a tag) to mean text"
    assert problems(tmp_path, text) == [
        (1, 4, f"invalid int ''; expected a whole number such as 42, {quote}"),
        (2, 4, f"invalid float ''; expected a number such as 1.5, {quote}"),
        (3, 4, f"invalid bool 'maybe'; expected true or false, {quote}"),
        (
            4, 4,
            "invalid timestamp 'nope'; expected a date such as 2025-05-01 or a time such as "
            f"2025-05-01T10:00:00Z, {quote}",
        ),
    ]  # fmt: skip


# -- keys and names ---------------------------------------------------------------------------


def test_unknown_keys_at_every_level(tmp_path):
    text = """\
        nme: shop
        services:
          orders:
            record: {}
            operations:
              get_order: { kind: get, filters: [status] }
        faults:
          default: { latency: [1, 2], errors: { timeout: { p: 0.1, comit: true } } }
          orders.*: { timeout: 0.5 }
        """
    assert problems(tmp_path, text) == [
        (
            1, 1,
            "unknown key 'nme' in the world file; expected one of name, seed, clock, "
            "description, services, faults, auth, events, webhooks, expect_state, nothing_else_changes, "
            "policies or milestones; did you mean 'name'?",
        ),
        (
            4, 5,
            "unknown key 'record' in service 'orders'; expected one of records, seed, "
            "operations or description; did you mean 'records'?",
        ),
        (
            6, 7,
            "operation 'get_order' (kind: get) has no record; the world declares no records; "
            "expected them under services.<name>.records",
        ),
        (
            6, 31,
            "unknown key 'filters' in operation 'get_order'; expected one of kind, record, "
            "filter, handler, description, sort, page, input_schema, http, idempotency, scopes, set, "
            "then, title, annotations or output_schema; did you mean 'filter'?",
        ),
        (
            8, 14,
            "unknown fault rule key 'latency'; expected one of latency_ms, errors, "
            "rate_limit, not_found_if_newer_than, script or timeout_s; did you mean "
            "'latency_ms'?",
        ),
        (
            8, 60,
            "unknown option 'comit' for timeout; expected one of p, commit, timeout_s, "
            "retry_after_s, lag_s, times, field, template, payload, change, delay_s, tool, "
            "description, arg or to; did you mean 'commit'?",
        ),
        (
            9, 15,
            "'timeout' is an error kind; expected it under errors:, e.g. "
            "'errors: {timeout: 0.5}'",
        ),
    ]  # fmt: skip


def test_bad_scalars_and_names(tmp_path):
    text = """\
        name: 42
        seed: true
        clock: { start: not a date, stop: 1 }
        services:
          my.svc: {}
          ok:
            records:
              Bad-Name: {}
              good: { bad-field: str }
              class: {}
            operations:
              bad.tool: { kind: get, record: good }
              t2: [get]
              t3: { record: good }
        """
    assert problems(tmp_path, text) == [
        (1, 7, "name must be text, not 42; quote it"),
        (2, 7, "seed must be a whole number, not True; e.g. seed: 42"),
        (
            3, 17,
            "invalid clock start 'not a date'; expected an ISO date and time such as "
            "2025-06-01T09:00:00Z (no timezone means UTC), up to 9999-12-31 in UTC",
        ),
        (3, 29, "unknown key 'stop' in clock; expected 'start'"),
        (
            5, 3,
            "invalid service name 'my.svc'; expected letters, digits, '_' or '-' (no dots: "
            "fault keys use service.operation)",
        ),
        (
            8, 7,
            "invalid record name 'Bad-Name'; expected a Python identifier such as 'order' or "
            "'line_item' (it becomes world.<name>)",
        ),
        (
            9, 15,
            "invalid field name 'bad-field' in record 'good'; expected a Python identifier "
            "such as 'status' or 'created_at'",
        ),
        (
            10, 7,
            "record name 'class' is a Python keyword, so world.class would not parse; "
            "expected another name, e.g. 'class_item'",
        ),
        (12, 7, "invalid tool name 'bad.tool'; expected 1 to 64 letters, digits, '_' or '-'"),
        (13, 11, "operation 't2' must be a mapping; expected e.g. '{kind: get, record: order}'"),
        (
            14, 7,
            "operation 't3' has no kind; expected kind: get, list, create, update, delete or "
            "custom",
        ),
    ]  # fmt: skip


# -- records and fields -----------------------------------------------------------------------


def test_unknown_field_types(tmp_path):
    text = """\
        services:
          orders:
            records:
              order:
                status: strng
                total: { type: decimal }
                size: emum[s, m]
                tags: list
                id: int
        """
    assert problems(tmp_path, text) == [
        (5, 17, f"unknown field type 'strng'; {TYPES}; did you mean 'str'?"),
        (6, 24, f"unknown field type 'decimal'; {TYPES}"),
        (7, 15, f"unknown field type 'emum[s, m]'; {TYPES}; did you mean 'enum[s, m]'?"),
        (
            8, 15,
            f"unknown field type 'list'; {TYPES}; for nested values use list[T], "
            "{object: {name: type, ...}} or {list: {object: {...}}}",
        ),
        (9, 13, "the id of 'order' is always text, not 'int'; expected 'id: str' or no id line at all"),
    ]  # fmt: skip


def test_a_field_type_typo_heads_the_errors_with_its_fix_and_not_its_consequence(tmp_path):
    # the seed rows come first in the file and name the field whose type did not parse:
    # that is the typo's consequence, not a mistake of its own
    text = """\
        services:
          orders:
            seed: { order: { rows: [{ id: "1", total: 30.0 }] } }
            records:
              order: { id: str, total: flaot }
        """
    assert problems(tmp_path, text) == [
        (5, 32, f"unknown field type 'flaot'; {TYPES}; did you mean 'float'?"),
    ]


def test_empty_enum(tmp_path):
    text = """\
        services:
          orders:
            records: { order: { status: enum[] } }
        """
    assert problems(tmp_path, text) == [
        (3, 33, "empty enum 'enum[]'; expected at least one value, e.g. enum[placed, delivered]"),
    ]


def test_duplicate_enum_values_found_in_linear_time(tmp_path):
    """A 100,000-value enum is checked in one pass (a count per value took minutes)."""
    import time

    values = ", ".join(f"v{i}" for i in range(100_000))
    text = "services:\n  s:\n    records: {{ r: {{ status: 'enum[{}]' }} }}\n"
    path = tmp_path / "world.yaml"
    path.write_text(text.format(values))
    started = time.process_time()
    load_spec(path)  # no duplicate: loads
    path.write_text(text.format(values + ", v7, v3, v7"))
    with pytest.raises(WorldFileError) as info:
        load_spec(path)
    assert time.process_time() - started < 10  # both loads: ~1 s; quadratic was 193 s for one
    [error] = info.value.errors
    assert error.message.endswith("lists 'v3' twice; expected each value once")


def test_field_options(tmp_path):
    text = """\
        services:
          s:
            records:
              r:
                a: { type: int, default: one }
                b: { type: enum[x, y], default: z }
                c: { default: 1 }
                d: { type: str, optional: yes please }
                e: 42
                f: { type: str, description: hi }
        """
    assert problems(tmp_path, text) == [
        (5, 34, "default 'one' of field 'r.a' is not of type int; expected a whole number (64-bit)"),
        (6, 41, "default 'z' of field 'r.b' is not of type enum[x, y]; expected one of x or y"),
        (7, 12, "field 'r.c' needs a type; expected e.g. '{type: str, default: ...}'"),
        (8, 35, "optional must be true or false"),
        (9, 12, f"field 'r.e' has no type (42); {TYPES}"),
        (
            10, 25,
            "unknown key 'description' in field 'r.f'; expected one of type, default or optional",
        ),
    ]  # fmt: skip


def test_ref_to_a_record_that_does_not_exist(tmp_path):
    text = """\
        services:
          orders:
            records: { order: { customer_id: ref[customers.customer] } }
          payments:
            records: { refund: { order_id: ref[ordr], other: ref[payments.order] } }
        """
    assert problems(tmp_path, text) == [
        (
            3, 38,
            "'ref[customers.customer]' refers to a record that does not exist; expected one "
            "of orders.order or payments.refund",
        ),
        (
            5, 36,
            "'ref[ordr]' refers to a record that does not exist; expected one of orders.order "
            "or payments.refund; did you mean 'order'?",
        ),
        (
            5, 54,
            "'ref[payments.order]': record 'order' belongs to service 'orders', not "
            "'payments'; expected ref[orders.order]",
        ),
    ]  # fmt: skip


def test_accessor_collisions(tmp_path):
    text = """\
        services:
          shop:
            records:
              order: { status: str }
              orders: { status: str }
              trace: { status: str }
              tool: { name: str }
          other:
            records:
              order: { total: float }
        """
    path = tmp_path / "world.yaml"
    assert problems(tmp_path, text) == [
        (
            5, 7,
            f"record 'orders' and record 'order' ({path}:4:7) would both be world.orders; "
            "expected records whose names and plurals differ; rename one",
        ),
        (
            6, 7,
            "record 'trace' would be reachable as world.trace, which World already uses; "
            "expected a record name whose singular and plural are free; rename it, e.g. "
            "'trace_entry'",
        ),
        (
            7, 7,
            "record 'tool' would be reachable as world.tool and world.tools, which World "
            "already uses; expected a record name whose singular and plural are free; "
            "rename it, e.g. 'tool_entry'",
        ),
        (
            10, 7,
            f"record 'order' is already defined in service 'shop' at {path}:4:7; expected "
            "record names unique across the world; rename one",
        ),
    ]  # fmt: skip


# -- operations -------------------------------------------------------------------------------


def test_operation_on_unknown_record_or_filter_field(tmp_path):
    text = """\
        services:
          orders:
            records: { order: { status: str } }
            operations:
              get_order: { kind: gett, record: order }
              find_order: { kind: get, record: ordr }
              list_orders: { kind: list, record: order, filter: [status, stauts] }
              get_one: { kind: get, record: order, filter: [status] }
        """
    assert problems(tmp_path, text) == [
        (
            5, 26,
            "unknown operation kind 'gett'; expected one of get, list, create, update, delete "
            "or custom; did you mean 'get'?",
        ),
        (
            6, 40,
            "operation 'find_order' names an unknown record 'ordr'; expected one of order; "
            "did you mean 'order'?",
        ),
        (
            7, 66,
            "filter field 'stauts' is not a field of record 'order'; expected one of id or "
            "status; did you mean 'status'?",
        ),
        (8, 44, "'filter' is only for kind: list (this operation is kind: get); remove it"),
    ]  # fmt: skip


def test_two_operations_with_the_same_tool_name(tmp_path):
    text = """\
        services:
          orders:
            records: { order: { status: str } }
            operations: { get_order: { kind: get, record: order } }
          archive:
            records: { old_order: { status: str } }
            operations: { get_order: { kind: get, record: old_order } }
        """
    path = tmp_path / "world.yaml"
    assert problems(tmp_path, text) == [
        (
            7, 19,
            f"tool 'get_order' is already defined by service 'orders' at {path}:4:19; "
            "expected tool names unique across the world; rename one",
        ),
    ]  # fmt: skip


def test_custom_handlers_that_cannot_be_used(tmp_path):
    text = """\
        services:
          orders:
            operations:
              a: { kind: custom, handler: missing_rules.create }
              b: { kind: custom, handler: bad_rules.no_clock }
              c: { kind: custom, handler: bad_rules.star }
              d: { kind: custom, handler: bad_rules.no_clok }
              e: { kind: custom, handler: bad_rules.value }
              f: { kind: custom, handler: broken_rules.x }
              g: { kind: custom, handler: nodot }
              h: { kind: custom }
              i: { kind: get, handler: bad_rules.star, record: x }
        """
    bad_rules = """\
        def no_clock(world, order_id: str):
            pass

        def star(world, clock, *args):
            pass

        value = 3
        """
    broken = "raise RuntimeError('boom at import')\n"
    found = problems(tmp_path, text, bad_rules=bad_rules, broken_rules=broken)
    signature = (
        "expected def op(world, clock, order_id: str, ...): world and clock first, then the "
        "tool's arguments as named parameters"
    )
    assert found == [
        (
            4, 35,
            "handler 'missing_rules.create': cannot import module 'missing_rules': no "
            f"missing_rules.py in {tmp_path}, {tmp_path.parent} or on sys.path; expected the "
            "handler's module next to the world file",
        ),
        (
            5, 35,
            f"handler 'bad_rules.no_clock': its signature is (world, order_id: str); {signature}",
        ),
        (
            6, 35,
            "handler 'bad_rules.star': parameter 'args' cannot be passed by name (signature "
            f"(world, clock, *args)); {signature}",
        ),
        (
            7, 35,
            f"handler 'bad_rules.no_clok': module 'bad_rules' ({tmp_path / 'bad_rules.py'}) "
            "has no function 'no_clok'; did you mean 'no_clock'?",
        ),
        (8, 35, "handler 'bad_rules.value': 'bad_rules.value' is not a function but the int 3"),
        (
            9, 35,
            f"handler 'broken_rules.x': importing 'broken_rules' ({tmp_path / 'broken_rules.py'}) "
            "raised RuntimeError: boom at import; expected the module to import cleanly; run "
            "it with python to see the traceback",
        ),
        (
            10, 35,
            "handler 'nodot': not module.function; expected e.g. 'shop_rules.create_return' "
            "for create_return() in shop_rules.py next to the world file",
        ),
        (
            11, 7,
            "custom operation 'h' has no handler; expected handler: module.function, e.g. "
            "handler: shop_rules.create_return",
        ),
        (
            12, 23,
            "'handler' is only for kind: custom (this operation is kind: get); remove it or "
            "use kind: custom",
        ),
        (
            12, 56,
            "operation 'i' names an unknown record 'x'; the world declares no records; "
            "expected them under services.<name>.records",
        ),
    ]  # fmt: skip


def test_handlers_with_only_kwargs_or_that_exit_on_import(tmp_path):
    text = """\
        services:
          orders:
            operations:
              a: { kind: custom, handler: kw_rules.only_kwargs }
              b: { kind: custom, handler: kw_rules.named_and_kwargs }
              c: { kind: custom, handler: exit_rules.x }
        """
    kw_rules = """\
        def only_kwargs(world, clock, **kwargs):
            pass

        def named_and_kwargs(world, clock, order_id: str, **rest):
            pass
        """
    exits = "import sys\nsys.exit(0)\n"
    found = problems(tmp_path, text, kw_rules=kw_rules, exit_rules=exits)
    assert found == [
        (
            4, 35,
            "handler 'kw_rules.only_kwargs': its signature is (world, clock, **kwargs): "
            "**kwargs gives the tool no arguments; expected def op(world, clock, order_id: "
            "str, ...): world and clock first, then the tool's arguments as named parameters, "
            "or def op(world, clock) for a tool without arguments",
        ),
        (
            6, 35,
            f"handler 'exit_rules.x': importing 'exit_rules' ({tmp_path / 'exit_rules.py'}) "
            "raised SystemExit: 0; expected the module to import cleanly; run it with python "
            "to see the traceback",
        ),
    ]  # fmt: skip


# -- faults -----------------------------------------------------------------------------------

HANDLER = "def op(world, clock):\n    pass\n"


def test_fault_keys_naming_unknown_services_or_operations_and_unknown_kinds(tmp_path):
    text = """\
        services:
          orders:
            operations: { get_order: { kind: custom, handler: ok_rules.op } }
          payments:
            operations: { issue_refund: { kind: custom, handler: ok_rules.op } }
        faults:
          paymnts.issue_refund: {}
          payments.issue_refnd: {}
          payments.get_order: {}
          issue_refund: {}
          orders: {}
          payments.*: { errors: { http_5000: 0.1, timeout: 2 }, script: { 3: oops, x: timeout } }
        """
    assert problems(tmp_path, text, ok_rules=HANDLER) == [
        (
            7, 3,
            "fault key 'paymnts.issue_refund' names an unknown service 'paymnts'; expected "
            "one of orders or payments; did you mean 'payments.issue_refund'?",
        ),
        (
            8, 3,
            "fault key 'payments.issue_refnd' names an unknown operation 'issue_refnd' of "
            "service 'payments'; expected one of issue_refund; did you mean "
            "'payments.issue_refund'?",
        ),
        (
            9, 3,
            "fault key 'payments.get_order' names an unknown operation 'get_order' of "
            "service 'payments'; expected one of issue_refund; did you mean "
            "'orders.get_order'?",
        ),
        (
            10, 3,
            "unknown fault target 'issue_refund'; expected default, model, service.* or "
            "service.operation; did you mean 'payments.issue_refund'?",
        ),
        (
            11, 3,
            "unknown fault target 'orders'; expected default, model, service.* or "
            "service.operation; did you mean 'orders.*'?",
        ),
        (
            12, 27,
            f"unknown error kind 'http_5000'; expected one of {KINDS}; did you mean "
            "'http_500'?",
        ),
        (
            12, 52,
            "invalid probability 2 for timeout; expected a number from 0 to 1 or a mapping "
            "such as {p: 0.1, commit: true}",
        ),
        (12, 70, f"unknown error kind 'oops' in script; expected one of {KINDS}"),
        (12, 76, "script key 'x' is not a call number; expected 1, 2, 3, ..."),
    ]  # fmt: skip


def test_error_probabilities_above_one_after_merging(tmp_path):
    text = """\
        services:
          orders:
            operations: { get_order: { kind: custom, handler: ok_rules.op } }
          payments:
            operations:
              issue_refund: { kind: custom, handler: ok_rules.op }
              get_refund: { kind: custom, handler: ok_rules.op }
        faults:
          default:
            errors: { http_500: 0.4, http_503: 0.2 }
          payments.*:
            errors: { timeout: 0.3 }
          payments.issue_refund:
            errors: { timeout: 0.5, http_429: 0.1 }
          orders.get_order:
            errors: { http_500: 0.1, not_found: 0.95 }
        """
    assert problems(tmp_path, text, ok_rules=HANDLER) == [
        (
            13, 3,
            "error probabilities for payments.issue_refund add up to 1.2 after merging "
            "default and payments.issue_refund: http_500 0.4 (default) + http_503 0.2 "
            "(default) + timeout 0.5 (payments.issue_refund) + http_429 0.1 "
            "(payments.issue_refund); expected at most 1 in total; lower some of them",
        ),
        (
            15, 3,
            "error probabilities under orders.get_order add up to 1.05 (http_500 0.1 + "
            "not_found 0.95); expected at most 1 in total; lower some of them",
        ),
    ]  # fmt: skip


def test_malformed_durations(tmp_path):
    text = """\
        services:
          orders:
            operations: { get_order: { kind: custom, handler: ok_rules.op } }
        faults:
          default:
            not_found_if_newer_than: 2 hours
            timeout_s: 30x
            errors: { timeout: { p: 0.1, timeout_s: -5 }, http_429: { p: 0.1, retry_after_s: 1w } }
            rate_limit: { calls: 2, per_seconds: soon }
        """
    assert problems(tmp_path, text, ok_rules=HANDLER) == [
        (6, 30, f"invalid duration '2 hours'; {DURATION_HELP}"),
        (7, 16, f"invalid duration '30x'; {DURATION_HELP}"),
        (8, 45, f"invalid duration -5: negative; {DURATION_HELP}"),
        (8, 86, f"invalid duration '1w'; {DURATION_HELP}"),
        (9, 42, f"invalid duration 'soon'; {DURATION_HELP}"),
    ]


def test_fault_values_of_the_wrong_shape(tmp_path):
    text = """\
        services:
          orders:
            operations: { get_order: { kind: custom, handler: ok_rules.op } }
        faults:
          default:
            latency_ms: [300, 100]
            errors: { http_429: { p: 0.1, lag_s: 3 }, timeout: { commit: true } }
            rate_limit: { calls: 5 }
          orders.*: { latency_ms: 3s, errors: [timeout] }
        """
    assert problems(tmp_path, text, ok_rules=HANDLER) == [
        (6, 17, "latency_ms [300, 100] has lo > hi; expected [lo, hi]"),
        (7, 35, "'lag_s' does not apply to http_429; expected it only with stale_read"),
        (7, 47, "timeout needs a probability; expected e.g. {p: 0.1, ...}"),
        (
            8, 17,
            "invalid rate_limit {'calls': 5}; expected {calls: N, per_seconds: S}, e.g. "
            "{calls: 5, per_seconds: 60}",
        ),
        (
            9, 27,
            "invalid latency_ms '3s'; expected [lo, hi] in milliseconds (uniform), a number "
            "(fixed) or {p50: ms, p99: ms}",
        ),
        (
            9, 39,
            "errors must map error kinds to probabilities, not a list; expected e.g. "
            "'{timeout: 0.1, http_500: 0.02}'",
        ),
    ]  # fmt: skip


def test_fault_numbers_must_be_finite_and_bounded(tmp_path):
    text = """\
        services:
          orders:
            records: { order: { total: float } }
            operations: { add_order: { kind: create, record: order } }
        faults:
          default: { latency_ms: [0, .inf] }
          orders.*: { latency_ms: { p50: .nan, p99: 5 } }
          orders.add_order: { latency_ms: .inf, errors: { duplicate: { p: 0.1, times: 1000000 } } }
        """
    shape = "expected [lo, hi] in milliseconds (uniform), a number (fixed) or {p50: ms, p99: ms}"
    assert problems(tmp_path, text) == [
        (6, 26, f"invalid latency_ms [0, inf]; {shape}"),
        (
            7, 27,
            "invalid latency_ms {'p50': nan, 'p99': 5}; expected numbers of milliseconds with "
            "0 < p50 <= p99, e.g. {p50: 80, p99: 900}",
        ),
        (8, 35, f"invalid latency_ms inf; {shape}"),
        (8, 79, "times must be a whole number from 1 to 100, not 1000000"),
    ]  # fmt: skip


# -- seed -------------------------------------------------------------------------------------


def test_explicit_rows_are_type_checked(tmp_path):
    text = """\
        services:
          orders:
            records:
              order: { status: enum[placed, delivered], total: float, at: datetime }
              line: { order_id: ref[order], qty: int }
            seed:
              order:
                rows:
                  - { id: A, status: deliverd, total: cheap }
                  - { id: A, colour: red, at: yesterday }
              line:
                rows: [{ order_id: Z, qty: 1.5 }]
                count: 2
              rows: []
              refund: 3
          payments:
            records: { refund: { order_id: ref[order], amount: float } }
            seed: { count: 2, line: 1, cnt: 3 }
        """
    assert problems(tmp_path, text) == [
        (
            9, 30,
            "invalid value 'deliverd' for order.status (enum[placed, delivered]); expected "
            "one of placed or delivered; did you mean 'delivered'?",
        ),
        (9, 47, "invalid value 'cheap' for order.total (float); expected a finite number"),
        (10, 19, "id 'A' is used twice in the rows of 'order'; expected unique ids"),
        (10, 22, "'colour' is not a field of record 'order'; expected one of id, status, total or at"),
        (
            10, 39,
            "invalid value 'yesterday' for order.at (datetime); expected a date and time such "
            "as 2025-05-01T10:00:00Z (years 1 to 9999 in UTC)",
        ),
        (12, 28, "line.order_id 'Z' is not the id of any seeded 'order'; expected one of its ids (A)"),
        (12, 36, "invalid value 1.5 for line.qty (int); expected a whole number (64-bit)"),
        (
            14, 7,
            "service 'orders' has 2 records (order, line), so its rows must say which; "
            "expected them under a record, e.g. seed: {order: {rows: [...]}}",
        ),
        (
            15, 7,
            "record 'refund' belongs to service 'payments', not 'orders'; expected its seed "
            "under services.payments.seed",
        ),
        (
            18, 23,
            "record 'line' belongs to service 'orders', not 'payments'; expected its seed "
            "under services.orders.seed",
        ),
        (
            18, 32,
            "unknown key 'cnt' in the seed of service 'payments'; expected count, rows or a "
            "record of the service (refund); did you mean 'count'?",
        ),
    ]  # fmt: skip


def test_explicit_numbers_must_fit_the_kernel(tmp_path):
    text = """\
        services:
          s:
            records: { a: { x: float, n: int } }
            seed:
              a:
                rows:
                  - { x: .nan, n: 9223372036854775807 }
                  - { x: -.inf, n: 9223372036854775808 }
                  - { x: 1.0e+400, n: -9223372036854775809 }
        """
    assert problems(tmp_path, text) == [
        (7, 18, "invalid value nan for a.x (float); expected a finite number"),
        (8, 18, "invalid value -inf for a.x (float); expected a finite number"),
        (
            8, 28,
            "invalid value 9223372036854775808 for a.n (int); expected a whole number (64-bit)",
        ),
        (9, 18, "invalid value inf for a.x (float); expected a finite number"),
        (
            9, 31,
            "invalid value -9223372036854775809 for a.n (int); expected a whole number (64-bit)",
        ),
    ]  # fmt: skip


def test_row_counts_are_whole_numbers_within_reason(tmp_path):
    text = """\
        services:
          s:
            records: { a: { x: str }, b: { x: str }, c: { x: str }, d: { x: str } }
            seed: { a: -1, b: ten, c: 10000000000, d: true }
        """
    expected = "expected a whole number from 0 to 1_000_000, e.g. 20"
    assert problems(tmp_path, text) == [
        (4, 16, f"invalid row count -1; {expected}"),
        (4, 23, f"invalid row count 'ten'; {expected}"),
        (4, 31, f"invalid row count 10000000000; {expected}"),
        (4, 47, f"invalid row count True; {expected}"),
    ]


def test_required_ref_to_a_record_without_rows(tmp_path):
    text = """\
        services:
          orders:
            records:
              order: { status: str }
              line: { order_id: ref[order], maybe: ref[order]? }
            seed: { line: 3 }
        """
    assert problems(tmp_path, text) == [
        (
            5, 25,
            "line.order_id (ref[order]) needs 'order' rows to point at, but 'order' has no "
            "seed rows while 'line' gets some; expected seed: {order: N} under "
            "services.orders, or an optional field (ref[order]?)",
        ),
    ]  # fmt: skip


def test_every_problem_is_reported_in_file_order(tmp_path):
    text = """\
        services:
          orders:
            records: { order: { status: strng } }
            operations: { get_order: { kind: get, record: ordr } }
        faults:
          orders.get_ordr: { errors: { timeout: 0.1 } }
        """
    found = problems(tmp_path, text)
    assert [(line, col) for line, col, _ in found] == [(3, 33), (4, 51), (6, 3)]


def test_a_missing_file_is_an_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_spec(tmp_path / "nope.yaml")
