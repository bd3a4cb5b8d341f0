"""The loader's pass for effects that happen later: an operation's `set:` and `then:`, and
the top-level `events:` feed.

    issue_refund:
      kind: create
      record: refund
      set: { status: pending }
      then: { after: [30s, 5m], set: { status: succeeded }, or: { p: 0.05, set: { status: failed } } }
    events:
      refund.updated: { record: refund, on: [update] }

Every value is checked against the record's fields here (an unknown field, a wrong enum
member, a `then:` on a read), so a scheduled effect cannot fail when it fires.
"""

from __future__ import annotations

import re
from typing import Any

from ..._spec import BranchSpec, FeedSpec, OperationSpec, ThenSpec, _coerce, _expected
from ..._text import did_you_mean, one_of, short_repr
from .._base import _LoaderBase
from .._durations import parse_duration

THEN_KEYS = ("after", "set", "or")
BRANCH_KEYS = ("p", "set")
FEED_KEYS = ("record", "on")
FEED_ON = ("create", "update", "delete")
#: the generated tool that lists the feed
FEED_TOOL = "list_events"
_WRITES = ("create", "update")
_FEED_TYPE = re.compile(r"[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)+")
_THEN_EXAMPLE = "then: {after: [30s, 5m], set: {status: succeeded}}"


class _EffectsLoader(_LoaderBase):
    # -- set: ------------------------------------------------------------------------------

    def op_set(
        self, tool: str, kind: str, decl: dict[Any, Any], record: str | None
    ) -> dict[str, Any]:
        if "set" not in decl:
            return {}
        if kind not in _WRITES:
            self.at_key(
                decl, "set",
                f"'set' is only for kind: create or update (this operation is kind: {kind}); "
                + ("a handler writes its own fields" if kind == "custom" else "remove it"),
            )  # fmt: skip
            return {}
        return self.field_values(decl, "set", record, f"set of operation '{tool}'")

    def field_values(
        self, parent: dict[Any, Any], key: Any, record: str | None, what: str
    ) -> dict[str, Any]:
        """A `set:` mapping: field -> value, each checked against `record`'s field."""
        body = parent[key]
        if not isinstance(body, dict) or not body:
            self.at_value(
                parent, key,
                f"{what} must be a mapping of field -> value, not {short_repr(body)}; "
                "expected e.g. {status: pending}",
            )  # fmt: skip
            return {}
        if record is None:
            return {}
        rspec = self.records[record]
        names = [f.name for f in rspec.fields if f.name != "id"]
        out: dict[str, Any] = {}
        for name, value in body.items():
            f = rspec.field(name) if isinstance(name, str) and name != "id" else None
            if f is None:
                self.at_key(
                    body, name,
                    f"{what}: '{name}' is not a field of record '{record}' (or is its id, "
                    f"which never changes); expected one of {one_of(names)}"
                    f"{did_you_mean(str(name), names)}",
                )  # fmt: skip
                continue
            ok, coerced = _coerce(f, value)
            if not ok:
                hint = did_you_mean(str(value), f.choices) if f.kind == "enum" else ""
                self.at_value(
                    body, name,
                    f"{what}: {record}.{name} cannot be {short_repr(value)}; expected "
                    f"{_expected(f)}{hint}",
                )  # fmt: skip
                continue
            out[name] = coerced
        return out

    # -- then: -----------------------------------------------------------------------------

    def op_then(
        self, tool: str, kind: str, decl: dict[Any, Any], record: str | None
    ) -> ThenSpec | None:
        if "then" not in decl:
            return None
        if kind not in _WRITES:
            fix = (
                "schedule from the handler with world.schedule(after=..., record=..., id=..., "
                "set=...)"
                if kind == "custom"
                else "a read changes nothing to follow up; put it on the create or update"
            )
            self.at_key(
                decl, "then",
                f"'then' is only for kind: create or update (this operation is kind: {kind}); "
                f"{fix}",
            )  # fmt: skip
            return None
        body = decl["then"]
        if not isinstance(body, dict):
            self.at_value(
                decl, "then",
                f"then must be a mapping, not {short_repr(body)}; expected e.g. {_THEN_EXAMPLE}",
            )  # fmt: skip
            return None
        before = len(self.doc.problems)
        self.unknown_keys(body, THEN_KEYS, f"then of operation '{tool}'")
        for needed in ("after", "set"):
            if needed not in body:
                self.at_key(
                    decl, "then",
                    f"then of operation '{tool}' has no '{needed}'; expected e.g. {_THEN_EXAMPLE}",
                )  # fmt: skip
        if len(self.doc.problems) > before:
            return None
        after = self.after(body)
        changes = self.field_values(body, "set", record, f"then of operation '{tool}'")
        branch = self.branch(tool, body, record) if "or" in body else None
        if len(self.doc.problems) > before or after is None:
            return None
        return ThenSpec(after, changes, branch, loc=self.loc(decl, "then"))

    def after(self, body: dict[Any, Any]) -> tuple[float, float] | None:
        value = body["after"]
        items = value if isinstance(value, list) else [value]
        if not 1 <= len(items) <= 2:
            self.at_value(
                body, "after",
                f"after must be a duration or a range [min, max], not {short_repr(value)}; "
                "expected e.g. after: 2m or after: [30s, 5m]",
            )  # fmt: skip
            return None
        seconds: list[float] = []
        for i, item in enumerate(items):
            try:
                seconds.append(parse_duration(item))
            except ValueError as exc:
                if isinstance(value, list):
                    self.at_value(value, i, f"after: {exc}")
                else:
                    self.at_value(body, "after", f"after: {exc}")
        if len(seconds) != len(items):
            return None
        lo, hi = seconds[0], seconds[-1]
        if lo > hi:
            self.at_value(
                body, "after",
                f"after range {short_repr(value)} runs backwards; expected [min, max] with "
                "min <= max, e.g. [30s, 5m]",
            )  # fmt: skip
            return None
        return lo, hi

    def branch(self, tool: str, body: dict[Any, Any], record: str | None) -> BranchSpec | None:
        value = body["or"]
        example = "or: {p: 0.05, set: {status: failed}}"
        if not isinstance(value, dict):
            self.at_value(
                body,
                "or",
                f"or must be a mapping, not {short_repr(value)}; expected e.g. {example}",
            )
            return None
        before = len(self.doc.problems)
        self.unknown_keys(value, BRANCH_KEYS, f"or of operation '{tool}'")
        for needed in BRANCH_KEYS:
            if needed not in value:
                self.at_key(body, "or", f"or has no '{needed}'; expected e.g. {example}")
        if len(self.doc.problems) > before:
            return None
        p = value["p"]
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0 <= p <= 1:
            self.at_value(value, "p", f"p must be a probability from 0 to 1, not {short_repr(p)}")
            return None
        changes = self.field_values(value, "set", record, f"or of operation '{tool}'")
        return BranchSpec(float(p), changes) if len(self.doc.problems) == before else None

    # -- events: ---------------------------------------------------------------------------

    def feeds(self, top: dict[Any, Any]) -> dict[str, FeedSpec]:
        if "events" not in top:
            return {}
        example = "events: {refund.updated: {record: refund, on: [update]}}"
        body = self.mapping(top, "events", "events", example)
        if not body:
            return {}
        if FEED_TOOL in self.tool_at:
            svc, where = self.tool_at[FEED_TOOL]
            self.at_key(
                top, "events",
                f"an event feed adds the tool '{FEED_TOOL}', but service '{svc}' already "
                f"defines one at {where}; rename that operation",
            )  # fmt: skip
            return {}
        out: dict[str, FeedSpec] = {}
        for name, decl in body.items():
            if not isinstance(name, str) or not _FEED_TYPE.fullmatch(name):
                self.at_key(
                    body, name,
                    f"invalid event type {short_repr(name)}; expected dotted words such as "
                    "refund.updated or charge.refunded",
                )  # fmt: skip
                continue
            if not isinstance(decl, dict):
                self.at_value(
                    body, name,
                    f"event type '{name}' must be a mapping; expected e.g. "
                    "{record: refund, on: [update]}",
                )  # fmt: skip
                continue
            before = len(self.doc.problems)
            self.unknown_keys(decl, FEED_KEYS, f"event type '{name}'")
            record = self.feed_record(body, name, decl)
            on = self.feed_on(decl)
            if len(self.doc.problems) == before and record is not None:
                out[name] = FeedSpec(name, record, on, loc=self.loc(body, name))
        return out

    def feed_tool(self, top: dict[Any, Any], feeds: dict[str, FeedSpec]) -> None:
        """Add `list_events` to the service of the first record the feed follows."""
        svc = self.records[next(iter(feeds.values())).record].service
        self.operations[FEED_TOOL] = OperationSpec(
            FEED_TOOL, svc, "events", filter=tuple(feeds), loc=self.loc(top, "events")
        )
        self.services[svc]["operations"].append(FEED_TOOL)
        self.declared.setdefault(svc, []).append(FEED_TOOL)
        self.tool_at[FEED_TOOL] = (svc, self.where(top, "events"))

    def feed_record(self, body: dict[Any, Any], name: str, decl: dict[Any, Any]) -> str | None:
        record = decl.get("record")
        expected = (
            f"expected one of {one_of(self.records)}"
            if self.records
            else ("the world declares no records")
        )
        if record is None:
            self.at_key(body, name, f"event type '{name}' has no record; {expected}")
            return None
        if not isinstance(record, str) or record not in self.records:
            hint = did_you_mean(record, self.records) if isinstance(record, str) else ""
            self.at_value(
                decl, "record",
                f"event type '{name}' names an unknown record {short_repr(record)}; "
                f"{expected}{hint}",
            )  # fmt: skip
            return None
        return record

    def feed_on(self, decl: dict[Any, Any]) -> tuple[str, ...]:
        if "on" not in decl:
            return FEED_ON
        value = decl["on"]
        items = value if isinstance(value, list) else [value]
        out: list[str] = []
        for i, item in enumerate(items):
            if item not in FEED_ON:
                hint = did_you_mean(item, FEED_ON) if isinstance(item, str) else ""
                if isinstance(value, list):
                    self.at_value(
                        value, i,
                        f"unknown change {short_repr(item)}; expected one of {one_of(FEED_ON)}{hint}",
                    )  # fmt: skip
                else:
                    self.at_value(
                        decl, "on",
                        f"unknown change {short_repr(item)}; expected a list of "
                        f"{one_of(FEED_ON)}{hint}",
                    )  # fmt: skip
                continue
            out.append(item)
        if not items:
            self.at_value(decl, "on", f"on is empty; expected some of {one_of(FEED_ON)}")
        return tuple(dict.fromkeys(out))
