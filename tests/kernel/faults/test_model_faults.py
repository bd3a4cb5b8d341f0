"""Model faults in the world's plan: the `model:` rule, its decisions, its events, its pins."""

from __future__ import annotations

from pathlib import Path

import pytest

import faultbench
from faultbench.kernel import ModelCalled, ModelUsed, WorldFileError, replay
from faultbench.kernel.lowlevel import MODEL_KINDS, faults_received, pin_block

SHOP = Path(__file__).resolve().parents[3] / "examples" / "shop" / "worlds" / "shop.yaml"

RULE = {
    "latency_ms": [100, 900],
    "errors": {"http_429": {"p": 0.2, "retry_after_s": 3}, "stream_cut": 0.1, "timeout": 0.1},
    "script": {2: "http_503"},
}


def world(seed=7, run=0, rule=RULE):
    w = faultbench.load_world(SHOP, seed=seed, run=run)
    w.set_faults({"model": rule})
    return w


def decisions(w, n=40):
    return [w.model_call("m") for _ in range(n)]


def test_the_kinds_are_the_ones_the_design_names():
    assert [k.name for k in MODEL_KINDS] == [
        "http_429", "http_500", "http_503", "timeout",
        "stream_cut", "malformed_tool_call", "empty_completion",
    ]  # fmt: skip


def test_decisions_depend_on_seed_run_and_k_only():
    a = decisions(world())
    b = world()
    # tool calls in between never change what happens to the k-th model call
    out = []
    for _ in range(40):
        b.call("get_order", {"id": "1"})
        out.append(b.model_call("m"))
    assert [(d.kind, d.latency_s, d.retry_after_s) for d in a] == [
        (d.kind, d.latency_s, d.retry_after_s) for d in out
    ]
    assert a[1].kind == "http_503"
    assert a[1].source == "script"
    kinds = {d.kind for d in a}
    assert {"http_429", "stream_cut", "timeout", None} <= kinds
    other_run = decisions(world(run=1))
    assert [d.kind for d in other_run] != [d.kind for d in a]


def test_each_call_is_an_event_and_latency_moves_the_virtual_clock():
    w = world(rule={"latency_ms": 250, "script": {1: {"kind": "timeout", "timeout_s": 10}}})
    start = w.clock.now()
    first = w.model_call("gpt")
    assert (first.kind, first.timeout_s, first.latency_s) == ("timeout", 10.0, 0.25)
    assert (w.clock.now() - start).total_seconds() == pytest.approx(10.25)
    w.model_used(first.k, 120, 30, "gpt")
    called = [e for e in w.events if isinstance(e, ModelCalled)]
    used = [e for e in w.events if isinstance(e, ModelUsed)]
    assert [(e.k, e.kind, e.model) for e in called] == [(1, "timeout", "gpt")]
    assert called[0].detail == {"source": "script", "timeout_s": 10.0, "latency_s": 0.25}
    assert [(e.input_tokens, e.output_tokens) for e in used] == [(120, 30)]
    assert [m.kind for m in w.trace.model_calls] == ["timeout"]
    assert "Model: 1 call, faults: #1 timeout" in str(w.trace)


def test_replay_folds_model_events_and_forks_keep_counting():
    w = world()
    decisions(w, 5)
    r = replay(SHOP, w.events)
    assert r.state_hash() == w.state_hash()
    assert r.model_call("m").k == 6 == w.fork().model_call("m").k


def test_a_world_without_a_model_rule_or_with_faults_off_never_faults_the_model():
    plain = faultbench.load_world(SHOP, seed=1)
    assert all(d.kind is None and d.latency_s == 0 for d in decisions(plain, 10))
    off = faultbench.load_world(SHOP, seed=1, faults=False)
    assert all(d.kind is None for d in decisions(off, 10))


def test_pins_reproduce_the_model_faults_of_a_run_and_nothing_else():
    w = world()
    got = [(d.k, d.kind, d.retry_after_s) for d in decisions(w) if d.kind]
    pins = faults_received(w.events)
    block = pin_block(pins, w.spec)
    assert list(block) == ["model"]
    again = faultbench.load_world(SHOP, seed=99, run=5)  # another seed and run: the pins decide
    again.set_faults(block)
    assert [(d.k, d.kind, d.retry_after_s) for d in decisions(again) if d.kind] == got


def test_malformed_tool_call_draws_its_way_from_the_same_key():
    w = world(rule={"errors": {"malformed_tool_call": 1.0}})
    hows = [d.how for d in decisions(w, 30)]
    assert set(hows) == {"invalid_json", "missing_field"}
    assert hows == [
        d.how for d in decisions(world(rule={"errors": {"malformed_tool_call": 1.0}}), 30)
    ]


WORLD = """\
name: tiny
services:
  notes:
    records:
      note: {text: str}
    operations:
      get_note: {kind: get, record: note}
faults:
  model:
    latency_ms: [200, 900]
    errors: {http_429: 0.1, stream_cutt: 0.2}
    script: {1: {kind: timeout, retry_after_s: 2}}
    retries: 3
"""


def test_the_world_file_block_is_strict_with_file_line_col(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(WORLD)
    with pytest.raises(WorldFileError) as info:
        faultbench.load_world(path)
    message = str(info.value)
    assert "tiny.yaml:11:29: unknown model fault kind 'stream_cutt'; expected one of " in message
    assert "did you mean 'stream_cut'?" in message
    assert (
        "tiny.yaml:12:33: unknown option 'retry_after_s' for the model fault timeout; "
        "expected kind or timeout_s" in message
    )
    assert "tiny.yaml:13:5: unknown key 'retries' in the model rule" in message
    good = WORLD.replace("stream_cutt", "stream_cut").replace("retry_after_s", "timeout_s")
    path.write_text(good.replace("    retries: 3\n", ""))
    w = faultbench.load_world(path)
    first = w.model_call()
    assert (first.kind, first.timeout_s) == ("timeout", 2.0)


def test_the_rule_round_trips_through_the_log():
    w = world()
    block = w.events[-1].rules
    assert block["model"]["errors"]["http_429"] == {"p": 0.2, "retry_after_s": 3}
    r = replay(SHOP, w.events)
    assert r.fault_rules["model"] == w.fault_rules["model"].__class__(
        **{
            **{
                f: getattr(w.fault_rules["model"], f)
                for f in w.fault_rules["model"].__struct_fields__
            },
            "loc": r.fault_rules["model"].loc,
        }
    )
