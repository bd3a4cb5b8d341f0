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


#: the largest document read (the biggest public ones are ~15 MB)
MAX_DOCUMENT_BYTES = 64 * 2**20
#: values that YAML aliases (`*name`) may add to a document, over all uses (as a world file)
MAX_ALIAS_NODES = 100_000
#: mappings and lists nested in one another (real documents nest at most ~25 levels)
MAX_NESTING = 100


def read_document(path: str | Path) -> dict[str, Any]:
    """The document at `path` as JSON data. Only a regular file of at most
    `MAX_DOCUMENT_BYTES` is read; YAML aliases may add at most `MAX_ALIAS_NODES` values, and
    nesting stops at `MAX_NESTING` levels. Raises ImportProblem (with the reason on one
    line), OSError."""
    from faultbench.kernel.lowlevel import read_bounded

    try:
        raw = read_bounded(path, MAX_DOCUMENT_BYTES)
    except OSError as exc:
        raise ImportProblem(
            f"{path}: cannot read: {exc.strerror or exc}; expected an OpenAPI document"
        ) from None
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise ImportProblem(
            f"{path}: larger than {MAX_DOCUMENT_BYTES // 2**20} MiB, the most `faultbench "
            "import` reads; expected an OpenAPI document (cut it with --paths/--tags after "
            "splitting it, or trim it first)"
        )
    text = raw.decode("utf-8-sig", errors="replace")
    data: Any
    try:
        if text.lstrip().startswith("{"):
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ImportProblem(f"{path}: not valid JSON: {exc}") from None
        else:
            data = _plain(_load_yaml(text, path))
        _check_nesting(data, path)
    except RecursionError:
        raise ImportProblem(_too_deep(path)) from None
    except ValueError as exc:  # a 5,000-digit integer (int() refuses past 4,300 digits)
        if isinstance(exc, ImportProblem):
            raise
        raise ImportProblem(f"{path}: a value cannot be read: {_line(str(exc))}") from None
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
        for source in (item.get("parameters"), op.get("parameters")):
            for p in source if isinstance(source, list) else ():
                p, _ = self.deref(p)
                if "name" in p and "in" in p:
                    merged[(str(p["name"]), str(p["in"]))] = p
        return list(merged.values())

    def body(self, op: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        """(media type, schema) of the request body: JSON first, then form encodings."""
        body, _ = self.deref(op.get("requestBody"))
        content = _mapping(body.get("content"))
        for media in _preferred(content):
            schema, _ = self.deref((content[media] or {}).get("schema"))
            return media, schema
        return None, {}

    def response(self, op: dict[str, Any]) -> tuple[str | None, Any]:
        """(status, schema node as written) of the first 2xx answer; the node is None when
        that answer has no JSON body."""
        responses = _mapping(op.get("responses"))
        for status in sorted(str(s) for s in responses):
            if not (status.startswith("2") or status == "default"):
                continue
            resp, _ = self.deref(responses.get(status))
            content = _mapping(resp.get("content"))
            for media in _preferred(content):
                if "json" in media or media == "*/*":
                    return status, (content[media] or {}).get("schema", {})
            if status.startswith("2"):
                return status, None
        return None, None


def _mapping(value: Any) -> dict[str, Any]:
    """`value` when it is a mapping, else an empty one (`responses: 7` has no responses)."""
    return value if isinstance(value, dict) else {}


def _line(text: str) -> str:
    return " ".join(text.split())[:300]


def _too_deep(path: str | Path) -> str:
    return (
        f"{path}: nested more than {MAX_NESTING} levels deep; expected mappings and lists "
        "nested a few dozen levels, as OpenAPI documents are"
    )


def _load_yaml(text: str, path: str | Path) -> Any:
    """YAML through libyaml when pyyaml has it, its aliases counted before any value is
    built: ten lines of `*a` can stand for billions of values."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.YAMLError as exc:
            raise ImportProblem(f"{path}: not valid YAML: {_line(str(exc))}") from None
        if node is None:
            return None
        _check_aliases(node, path)
        try:
            return loader.construct_document(node)
        except yaml.YAMLError as exc:
            raise ImportProblem(f"{path}: not valid YAML: {_line(str(exc))}") from None
    finally:
        loader.dispose()


def _check_aliases(root: Any, path: str | Path) -> None:
    """Refuse a node graph whose aliases add more than MAX_ALIAS_NODES values or that
    refers to itself (iteratively: a deep document must not exhaust the stack here)."""
    import yaml

    size: dict[int, int] = {}  # id(node) -> values it stands for, aliases expanded
    seen: set[int] = set()
    # (node, depth, expanded): a node's children are pushed first, its size summed after
    stack: list[tuple[Any, int, bool]] = [(root, 1, False)]
    written = 0  # values as written, each node once
    while stack:
        node, depth, expanded = stack.pop()
        key = id(node)
        if not isinstance(node, yaml.CollectionNode):
            if key not in size:
                size[key] = 1
                written += 1
            continue
        children = (
            [c for pair in node.value for c in pair]
            if isinstance(node, yaml.MappingNode)
            else list(node.value)
        )
        if expanded:
            size[key] = 1 + sum(size.get(id(c), 0) for c in children)
            written += 1
            if size[key] - written > MAX_ALIAS_NODES:
                raise ImportProblem(
                    f"{path}:{node.start_mark.line + 1}: aliases (*name) expand to more than "
                    f"{MAX_ALIAS_NODES:,} values in this document (an alias bomb?); expected "
                    "a document that writes its values out"
                )
            continue
        if key in size:
            continue  # an alias of a node already counted
        if key in seen:
            raise ImportProblem(
                f"{path}:{node.start_mark.line + 1}: an alias refers to the mapping or list it "
                "is part of (a cycle); expected a document without cycles"
            )
        if depth > MAX_NESTING:
            raise ImportProblem(_too_deep(path))
        seen.add(key)
        stack.append((node, depth, True))
        stack.extend((c, depth + 1, False) for c in children if id(c) not in size)


def _check_nesting(data: Any, path: str | Path) -> None:
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > MAX_NESTING:
                raise ImportProblem(_too_deep(path))
            stack.extend(
                (v, depth + 1) for v in (value.values() if isinstance(value, dict) else value)
            )


def _preferred(content: dict[str, Any]) -> list[str]:
    order = ("application/json", "application/x-www-form-urlencoded", "multipart/form-data")
    known = [m for m in order if m in content]
    return known + sorted(m for m in content if m not in known and "json" in m)


def title_name(doc: Document) -> str:
    """A world name from the document's title."""
    return snake(str(doc.info.get("title") or "imported")) or "imported"
