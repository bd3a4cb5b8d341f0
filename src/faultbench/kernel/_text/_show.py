"""Agent input as error messages echo it: short, and safe for any value.

An agent can send anything: a megabyte string, an id of a million characters, arguments nested
thousands of levels deep. Messages that quote what it sent must stay readable and small, and
rendering must never be the thing that fails (a RecursionError here would turn the agent's
mistake into an `internal_error`). So rendering stops at a depth (deeper containers read
`[...]` / `{...}`) and at a length (`...`), and never walks more of the value than it prints.

Also `format_value`, the compact notation diffs and traces write values in, and `iso_time`:
the one way every message, log line, control API answer and CLI table writes
a virtual time.
"""

from __future__ import annotations

import functools
import json
import math
import re
import reprlib
from collections.abc import Mapping, Set
from datetime import datetime, timedelta
from typing import Any

import msgspec

#: At most this many characters of a value in a message (plus a size note for long ones).
SHOW_MAX = 200
#: Containers nested deeper than this read `[...]` / `{...}`.
SHOW_DEPTH = 3


@functools.lru_cache(maxsize=64)
def iso_time(dt: datetime) -> str:
    """ISO 8601, UTC written `Z`: `2025-06-01T00:00:00Z`; other offsets as `isoformat` gives
    them. Cached: a virtual clock that only moves on latency gives call after call the same
    few times, and `isoformat` of an aware datetime costs ~1 us."""
    if dt.tzinfo is not None and dt.utcoffset() == timedelta(0):
        return dt.replace(tzinfo=None).isoformat() + "Z"
    return dt.isoformat()


class _Full(Exception):
    """The rendering reached its length limit: what was written so far is enough."""


def show_value(value: Any, limit: int = SHOW_MAX) -> str:
    """`value` as the agent wrote it (compact JSON when possible), at most ~`limit` chars."""
    parts: list[str] = []
    size = 0

    def put(text: str) -> None:
        nonlocal size
        parts.append(text)
        size += len(text)
        if size > limit:
            raise _Full

    def walk(v: Any, depth: int) -> None:
        if isinstance(v, Mapping):
            if not v:
                put("{}")
            elif depth >= SHOW_DEPTH:
                put("{...}")
            else:
                put("{")
                for i, (k, x) in enumerate(v.items()):
                    put("," if i else "")
                    put(_scalar(k if isinstance(k, str) else str(k), limit) + ":")
                    walk(x, depth + 1)
                put("}")
        elif isinstance(v, list | tuple | Set):
            if not v:
                put("[]")
            elif depth >= SHOW_DEPTH:
                put("[...]")
            else:
                put("[")
                for i, x in enumerate(v):
                    put("," if i else "")
                    walk(x, depth + 1)
                put("]")
        else:
            put(_scalar(v, limit))

    try:
        walk(value, 0)
    except _Full:
        text = "".join(parts)[: max(limit - 3, 1)] + "..."
        return text + _size_note(value)
    return "".join(parts)


def show_repr(value: Any, limit: int = SHOW_MAX) -> str:
    """`repr(value)` for messages in Python's quoting (`'abc'`), at most ~`limit` chars."""
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        quoted = repr(value[:limit])
        return f"{quoted[:-1]}...{quoted[-1]}{_size_note(value)}"
    return show_value(value, limit)


_SHORT = reprlib.Repr()  # (keyword arguments only from Python 3.12)
_SHORT.maxlevel = 3
_SHORT.maxdict = _SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxset = 8
_SHORT.maxstring = _SHORT.maxother = 80


def short_repr(value: Any) -> str:
    """`repr(value)` for a world file's messages: the same text for a small value, cut short
    (and never walked past what is shown) for a big or deep one."""
    try:
        return _SHORT.repr(value)
    except Exception:  # an integer past Python's digit limit, a broken __repr__
        return f"<{type(value).__name__}>"


def loggable(value: Any) -> Any:
    """JSON-typed `value` as it can go into the log: text with lone surrogates (which UTF-8
    cannot encode, so no event holding them could be written) gets them as `\\udXXX`."""
    try:
        msgspec.json.encode(value)
    except UnicodeEncodeError:
        return _no_surrogates(value)
    except Exception:  # not JSON-typed: not ours to judge here
        return value
    return value


def _no_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_no_surrogates(k): _no_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_surrogates(v) for v in value]
    return value


def show_name(name: str, limit: int = 60) -> str:
    """An argument or tool name the agent made up, cut to `limit` characters."""
    return name if len(name) <= limit else name[: limit - 3] + "..."


def _size_note(value: Any) -> str:
    if isinstance(value, str):
        return f" ({len(value)} characters)"
    if isinstance(value, Mapping):
        return f" (an object of {len(value)} keys)"
    if isinstance(value, list | tuple | Set):
        return f" (an array of {len(value)} items)"
    return ""


def _scalar(v: Any, limit: int) -> str:
    if isinstance(v, str):
        # Only what can be shown is encoded: a 1 MB string costs as much as a short one.
        return _json(v[: limit + 1]) or repr(v[: limit + 1])
    if isinstance(v, bool) or v is None:
        return "true" if v is True else "false" if v is False else "null"
    if isinstance(v, int):
        try:
            return str(v)
        except ValueError:  # over sys.get_int_max_str_digits() (4300 by default)
            return f"<an integer of about {int(v.bit_length() * math.log10(2)) + 1} digits>"
    if isinstance(v, float):
        if not math.isfinite(v):
            return repr(v).replace("inf", "Infinity").replace("nan", "NaN")
        return _json(v) or repr(v)
    text = _json(v)
    if text is None:
        try:
            text = repr(v)
        except Exception:  # a broken __repr__ (or a cyclic one) must not fail the message
            text = f"<{type(v).__name__}>"
    return text


def _json(v: Any) -> str | None:
    try:
        return msgspec.json.encode(v).decode()
    except Exception:  # not JSON (or too deep, for a Struct): the caller falls back to repr
        return None


# ---------------------------------------------------------------------------------------------
# Rendering values. One compact, Python-flavoured notation shared by diffs and traces:
# strings in double quotes, None/True/False, datetimes as ISO 8601 with a Z, mappings with
# bare identifier keys: `{order_id: "1", amount: 30.0}`.
# ---------------------------------------------------------------------------------------------

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def format_value(value: Any, limit: int | None = None) -> str:
    """Render a value compactly; `limit` truncates the result with an ellipsis."""
    text = _fmt(value)
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    return text


def _fmt(v: Any) -> str:
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if v is None or isinstance(v, bool | int | float):
        return repr(v)
    if isinstance(v, datetime):
        return iso_time(v)
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{format_key(k)}: {_fmt(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    if isinstance(v, msgspec.Struct):
        return _fmt(msgspec.to_builtins(v))
    return repr(v)


def format_key(k: Any) -> str:
    return k if isinstance(k, str) and _IDENT.match(k) else _fmt(k)
