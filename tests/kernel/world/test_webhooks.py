"""Webhook deliveries decided by the kernel (top-level `webhooks:`): what is due and when in
virtual time, signatures, retries with backoff, the feed's fault kinds on deliveries, replay,
forks and pins, and strict world-file errors. The HTTP side is tests/test_webhooks.py."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest

from faultbench.kernel import (
    FaultInjected,
    WebhookAttempted,
    World,
    WorldFileError,
    decode_events,
    encode_events,
    replay,
)
from faultbench.kernel.lowlevel import (
    WEBHOOK_SIGNATURE_HEADER,
    WebhookSignatureError,
    faults_received,
    load_spec,
    parse_faults,
    pin_block,
    sign_webhook,
    verify_webhook,
)

FEED = """\
name: hooks
seed: 5
services:
  payments:
    records:
      refund: { id: str, amount: int, status: "enum[pending, succeeded, failed]" }
    operations:
      issue_refund:
        kind: create
        record: refund
        set: { status: pending }
        then: { after: 2m, set: { status: succeeded } }
    seed:
      refund: 3
events:
  refund.created: { record: refund, on: [create] }
  refund.updated: { record: refund, on: [update] }
"""
HOOKS = "webhooks: { secret: whsec_test, retries: 2, backoff: 30s }\n"
SPEC = load_spec("<hooks>", text=FEED + HOOKS)


def world(faults: str = "", seed: int | None = None) -> World:
    spec = load_spec("<hooks>", text=FEED + HOOKS + faults) if faults else SPEC
    return World.from_spec(spec, seed=seed)


def answer_all(w: World, status: int = 200) -> list[WebhookAttempted]:
    return [w.webhook_attempted(d, status=status) for d in w.webhooks_due()]


def test_each_feed_event_is_due_at_its_time_signed_and_not_again_once_delivered():
    w = world()
    assert w.webhooks_due() == []  # the seed rows are no news
    w.call("issue_refund", {"amount": 500})
    [d] = w.webhooks_due()
    assert (d.id, d.k, d.type, d.attempt, d.due) == ("dlv_1", 1, "refund.created", 1, w.clock.now())
    page = w.call("list_events").value
    event = verify_webhook(d.body, d.headers[WEBHOOK_SIGNATURE_HEADER], "whsec_test")
    assert event == page["data"][0]  # the body is the event list_events shows
    stamp = int(w.clock.now().timestamp())
    assert d.headers[WEBHOOK_SIGNATURE_HEADER] == sign_webhook(d.body, "whsec_test", stamp)
    assert d.headers["Faultbench-Delivery"] == "dlv_1"
    [ev] = answer_all(w)
    assert (ev.delivery, ev.event, ev.outcome, ev.status, ev.retry_at) == (
        "dlv_1", event["id"], "succeeded", 200, None,
    )  # fmt: skip
    assert w.webhooks_due() == []
    assert w.webhooks_pending() == []
    w.clock.advance(120)  # the refund succeeds: refund.updated is due
    assert [(d.id, d.type) for d in w.webhooks_due()] == [("dlv_2", "refund.updated")]


def test_a_signature_is_refused_for_another_body_secret_or_a_malformed_header():
    body = b'{"id":"evt_1"}'
    header = sign_webhook(body, "whsec_test", 1_700_000_000)
    assert verify_webhook(body, header, "whsec_test") == {"id": "evt_1"}
    # several v1 values (a rotated secret) are fine if one matches
    assert verify_webhook(body, "v1=00," + header, "whsec_test") == {"id": "evt_1"}
    with pytest.raises(WebhookSignatureError, match=r"no v1 signature .* matches"):
        verify_webhook(body + b" ", header, "whsec_test")
    with pytest.raises(WebhookSignatureError, match="no v1 signature"):
        verify_webhook(body, header, "whsec_other")
    with pytest.raises(ValueError, match="malformed Faultbench-Signature header"):
        verify_webhook(body, "v1=abc", "whsec_test")


def test_a_failed_attempt_is_retried_after_a_doubling_backoff_in_virtual_time_then_given_up():
    w = world()
    w.call("issue_refund", {"amount": 500})
    t0 = w.clock.now()
    [first] = answer_all(w, 500)
    assert (first.outcome, first.retry_at) == ("failed", t0 + timedelta(seconds=30))
    assert w.webhooks_due() == []  # not before its time
    [pending] = w.webhooks_pending()
    assert (pending.attempt, pending.due) == (2, t0 + timedelta(seconds=30))
    w.clock.advance(30)
    second = w.webhook_attempted(w.webhooks_due()[0], error="timed out after 10s")
    assert second.retry_at == t0 + timedelta(seconds=90)  # 30 s, then 60 s
    w.clock.advance(60)
    [third] = answer_all(w, 503)  # retries: 2, spent
    assert (third.attempt, third.outcome, third.retry_at) == (3, "failed", None)
    assert w.webhooks_pending() == []
    with pytest.raises(ValueError, match="needs the endpoint's status, or an error"):
        w.webhook_attempted(pending)


def test_deliveries_replay_and_fork_with_the_same_pending_attempts():
    w = world()
    w.call("issue_refund", {"amount": 500})
    answer_all(w, 500)
    again = replay(SPEC, decode_events(encode_events(w.events)))
    assert again.state_hash() == w.state_hash()
    assert encode_events(again.events) == encode_events(w.events)
    assert again.webhooks_pending() == w.webhooks_pending()
    child = w.fork()
    child.clock.advance(30)
    answer_all(child)
    assert child.webhooks_pending() == []
    assert len(w.webhooks_pending()) == 1
    snap = w.snapshot()
    w.clock.advance(30)
    answer_all(w)
    w.restore(snap)
    assert [d.attempt for d in w.webhooks_pending()] == [2]


def script(steps: str) -> str:
    return f"faults:\n  payments.webhooks: {{ script: {{ {steps} }} }}\n"


def test_duplicate_delivery_sends_a_second_copy_and_is_pinned_like_a_call_fault():
    w = world(script("1: duplicate_delivery"))
    w.call("issue_refund", {"amount": 500})
    due = w.webhooks_due()
    assert [(d.id, d.event) for d in due] == [("dlv_1", due[0].event), ("dlv_1_2", due[0].event)]
    assert due[0].body == due[1].body
    answer_all(w)
    fault = next(e for e in w.events if isinstance(e, FaultInjected))
    assert (fault.tool, fault.call_id, fault.kind) == (
        "webhooks",
        "webhooks#1",
        "duplicate_delivery",
    )
    assert fault.detail["events"] == [due[0].event]
    pins = faults_received(w.events)
    block = pin_block(pins, w.spec)
    assert block == {"payments.webhooks": {"script": {1: "duplicate_delivery"}}}
    assert parse_faults({"faults": block}, w.spec)["payments.webhooks"].script


def test_out_of_order_holds_a_delivery_until_the_next_one_goes():
    w = world(script("1: out_of_order"))
    w.call("issue_refund", {"amount": 500})
    assert w.webhooks_due() == []  # dlv_1 waits for dlv_2
    w.call("issue_refund", {"amount": 700})
    assert [d.id for d in w.webhooks_due()] == ["dlv_2", "dlv_1"]


def test_delayed_makes_a_delivery_due_later_and_dropped_never_sends_it():
    w = world(script("1: { kind: delayed, delay_s: 5m }, 2: dropped"))
    w.call("issue_refund", {"amount": 500})
    w.call("issue_refund", {"amount": 700})
    assert w.webhooks_due() == []  # dlv_1 is late, dlv_2 lost (and logged so)
    dropped = [e for e in w.events if isinstance(e, WebhookAttempted)]
    assert [(e.delivery, e.outcome) for e in dropped] == [("dlv_2", "dropped")]
    w.clock.advance(299)
    # both refunds succeeded at 2m: their refund.updated deliveries are on time
    assert [d.id for d in w.webhooks_due()] == ["dlv_3", "dlv_4"]
    answer_all(w)
    w.clock.advance(1)
    assert [d.id for d in w.webhooks_due()] == ["dlv_1"]


def test_random_delivery_faults_are_reproducible_from_the_seed():
    faults = (
        "faults:\n  payments.webhooks: { errors: { duplicate_delivery: 0.3, out_of_order: 0.2, "
        "dropped: 0.2 } }\n"
    )

    def run(seed: int) -> bytes:
        w = world(faults, seed=seed)
        for amount in range(1, 9):
            w.call("issue_refund", {"amount": amount})
            answer_all(w, 200 if amount % 3 else 500)
        w.clock.advance(600)
        answer_all(w)
        return encode_events(w.events)

    assert run(1) == run(1)
    logs = {run(seed) for seed in range(1, 6)}
    assert len(logs) > 1  # the seed decides which deliveries go wrong


def test_types_choose_the_event_types_delivered():
    spec = load_spec("<hooks>", text=FEED + "webhooks: { secret: s, types: [refund.updated] }\n")
    w = World.from_spec(spec)
    w.call("issue_refund", {"amount": 500})
    assert w.webhooks_due() == []
    w.clock.advance(120)
    assert [(d.id, d.type) for d in w.webhooks_due()] == [("dlv_1", "refund.updated")]


def test_a_world_without_webhooks_refuses_the_delivery_methods():
    spec = load_spec("<feed>", text=FEED)
    with pytest.raises(ValueError, match="has no webhooks: block"):
        World.from_spec(spec).webhooks_due()


def test_worlds_without_the_key_log_and_hash_exactly_as_before_it_existed(tmp_path: Path):
    """The same calls on the commit before webhooks (git archive of 6c48d1c's src) and now."""
    script_text = textwrap.dedent(
        """
        import sys
        from faultbench.kernel import World, encode_events
        from faultbench.kernel.lowlevel import load_spec
        w = World.from_spec(load_spec("<feed>", text=sys.stdin.read()))
        for amount in (1, 2, 3):
            w.call("issue_refund", {"amount": amount})
        w.clock.advance(300)
        w.call("list_events", {"limit": 5})
        sys.stdout.write(w.state_hash() + "\\n" + encode_events(w.events).decode())
        """
    )
    repo = Path(__file__).resolve().parents[3]
    base = tmp_path / "base"
    base.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", "6c48d1c", "src"], capture_output=True, check=False
    )
    if archive.returncode != 0:
        pytest.skip("the repository's history is not available (a source distribution)")
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)

    def run(src: Path) -> str:
        env = {**os.environ, "PYTHONPATH": str(src)}
        out = subprocess.run(
            [sys.executable, "-c", script_text], input=FEED, capture_output=True, text=True,
            env=env, check=True,
        )  # fmt: skip
        return out.stdout

    now = run(repo / "src")
    assert now == run(base / "src")
    assert "WebhookAttempted" not in now


# ---------------------------------------------------------------------------------------------
# The world file
# ---------------------------------------------------------------------------------------------


def problems(text: str) -> list[str]:
    with pytest.raises(WorldFileError) as info:
        load_spec("<w>", text=text)
    return str(info.value).splitlines()


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (
            "webhooks: { url: http://127.0.0.1:9/h }\n",
            "<w>:18:11: webhooks has no secret; expected e.g. 'secret: whsec_test'",
        ),
        (
            "webhooks: { secret: s, url: 'https://example.com/hooks' }\n",
            "<w>:18:29: webhook url 'https://example.com/hooks' is not on loopback; expected "
            "http:// and a host of 127.0.0.1, localhost or ::1",
        ),
        (
            "webhooks: { secret: s, types: [refund.updatd] }\n",
            "<w>:18:32: unknown event type 'refund.updatd' in webhooks; expected one of "
            "refund.created or refund.updated; did you mean 'refund.updated'?",
        ),
        (
            "webhooks: { secret: s, retry: 3 }\n",
            "<w>:18:24: unknown key 'retry' in webhooks; expected one of url, secret, types, "
            "retries, backoff or timeout; did you mean 'retries'?",
        ),
        (
            "webhooks: { secret: s, retries: -1, backoff: 0 }\n",
            "<w>:18:33: retries must be a whole number from 0 to 20, not -1",
        ),
        (
            "webhooks: { secret: s }\nfaults:\n  payments.webhooks: { errors: { http_500: 0.1 } }\n",
            "<w>:20:34: http_500 cannot happen to payments.webhooks, the webhook deliveries; "
            "expected one of duplicate_delivery, out_of_order, delayed or dropped",
        ),
        (
            "webhooks: { secret: s }\nfaults:\n  payments.webhooks: { latency_ms: 5 }\n",
            "<w>:20:24: 'latency_ms' does not apply to payments.webhooks",
        ),
        (
            "faults:\n  payments.webhooks: { errors: { dropped: 0.1 } }\n",
            "<w>:19:3: fault key 'payments.webhooks' names an unknown operation 'webhooks'",
        ),
    ],
)
def test_mistakes_in_the_block_are_reported_at_file_line_col(block: str, expected: str):
    found = problems(FEED + block)
    assert any(line.startswith(expected) for line in found), found


def test_webhooks_without_an_event_feed_is_an_error():
    text = FEED.split("events:")[0] + "webhooks: { secret: s }\n"
    [line] = problems(text)
    assert line.startswith("<w>:15:1: webhooks deliver the event feed, but the world declares no")
