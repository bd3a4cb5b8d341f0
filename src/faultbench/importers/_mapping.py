"""What the OpenAPI importer decides, as plain data: `_openapi.py` fills it, the emitter
(`_emit.py`) writes it, the coverage report counts it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._shapes import Decl


@dataclass
class Param:
    """One argument of a custom operation's generated handler."""

    name: str  # a Python identifier
    source: str  # the name in the document
    where: str  # path, query, header, cookie or body
    annotation: str
    required: bool
    description: str = ""


@dataclass
class Operation:
    tool: str
    service: str
    kind: str
    method: str
    path: str
    operation_id: str
    record: str | None = None
    description: str | None = None
    filter: dict[str, list[str]] = field(default_factory=dict)
    page: dict[str, Any] | None = None
    sort: list[str] = field(default_factory=list)
    scopes: list[str] = field(default_factory=list)
    idempotency_key: str | None = None
    params: list[Param] = field(default_factory=list)
    answer: Any = None
    status: str | None = None
    items: str | None = None  # a list answer's envelope key for its rows
    envelope: dict[str, Any] | None = None  # the rest of that answer
    #: declared error bodies: {status key: (component name or None, inlined JSON Schema)}
    errors: dict[str, tuple[str | None, Any]] = field(default_factory=dict)
    #: a record's answers: the properties answered as null when unset (others left out)
    nulls: list[str] | None = None
    #: the envelope's integer property that carries the count of every match
    total: str | None = None
    #: the record's natural key (the property its path parameter names), when not `id`
    key: str | None = None
    #: request names that are other tool arguments: {`pool_name_pattern`: `name_like`};
    #: `name_like %{}%` puts the request's value where `{}` is
    args: dict[str, str] = field(default_factory=dict)
    #: "integer" where the record's schema declares its `id` an integer (answered as one)
    ids: str | None = None
    #: query parameter bounds the document declares beyond the tool's (`limit >= 0`)
    bounds: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: properties every answer carries that the record holds no field for: their answer
    fill: dict[str, Any] = field(default_factory=dict)
    #: a custom operation's header parameters: {`X-Request-Id`: `x_request_id`}
    headers: dict[str, str] = field(default_factory=dict)
    #: body properties taking any JSON that the record holds as text (as JSON text)
    text: list[str] = field(default_factory=list)


@dataclass
class Record:
    name: str
    service: str
    schema_name: str
    fields: dict[str, Decl]
    description: str | None = None
    key: str | None = None  # the natural key (`name`) standing for the id under --rest


@dataclass
class Mapping:
    """What the importer decided: the world's parts and the coverage report's facts."""

    name: str
    title: str
    version: str
    records: dict[str, Record]
    operations: list[Operation]
    principals: dict[str, list[str]]
    skipped: list[dict[str, str]]
    fields_skipped: list[dict[str, str]]
    notes: list[str]
    total_operations: int
    total_schemas: int


def schema_ref(name: str) -> dict[str, str]:
    """A `$ref` to the component schema `name` (JSON Pointer escaped)."""
    return {"$ref": "#/components/schemas/" + name.replace("~", "~0").replace("/", "~1")}
