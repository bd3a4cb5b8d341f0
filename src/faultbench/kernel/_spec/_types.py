"""The parsed, validated form of a world file: plain frozen data, no behaviour.

The loader (`_read/_reader.py`) turns YAML into a `WorldSpec`; everything else in the kernel reads
only these types. Field, record and operation order is the order of the world file, and every
lookup table here is built from that order, so nothing depends on hash randomization.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec

from .._errors import Location
from .._faults import FaultRule
from ._checks import Checks

FieldKind = Literal[
    "str", "int", "float", "bool", "datetime", "enum", "ref", "version", "list", "object"
]  # fmt: skip
#: "events" is the event feed's generated `list_events` tool (`events:`), never written
OperationKind = Literal["get", "list", "create", "update", "delete", "custom", "events"]


class FieldSpec(msgspec.Struct, frozen=True):
    name: str
    kind: FieldKind
    optional: bool = False
    #: True when the file gave a default ({type:, default:}); `default` is then the value
    has_default: bool = False
    default: Any = None
    choices: tuple[str, ...] = ()  # enum members, in file order
    ref: str | None = None  # referenced record name (resolved; records are world-unique)
    raw: str = ""  # the type as written, e.g. "enum[placed, delivered]"
    loc: Location | None = None
    #: kind "list": the type of its items (named like the list); kind "object": its fields
    item: FieldSpec | None = None
    fields: tuple[FieldSpec, ...] = ()

    @property
    def nested(self) -> bool:
        """A list or an object: its values are containers, checked by `_nested.py`."""
        return self.kind == "list" or self.kind == "object"

    def written(self) -> str:
        """The type in one line, nested parts spelled out: `list[{amount: int, note: str?}]`."""
        if self.kind == "object":
            text = "{" + ", ".join(f"{g.name}: {g.written()}" for g in self.fields) + "}"
        elif self.kind == "list" and self.item is not None:
            text = f"list[{self.item.written()}]"
        else:
            text = self.raw.strip().removesuffix("?").rstrip() or self.kind
        return text + "?" if self.optional else text


class RecordSpec(msgspec.Struct, frozen=True):
    name: str  # "order": the table name, `world.table("order")`
    service: str  # owning service, "orders"
    plural: str  # "orders": the second accessor
    fields: tuple[FieldSpec, ...]  # always starts with the `id` field (kind "str")
    loc: Location | None = None

    def field(self, name: str) -> FieldSpec | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None


class ParamSpec(msgspec.Struct, frozen=True):
    """One argument of a custom handler, from its signature and annotations."""

    name: str
    kind: FieldKind | Literal["any", "list", "dict"]  # from the annotation; "any" if none
    required: bool = True
    default: Any = None
    choices: tuple[str, ...] = ()  # Literal[...] annotations become enum params
    nullable: bool = False  # `X | None`
    description: str = ""  # from the handler docstring's Args:/Parameters section, if any


class IdempotencySpec(msgspec.Struct, frozen=True):
    """An operation's `idempotency: {key:, window:}` (see `_calls/_idempotency.py`)."""

    key: str  # the tool argument that carries the key, e.g. "idempotency_key"
    window_s: float = 86400.0  # how long (virtual time) a key is remembered


#: the tool a world with `auth:` gets to renew its caller's token, and its service in fault
#: keys and messages (`auth.refresh_token`)
REFRESH_TOOL = "refresh_token"
AUTH_SERVICE = "auth"


class AuthSpec(msgspec.Struct, frozen=True):
    """The world file's `auth:` block (see `_calls/_auth.py`)."""

    principals: dict[str, tuple[str, ...]]  # principal -> its scopes, file order
    token_ttl_s: float = 900.0  # a token's lifetime in virtual time
    loc: Location | None = None


class BranchSpec(msgspec.Struct, frozen=True):
    """The `or:` of a `then:`: with probability `p`, set these fields instead."""

    p: float
    set: dict[str, Any]


class ThenSpec(msgspec.Struct, frozen=True):
    """An operation's `then:`: a change to the record it wrote, `after` a duration drawn in
    [lo, hi] seconds of virtual time (see `_store/_later.py`)."""

    after: tuple[float, float]
    set: dict[str, Any]
    branch: BranchSpec | None = None  # `or:`
    loc: Location | None = None


class FeedSpec(msgspec.Struct, frozen=True):
    """One type of the outbound event feed (top-level `events:`): `refund.updated` is sent
    for every `update` of a `refund`."""

    type: str
    record: str
    on: tuple[str, ...]  # of "create", "update", "delete"
    loc: Location | None = None


class WebhookSpec(msgspec.Struct, frozen=True):
    """Top-level `webhooks:`: the event feed delivered by HTTP POST to a loopback endpoint,
    signed, retried in virtual time (see docs/WORLDS.md, "Webhooks")."""

    secret: str
    service: str  # the feed's service: fault rules for deliveries are keyed `<service>.webhooks`
    url: str | None = None  # None: the test or `serve --webhook-url` gives it
    types: tuple[str, ...] = ()  # the event types delivered; () means every type of `events:`
    retries: int = 3  # attempts after the first, for a delivery that fails
    backoff_s: float = 30.0  # the first retry's delay; each next one waits twice as long
    timeout_s: float = 10.0  # how long one attempt waits for an answer
    loc: Location | None = None


class PageSpec(msgspec.Struct, frozen=True):
    """`page:` of a list operation: how results are split (see docs/WORLDS.md, "Lists")."""

    style: Literal["cursor", "offset"]
    size: int = 10  # the default `limit`
    max_size: int = 100  # the largest `limit` accepted


class OperationSpec(msgspec.Struct, frozen=True):
    name: str  # the tool name, world-unique
    service: str
    kind: OperationKind
    record: str | None = None  # record name (None only for custom operations without one)
    filter: tuple[str, ...] = ()
    handler: str | None = None  # "module.func" as written
    description: str | None = None  # from the file, else the handler's docstring
    params: tuple[ParamSpec, ...] = ()  # custom operations only
    loc: Location | None = None
    #: `input_schema:` as written (custom operations only): the tool's JSON Schema, shown to
    #: agents verbatim (an imported MCP server's tool); `params` are read from it
    input_schema: dict[str, Any] | None = None
    #: `http:` as written: the REST request this operation answers under `faultbench serve
    #: --rest` (`method`, `path`; for lists `items` and `envelope`; `status`)
    http: dict[str, Any] | None = None
    idempotency: IdempotencySpec | None = None
    scopes: tuple[str, ...] = ()  # every scope a caller needs (worlds with `auth:`)
    #: fields a create or update sets, whatever the arguments (they are not arguments)
    set: dict[str, Any] = msgspec.field(default_factory=dict)
    #: a later change to the written record (create and update only)
    then: ThenSpec | None = None
    #: list operations: (field, operators) in file order, e.g. ("amount", ("gt", "lte"));
    #: `filter` above keeps the fields filtered by equality (`eq`), as before
    where: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: list operations: the orders a caller may ask for, as written ("created_at",
    #: "-amount"); the first is the default; none: id order
    sort: tuple[str, ...] = ()
    page: PageSpec | None = None
    #: `title:` as written: what a client shows a person (None: the name in words)
    title: str | None = None
    #: `annotations:` as written: MCP hints over the kind's (`_tooldoc.tool_annotations`)
    annotations: dict[str, bool] = msgspec.field(default_factory=dict)
    #: `output_schema:` as written (custom operations only): the JSON Schema of the
    #: handler's answer, listed as the tool's `outputSchema`
    output_schema: dict[str, Any] | None = None

    @property
    def qualname(self) -> str:
        """`service.operation`, the key fault rules use."""
        return f"{self.service}.{self.name}"


class ServiceSpec(msgspec.Struct, frozen=True):
    name: str
    records: tuple[str, ...]  # record names, file order
    operations: tuple[str, ...]  # tool names, file order
    loc: Location | None = None
    description: str | None = None


class SeedPlan(msgspec.Struct, frozen=True):
    """How many rows to generate for one record, plus explicit rows (kept as written)."""

    record: str
    count: int = 0  # generated rows, in addition to explicit ones
    rows: tuple[dict[str, Any], ...] = ()


DEFAULT_CLOCK_START = datetime.fromisoformat("2025-06-01T00:00:00+00:00")


class WorldSpec(msgspec.Struct, frozen=True):
    name: str
    path: str | None  # absolute path of the world file, None when built from a string
    seed: int
    clock_start: datetime  # timezone-aware, UTC
    services: tuple[ServiceSpec, ...]
    records: dict[str, RecordSpec]  # by record name, file order
    operations: dict[str, OperationSpec]  # by tool name, file order
    faults: dict[str, FaultRule]  # by key as written: "default", "svc.*", "svc.op"
    seed_plans: tuple[SeedPlan, ...] = ()  # file order
    #: accessor name -> record name, for `world.orders` / `world.order`
    accessors: dict[str, str] = msgspec.field(default_factory=dict)
    #: resolved custom handlers by tool name (callables; not part of any serialized form)
    handlers: dict[str, Any] = msgspec.field(default_factory=dict)
    #: sha256 hex of the file's bytes (or of the string loaded), recorded in WorldCreated
    digest: str = ""
    description: str | None = None
    auth: AuthSpec | None = None  # None: the world has no `auth:` block; calls need no token
    #: the outbound event feed (`events:`), by event type, file order
    feeds: dict[str, FeedSpec] = msgspec.field(default_factory=dict)
    webhooks: WebhookSpec | None = None  # top-level `webhooks:`
    #: the top-level `expect_state`, `nothing_else_changes`, `policies` and `milestones`
    checks: Checks = Checks()


#: Public attribute names of `World`. A record accessor (`world.orders`) may not shadow one of
#: these; the loader reports the collision. `tests/kernel` checks this list matches `World`.
WORLD_ATTRIBUTES: frozenset[str] = frozenset(
    {
        "name", "spec", "seed", "run", "faults_enabled",
        "table", "tables", "clock", "call", "acall", "tools", "tool",
        "events", "events_since", "trace", "snapshot", "restore", "fork", "reset",
        "state_hash", "diff", "to_dict", "set_faults", "fault_rules", "from_spec",
        "from_book", "call_together", "issue_token", "schedule", "scheduled", "model_call",
        "model_used", "webhooks_pending", "webhooks_due", "webhook_attempted",
    }
)  # fmt: skip
