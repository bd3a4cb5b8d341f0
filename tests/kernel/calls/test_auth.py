"""Auth (`_calls/_auth.py`): principals, tokens on the virtual clock, scopes, the
`refresh_token` tool and the faults `token_expired` and `revoked`."""

from __future__ import annotations

import pytest

from faultbench.kernel import World, WorldFileError, decode_events, encode_events, replay
from faultbench.kernel.lowlevel import load_spec

WORLD = """
auth:
  principals:
    support_agent: { scopes: [orders:read, refunds:write] }
    readonly_bot:  { scopes: [orders:read] }
  token_ttl: 15m
services:
  payments:
    records:
      refund: { order_id: str, amount: int }
    operations:
      issue_refund: { kind: create, record: refund, scopes: [refunds:write] }
      get_refund: { kind: get, record: refund, scopes: [orders:read] }
      whoami: { kind: custom, handler: auth_handlers.whoami }
"""
HANDLERS = '''
def whoami(world, clock):
    """Who is calling."""
    return {"principal": world.principal}
'''


@pytest.fixture
def spec(tmp_path):
    (tmp_path / "auth_handlers.py").write_text(HANDLERS)
    return load_spec(tmp_path / "world.yaml", text=WORLD)


@pytest.fixture
def world(spec):
    return World.from_spec(spec)


REFUND = {"order_id": "o1", "amount": 5}


def test_a_call_without_a_token_or_with_an_unknown_one_is_a_401(world):
    missing = world.call("get_refund", {"id": "1"})
    assert missing.error_kind == "unauthorized"
    assert missing.text.startswith("401 Unauthorized: payments.get_refund: no access token")
    unknown = world.call("get_refund", {"id": "1"}, token="fbt_nope")
    assert "not one this server issued" in unknown.text
    assert missing.k is None  # refused before the operation: it does not count


def test_auth_comes_before_argument_validation(world):
    r = world.call("issue_refund", {"bogus": 1})
    assert r.error_kind == "unauthorized"


def test_a_missing_scope_is_a_403_naming_the_scope(world):
    bot = world.issue_token("readonly_bot")
    r = world.call("issue_refund", REFUND, token=bot)
    assert r.error_kind == "insufficient_scope"
    assert "403 Forbidden: insufficient_scope" in r.text
    assert "'refunds:write'" in r.text
    assert len(world.refunds) == 0
    agent = world.issue_token("support_agent")
    assert world.call("issue_refund", REFUND, token=agent).ok


def test_a_handler_sees_the_principal(world):
    token = world.issue_token("readonly_bot")
    assert world.call("whoami", {}, token=token).value == {"principal": "readonly_bot"}


def test_tokens_expire_on_the_virtual_clock_and_refresh_renews_them(world):
    token = world.issue_token("support_agent")
    world.clock.advance(15 * 60 - 1)
    assert world.call("get_refund", {"id": "x"}, token=token).error_kind == "not_found"
    world.clock.advance(1)
    expired = world.call("get_refund", {"id": "x"}, token=token)
    assert expired.error_kind == "unauthorized"
    assert "has expired" in expired.text
    renewed = world.call("refresh_token", {}, token=token)
    assert renewed.ok
    assert renewed.value["expires_in"] == 900
    assert world.call("get_refund", {"id": "x"}, token=token).error_kind == "not_found"


def test_every_auth_decision_is_an_event(world):
    token = world.issue_token("readonly_bot")
    world.call("get_refund", {"id": "x"}, token=token)
    world.call("issue_refund", REFUND, token=token)
    world.call("get_refund", {"id": "x"})
    checks = [(e.tool, e.outcome, e.principal, e.scope) for e in world.events
              if type(e).__name__ == "AuthChecked"]  # fmt: skip
    assert checks == [
        ("get_refund", "allowed", "readonly_bot", None),
        ("issue_refund", "insufficient_scope", "readonly_bot", "refunds:write"),
        ("get_refund", "missing_token", None, None),
    ]


def test_token_expired_ends_the_token_mid_session_until_refreshed(world):
    token = world.issue_token("support_agent")
    world.set_faults({"payments.issue_refund": {"script": {2: "token_expired"}}})
    assert world.call("issue_refund", REFUND, token=token).ok
    hit = world.call("issue_refund", REFUND, token=token)
    assert hit.fault == "token_expired"
    assert hit.text.startswith("401 Unauthorized")
    assert len(world.refunds) == 1
    blind = world.call("issue_refund", REFUND, token=token)
    assert blind.error_kind == "unauthorized"
    assert blind.fault is None
    assert world.call("refresh_token", {}, token=token).ok
    assert world.call("issue_refund", REFUND, token=token).ok
    assert len(world.refunds) == 2


def test_revoked_is_a_401_that_refreshing_does_not_fix(world):
    token = world.issue_token("support_agent")
    world.set_faults({"payments.get_refund": {"script": {1: "revoked"}}})
    assert world.call("get_refund", {"id": "x"}, token=token).fault == "revoked"
    refresh = world.call("refresh_token", {}, token=token)
    assert not refresh.ok
    assert "revoked" in refresh.text
    assert "revoked" in world.call("get_refund", {"id": "x"}, token=token).text
    fresh = world.issue_token("support_agent")
    assert world.call("get_refund", {"id": "x"}, token=fresh).error_kind == "not_found"


def test_tokens_and_decisions_replay_and_fork(world, spec):
    token = world.issue_token("support_agent")
    world.set_faults({"payments.issue_refund": {"errors": {"token_expired": 0.5}}})
    for _ in range(6):
        if not world.call("issue_refund", REFUND, token=token).ok:
            world.call("refresh_token", {}, token=token)
    again = replay(spec, decode_events(encode_events(world.events)))
    assert again.state_hash() == world.state_hash()
    fork = world.fork()
    assert fork.call("get_refund", {"id": "1"}, token=token).ok


def test_issuing_tokens_is_deterministic_and_checked(spec, world):
    assert World.from_spec(spec).issue_token("readonly_bot") == world.issue_token("readonly_bot")
    with pytest.raises(ValueError, match=r"unknown principal .readonly.*readonly_bot"):
        world.issue_token("readonly")
    plain = World.from_spec(load_spec("<x>", text="services: {s: {records: {r: {a: int}}}}"))
    with pytest.raises(ValueError, match="has no auth: block"):
        plain.issue_token("anyone")


def test_worlds_without_auth_have_no_tool_no_event_and_no_token():
    plain = World.from_spec(
        load_spec(
            "<x>",
            text="services: {s: {records: {r: {a: int}}, operations: "
            "{get_r: {kind: get, record: r}}}}",
        )
    )
    assert [t.name for t in plain.tools] == ["get_r"]
    plain.call("get_r", {"id": "1"})
    assert not any(type(e).__name__ == "AuthChecked" for e in plain.events)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("auth: {principals: {a: {scopes: [x]}}, token_ttl: soon}\n", "invalid token_ttl 'soon'"),
        ("auth: {principals: {a: {scope: [x]}}}\n", "unknown key 'scope' in principal 'a'"),
        ("auth: {principals: {}}\n", "auth needs principals"),
        ("auth: {principals: {a: {scopes: [x]}}, ttl: 5m}\n", "unknown key 'ttl' in auth"),
    ],
)
def test_auth_block_mistakes(text, message):
    with pytest.raises(WorldFileError, match=message):
        load_spec("<x>", text=text + "services: {s: {records: {r: {a: int}}}}\n")


def test_operation_scopes_must_be_held_by_a_principal():
    text = WORLD.replace("scopes: [refunds:write] }", "scopes: [refund:write] }")
    with pytest.raises(WorldFileError) as info:
        load_spec(
            "<x>", text=text.replace("whoami: { kind: custom, handler: auth_handlers.whoami }", "")
        )
    assert "<x>:12:62:" in str(info.value)
    assert "scope 'refund:write' of operation 'issue_refund' is held by no principal" in str(
        info.value
    )
    assert "did you mean 'refunds:write'?" in str(info.value)


def test_scopes_need_an_auth_block_and_refresh_token_is_reserved():
    base = "services: {s: {records: {r: {a: int}}, operations: {%s}}}\n"
    with pytest.raises(WorldFileError, match="asks for scopes, but the world has no auth"):
        load_spec("<x>", text=base % "get_r: {kind: get, record: r, scopes: [x]}")
    auth = "auth: {principals: {p: {scopes: [x]}}}\n"
    with pytest.raises(WorldFileError, match="tool 'refresh_token' is generated"):
        load_spec("<x>", text=auth + base % "refresh_token: {kind: get, record: r}")


def test_concurrent_calls_carry_their_own_tokens(world):
    agent, bot = world.issue_token("support_agent"), world.issue_token("readonly_bot")
    results = world.call_together(
        [
            ("issue_refund", REFUND, bot),
            ("issue_refund", REFUND, agent),
            ("get_refund", {"id": "1"}),
        ]
    )
    assert [r.error_kind for r in results] == ["insufficient_scope", None, "unauthorized"]


@pytest.mark.parametrize("library", ["asyncio", "trio"])
def test_acall_passes_the_token(world, library):
    token = world.issue_token("support_agent")

    async def main():
        return await world.acall("issue_refund", REFUND, token=token)

    if library == "trio":
        import trio

        result = trio.run(main)
    else:
        import asyncio

        result = asyncio.run(main())
    assert result.ok
