"""A YAML front end that remembers where everything was written.

pyyaml's `safe_load` returns plain values and forgets positions; it also keeps the last of two
duplicate keys without a word, and rejects the README's `{ status: enum[placed, delivered] }`
(in a flow mapping, `[` and `,` are YAML syntax). So this module composes the text to nodes
(libyaml's C parser when pyyaml was built with it), builds plain Python values itself, and
records the 1-based line and column of every key and value in a side map::

    doc = parse_yaml(text, "world.yaml")
    doc.data["services"]                       # plain dicts, lists and scalars
    doc.key_at(doc.data, "services")           # (line, col) of the key
    doc.value_at(doc.data, "services")         # (line, col) of its value

Positions are looked up by the identity of the container (a dict or list of `doc.data`) and
the key or index inside it, so code that validates a sub-mapping can report positions
without carrying a path around.
"""

from __future__ import annotations

import re
import typing
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader, ReaderError
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from .._errors import SourceError, WorldFileError
from .._text import short_repr

Position = tuple[int, int]  # 1-based line, column

# ---------------------------------------------------------------------------------------------
# `enum[a, b]` and `ref[x.y]` inside flow mappings.
#
# In a flow collection a plain scalar may not contain `[`, `]` or `,`. Instead of a custom
# scanner, the text is rewritten before parsing: inside each `enum[...]` / `ref[...]` those
# three characters become private-use code points that YAML treats as ordinary text, one
# character for one, so every line and column stays exact. Scalars are mapped back when
# values are built. Rewriting inside quotes or comments is harmless for the same reason.
# ---------------------------------------------------------------------------------------------

_TYPE_BRACKETS = re.compile(r"\b(?:enum|ref|list)\[[^\[\]\n]*\]")
_HIDE = str.maketrans({"[": "\ue000", "]": "\ue001", ",": "\ue002"})
_SHOW = str.maketrans({"\ue000": "[", "\ue001": "]", "\ue002": ","})
_HIDDEN = re.compile("[\ue000-\ue002]")


def _hide_type_brackets(text: str) -> tuple[str, bool]:
    if ("enum[" not in text and "ref[" not in text and "list[" not in text) or _HIDDEN.search(text):
        return text, False
    # innermost first: `list[ref[x]]` hides `ref[x]`, then the `list[...]` around it
    for _ in range(8):
        hidden = _TYPE_BRACKETS.sub(lambda m: m.group(0).translate(_HIDE), text)
        if hidden == text:
            break
        text = hidden
    return text, True


# ---------------------------------------------------------------------------------------------
# Composing: YAML text -> nodes with marks.
# ---------------------------------------------------------------------------------------------


class _CachedResolver(Resolver):
    """pyyaml resolves every plain scalar by regex, in Python, even under libyaml. World files
    repeat the same few words (`str`, `float`, `get`...), so remember the answers."""

    _cache: typing.ClassVar[dict[str, str]] = {}

    def resolve(self, kind: type[Node], value: Any, implicit: tuple[bool, bool]) -> Any:
        if kind is ScalarNode and implicit[0]:
            tag = self._cache.get(value)
            if tag is None:
                tag = Resolver.resolve(self, kind, value, implicit)
                if len(self._cache) < 20_000:
                    self._cache[value] = tag
            return tag
        return Resolver.resolve(self, kind, value, implicit)


class _PyComposer(Reader, Scanner, Parser, Composer, _CachedResolver):
    def __init__(self, stream: str):
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        Resolver.__init__(self)


if yaml.__with_libyaml__:
    # `yaml.CBaseLoader` is pyyaml's public face of libyaml's parser; only its composing half
    # is used here (nodes with marks), with our resolver in place of the base one.
    class _CComposer(yaml.CBaseLoader, _CachedResolver):
        def __init__(self, stream: str):
            yaml.CBaseLoader.__init__(self, stream)
            Resolver.__init__(self)

    _COMPOSERS: tuple[type, ...] = (_CComposer, _PyComposer)
else:  # pyyaml built without libyaml
    _COMPOSERS = (_PyComposer,)


def _compose(text: str) -> Node | None:
    composer = _COMPOSERS[0](text)
    try:
        node: Node | None = composer.get_single_node()
        return node
    finally:
        composer.dispose()


# ---------------------------------------------------------------------------------------------
# Building values
# ---------------------------------------------------------------------------------------------

# ---------------------------------------------------------------------------------------------
# Limits. A world file (or a `faults:` block sent to a server) is input from anywhere: ten lines
# of aliases (`b: [*a, *a, ...]`, nine levels deep) stand for 387 million values, and 999
# nested brackets exhaust Python's stack. Values are built once per node (an alias shares
# them), but whoever walks the data walks every use, so the nodes that aliases add are counted
# while building and a document past the limit is refused, at the alias that crossed it.
# ---------------------------------------------------------------------------------------------

#: nested mappings and lists; a world file needs about 8
MAX_DEPTH = 100
#: problems reported at most (the loader stops looking after this many)
MAX_PROBLEMS = 100
#: values that aliases (`*name`, `<<: *name`) may add to a document, over all uses
MAX_ALIAS_NODES = 100_000
_STOPPED = f"stopped after {MAX_PROBLEMS} problems; expected fewer: fix these and check again"

_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"
_COLLECTIONS = frozenset({"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"})
_SCALARS = SafeConstructor.yaml_constructors
_CONSTRUCTOR = SafeConstructor()


class Document:
    """Plain values of one YAML document plus where each key and value was written."""

    def __init__(
        self,
        data: Any,
        path: str,
        where: dict[int, dict[Any, tuple[int, ...]]],
        start: dict[int, Position] | None = None,
    ):
        self.data = data
        self.path = path
        self._where = where  # id(container) -> key/index -> (key line, col, value line, col)
        self._start: dict[int, Position] = start if start is not None else {}  # id -> start
        #: problems found while validating the values; the loader raises them all at once
        self.problems: list[SourceError] = []

    def key_at(self, container: Any, key: Any) -> Position:
        """Where `key` of `container` was written (the value's position for list items)."""
        pos = self._where.get(id(container), {}).get(key)
        return (pos[0], pos[1]) if pos else self.at(container)

    def value_at(self, container: Any, key: Any) -> Position:
        pos = self._where.get(id(container), {}).get(key)
        return (pos[2], pos[3]) if pos else self.at(container)

    def place_like(self, container: Any, key: Any, like: Any, like_key: Any) -> None:
        """Record `container[key]` (a dict the loader made) as written where `like[like_key]`
        was, so problems found in it point into the file."""
        pos = self._where.get(id(like), {}).get(like_key)
        if pos is not None:
            self._where.setdefault(id(container), {})[key] = pos

    def at(self, container: Any) -> Position:
        """Where a dict or list of the document starts; (1, 1) if it is not from the file."""
        return self._start.get(id(container), (1, 1))

    def problem(self, pos: Position, message: str) -> None:
        self.problems.append(SourceError(self.path, pos[0], pos[1], message))
        if len(self.problems) >= MAX_PROBLEMS:
            # Thousands of wrong keys would cost seconds of did-you-means and a message of
            # megabytes: the first ones found are enough to start fixing.
            self.problems.append(
                SourceError(
                    self.path, pos[0], pos[1],
                    _STOPPED,
                )
            )  # fmt: skip
            self.raise_problems()

    def raise_problems(self) -> None:
        if self.problems:
            ordered = sorted(self.problems, key=lambda e: (e.line, e.col))
            raise WorldFileError(ordered)


class _Builder:
    def __init__(self, path: str, unhide: bool):
        self.path = path
        self.unhide = unhide
        self.where: dict[int, dict[Any, tuple[int, ...]]] = {}
        self.start: dict[int, Position] = {}
        self.errors: list[SourceError] = []
        self.done: dict[int, Any] = {}  # aliases: one node, one value
        self.size: dict[int, int] = {}  # id(node) -> values it stands for, aliases expanded
        self.aliased = 0  # values added by aliases so far
        self.refused = False  # past a limit: stop building, one error says why

    def build(self, node: Node, depth: int = 0, at: Position | None = None) -> Any:
        """The value of `node`; `at` is where it is used (for an alias, not its anchor)."""
        if isinstance(node, ScalarNode):
            return self.scalar(node)
        mark = node.start_mark
        here = (mark.line + 1, mark.column + 1)
        done = self.done.get(id(node))
        if done is not None:
            self.alias(node, at or here)
            return done
        if self.refused:
            return None
        if depth >= MAX_DEPTH:
            self.refuse(
                here,
                f"nested more than {MAX_DEPTH} levels deep; expected a world file's "
                "mappings and lists nested a few levels; flatten the data",
            )
            return None
        if node.tag not in _COLLECTIONS:
            self.add(_tag_error(self.path, node))
        if isinstance(node, SequenceNode):
            items: list[Any] = []
            self.done[id(node)] = items
            self.start[id(items)] = (mark.line + 1, mark.column + 1)
            spots = self.where[id(items)] = {}
            for i, child in enumerate(node.value):
                m = child.start_mark
                spots[i] = (m.line + 1, m.column + 1, m.line + 1, m.column + 1)
                # an alias item's own position is not kept by the composer: the list's is
                items.append(self.build(child, depth + 1, here))
            self.size[id(node)] = 1 + sum(self.size.get(id(c), 1) for c in node.value)
            return items
        mapping: dict[Any, Any] = {}
        self.done[id(node)] = mapping
        self.start[id(mapping)] = (mark.line + 1, mark.column + 1)
        spots = self.where[id(mapping)] = {}
        merged: list[MappingNode] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                merged.append(value_node)
                continue
            km, vm = key_node.start_mark, value_node.start_mark
            if not isinstance(key_node, ScalarNode):
                self.add(
                    SourceError(self.path, km.line + 1, km.column + 1,
                                "a key must be a plain name, not a list or mapping; "
                                "expected 'name: value'")
                )  # fmt: skip
                continue
            key = key_node.value.translate(_SHOW) if self.unhide else key_node.value
            if key in spots:
                first = spots[key]
                self.add(
                    SourceError(
                        self.path, km.line + 1, km.column + 1,
                        f"duplicate key {short_repr(key)} (first written at {self.path}:{first[0]}:"
                        f"{first[1]}); expected each key once per mapping; remove or rename "
                        "one of them",
                    )
                )  # fmt: skip
                continue
            spots[key] = (km.line + 1, km.column + 1, vm.line + 1, vm.column + 1)
            mapping[key] = self.build(value_node, depth + 1, (km.line + 1, km.column + 1))
        # `<<: *anchor` merges: keys written here win over merged ones.
        for value_node in merged:
            sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
            for source in sources:
                other = self.build(source, depth + 1, here)
                if other is None and self.refused:
                    return mapping
                if not isinstance(other, dict):
                    m = source.start_mark
                    self.add(
                        SourceError(self.path, m.line + 1, m.column + 1,
                                    "'<<' merges mappings only; expected an alias of a mapping")
                    )  # fmt: skip
                    continue
                for key, value in other.items():
                    if key not in mapping:
                        mapping[key] = value
                        spots[key] = self.where[id(other)][key]
        self.size[id(node)] = 1 + sum(self.size.get(id(v), 1) for _, v in node.value)
        return mapping

    def alias(self, node: Node, at: Position) -> None:
        """A second use of `node`'s value: count what it stands for."""
        size = self.size.get(id(node))
        if size is None:  # still being built: the alias is inside its own anchor
            self.refuse(
                at,
                "an alias refers to the mapping or list it is part of (a cycle); expected "
                "an alias (*name) of a value that is complete before it; write the value out",
            )
            return
        self.aliased += size
        if self.aliased > MAX_ALIAS_NODES:
            self.refuse(
                at,
                f"aliases (*name) expand to more than {MAX_ALIAS_NODES:_} values in this "
                "document; expected aliases of small values; write the values out, or "
                "use fewer aliases of large ones",
            )

    def add(self, error: SourceError) -> None:
        """One more problem; past MAX_PROBLEMS, one that says so and building stops (a file of
        thousands of duplicate keys would print megabytes)."""
        if len(self.errors) < MAX_PROBLEMS:
            self.errors.append(error)
        elif not self.refused:
            self.refuse((error.line, error.col), _STOPPED)

    def refuse(self, at: Position, message: str) -> None:
        if not self.refused:
            self.refused = True
            self.errors.append(SourceError(self.path, at[0], at[1], message))

    def scalar(self, node: ScalarNode) -> Any:
        if node.tag == _STR:
            value = node.value
            return value.translate(_SHOW) if self.unhide else value
        construct = _SCALARS.get(node.tag)
        if construct is None:
            self.add(_tag_error(self.path, node))
            return node.value
        try:
            return construct(_CONSTRUCTOR, node)
        except Exception as exc:  # pyyaml's constructors trust tagged text: `!!int ''` is an
            # IndexError, `!!bool maybe` a KeyError, `!!timestamp nope` an AttributeError
            m = node.start_mark
            kind = node.tag.rpartition(":")[2]
            reason = f": {exc}" if isinstance(exc, (ValueError, yaml.YAMLError)) else ""
            expected = _TAGGED_EXPECTED.get(kind, f"a valid {kind}")
            self.add(
                SourceError(
                    self.path, m.line + 1, m.column + 1,
                    f"invalid {kind} {short_repr(node.value)}{reason}; expected {expected}, or "
                    "quote it (without a tag) to mean text",
                )
            )  # fmt: skip
            return node.value


#: what a value with an explicit tag (`!!int 42`) must look like
_TAGGED_EXPECTED = {
    "int": "a whole number such as 42",
    "float": "a number such as 1.5",
    "bool": "true or false",
    "timestamp": "a date such as 2025-05-01 or a time such as 2025-05-01T10:00:00Z",
}


def _tag_error(path: str, node: Node) -> SourceError:
    m = node.start_mark
    return SourceError(
        path, m.line + 1, m.column + 1,
        f"unsupported YAML tag '{node.tag}'; expected plain values (text, numbers, lists and "
        "mappings); remove the tag",
    )  # fmt: skip


def _syntax_error(exc: yaml.MarkedYAMLError, text: str, path: str) -> SourceError:
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    problem = exc.problem or "invalid YAML"
    message = f"invalid YAML: {problem}"
    if exc.context:
        where = ""
        if exc.context_mark is not None and exc.context_mark is not mark:
            where = f" at {exc.context_mark.line + 1}:{exc.context_mark.column + 1}"
        message += f" ({exc.context}{where})"
    lines = text.splitlines()
    source_line = lines[line - 1] if 0 < line <= len(lines) else ""
    if "\t" in source_line[: max(col, 1)]:
        hint = "indent with spaces; YAML does not allow tabs"
    else:
        hint = next((h for p, h in _HINTS if p in problem), _DEFAULT_HINT)
    return SourceError(path, line, col, f"{message}; {hint}".translate(_SHOW))


def _reader_error(exc: ReaderError, text: str, path: str) -> SourceError:
    pos = exc.position if isinstance(exc.position, int) else 0
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    char = f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character)
    return SourceError(
        path, line, col,
        f"invalid YAML: non-printable character {char}; expected text; remove the "
        "character (is this a binary file?)",
    )  # fmt: skip


_DEFAULT_HINT = "expected 'key: value' lines indented with spaces"
_HINTS = (
    ("mapping values are not allowed", "expected one 'key: value' per line; quote a value that contains ': '"),
    ("could not find expected ':'", "expected 'key: value'; add the missing ':' or fix the indentation"),
    ("did not find expected key", "expected 'key: value' at this indentation"),
    ("expected ',' or ']'", "a '[' is not closed; expected ']' at the end of the list"),
    ("expected ',' or '}'", "a '{' is not closed; expected '}' at the end of the mapping"),
    ("end of stream", "a quote or bracket is not closed"),
    ("found undefined alias", "define the anchor (&name) before using it (*name)"),
    ("another document", "a world file is one YAML document; remove the '---' line and what follows"),
)  # fmt: skip


def parse_yaml(text: str, path: str) -> Document:
    """Parse one YAML document. Raises WorldFileError for syntax errors and duplicate keys."""
    hidden, changed = _hide_type_brackets(text)
    try:
        node = _compose(hidden)
    except yaml.MarkedYAMLError as exc:
        raise WorldFileError(_syntax_error(exc, text, path)) from None
    except ReaderError as exc:  # a character YAML does not allow: no mark
        raise WorldFileError(_reader_error(exc, text, path)) from None
    except yaml.YAMLError as exc:
        raise WorldFileError(SourceError(path, 1, 1, f"invalid YAML: {exc}")) from None
    if node is None:
        return Document(None, path, {})  # an empty file
    builder = _Builder(path, changed)
    try:
        data = builder.build(node)
    except RecursionError:  # the caller's stack was already deep; MAX_DEPTH keeps ours short
        m = node.start_mark
        builder.refuse(
            (m.line + 1, m.column + 1),
            "nested too deeply to read; expected mappings and lists nested a few levels",
        )
    if builder.errors:
        raise WorldFileError(builder.errors)
    return Document(data, path, builder.where, builder.start)
