"""A `Mapping` written out: the world file (YAML a person reads and edits, with comments
naming where each part came from) and the module of generated handlers.

The YAML is written by hand rather than by `yaml.dump` for the comments and a stable,
readable layout: block mappings, flow lists for short lists of words, literal blocks for
descriptions of several lines, and double quotes for any text YAML would read as something
else. The same mapping gives the same bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ._mapping import Mapping, Operation
from ._names import identifier
from ._openapi import rest_routable

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*(\[[^#\n]*\])?\??")
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_YAML_WORDS = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"}
# text YAML would read as a number or a date
_NOT_TEXT = re.compile(
    r"[-+]?(\d[\d_]*(\.[\d_]*)?|\.\d+)([eE][-+]?\d+)?|0[xob][0-9a-fA-F_]+|[-+]?\.(inf|nan)"
    r"|\d{4}-\d\d?-\d\d?([Tt ].*)?",
    re.IGNORECASE,
)


def quote(text: str) -> str:
    """Double-quoted YAML for `text` (JSON-style escapes, which YAML reads the same)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif not ch.isprintable() or ch in "\ufeff\u2028\u2029":
            out.append(_yaml_escape(ch))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def scalar(value: Any, *, flow: bool = False) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = str(value)
    pattern = _WORD if flow else _PLAIN
    if (
        pattern.fullmatch(text)
        and text.lower() not in _YAML_WORDS
        and ": " not in text
        and not _NOT_TEXT.fullmatch(text)
    ):
        return text
    return quote(text)


def key(name: str) -> str:
    return scalar(name, flow=True)


@dataclass(frozen=True)
class Shared:
    """A value written once under an anchor (`&name`), then as an alias (`*name`): an API's
    error schema, which most of its operations share."""

    name: str
    value: Any


def _block(value: Any, indent: int, seen: set[str] | None = None) -> Iterator[str]:
    pad = "  " * indent
    seen = set() if seen is None else seen
    for k, v in value.items():
        if isinstance(v, Shared):
            if v.name in seen:
                yield f"{pad}{key(k)}: *{v.name}"
                continue
            seen.add(v.name)
            if isinstance(v.value, dict) and v.value:
                yield f"{pad}{key(k)}: &{v.name}"
                yield from _block(v.value, indent + 1, seen)
            else:
                yield f"{pad}{key(k)}: &{v.name} {json.dumps(v.value)}"
        elif isinstance(v, dict) and v:
            yield f"{pad}{key(k)}:"
            yield from _block(v, indent + 1, seen)
        elif isinstance(v, dict):
            yield f"{pad}{key(k)}: {{}}"
        elif isinstance(v, list) and any(isinstance(x, dict | list) for x in v):
            yield f"{pad}{key(k)}:"
            yield from _sequence(v, indent + 1, seen)
        elif isinstance(v, list):
            yield f"{pad}{key(k)}: [{', '.join(scalar(x, flow=True) for x in v)}]"
        elif isinstance(v, str) and "\n" in v:
            yield from _text(f"{pad}{key(k)}:", v, pad + "  ")
        else:
            yield f"{pad}{key(k)}: {scalar(v)}"


def _sequence(items: list[Any], indent: int, seen: set[str]) -> Iterator[str]:
    """A block list (`- ` items), for lists of mappings such as a schema's `oneOf`."""
    pad = "  " * indent
    for x in items:
        if isinstance(x, dict) and x:
            lines = list(_block(x, indent + 1, seen))
            yield f"{pad}- {lines[0].lstrip()}"
            yield from lines[1:]
        elif isinstance(x, dict | list):
            yield f"{pad}- {json.dumps(x)}"
        else:
            yield f"{pad}- {scalar(x, flow=True)}"


def _text(head: str, text: str, pad: str) -> Iterator[str]:
    # Split on "\n" alone: any other line break (\r, \x85, \u2028) is not printable and
    # sends the text to a quoted scalar, which keeps it.
    lines = text.strip("\n").split("\n")
    if (lines and lines[0][:1].isspace()) or any(not ln.isprintable() for ln in lines if ln):
        yield f"{head} {quote(text)}"
        return
    yield f"{head} |-"
    for line in lines:
        yield f"{pad}{line.rstrip()}" if line.strip() else ""


def _comment(text: str) -> str:
    """`text` on one line of a YAML comment, whatever it holds: runs of whitespace (line
    breaks of every kind YAML or Python knows) become one space, and any other character
    that is not printable is written as an escape (`\\x00`, `\\u202e`), so a document never adds
    a line to the world file."""
    return _printable(" ".join(text.split()))


def json_text(value: Any, indent: int | None = None) -> str:
    """`value` as JSON that YAML reads back exactly: UTF-8 kept, but every character that is
    not printable (a YAML line break such as `\\u2028` or `\\x85`, which a reader would fold
    into a space, a BOM, a NUL) escaped inside its string."""
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    return _NOT_ASCII.sub(lambda m: m[0] if m[0].isprintable() else _yaml_escape(m[0]), text)


def _yaml_escape(ch: str) -> str:
    """A YAML escape of `ch`; a lone surrogate (which no YAML or UTF-8 file can hold) is
    written as U+FFFD, the replacement character."""
    code = ord(ch)
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


_NOT_ASCII = re.compile(r"[^\x00-\x7f]")


def _printable(text: str) -> str:
    return "".join(
        ch if ch.isprintable() and ch not in "\ufeff" else ascii(ch)[1:-1] for ch in text
    )


class _Anchors:
    """One anchor per distinct error schema, named after its component (`error`,
    `ErrorResponse`), so a world file writes each schema once."""

    def __init__(self) -> None:
        self.by_text: dict[str, str] = {}

    def shared(self, name: str | None, schema: Any) -> Shared:
        text = json.dumps(schema, sort_keys=True)
        anchor = self.by_text.get(text)
        if anchor is None:
            base = re.sub(r"[^A-Za-z0-9_-]", "_", name or "error") or "error"
            anchor, n = base, 2
            while anchor in self.by_text.values():
                anchor, n = f"{base}_{n}", n + 1
            self.by_text[text] = anchor
        return Shared(anchor, schema)


def _operation_body(op: Operation, handlers: str, anchors: _Anchors) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": op.kind}
    if op.record:
        body["record"] = op.record
    if op.kind == "custom":
        body["handler"] = f"{handlers}.{identifier(op.tool, 'op')}"
    if op.filter:
        simple = all(ops == ["eq"] for ops in op.filter.values())
        body["filter"] = list(op.filter) if simple else dict(op.filter)
    if op.sort:
        body["sort"] = op.sort
    if op.page:
        body["page"] = op.page
    if op.scopes:
        body["scopes"] = op.scopes
    if op.idempotency_key:
        body["idempotency"] = {"key": op.idempotency_key, "window": "24h"}
    if rest_routable(op.path):  # else MCP only (the import report's notes say so)
        http: dict[str, Any] = {"method": op.method.upper(), "path": op.path}
        if op.status and op.status.isdigit() and op.status.startswith("2") and op.status != "200":
            http["status"] = int(op.status)
        for name in (
            "items",
            "envelope",
            "total",
            "key",
            "ids",
            "args",
            "bounds",
            "fill",
            "text",
            "headers",
        ):
            if getattr(op, name):
                http[name] = getattr(op, name)
        if op.nulls is not None:
            http["nulls"] = op.nulls
        if op.errors:
            http["errors"] = {k: anchors.shared(n, v) for k, (n, v) in op.errors.items()}
        body["http"] = http
    if op.description:
        body["description"] = op.description
    return body


def world_text(m: Mapping, *, source: str, handlers: str) -> str:
    """The world file. `handlers` is the module name custom operations point at."""
    lines = [
        f"# Imported from {_comment(source)} ({_comment(m.title) or 'untitled'}, "
        f"OpenAPI {_comment(m.version)})",
        "# by `faultbench import openapi`. An ordinary world file: edit it freely. Each operation",
        "# names the method and path it came from; custom operations answer from generated",
        f"# handlers in {handlers}.py (the smallest value their response schema accepts).",
        f"name: {scalar(m.name)}",
    ]
    if m.title:
        lines.append(f"description: {scalar(_comment(m.title))}")
    lines.append("seed: 1")
    if m.principals:
        lines.append("auth:")
        lines.append("  principals:")
        for name, scopes in m.principals.items():
            lines.append(
                f"    {key(name)}: {{scopes: [{', '.join(scalar(s, flow=True) for s in scopes)}]}}"
            )
    lines.append("services:")
    services: list[str] = list(
        dict.fromkeys(
            [*(r.service for r in m.records.values()), *(o.service for o in m.operations)]
        )
    )
    anchors, seen = _Anchors(), set[str]()
    for svc in services:
        lines.append(f"  {key(svc)}:")
        recs = [r for r in m.records.values() if r.service == svc]
        if recs:
            lines.append("    records:")
            for r in recs:
                lines.append(f"      # components.schemas.{_comment(r.schema_name)}")
                if r.fields:
                    lines.append(f"      {key(r.name)}:")
                    lines.extend(_block(r.fields, 4))
                else:
                    lines.append(f"      {key(r.name)}: {{}}")
        ops = [o for o in m.operations if o.service == svc]
        if ops:
            lines.append("    operations:")
            for o in ops:
                lines.append(
                    f"      # {o.method.upper()} {_comment(o.path)} ({_comment(o.operation_id)})"
                )
                lines.append(f"      {key(o.tool)}:")
                lines.extend(_block(_operation_body(o, handlers, anchors), 4, seen))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# The handlers module
# ---------------------------------------------------------------------------------------------


def _doc(text: str) -> str:
    """`text` inside a generated docstring: no backslash or triple quote to end it early, no
    line break but `\\n`, no character a Python source file cannot hold (a NUL, a lone
    surrogate): those are written as escapes the docstring reads back."""
    text = text.replace("\\", "/").replace('"""', "'''").strip()
    return "\n".join(_printable(line) for line in text.split("\n"))


def handlers_text(m: Mapping, *, source: str) -> str:
    """The module of the custom operations' handlers ('' when there is none)."""
    customs = [o for o in m.operations if o.kind == "custom"]
    if not customs:
        return ""
    out = [
        f'"""Handlers of the custom operations imported from {_doc(source)} by `faultbench import',
        "openapi`. Each returns the smallest answer its response schema accepts: edit them to read",
        'and write the world\'s tables (world.<record>) like any handler."""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any, Literal  # noqa: F401",
        "",
    ]
    for o in customs:
        params = sorted(o.params, key=lambda p: not p.required)
        sig = ["world: Any", "clock: Any"]
        if params:
            sig.append("*")
        for p in params:
            ann = p.annotation
            if p.required:
                sig.append(f"{p.name}: {ann}")
            else:
                if ann != "Any" and not ann.endswith("| None"):
                    ann += " | None"
                sig.append(f"{p.name}: {ann} = None")
        out.append("")
        out.append(f"def {identifier(o.tool, 'op')}({', '.join(sig)}) -> Any:")
        summary = _doc((o.description or f"{o.method.upper()} {o.path}").split("\n\n")[0])
        summary = " ".join(summary.split())[:200]
        doc = [f'    """{summary}', "", f"    {o.method.upper()} {_doc(o.path)}"]
        described = [p for p in params if p.description]
        if described:
            doc += ["", "    Args:"]
            doc += [f"        {p.name}: {_doc(p.description)}" for p in described]
        out.extend(doc)
        out.append('    """')
        out.append(f"    return {o.answer!r}")
        out.append("")
    return "\n".join(out)
