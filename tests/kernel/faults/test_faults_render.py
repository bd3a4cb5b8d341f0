"""render_faults: parsed rules back to a `faults:` block that parse_faults reads into the same
rules (locations aside), whether it travels as Python values, JSON or YAML text."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultbench.kernel._faults._injections import TEMPLATES
from faultbench.kernel._faults._kinds import ERROR_KINDS, KINDS, kinds_with_option
from faultbench.kernel._faults._kinds import kind as fault_kind
from faultbench.kernel._faults._lies import CHANGES
from faultbench.kernel._read._durations import render_duration
from faultbench.kernel.lowlevel import load_spec, parse_faults, render_faults

from .test_faults_docs import yaml_blocks

ROOT = Path(__file__).resolve().parents[3]
WORLD_FILES = sorted(
    [
        *ROOT.glob("tests/worlds/*.yaml"),
        *ROOT.glob("tests/serve/worlds/*.yaml"),
        *ROOT.glob("examples/*/worlds/*.yaml"),
    ]
)
FAULTS_WORLD = load_spec(ROOT / "tests" / "worlds" / "faults.yaml")


def without_loc(rules):
    return {k: msgspec.structs.replace(r, loc=None) for k, r in rules.items()}


def assert_round_trips(rules, spec):
    """The block parses back to `rules` as Python values, after a trip through JSON (what
    the control API sends: script keys become text) and as YAML text."""
    block = render_faults(rules)
    want = without_loc(rules)
    assert without_loc(parse_faults(block, spec)) == want
    assert without_loc(parse_faults(json.loads(json.dumps(block)), spec)) == want
    assert without_loc(parse_faults(yaml.safe_dump(block, sort_keys=False), spec)) == want
    return block


@pytest.mark.parametrize("path", WORLD_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_world_files_rules_round_trip(path):
    spec = load_spec(path)
    assert_round_trips(spec.faults, spec)


def test_at_least_the_worlds_with_faults_are_covered():
    with_faults = [p.name for p in WORLD_FILES if load_spec(p).faults]
    assert {"full.yaml", "legacy.yaml", "shop.yaml", "bank.yaml"} <= set(with_faults)


def test_every_docs_example_round_trips():
    blocks = yaml_blocks()
    spec = load_spec("docs/FAULTS.md", text=blocks[0][1])
    for line, body in blocks[1:]:
        rules = parse_faults(body, spec, source=f"docs/FAULTS.md:{line}")
        assert_round_trips(rules, spec)


def test_the_block_reads_like_one_written_by_hand():
    spec = load_spec(ROOT / "tests" / "worlds" / "full.yaml")
    block = render_faults(spec.faults)
    assert block == {
        "default": {"latency_ms": 100},
        "catalog.*": {
            "latency_ms": {"p50": 80, "p99": 900},
            "errors": {
                "http_503": {"p": 0.05, "commit": False},
                "stale_read": {"p": 0.02, "lag_s": 60},
            },
        },
        "catalog.add_product": {
            "errors": {
                "timeout": {"p": 0.1, "commit": True},
                "http_429": {"p": 0.05, "retry_after_s": 2},
                "duplicate": {"p": 0.01, "times": 2},
            },
            "script": {2: "timeout", 5: {"kind": "http_500", "commit": True}},
            "timeout_s": 45,
        },
        "people.find_people": {
            "rate_limit": {"calls": 3, "per_seconds": 10},
            "not_found_if_newer_than": "30m",
        },
    }


def test_legacy_spellings_come_back_in_todays_form():
    spec = load_spec(ROOT / "tests" / "worlds" / "legacy.yaml")
    block = render_faults(spec.faults)
    # faultbench 0.1 wrote not_found_if_newer_than under errors:
    assert block["orders.get_order"] == {"not_found_if_newer_than": "2h"}
    assert block["payments.issue_refund"]["errors"] == {"timeout": 0.1, "http_500": 0.02}


def test_an_empty_rule_is_an_empty_mapping():
    rules = parse_faults({"default": None, "orders.*": {}}, FAULTS_WORLD)
    assert render_faults(rules) == {"default": {}, "orders.*": {}}
    assert render_faults({}) == {}


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (7200.0, "2h"),
        (86400.0, "1d"),
        (90.0, "90s"),
        (5400.0, "90m"),
        (0.5, "500ms"),
        (1.5, "1500ms"),
        (0.0, 0),
        (0.0001, 0.0001),
        (12.3456, 12.3456),
    ],
)
def test_render_duration(seconds, shown):
    assert render_duration(seconds) == shown


# --- any valid block ---------------------------------------------------------------------------

_ms = st.one_of(st.integers(0, 10_000), st.floats(0, 10_000, allow_nan=False))
_seconds = st.one_of(
    st.integers(0, 100_000),
    st.floats(0, 100_000, allow_nan=False),
    st.builds(
        lambda n, u: f"{n}{u}", st.integers(0, 500), st.sampled_from(["ms", "s", "m", "h", "d"])
    ),
)
_latency = st.one_of(
    _ms,
    st.tuples(_ms, _ms).map(lambda t: sorted(t)),
    st.tuples(st.floats(0.1, 5_000), st.floats(0, 5_000)).map(
        lambda t: {"p50": t[0], "p99": t[0] + t[1]}
    ),
)
_words = st.text(st.characters(categories=("L", "N", "Zs")), min_size=1, max_size=30)

#: every option of every kind, from the registry: a new kind's options get drawn too
_OPTIONS = {
    "commit": st.booleans(),
    **{
        o.name: st.integers(1, 100)
        if o.whole
        else (
            st.sampled_from(sorted(TEMPLATES))
            if o.name == "template"
            else st.sampled_from(CHANGES)
            if o.name == "change"
            else _words
        )
        if o.text
        else _seconds
        for k in KINDS
        if k.configurable
        for o in k.options
    },
}


#: options that name the world's tools and arguments, valid only against them (the surface
#: kinds'; tests/kernel/calls/test_surface.py checks them): not drawn as free text
_NAMING = {"tool", "arg", "to"}


@st.composite
def _error(draw, kind, *, scripted):
    """One error kind's value: a bare probability / kind name, or a mapping of options that
    apply to that kind."""
    p = draw(st.floats(0, 1 / len(ERROR_KINDS)))
    fitting = sorted(o for o in _OPTIONS if kind in kinds_with_option(o) and o not in _NAMING)
    names = draw(st.lists(st.sampled_from(fitting), unique=True, max_size=3)) if fitting else []
    if not names and draw(st.booleans()):
        return kind if scripted else p
    options = {n: draw(_OPTIONS[n]) for n in names}
    return {"kind": kind, **options} if scripted else {"p": p, **options}


def _kinds(key):
    """The error kinds a rule under `key` may name: all of them, except on one operation."""
    op = next((o for o in FAULTS_WORLD.operations.values() if o.qualname == key), None)
    if op is None:
        return list(ERROR_KINDS)
    return [k for k in ERROR_KINDS if fault_kind(k).fits(op.kind, op.page is not None)]


@st.composite
def _rule(draw, key):
    kinds = _kinds(key)
    rule = {}
    if draw(st.booleans()):
        rule["latency_ms"] = draw(_latency)
    if draw(st.booleans()):
        chosen = draw(st.lists(st.sampled_from(kinds), unique=True, max_size=4))
        rule["errors"] = {k: draw(_error(k, scripted=False)) for k in chosen}
    if draw(st.booleans()):
        rule["rate_limit"] = {
            "calls": draw(st.integers(1, 50)),
            "per_seconds": draw(st.one_of(st.integers(1, 3600), st.sampled_from(["1m", "1h"]))),
        }
    if draw(st.booleans()):
        rule["not_found_if_newer_than"] = draw(_seconds)
    if draw(st.booleans()):
        steps = draw(st.dictionaries(st.integers(1, 20), st.sampled_from(kinds), max_size=3))
        rule["script"] = {k: draw(_error(kind, scripted=True)) for k, kind in steps.items()}
    if draw(st.booleans()):
        rule["timeout_s"] = draw(_seconds)
    return rule


_KEYS = ["default", "orders.*", "payments.*"] + [
    op.qualname for op in FAULTS_WORLD.operations.values()
]


@st.composite
def _blocks(draw):
    keys = draw(st.lists(st.sampled_from(_KEYS), unique=True, max_size=4))
    return {key: draw(_rule(key)) for key in keys}


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(_blocks())
def test_any_valid_block_round_trips(block):
    rules = parse_faults(block, FAULTS_WORLD)
    assert_round_trips(rules, FAULTS_WORLD)
