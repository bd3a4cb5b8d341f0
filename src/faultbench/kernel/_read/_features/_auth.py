"""The loader's pass for who may call what: the top-level `auth:` block (principals with
their scopes, a token lifetime) and an operation's `scopes:`. A scope an operation asks for
must be one some principal holds, or no caller could ever use the tool.
"""

from __future__ import annotations

import re
from typing import Any

from ..._spec import AUTH_SERVICE, REFRESH_TOOL, AuthSpec
from ..._text import did_you_mean, one_of, short_repr
from .._base import _LoaderBase
from ._writes import positive_duration

AUTH_KEYS = ("principals", "token_ttl")
PRINCIPAL_KEYS = ("scopes",)
#: a token's lifetime when `token_ttl:` is left out
DEFAULT_TOKEN_TTL_S = 900.0

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
_SCOPE = re.compile(r"[!-~]{1,128}")  # RFC 6749's scope-token: printable ASCII, no space
_EXAMPLE = "auth: {principals: {support_agent: {scopes: [orders:read]}}, token_ttl: 15m}"


class _AuthLoader(_LoaderBase):
    def auth_block(self, top: dict[Any, Any]) -> AuthSpec | None:
        if "auth" not in top:
            return None
        body = self.mapping(top, "auth", "auth", _EXAMPLE)
        if body is None:
            return None
        self.unknown_keys(body, AUTH_KEYS, "auth")
        principals: dict[str, tuple[str, ...]] = {}
        raw = body.get("principals")
        if not isinstance(raw, dict) or not raw:
            where = (
                self.doc.value_at(body, "principals") if "principals" in body else self.doc.at(body)
            )
            self.doc.problem(
                where,
                f"auth needs principals: who may call the world's tools, each with its scopes; "
                f"expected e.g. '{_EXAMPLE}'",
            )
            raw = {}
        for name in raw:
            decl = self.named_entry(
                raw, name, _NAME,
                f"invalid principal name {short_repr(name)}; expected letters, digits, '_', '.' "
                "or '-' (up to 64), e.g. support_agent",
                f"principal '{name}' must be a mapping; expected e.g. "
                "'{scopes: [orders:read, refunds:write]}'",
            )  # fmt: skip
            if decl is None:
                continue
            self.unknown_keys(decl, PRINCIPAL_KEYS, f"principal '{name}'")
            principals[name] = self.scope_list(decl, f"principal '{name}'") or ()
        ttl = positive_duration(
            self, body, "token_ttl", "token_ttl", "makes every token expired at once",
            DEFAULT_TOKEN_TTL_S,
        )  # fmt: skip
        return AuthSpec(principals, ttl or DEFAULT_TOKEN_TTL_S, loc=self.loc(top, "auth"))

    def scope_list(self, decl: dict[Any, Any], what: str) -> tuple[str, ...] | None:
        if "scopes" not in decl:
            return None
        value = decl["scopes"]
        if value is None:
            return ()
        if not isinstance(value, list):
            self.at_value(
                decl, "scopes",
                f"scopes of {what} must be a list, not {short_repr(value)}; expected e.g. "
                "scopes: [orders:read, refunds:write]",
            )  # fmt: skip
            return None
        out: list[str] = []
        for i, scope in enumerate(value):
            if not isinstance(scope, str) or not _SCOPE.fullmatch(scope):
                self.at_value(
                    value, i,
                    f"invalid scope {short_repr(scope)} in {what}; expected printable text "
                    "without spaces, e.g. orders:read",
                )  # fmt: skip
                continue
            out.append(scope)
        return tuple(dict.fromkeys(out))

    def op_scopes(self, tool: str, decl: dict[Any, Any], auth: AuthSpec | None) -> tuple[str, ...]:
        if "scopes" not in decl:
            return ()
        if auth is None:
            self.at_key(
                decl, "scopes",
                f"operation '{tool}' asks for scopes, but the world has no auth: block, so "
                f"no caller has any; add one at the top level, e.g. '{_EXAMPLE}', or remove "
                "scopes",
            )  # fmt: skip
            return ()
        scopes = self.scope_list(decl, f"operation '{tool}'") or ()
        held = {s for ss in auth.principals.values() for s in ss}
        value = decl["scopes"]
        for i, scope in enumerate(value if isinstance(value, list) else ()):
            if isinstance(scope, str) and scope in scopes and scope not in held:
                self.at_value(
                    value, i,
                    f"scope '{scope}' of operation '{tool}' is held by no principal, so no "
                    f"caller could use the tool; expected a scope a principal holds "
                    f"({one_of(sorted(held))}), or add it to a principal's scopes"
                    f"{did_you_mean(scope, sorted(held))}",
                )  # fmt: skip
        return scopes

    def check_generated_tools(self) -> None:
        """A world with `auth:` gets a `refresh_token` tool: no operation may take its name,
        and no service the name of its service."""
        if self.auth is None:
            return
        if REFRESH_TOOL in self.tool_at:
            svc, where = self.tool_at[REFRESH_TOOL]
            line, col = (int(x) for x in where.rsplit(":", 2)[1:])
            self.doc.problem(
                (line, col),
                f"tool '{REFRESH_TOOL}' is generated for worlds with auth: (it renews the "
                f"caller's token); expected another name for the operation of service '{svc}'",
            )
        if AUTH_SERVICE in self.services:
            line, col = self.pos(self.services[AUTH_SERVICE]["loc"])
            self.doc.problem(
                (line, col),
                f"service name '{AUTH_SERVICE}' is taken by the tools of auth: "
                f"({AUTH_SERVICE}.{REFRESH_TOOL}); expected another service name",
            )
