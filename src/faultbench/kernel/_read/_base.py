"""What every pass of the world-file loader shares: the state it builds, and how it reports.

`_WorldLoader` (`_reader.py`) is one class assembled from a mixin per part of the file:
services and records (`_records.py`), operations (`_operations.py`) and seed data
(`_seeds.py`), each on this base. A problem is recorded in the `Document`, never raised,
so one load reports every mistake in the file; the helpers here place it at a key or at its
value.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .._errors import Location
from .._spec import AuthSpec, FieldSpec, OperationSpec, RecordSpec
from .._text import did_you_mean, one_of, short_repr
from ._yaml import Document, Position


class _LoaderBase:
    def __init__(self, doc: Document, base_dir: Path):
        self.doc = doc
        self.base_dir = base_dir
        self.services: dict[str, dict[str, Any]] = {}  # name -> {"body":, "loc":, "records": [...]}
        self.records: dict[str, RecordSpec] = {}
        self.record_at: dict[str, tuple[Any, str]] = {}  # name -> (container, key) in the file
        self.operations: dict[str, OperationSpec] = {}
        self.handlers: dict[str, Any] = {}
        self.tool_at: dict[str, tuple[str, str]] = {}  # tool -> (service, "path:line:col")
        #: tool names as written, valid or not: fault keys naming them are not "unknown"
        self.declared: dict[str, list[str]] = {}
        self.plans: dict[str, dict[str, Any]] = {}  # record -> {"count":, "rows":}
        self.row_where: dict[int, dict[Any, Any]] = {}  # id(clean row) -> the row as written
        self.auth: AuthSpec | None = None  # the `auth:` block, read before the operations
        self.probes: list[dict[Any, Any]] = []  # dicts the loader made and placed in the file
        #: record -> fields declared but not readable (a type typo): reported once, there
        self.unreadable: dict[str, set[str]] = {}

    # -- problems -------------------------------------------------------------------------------

    def at_key(self, container: Any, key: Any, message: str) -> None:
        self.doc.problem(self.doc.key_at(container, key), message)

    def at_value(self, container: Any, key: Any, message: str) -> None:
        self.doc.problem(self.doc.value_at(container, key), message)

    def loc(self, container: Any, key: Any) -> Location:
        line, col = self.doc.key_at(container, key)
        return Location(self.doc.path, line, col)

    def pos(self, loc: Location | None) -> Position:
        """Where a loaded spec element was written ((1, 1) if it was not read from the file)."""
        return (loc.line, loc.col) if loc is not None else (1, 1)

    def where(self, container: Any, key: Any) -> str:
        line, col = self.doc.key_at(container, key)
        return f"{self.doc.path}:{line}:{col}"

    def unknown_keys(self, body: dict[Any, Any], allowed: tuple[str, ...], what: str) -> None:
        for key in body:
            if key not in allowed:
                expected = (
                    f"'{allowed[0]}'" if len(allowed) == 1
                    else f"one of {one_of(allowed)}{did_you_mean(key, allowed)}"
                )  # fmt: skip
                self.at_key(body, key, f"unknown key '{key}' in {what}; expected {expected}")

    def mapping(self, parent: Any, key: Any, what: str, example: str) -> dict[Any, Any] | None:
        value = parent[key]
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.at_value(parent, key, f"{what} must be a mapping; expected e.g. '{example}'")
            return None
        return value

    def named_entry(
        self,
        block: dict[Any, Any],
        name: Any,
        pattern: re.Pattern[str],
        bad_name: str,
        not_mapping: str,
    ) -> dict[Any, Any] | None:
        """One entry of a block keyed by names (services, principals): the name must match
        `pattern` (else `bad_name`, at the key) and the value be a mapping, nothing meaning an
        empty one (else `not_mapping`, at the value). None when either is wrong."""
        if not isinstance(name, str) or not pattern.fullmatch(name):
            self.at_key(block, name, bad_name)
            return None
        value = block[name]
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.at_value(block, name, not_mapping)
            return None
        return value

    def text(self, parent: dict[Any, Any], key: str, what: str) -> str | None:
        value = parent.get(key)
        if value is None or isinstance(value, str):
            return value
        self.at_value(parent, key, f"{what} must be text, not {short_repr(value)}; quote it")
        return None

    def enum_hint(self, field: FieldSpec, value: Any) -> str:
        return did_you_mean(value, field.choices) if field.kind == "enum" else ""
