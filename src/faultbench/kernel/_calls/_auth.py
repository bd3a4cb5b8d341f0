"""Auth: who makes a call, and whether they may (worlds with a top-level `auth:` block).

A call carries an access token (`World.call(..., token=)`; the MCP shells pass the one of
their session: an HTTP `Authorization: Bearer` header, or the token `build_server(world,
principal=)` issued). Tokens are issued by `World.issue_token(principal)` as a
`TokenIssued` event, so a replay has the same ones, and live `token_ttl` of virtual time.

Before anything else of a call (even argument validation, as real APIs answer 401 before
400), the token decides:

    no token                      401 unauthorized     outcome "missing_token"
    a token never issued          401 unauthorized     outcome "unknown_token"
    a revoked token               401 unauthorized     outcome "revoked"
    an expired token              401 unauthorized     outcome "expired"
    a scope of the tool missing   403 insufficient_scope, naming the scope
    otherwise                     the call goes on     outcome "allowed"

Each decision is an `AuthChecked` event. A refused call is rejected like a call with bad
arguments: no fault, and it does not count towards the tool's `k`. The generated
`refresh_token` tool renews the caller's token (expired or not, never a revoked one) for
another `token_ttl`. Faults `token_expired` and `revoked` end the call's token mid-session.
Worlds without `auth:` have none of this: no tool, no event, no argument.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from hashlib import blake2b
from typing import TYPE_CHECKING, Any

from .._errors import InjectedFault, Unauthorized
from .._spec import AUTH_SERVICE, REFRESH_TOOL, OperationSpec
from .._store import AuthChecked, TokenExpired, TokenIssued, TokenRefreshed, TokenRevoked

if TYPE_CHECKING:
    from .._faults import FaultDecision
    from .._spec import WorldSpec
    from .._store import Draft, State

__all__ = ["AUTH_SERVICE", "REFRESH_TOOL", "authorize", "issue", "refusal", "run_refresh"]


def refresh_spec() -> OperationSpec:
    return OperationSpec(
        REFRESH_TOOL, AUTH_SERVICE, "custom",
        description=(
            "Renew the access token this session calls with (after a 401 'token has "
            "expired'). Returns its new expiry. A revoked token cannot be renewed."
        ),
    )  # fmt: skip


def new_token(spec: WorldSpec, seed: int, state: State, principal: str) -> str:
    """A token for `principal`: derived from the seed, the run and how many tokens the world
    has issued, so the same calls give the same tokens (and the same log)."""
    n = len(state.tokens) + 1
    material = f"{seed}:{state.settings.run}:{principal}:{n}".encode()
    return "fbt_" + blake2b(material, digest_size=16).hexdigest()


def issue(d: Draft, spec: WorldSpec, seed: int, principal: str, call_id: str | None = None) -> str:
    """Emit `TokenIssued` for `principal` into `d`; the new token."""
    auth = spec.auth
    if auth is None:
        raise ValueError(
            f"the world {spec.name!r} has no auth: block, so its calls need no token; expected "
            "a world file with 'auth: {principals: {...}}' to issue tokens"
        )
    if principal not in auth.principals:
        from .._text import did_you_mean

        raise ValueError(
            f"unknown principal {principal!r}; expected one of {', '.join(auth.principals)}."
            + did_you_mean(principal, auth.principals, sentence=True)
        )
    state = d.state
    token = new_token(spec, seed, state, principal)
    expires = _later(state.clock, auth.token_ttl_s)
    d.emit(
        TokenIssued(
            seq=state.seq, at=state.clock, token=token, principal=principal,
            expires_at=expires, call_id=call_id,
        )
    )  # fmt: skip
    return token


def _later(now: datetime, seconds: float) -> datetime:
    try:
        return now + timedelta(seconds=seconds)
    except OverflowError:
        return datetime.max.replace(tzinfo=now.tzinfo)


def authorize(
    spec: WorldSpec, state: State, op: OperationSpec, token: str | None
) -> tuple[str, str | None, str | None]:
    """(outcome, principal, missing scope) of a call to `op` with `token`."""
    if token is None:
        return "missing_token", None, None
    entry = state.tokens.get(token)
    if entry is None:
        return "unknown_token", None, None
    principal = entry.principal
    if entry.revoked:
        return "revoked", principal, None
    if op.name == REFRESH_TOOL and op.service == AUTH_SERVICE:
        return "allowed", principal, None  # an expired token may be renewed
    if state.clock >= entry.expires_at:
        return "expired", principal, None
    assert spec.auth is not None
    held = spec.auth.principals.get(principal, ())
    for scope in op.scopes:
        if scope not in held:
            return "insufficient_scope", principal, scope
    return "allowed", principal, None


def checked(d: Draft, call_id: str, tool: str, outcome: str, principal: str | None,
            scope: str | None) -> None:  # fmt: skip
    state = d.state
    d.emit(
        AuthChecked(
            seq=state.seq, at=state.clock, call_id=call_id, tool=tool, outcome=outcome,
            principal=principal, scope=scope,
        )
    )  # fmt: skip


def refusal(
    op: OperationSpec, outcome: str, principal: str | None, scope: str | None
) -> Unauthorized:
    """What the agent reads for a refused call."""
    name = op.qualname
    if outcome == "insufficient_scope":
        return Unauthorized(
            f"403 Forbidden: insufficient_scope: {name} needs the scope {scope!r}, which "
            f"{principal!r} does not have; expected a token of a principal with that scope",
            kind="insufficient_scope",
        )
    text = {
        "missing_token": "no access token was sent; expected 'Authorization: Bearer <token>'",
        "unknown_token": "the access token is not one this server issued",
        "revoked": "the access token has been revoked; refreshing it will not help: a new "
        "token must be issued",
        "expired": "the access token has expired; renew it with the refresh_token tool, then retry",
    }[outcome]
    return Unauthorized(f"401 Unauthorized: {name}: {text}")


def run_refresh(tx: Any, args: dict[str, Any]) -> Any:
    """The `refresh_token` tool: renew the caller's token for another `token_ttl`."""
    token = tx.token
    spec = tx.spec
    assert token is not None
    assert spec.auth is not None
    state = tx.state
    expires = _later(state.clock, spec.auth.token_ttl_s)
    tx.emit(
        TokenRefreshed(
            seq=state.seq, at=state.clock, token=token, expires_at=expires, call_id=tx.call_id
        )
    )
    return {"token_type": "Bearer", "expires_at": expires.isoformat().replace("+00:00", "Z"),
            "expires_in": int(spec.auth.token_ttl_s)}  # fmt: skip


def token_fault(cx: Any, d: Draft, flight: Any, decision: FaultDecision) -> None:
    """The executor of effect "token" (`_effects.EFFECTS`): the call's token expires now
    (`token_expired`) or is revoked (`revoked`); the call does not run."""
    token = flight.token
    state = d.state
    if token is not None and token in state.tokens:
        event = TokenRevoked if decision.kind == "revoked" else TokenExpired
        d.emit(event(seq=state.seq, at=state.clock, token=token, call_id=flight.call_id))
    flight.error = InjectedFault(decision.message, kind=decision.kind)


def token_expiry(world: Any, token: str) -> datetime | None:
    """When `token` of `world` (a World) expires, in virtual time; None if it was never
    issued. For the shells, which print or answer it next to the token."""
    entry = world.snapshot().state.tokens.get(token)
    return None if entry is None else entry.expires_at
