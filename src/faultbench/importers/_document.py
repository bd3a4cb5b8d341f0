"""An OpenAPI document read and its `$ref`s resolved, for the importer.

The document is read once (JSON, or YAML with libyaml when pyyaml has it) and every local
`$ref` is resolved lazily through `referencing`, the JSON reference library of the
`jsonschema` project: a reference is followed only when the mapping looks at it, so the
cycles real documents have (Stripe's `charge -> customer -> ... -> charge`) cost nothing,
and JSON pointer escapes (`~1`, `%7B`) are decoded by the library, not by hand. A reference
to another file or URL is reported, never fetched (imports stay offline).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from ._names import snake

METHODS = ("get", "post", "put", "patch", "delete", "options", "head", "trace")
_BASE_URI = "urn:faultbench:openapi"


class ImportProblem(ValueError):
    """A document that cannot be imported at all (not OpenAPI 3, unreadable)."""


def _plain(value: Any) -> Any:
    """YAML timestamps back to text: a document is JSON data (OpenAI's has one unquoted
    `2024-10-01` example, which YAML reads as a date)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def read_document(path: str | Path) -> dict[str, Any]:
    """The document at `path` as JSON data. Raises ImportProblem, OSError."""
    raw = Path(path).read_bytes()
    text = raw.decode("utf-8-sig", errors="replace")
    data: Any
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ImportProblem(f"{path}: not valid JSON: {exc}") from None
    else:
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        try:
            data = _plain(yaml.load(text, Loader=loader))
        except yaml.YAMLError as exc:
            raise ImportProblem(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ImportProblem(f"{path}: expected an OpenAPI document (a mapping at the top)")
    version = str(data.get("openapi", ""))
    if not version.startswith(("3.0", "3.1")):
        found = f"swagger {data['swagger']}" if "swagger" in data else f"openapi {version!r}"
        raise ImportProblem(
            f"{path}: {found}; expected an OpenAPI 3.0 or 3.1 document (convert Swagger 2.0 "
            "with a converter such as swagger2openapi first)"
        )
    if not isinstance(data.get("paths") or {}, dict):
        raise ImportProblem(f"{path}: 'paths' is not a mapping")
    return data


@dataclass
class Document:
    """The document with a resolver for its `$ref`s, and the problems met so far."""

    data: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012

        resource = Resource.from_contents(self.data, default_specification=DRAFT202012)
        self._resolver = Registry().with_resource(_BASE_URI, resource).resolver(_BASE_URI)
        self._cache: dict[str, tuple[Any, str | None]] = {}

    @property
    def version(self) -> str:
        return str(self.data.get("openapi"))

    @property
    def info(self) -> dict[str, Any]:
        info = self.data.get("info")
        return info if isinstance(info, dict) else {}

    @property
    def schemas(self) -> dict[str, Any]:
        comps = self.data.get("components") or {}
        schemas = comps.get("schemas") if isinstance(comps, dict) else None
        return schemas if isinstance(schemas, dict) else {}

    def lookup(self, ref: str) -> tuple[Any, str | None]:
        """(what `ref` points at, the component schema name when it names one). A reference
        that cannot be followed gives ({}, None) and a note."""
        hit = self._cache.get(ref)
        if hit is not None:
            return hit
        from referencing.exceptions import Unresolvable

        name: str | None = None
        if ref.startswith("#/components/schemas/"):
            name = ref.rsplit("/", 1)[1].replace("~1", "/").replace("~0", "~")
        if not ref.startswith("#"):
            self.notes.append(f"$ref {ref!r} points outside the document; not followed")
            hit = ({}, None)
        else:
            try:
                hit = (self._resolver.lookup(ref).contents, name)
            except Unresolvable:
                self.notes.append(f"$ref {ref!r} does not resolve; treated as any value")
                hit = ({}, None)
        self._cache[ref] = hit
        return hit

    def deref(self, node: Any, limit: int = 32) -> tuple[dict[str, Any], str | None]:
        """`node` with `$ref` chains followed: (schema, component name of the last hop).
        Sibling keys of a `$ref` (3.1 allows them: a description, `nullable`) stay on top."""
        name: str | None = None
        extra: dict[str, Any] = {}
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and limit > 0:
            extra = {**{k: v for k, v in node.items() if k != "$ref"}, **extra}
            node, hop = self.lookup(node["$ref"])
            name = hop or name
            limit -= 1
        if not isinstance(node, dict):
            return ({}, name)
        return ({**node, **extra} if extra else node, name)

    def operations(self) -> Iterator[tuple[str, str, dict[str, Any], dict[str, Any]]]:
        """(path, method, operation, path item) in document order."""
        for path, item in (self.data.get("paths") or {}).items():
            item, _ = self.deref(item)
            for method in METHODS:
                op = item.get(method)
                if isinstance(op, dict):
                    yield str(path), method, op, item

    def parameters(self, op: dict[str, Any], item: dict[str, Any]) -> list[dict[str, Any]]:
        """The operation's parameters over its path item's (by name and place), resolved."""
        merged: dict[tuple[str, str], dict[str, Any]] = {}
        for source in (item.get("parameters") or [], op.get("parameters") or []):
            for p in source:
                p, _ = self.deref(p)
                if "name" in p and "in" in p:
                    merged[(str(p["name"]), str(p["in"]))] = p
        return list(merged.values())

    def body(self, op: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        """(media type, schema) of the request body: JSON first, then form encodings."""
        body, _ = self.deref(op.get("requestBody"))
        content = body.get("content") or {}
        for media in _preferred(content):
            schema, _ = self.deref((content[media] or {}).get("schema"))
            return media, schema
        return None, {}

    def response(self, op: dict[str, Any]) -> tuple[str | None, Any]:
        """(status, schema node as written) of the first 2xx answer; the node is None when
        that answer has no JSON body."""
        responses = op.get("responses") or {}
        for status in sorted(str(s) for s in responses):
            if not (status.startswith("2") or status == "default"):
                continue
            resp, _ = self.deref(responses.get(status))
            content = resp.get("content") or {}
            for media in _preferred(content):
                if "json" in media or media == "*/*":
                    return status, (content[media] or {}).get("schema", {})
            if status.startswith("2"):
                return status, None
        return None, None


def _preferred(content: dict[str, Any]) -> list[str]:
    order = ("application/json", "application/x-www-form-urlencoded", "multipart/form-data")
    known = [m for m in order if m in content]
    return known + sorted(m for m in content if m not in known and "json" in m)


def title_name(doc: Document) -> str:
    """A world name from the document's title."""
    return snake(str(doc.info.get("title") or "imported")) or "imported"
