"""World files -> `WorldSpec`: strict, and every mistake reported at once.

The loader reads YAML with positions (`_yaml.py`), validates each level against the keys it
knows, and collects problems in the document instead of raising at the first one, so a user
fixes a file in one round: `WorldFileError` lists them all, each as `path:line:col: what is
wrong; expected ...; did you mean '...'?`. This module holds the entry points and the top
level of the file; `_WorldLoader` is assembled from one pass per part of it:

    _read/_base.py         shared state, problem helpers
    _read/_records.py      services, records, fields, refs, world accessors
    _read/_operations.py   operations (and custom handler imports, via `_spec/_handlers.py`)
    _read/_seeds.py        seed plans and explicit rows
    _spec/_fieldtypes.py   field type syntax and value coercion

The fault block lives in `_read/_faultblock.py`, the merge of rules in `_faults/_rules.py`;
their entry points are re-exported here.

    load_spec("world.yaml")            -> WorldSpec
    parse_faults(mapping_or_text, spec) -> {key: FaultRule}
    merged_rule(faults, "payments", "issue_refund") -> FaultRule
    parse_duration("2h")                -> 7200.0
    render_faults({key: FaultRule})     -> the `faults:` block parse_faults reads back
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._errors import SourceError, WorldFileError
from .._faults import FaultRule, merged_rule
from .._spec import (
    CHECK_KEYS,
    DEFAULT_CLOCK_START,
    Checks,
    OperationSpec,
    RecordSpec,
    SeedPlan,
    ServiceSpec,
    WebhookSpec,
    WorldSpec,
    _to_datetime,
    operation_args,
    parse_checks,
)
from .._text import did_you_mean, short_repr
from ._durations import parse_duration
from ._faultblock import (
    _RuleParser,
    check_merged_probabilities,
    render_faults,
)
from ._features._webhooks import WEBHOOKS_TARGET, _WebhooksLoader
from ._files import read_bounded
from ._operations import _OperationsLoader
from ._records import _RecordsLoader
from ._seeds import _SeedLoader
from ._yaml import Document, parse_yaml

__all__ = ["load_spec", "merged_rule", "parse_duration", "parse_faults", "render_faults"]

#: world files are read up to this size
MAX_FILE_BYTES = 64 * 2**20
#: the earliest clock start: seed data reaches back 30 days, fault lags up to 10 years
CLOCK_MIN = datetime(1000, 1, 1, tzinfo=UTC)

TOP_KEYS = (
    "name", "seed", "clock", "description", "services", "faults", "auth", "events", "webhooks",
    *CHECK_KEYS,
)  # fmt: skip


def load_spec(
    source: str | os.PathLike[str], *, text: str | None = None, raw: bytes | None = None
) -> WorldSpec:
    """Load and validate a world file. With `text`, parse that instead of reading `source`,
    which then only names the file in messages and anchors handler imports; with `raw`, the
    file's bytes as `read_world_file` read them (replay checks their digest first).
    Raises WorldFileError listing every problem, or OSError if the file cannot be read."""
    display = os.fspath(source)
    if text is None:
        if raw is None:
            raw = read_world_file(display)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WorldFileError(_not_utf8(display, raw, exc)) from None
        path: str | None = os.path.abspath(display)
    else:
        raw = text.encode("utf-8")
        path = None
    doc = parse_yaml(text, display)
    base_dir = Path(os.path.abspath(display)).parent
    stem = "world" if display.startswith("<") else Path(display).stem
    return _WorldLoader(doc, base_dir).build(
        path=path, default_name=stem, digest=hashlib.sha256(raw).hexdigest()
    )


def read_world_file(path: str) -> bytes:
    """The bytes of a world file, refused past `MAX_FILE_BYTES` without reading the rest."""
    # bounded, and regular files only: `faultbench check /dev/zero` must end, a FIFO must
    # not block
    raw = read_bounded(path, MAX_FILE_BYTES)
    if len(raw) > MAX_FILE_BYTES:
        raise WorldFileError(
            SourceError(
                path, 1, 1,
                f"larger than {MAX_FILE_BYTES // 2**20} MiB; expected a world file (YAML "
                "text); generate big tables with seed counts instead of writing rows out",
            )
        )  # fmt: skip
    return raw


def parse_faults(
    obj: Mapping[str, Any] | str, spec: WorldSpec, *, source: str = "<faults>"
) -> dict[str, FaultRule]:
    """Parse a `faults:` block on its own (YAML text or plain Python values) against the
    services of `spec`, with the same validation as in a world file."""
    doc = parse_yaml(obj, source) if isinstance(obj, str) else Document(obj, source, {})
    block = doc.data
    if isinstance(block, dict) and set(block) == {"faults"}:
        block = block["faults"]
    services = {s.name: s.operations for s in spec.services}
    op_kinds: dict[str, str] = {op.qualname: op.kind for op in spec.operations.values()}
    _add_webhooks_target(spec.webhooks, services, op_kinds)
    paged = {op.qualname for op in spec.operations.values() if op.page is not None}
    args = tool_args(spec.operations, spec.records)
    parser = _RuleParser(doc, services, op_kinds, args, paged)
    rules = parser.parse_block(block, {"faults": block}, "faults")
    check_merged_probabilities(doc, rules, services)
    doc.raise_problems()
    return rules


def _add_webhooks_target(
    webhooks: WebhookSpec | None,
    services: dict[str, tuple[str, ...]],
    op_kinds: dict[str, str],
) -> None:
    """Webhook deliveries take fault rules as an operation of the feed's service would:
    `<service>.webhooks`, for the feed kinds only (`_faultblock.kinds_fit`)."""
    if webhooks is None or WEBHOOKS_TARGET in services[webhooks.service]:
        return
    services[webhooks.service] = (*services[webhooks.service], WEBHOOKS_TARGET)
    op_kinds[f"{webhooks.service}.{WEBHOOKS_TARGET}"] = WEBHOOKS_TARGET


def tool_args(
    operations: Mapping[str, OperationSpec], records: dict[str, RecordSpec]
) -> dict[str, tuple[str, ...]]:
    """Each tool's argument names, which the tool-surface fault kinds may name."""
    return {
        name: tuple(a.name for a in operation_args(op, records)) for name, op in operations.items()
    }


def _not_utf8(path: str, raw: bytes, exc: UnicodeDecodeError) -> SourceError:
    line_start = raw.rfind(b"\n", 0, exc.start) + 1
    line = raw.count(b"\n", 0, exc.start) + 1
    col = len(raw[line_start : exc.start].decode("utf-8", "replace")) + 1
    return SourceError(
        path, line, col,
        f"not UTF-8 text: byte 0x{raw[exc.start]:02x} cannot be decoded; expected a YAML file "
        "encoded as UTF-8; save it as UTF-8 (is this a binary file?)",
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# The world
# ---------------------------------------------------------------------------------------------


class _WorldLoader(_RecordsLoader, _OperationsLoader, _SeedLoader, _WebhooksLoader):
    """The top level of a world file; `build` runs the passes in the order their names are
    needed: records, then operations, seed and faults, which all name records or tools."""

    def build(self, *, path: str | None, default_name: str, digest: str) -> WorldSpec:
        doc = self.doc
        top = doc.data
        if not isinstance(top, dict):
            got = (
                "empty" if top is None
                else "a list" if isinstance(top, list)
                else f"the single value {short_repr(top)}"
            )  # fmt: skip
            doc.problem(
                doc.at(top) if isinstance(top, list) else (1, 1),
                f"the world file is {got}; expected a mapping with a 'services:' key, e.g. "
                "'services: {orders: {records: {order: {status: str}}}}'",
            )
            doc.raise_problems()
        self.unknown_keys(top, TOP_KEYS, "the world file")

        name = self.text(top, "name", "name") or default_name
        seed = top.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool):
            self.at_value(
                top,
                "seed",
                f"seed must be a whole number, not {short_repr(seed)}; e.g. seed: 42",
            )
            seed = 0
        clock_start = self.clock(top)
        description = self.text(top, "description", "description")

        if "services" not in top:
            # `servces:` was already reported with "did you mean 'services'?"
            if not any(did_you_mean(k, TOP_KEYS) == "; did you mean 'services'?" for k in top):
                doc.problem(
                    doc.at(top),
                    "missing 'services:'; expected e.g. 'services: {orders: {records: "
                    "{order: {status: str}}}}'",
                )
            doc.raise_problems()
        services = self.mapping(top, "services", "services", "services: {orders: {...}}") or {}
        for svc, body in services.items():
            self.service_records(services, svc, body)
        self.resolve_refs()
        accessors = self.accessors()
        self.auth = self.auth_block(top)
        for svc, info in self.services.items():
            self.service_operations(svc, info["body"])
        self.check_generated_tools()
        feeds = self.feeds(top)
        if feeds:
            self.feed_tool(top, feeds)
        webhooks = self.webhooks(top, feeds)
        for svc, info in self.services.items():
            self.service_seed(svc, info["body"])
        self.check_seed_refs()

        ops_by_service = {s: tuple(self.declared.get(s, ())) for s in self.services}
        faults: dict[str, FaultRule] = {}
        if "faults" in top:
            op_kinds: dict[str, str] = {op.qualname: op.kind for op in self.operations.values()}
            _add_webhooks_target(webhooks, ops_by_service, op_kinds)
            paged = {op.qualname for op in self.operations.values() if op.page is not None}
            args = tool_args(self.operations, self.records)
            parser = _RuleParser(doc, ops_by_service, op_kinds, args, paged)
            faults = parser.parse_block(top["faults"], top, "faults")
            check_merged_probabilities(doc, faults, ops_by_service)
        checks = self.checks(top)
        doc.raise_problems()

        return WorldSpec(
            name=name,
            path=path,
            seed=seed,
            clock_start=clock_start,
            services=tuple(
                ServiceSpec(
                    svc,
                    tuple(i["records"]),
                    tuple(i["operations"]),
                    loc=i["loc"],
                    description=i["description"],
                )
                for svc, i in self.services.items()
            ),
            records=self.records,
            operations=self.operations,
            faults=faults,
            seed_plans=tuple(
                SeedPlan(rec, p["count"], tuple(p["rows"]))
                for rec in self.records
                if (p := self.plans.get(rec)) and (p["count"] or p["rows"])
            ),
            accessors=accessors,
            handlers=self.handlers,
            digest=digest,
            description=description,
            auth=self.auth,
            feeds=feeds,
            webhooks=webhooks,
            checks=checks,
        )

    def checks(self, top: dict[Any, Any]) -> Checks:
        """The top-level expectations, policies and milestones (docs/CHECKS.md)."""
        if not any(k in top for k in CHECK_KEYS):
            return Checks()
        doc = self.doc

        def report(container: Any, key: Any, message: str, at_value: bool) -> None:
            doc.problem(
                doc.value_at(container, key) if at_value else doc.key_at(container, key), message
            )

        tables = {name: [f.name for f in r.fields] for name, r in self.records.items()}
        return parse_checks(
            top, report, tools=list(self.operations), tables=tables, only_checks=False
        )

    def clock(self, top: dict[Any, Any]) -> datetime:
        clock = top.get("clock")
        if clock is None:
            return DEFAULT_CLOCK_START
        body = self.mapping(top, "clock", "clock", "clock: {start: 2025-06-01T09:00:00Z}")
        if not body:
            return DEFAULT_CLOCK_START
        self.unknown_keys(body, ("start",), "clock")
        if "start" not in body:
            return DEFAULT_CLOCK_START
        start = _to_datetime(body["start"])
        if start is None:
            self.at_value(
                body, "start",
                f"invalid clock start {short_repr(body['start'])}; expected an ISO date and time such "
                "as 2025-06-01T09:00:00Z (no timezone means UTC), up to 9999-12-31 in UTC",
            )  # fmt: skip
            return DEFAULT_CLOCK_START
        if start < CLOCK_MIN:
            self.at_value(
                body, "start",
                f"clock start {start.isoformat()} is too early; expected a time from "
                f"{CLOCK_MIN.year} on (generated seed times reach back 30 days, and a clock "
                "near the year 1 cannot)",
            )  # fmt: skip
            return DEFAULT_CLOCK_START
        return start
