"""Replay and the world refuse what the world does not declare (issue 41, item 14): a model
name that is not a string, an effect on a table that does not exist, a token for a principal
the `auth:` block lacks, a webhook attempt numbered -5 or answered 99999, and a create whose
`ref` names a row that does not exist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import faultbench
from faultbench.cli import main
from faultbench.kernel import ReplayError, decode_events, encode_events

WORLD = """\
name: declared
seed: 1
auth:
  principals:
    agent: { scopes: [orders:write] }
webhooks: { url: "http://127.0.0.1:9/hooks", secret: whsec_test, backoff: 30s }
services:
  shop:
    records:
      customer: { name: str }
      order: { customer_id: "ref[customer]", total: float, status: "enum[placed, paid]" }
    seed:
      customer: 2
    operations:
      create_order: { kind: create, record: order, scopes: [orders:write] }
      update_order: { kind: update, record: order, scopes: [orders:write] }
events:
  order.created: { record: order, on: [create] }
"""


@pytest.fixture
def world_file(tmp_path: Path) -> Path:
    path = tmp_path / "declared.yaml"
    path.write_text(WORLD)
    return path


def test_model_call_takes_a_model_name_only(world_file):
    world = faultbench.load_world(world_file)
    before = len(world.events)
    for bad in (5, None, b"gpt", ["m"]):
        with pytest.raises(TypeError, match="model's name as a string"):
            world.model_call(bad)  # type: ignore[arg-type]
    assert len(world.events) == before  # nothing logged
    world.model_call("gpt-test")
    decode_events(encode_events(world.events))  # the log still decodes


def _recorded(world_file: Path) -> tuple[faultbench.World, list[dict]]:
    world = faultbench.load_world(world_file)
    token = world.issue_token("agent")
    made = world.call("create_order", {"customer_id": "1", "total": 5.0, "status": "placed"},
                      token=token)  # fmt: skip
    assert made.ok, made.text
    world.schedule(60, "order", made.value["id"], {"status": "paid"})
    for delivery in world.webhooks_due():
        world.webhook_attempted(delivery, status=500)
    rows = [json.loads(line) for line in encode_events(world.events).splitlines()]
    return world, rows


def _edit(rows: list[dict], kind: str) -> list[dict]:
    def first(type_: str) -> dict:
        return next(r for r in rows if r["type"] == type_)

    if kind == "effect-unknown-table":
        first("EffectScheduled")["table"] = "ghosts"
    elif kind == "effect-unknown-field":
        first("EffectScheduled")["changes"] = {"admin": True}
    elif kind == "token-undeclared-principal":
        first("TokenIssued")["principal"] = "root"
    elif kind == "webhook-attempt-negative":
        first("WebhookAttempted")["attempt"] = -5
    elif kind == "webhook-status-99999":
        first("WebhookAttempted")["status"] = 99999
    elif kind == "webhook-outcome":
        first("WebhookAttempted")["outcome"] = "exploded"
    return rows


EDITS = {
    "effect-unknown-table": "which the world does not declare",
    "effect-unknown-field": "which is not a field it may set",
    "token-undeclared-principal": "does not declare",
    "webhook-attempt-negative": "attempt -5; expected 1 or more",
    "webhook-status-99999": "status 99999; expected an HTTP status from 100 to 599",
    "webhook-outcome": "expected succeeded, failed or dropped",
}


def test_the_recorded_log_replays(world_file):
    world, _ = _recorded(world_file)
    assert faultbench.replay(world_file, world.events).state_hash() == world.state_hash()


@pytest.mark.parametrize("kind", list(EDITS))
def test_replay_refuses_an_event_naming_what_the_world_does_not_declare(
    world_file, tmp_path, capsys, kind
):
    _, rows = _recorded(world_file)
    edited = _edit(rows, kind)
    with pytest.raises(ReplayError, match="does not apply") as info:
        faultbench.replay(world_file, decode_events(
            "".join(json.dumps(r) + "\n" for r in edited).encode()
        ))  # fmt: skip
    assert EDITS[kind] in str(info.value)
    log = tmp_path / "edited.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in edited))
    assert main(["replay", str(log), "--world", str(world_file)]) == 1
    err = capsys.readouterr().err
    assert f"{log}:" in err
    assert EDITS[kind] in err


def test_webhook_attempted_refuses_a_status_no_http_server_sends(world_file):
    world = faultbench.load_world(world_file)
    world.call("create_order", {"customer_id": "1", "total": 5.0, "status": "placed"},
               token=world.issue_token("agent"))  # fmt: skip
    (delivery,) = world.webhooks_due()
    for bad in (99999, 42, True):
        with pytest.raises(ValueError, match="from 100 to 599"):
            world.webhook_attempted(delivery, status=bad)


def test_a_create_naming_a_row_that_does_not_exist_is_refused(world_file):
    world = faultbench.load_world(world_file)
    token = world.issue_token("agent")
    before = world.to_dict()
    result = world.call(
        "create_order", {"customer_id": "999", "total": 5.0, "status": "placed"}, token=token
    )
    assert not result.ok
    assert result.error_kind == "invalid_arguments"
    assert "customer_id names customer '999', which does not exist" in result.text
    assert world.to_dict() == before  # nothing written
    assert world.call(
        "create_order", {"customer_id": "2", "total": 5.0, "status": "placed"}, token=token
    ).ok
