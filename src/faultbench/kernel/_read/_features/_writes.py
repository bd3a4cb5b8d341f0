"""The loader's pass for what makes writes safe to retry: an operation's
`idempotency: {key:, window:}` (the key a retry repeats, see `_calls/_idempotency.py`) and the
checks that go with a record's `version` field (optimistic concurrency, `_calls/_ops.py`).
"""

from __future__ import annotations

import re
from typing import Any

from ..._spec import IdempotencySpec
from ..._text import short_repr
from .._base import _LoaderBase
from .._durations import DURATION_HELP, parse_duration

IDEMPOTENCY_KEYS = ("key", "window")
#: how long a key is remembered when `window:` is left out (Stripe keeps keys for 24 hours)
DEFAULT_WINDOW_S = 86400.0
#: the argument an update of a record with a `version` field takes for optimistic concurrency
EXPECTED_VERSION = "expected_version"

_ARG = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXAMPLE = "idempotency: {key: idempotency_key, window: 24h}"


def positive_duration(
    loader: _LoaderBase, body: dict[Any, Any], key: str, what: str, zero: str, default: float
) -> float | None:
    """The duration at `body[key]` (`default` when absent), or None after reporting it:
    unreadable, or 0 (which would `zero`)."""
    if key not in body:
        return default
    try:
        seconds = parse_duration(body[key])
    except ValueError:
        loader.at_value(body, key, f"invalid {what} {short_repr(body[key])}; {DURATION_HELP}")
        return None
    if seconds <= 0:
        loader.at_value(body, key, f"{what} 0 {zero}; expected a duration such as 5m")
        return None
    return seconds


class _WritesLoader(_LoaderBase):
    def op_idempotency(
        self, tool: str, kind: str, decl: dict[Any, Any], record: str | None
    ) -> IdempotencySpec | None:
        if "idempotency" not in decl:
            return None
        if kind in ("get", "list"):
            self.at_key(
                decl, "idempotency",
                f"'idempotency' is only for operations that write (create, update, delete, "
                f"custom); '{tool}' is kind: {kind}, and reading twice already changes nothing; "
                "remove it",
            )  # fmt: skip
            return None
        body = self.mapping(decl, "idempotency", "idempotency", _EXAMPLE)
        if body is None:
            return None
        self.unknown_keys(body, IDEMPOTENCY_KEYS, f"the idempotency of '{tool}'")
        key = body.get("key")
        if not isinstance(key, str) or not _ARG.fullmatch(key):
            where = (body, "key") if "key" in body else (decl, "idempotency")
            got = "none" if key is None else short_repr(key)
            self.doc.problem(
                self.doc.value_at(*where) if "key" in body else self.doc.key_at(*where),
                f"the idempotency of '{tool}' needs key: the name of the tool argument that "
                f"carries the key (got {got}); expected e.g. '{_EXAMPLE}'",
            )
            return None
        taken = self._argument_names(kind, record)
        if key in taken:
            self.at_value(
                body, "key",
                f"idempotency key '{key}' of '{tool}' is already an argument of the tool (a "
                f"field of record '{record}'); expected another name, e.g. 'idempotency_key'",
            )  # fmt: skip
            return None
        window = positive_duration(
            self, body, "window", "idempotency window", "remembers no key", DEFAULT_WINDOW_S
        )
        if window is None:
            return None
        return IdempotencySpec(key, window)

    def _argument_names(self, kind: str, record: str | None) -> set[str]:
        if record is None or kind == "custom":
            return set()
        names = {f.name for f in self.records[record].fields}
        if any(f.kind == "version" for f in self.records[record].fields):
            names.add(EXPECTED_VERSION)
        return names
