"""Custom operation handlers: `handler: module.func` -> a callable plus its tool parameters.

A handler is `def op(world, clock, order_id: str, ...)`: two leading positional parameters,
then the tool's arguments as named parameters, typed by their annotations. The module is
looked up next to the world file, then in its parent directory, then on `sys.path`; world
files therefore run Python, which is what they are for.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._text import did_you_mean
from ._types import ParamSpec

SIGNATURE_HELP = (
    "expected def op(world, clock, order_id: str, ...): world and clock first, then the tool's "
    "arguments as named parameters"
)


IMPORT_HELP = "expected the module to import cleanly; run it with python to see the traceback"


class HandlerProblem(Exception):
    """Why a handler could not be used; the message goes into the world file's error."""


def resolve_handler(target: str, base_dir: Path) -> Callable[..., Any]:
    """Import `module.func`, looking next to the world file first. Raises HandlerProblem."""
    modname, dot, funcname = target.rpartition(".")
    if not dot or not modname or not funcname:
        raise HandlerProblem(
            "not module.function; expected e.g. 'shop_rules.create_return' for "
            "create_return() in shop_rules.py next to the world file"
        )
    module = _import(modname, (base_dir, base_dir.parent))
    func: object = getattr(module, funcname, None)
    if func is None:
        names = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")]
        raise HandlerProblem(
            f"module '{modname}' ({_where(module)}) has no function '{funcname}'"
            f"{did_you_mean(funcname, names)}"
        )
    if not callable(func):
        raise HandlerProblem(f"'{target}' is not a function but the {type(func).__name__} {func!r}")
    return func


def _where(module: types.ModuleType) -> str:
    return getattr(module, "__file__", None) or "built-in"


def _import(modname: str, dirs: Sequence[Path]) -> types.ModuleType:
    rel = Path(*modname.split("."))
    for d in dirs:
        for candidate in (d / rel.with_suffix(".py"), d / rel / "__init__.py"):
            if candidate.is_file():
                return _import_from(modname, d, candidate)
    try:
        return importlib.import_module(modname)
    except ModuleNotFoundError as exc:
        if exc.name is not None and modname.startswith(exc.name):
            looked = ", ".join(str(d) for d in dirs)
            raise HandlerProblem(
                f"cannot import module '{modname}': no {rel.with_suffix('.py')} in {looked} "
                "or on sys.path; expected the handler's module next to the world file"
            ) from None
        raise HandlerProblem(f"importing '{modname}' failed: {exc}") from None
    except (Exception, SystemExit) as exc:
        raise HandlerProblem(
            f"importing '{modname}' raised {type(exc).__name__}: {exc}; {IMPORT_HELP}"
        ) from None


def _import_from(modname: str, directory: Path, file: Path) -> types.ModuleType:
    loaded = sys.modules.get(modname)
    if loaded is not None and _same_file(getattr(loaded, "__file__", None), file):
        return loaded
    # The directory stays on sys.path only while the module runs its imports of siblings.
    sys.path.insert(0, str(directory))
    try:
        if loaded is None:
            return importlib.import_module(modname)
        # Another module of that name is already loaded (two worlds, two shop_rules.py):
        # load this file under a private name rather than replace the other one. Once, like
        # an import: every handler it serves (and every later load) shares its globals.
        tag = hashlib.sha1(str(file.resolve()).encode()).hexdigest()[:12]
        private = f"_faultbench_handlers_{tag}_{modname}"
        again = sys.modules.get(private)
        if again is not None and _same_file(getattr(again, "__file__", None), file):
            return again
        spec = importlib.util.spec_from_file_location(private, file)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[private] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            # as importlib does: a module that failed is not kept, half run, for the next load
            sys.modules.pop(private, None)
            raise
        return module
    except HandlerProblem:
        raise
    except (Exception, SystemExit) as exc:  # a module calling sys.exit() must not end `check`
        raise HandlerProblem(
            f"importing '{modname}' ({file}) raised {type(exc).__name__}: {exc}; {IMPORT_HELP}"
        ) from None
    finally:
        try:
            sys.path.remove(str(directory))
        except ValueError:
            pass


def _same_file(a: str | None, b: Path) -> bool:
    if a is None:
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------
# Signatures -> parameters
# ---------------------------------------------------------------------------------------------

_KINDS: Mapping[Any, str] = {
    str: "str",
    int: "int",
    float: "float",
    bool: "bool",
    _dt.datetime: "datetime",
    list: "list",
    tuple: "list",
    dict: "dict",
}
_KIND_NAMES = {"str", "int", "float", "bool", "datetime", "list", "dict"}


def handler_params(func: Callable[..., Any]) -> tuple[ParamSpec, ...]:
    """The tool arguments of a handler. Raises HandlerProblem if the signature does not fit."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise HandlerProblem(f"cannot read the signature: {exc}; {SIGNATURE_HELP}") from None
    params = list(sig.parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if (
        len(params) < 2
        or any(p.kind not in positional for p in params[:2])
        or [p.name.lstrip("_") for p in params[:2]] != ["world", "clock"]
    ):
        raise HandlerProblem(f"its signature is {sig}; {SIGNATURE_HELP}")
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # unresolvable string annotations: read them as written
        hints = dict(getattr(func, "__annotations__", {}))
    rest = params[2:]
    if rest and all(p.kind is inspect.Parameter.VAR_KEYWORD for p in rest):
        # The tool's schema lists named parameters only, so `**kwargs` alone would be a tool
        # that accepts no argument at all: almost certainly not what was meant.
        raise HandlerProblem(
            f"its signature is {sig}: **{rest[0].name} gives the tool no arguments; {SIGNATURE_HELP}"
            ", or def op(world, clock) for a tool without arguments"
        )
    docs = param_docs(func)
    out: list[ParamSpec] = []
    for p in rest:
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            continue
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.POSITIONAL_ONLY):
            raise HandlerProblem(
                f"parameter '{p.name}' cannot be passed by name (signature {sig}); {SIGNATURE_HELP}"
            )
        kind, choices, nullable = _annotation_kind(hints.get(p.name, inspect.Parameter.empty))
        required = p.default is inspect.Parameter.empty
        out.append(
            ParamSpec(
                p.name,
                kind,  # type: ignore[arg-type]  # a ParamSpec kind: _annotation_kind returns only those
                required=required,
                default=None if required else p.default,
                choices=choices,
                nullable=nullable or (not required and p.default is None),
                description=docs.get(p.name, ""),
            )
        )
    return tuple(out)


def _annotation_kind(ann: Any) -> tuple[str, tuple[str, ...], bool]:
    """(kind, enum choices, nullable) of one annotation."""
    if ann is inspect.Parameter.empty or ann is Any:
        return "any", (), False
    if isinstance(ann, str):  # an annotation we could not evaluate
        name = ann.replace(" ", "")
        nullable = name.endswith("|None") or name.startswith("Optional[")
        base = name.removesuffix("|None").removeprefix("Optional[").removesuffix("]")
        base = base.rpartition(".")[2]
        return (base if base in _KIND_NAMES else "any"), (), nullable
    origin = typing.get_origin(ann)
    if origin is typing.Union or origin is types.UnionType:
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(ann))
        if len(args) == 1:
            kind, choices, _ = _annotation_kind(args[0])
            return kind, choices, nullable
        return "any", (), nullable
    if origin is typing.Literal:
        values = typing.get_args(ann)
        if all(isinstance(v, str) for v in values):
            return "enum", tuple(values), False
        return "any", (), False
    if origin is typing.Annotated:
        return _annotation_kind(typing.get_args(ann)[0])
    base = origin if origin is not None else ann
    if base in _KINDS:
        return _KINDS[base], (), False
    if isinstance(base, type):
        from collections import abc

        if issubclass(base, abc.Mapping):
            return "dict", (), False
        if issubclass(base, abc.Sequence) and not issubclass(base, str | bytes):
            return "list", (), False
    return "any", (), False


def handler_description(func: Callable[..., Any]) -> str | None:
    """The first paragraph of the docstring, on one line."""
    doc = inspect.getdoc(func)
    if not doc:
        return None
    return " ".join(doc.strip().split("\n\n", 1)[0].split())


# ---------------------------------------------------------------------------------------------
# Docstrings -> argument descriptions
# ---------------------------------------------------------------------------------------------

_GOOGLE_HEADER = re.compile(
    r"(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters):"
)
_GOOGLE_ENTRY = re.compile(r"\*{0,2}(?P<name>\w+)\s*(?:\([^)]*\))?\s*:(?P<text>.*)")
_NUMPY_HEADERS = {"Parameters", "Other Parameters", "Keyword Arguments", "Arguments"}
_NUMPY_ENTRY = re.compile(r"\*{0,2}(?P<name>\w+)\s*(?::.*)?")
_SPHINX_ENTRY = re.compile(r":param\s+(?:[^:]*\s)?\*{0,2}(?P<name>\w+)\s*:(?P<text>.*)")


def param_docs(func: Callable[..., Any]) -> dict[str, str]:
    """Argument name -> its documented text, from a Google-style `Args:` section, a NumPy-style
    `Parameters` section or Sphinx `:param name:` fields of the handler's docstring. Each
    text is on one line; undocumented arguments are left out."""
    doc = inspect.getdoc(func)
    if not doc:
        return {}
    lines = doc.expandtabs().splitlines()
    out: dict[str, str] = {}
    i = 0
    while i < len(lines):
        text = lines[i].strip()
        indent = _indent(lines[i])
        if _GOOGLE_HEADER.fullmatch(text):
            i = _google_section(lines, i + 1, indent, out)
        elif text in _NUMPY_HEADERS and i + 1 < len(lines) and _is_rule(lines[i + 1]):
            i = _numpy_section(lines, i + 2, indent, out)
        elif m := _SPHINX_ENTRY.fullmatch(text):
            body, i = _continuation(lines, i + 1, indent)
            _put(out, m["name"], [m["text"], *body])
        else:
            i += 1
    return out


def _google_section(lines: list[str], i: int, header: int, out: dict[str, str]) -> int:
    """Entries `name (type): text`, one indent in; deeper lines continue the entry."""
    entry: int | None = None
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        indent = _indent(line)
        if indent <= header:
            break
        if entry is None:
            entry = indent
        m = _GOOGLE_ENTRY.fullmatch(line.strip()) if indent == entry else None
        if m is None:  # prose between entries: not an argument's text
            i += 1
            continue
        body, i = _continuation(lines, i + 1, indent)
        _put(out, m["name"], [m["text"], *body])
    return i


def _numpy_section(lines: list[str], i: int, header: int, out: dict[str, str]) -> int:
    """Entries `name : type` at the header's indent, their text indented below them."""
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if _indent(line) < header or (i + 1 < len(lines) and _is_rule(lines[i + 1])):
            break  # the next section
        m = _NUMPY_ENTRY.fullmatch(line.strip())
        body, i = _continuation(lines, i + 1, _indent(line))
        if m is None:
            continue
        _put(out, m["name"], body)
    return i


def _continuation(lines: list[str], i: int, indent: int) -> tuple[list[str], int]:
    """The lines indented deeper than `indent` from `i` on (blank lines inside kept)."""
    body: list[str] = []
    while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
        body.append(lines[i].strip())
        i += 1
    while body and not body[-1]:
        body.pop()
    return body, i


def _put(out: dict[str, str], name: str, parts: list[str]) -> None:
    text = " ".join(" ".join(parts).split())
    if text and name not in out:
        out[name] = text


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_rule(line: str) -> bool:
    text = line.strip()
    return len(text) >= 3 and set(text) == {"-"}
