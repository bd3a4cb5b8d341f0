"""Tool arguments: a JSON Schema for the agent, a msgspec type for validation, and error
messages that name the argument and the type it should have.

Each operation becomes one `Arg` list; from it we build, once per world spec, both the schema
the agent reads (inline, no `$ref`, `additionalProperties: false`) and a msgspec Struct with
`forbid_unknown_fields=True` that `msgspec.convert` checks arguments against in about a
microsecond. msgspec reports one problem at a time in its own words; `explain` rewrites that
into "invalid arguments for get_order: `id`: expected a string, got 42".
"""

from __future__ import annotations

import re
import sys
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from .._errors import InvalidArguments
from .._text import SHOW_MAX, closest, show_name, show_value
from ._lists import OP_TEXT, arg_name, is_rich, list_description
from ._nested import INT_MAX as INT_MAX
from ._nested import INT_MIN as INT_MIN
from ._nested import SCALAR_NOUNS, NestedError, conform, describe, json_schema, or_null
from ._types import FieldSpec, OperationSpec, ParamSpec, RecordSpec

# ---------------------------------------------------------------------------------------------
# How kinds read in messages and schemas
# ---------------------------------------------------------------------------------------------

_encode = msgspec.json.Encoder().encode

_NOUN = {
    **SCALAR_NOUNS,
    "list": "an array",
    "dict": "an object",
    "any": "any JSON value",
    "version": "an integer (the record's version)",
}

_JSON_TYPE = {
    "str": "string",
    "ref": "string",
    "enum": "string",
    "int": "integer",
    "version": "integer",
    "float": "number",
    "bool": "boolean",
    "datetime": "string",
    "list": "array",
    "dict": "object",
}


def describe_kind(kind: str, choices: tuple[str, ...] = (), nullable: bool = False) -> str:
    if kind == "enum":
        text = "one of " + ", ".join(repr(c) for c in choices)
    else:
        text = _NOUN.get(kind, kind)
    return text + " or null" if nullable else text


def describe_field(f: FieldSpec) -> str:
    if f.nested:
        return describe(f)
    return describe_kind(f.kind, f.choices, f.optional)


_INT_RANGE = f"an integer from {INT_MIN} to {INT_MAX}"
_FINITE = "a finite number"


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------


class Arg(msgspec.Struct, frozen=True):
    name: str
    kind: str  # a FieldKind or "any" / "list" / "dict"
    required: bool
    choices: tuple[str, ...] = ()
    nullable: bool = False
    description: str = ""
    #: the value an omitted argument takes (JSON Schema `default`), if it has one
    has_default: bool = False
    default: Any = None
    #: a nested field's spec (kind "list" / "object"): checked by `_nested.conform`
    field: FieldSpec | None = None
    #: objects may leave fields out (an update merges them into the current value)
    partial: bool = False


def _field_arg(
    f: FieldSpec, *, required: bool, nullable: bool, text: str, partial: bool = False
) -> Arg:
    if f.nested:
        f = msgspec.structs.replace(f, optional=nullable)
        return Arg(f.name, f.kind, required, (), nullable, text, field=f, partial=partial)
    return Arg(f.name, f.kind, required, f.choices, nullable, text)


def _about(f: FieldSpec, rspec: RecordSpec) -> str:
    if f.kind == "ref":
        return f"id of the {_w(f.ref or 'record')} this {_w(rspec.name)} refers to"
    if f.kind == "enum":
        return f"{f.name} of the {_w(rspec.name)}: one of {', '.join(f.choices)}"
    if f.kind == "datetime":
        return f"{f.name} of the {_w(rspec.name)}, an RFC 3339 date-time with timezone"
    return f"{f.name} of the {_w(rspec.name)}"


def operation_args(op: OperationSpec, records: dict[str, RecordSpec]) -> list[Arg]:
    """The arguments a tool takes, in the order the agent sees them."""
    return _write_args(op, records, _kind_args(op, records))


def _write_args(op: OperationSpec, records: dict[str, RecordSpec], args: list[Arg]) -> list[Arg]:
    """`args` with what safe writes add: a `version` field is the server's, not an argument,
    and an update of a versioned record takes `expected_version`; an idempotency key is an
    optional argument (see `_calls/_idempotency.py`)."""
    rspec = records.get(op.record) if op.record and op.kind != "custom" else None
    version = next((f.name for f in rspec.fields if f.kind == "version"), None) if rspec else None
    if version is not None and op.kind in ("create", "update"):
        args = [a for a in args if a.name != version]
        if op.kind == "update":
            text = (
                f"the {version} of the {_w(rspec.name)} this change is based on (from a read); "  # type: ignore[union-attr]  # set with version
                "if it has changed since, the update fails with 409 Conflict; omit to update "
                "whatever the current version is"
            )
            args.append(Arg("expected_version", "int", False, description=text))
    idem = op.idempotency
    if idem is not None and all(a.name != idem.key for a in args):
        hours = idem.window_s / 3600
        text = (
            f"idempotency key: a retry with the same key and the same arguments within "
            f"{hours:g}h returns the first result without writing again (use a new unique "
            "key for each new request)"
        )
        args.append(Arg(idem.key, "str", False, description=text))
    return args


def _kind_args(op: OperationSpec, records: dict[str, RecordSpec]) -> list[Arg]:
    if op.kind == "custom":
        return [
            Arg(
                p.name,
                p.kind,
                p.required,
                p.choices,
                p.nullable,
                _param_text(p, op, records),
                has_default=not p.required and p.default is not None,
                default=p.default,
            )
            for p in op.params
        ]
    if op.kind == "events":
        return _feed_args(op)
    rspec = records[op.record]  # type: ignore[index]  # only custom operations have no record
    rid = f"id of the {_w(rspec.name)}"
    if op.kind in ("get", "delete"):
        return [Arg("id", "str", True, description=rid)]
    if op.kind == "list" and is_rich(op):
        return _list_args(op, rspec)
    if op.kind == "list":
        out = []
        for name in op.filter:
            f = rspec.field(name)
            assert f is not None, f"filter field {name!r} was validated by the loader"
            text = f"only {_w(rspec.plural)} whose {name} equals this; omit to not filter on it"
            if f.kind == "ref":
                text = (
                    f"only {_w(rspec.plural)} of this {_w(f.ref or 'record')} (its id); "
                    "omit to not filter on it"
                )
            out.append(_field_arg(f, required=False, nullable=f.optional, text=text))
        return out
    if op.kind == "create":
        out = []
        for f in rspec.fields:
            if f.name in op.set:  # the operation sets it: not an argument
                continue
            if f.name == "id":
                text = f"id for the new {_w(rspec.name)}; omit it to get the next free id"
                out.append(Arg("id", "str", False, description=text))
                continue
            required = not f.optional and not f.has_default
            text = _about(f, rspec)
            if f.has_default:
                text += f" (default: {show_value(f.default)})"
            elif f.optional:
                text += " (optional)"
            arg = _field_arg(f, required=required, nullable=f.optional, text=text)
            if f.has_default:
                arg = msgspec.structs.replace(arg, has_default=True, default=f.default)
            out.append(arg)
        # Required arguments first: models fill schemas top-down.
        return sorted(out, key=lambda a: not a.required)
    if op.kind == "update":
        out = [Arg("id", "str", True, description=f"id of the {_w(rspec.name)} to change")]
        for f in rspec.fields:
            if f.name != "id" and f.name not in op.set:
                text = _about(f, rspec) + "; omit to keep the current value"
                if f.optional:
                    text += ", null to clear it"
                arg = _field_arg(f, required=False, nullable=f.optional, text=text, partial=True)
                out.append(arg)
        return out
    raise AssertionError(f"unknown operation kind {op.kind!r}")


def _feed_args(op: OperationSpec) -> list[Arg]:
    """`list_events`: a page of the event feed (`_calls/_feed.py`); `op.filter` holds the
    feed's event types."""
    return [
        Arg("limit", "int", False, description="how many events at most, 1 to 100",
            has_default=True, default=10),
        Arg("starting_after", "str", False, description=(
            "an event id: only the events after it (pass the last id you saw to get what is "
            "new, or next_cursor to get the next page)")),
        Arg("since", "datetime", False,
            description="only the events created at or after this RFC 3339 date-time"),
        Arg("type", "enum", False, op.filter, description="only the events of this type"),
    ]  # fmt: skip


def _list_args(op: OperationSpec, rspec: RecordSpec) -> list[Arg]:
    """A list operation with operators, `sort:` or `page:` (see `_lists.py` for the names)."""
    plural = _w(rspec.plural)
    out = []
    for name, ops in op.where:
        f = rspec.field(name)
        assert f is not None, f"filter field {name!r} was validated by the loader"
        for o in ops:
            if o == "eq":
                text = f"only {plural} whose {name} equals this"
                out.append(_field_arg(f, required=False, nullable=f.optional, text=text + _OMIT))
                continue
            text = OP_TEXT[o].format(plural=plural, name=name) + _OMIT
            if o == "in":
                item = msgspec.structs.replace(f, optional=False, has_default=False)
                many = FieldSpec(arg_name(name, o), "list", item=item)
                out.append(Arg(many.name, "list", False, description=text, field=many))
            elif o in ("prefix", "contains", "like"):
                out.append(Arg(arg_name(name, o), "str", False, description=text))
            else:
                out.append(Arg(arg_name(name, o), f.kind, False, description=text))
    if op.sort:
        text = (
            f"order of the {plural}: a field name, '-' first for descending; default {op.sort[0]}"
        )
        out.append(
            Arg("sort", "enum", False, op.sort, description=text, has_default=True,
                default=op.sort[0])
        )  # fmt: skip
    page = op.page
    if page is not None:
        out.append(
            Arg("limit", "int", False, description=f"how many {plural} to return, 1 to "
                f"{page.max_size}", has_default=True, default=page.size)
        )  # fmt: skip
        if page.style == "cursor":
            out.append(
                Arg(
                    "starting_after",
                    "str",
                    False,
                    description=("a next_cursor from an earlier result: return the page after it"),
                )
            )
            out.append(
                Arg(
                    "ending_before",
                    "str",
                    False,
                    description=("a cursor from an earlier result: return the page before it"),
                )
            )
        else:
            out.append(
                Arg(
                    "offset",
                    "int",
                    False,
                    description=(f"how many {plural} to skip"),
                    has_default=True,
                    default=0,
                )
            )
    return out


_OMIT = "; omit to not filter on it"


def _param_text(p: ParamSpec, op: OperationSpec, records: dict[str, RecordSpec]) -> str:
    """A custom handler's argument as the agent reads it: the docstring's words for it, or
    what its name says (`order_id` of a world with orders is an order's id); then what
    values it takes, when the JSON type alone does not say, and its default."""
    text = p.description or _param_guess(p, op, records)
    if p.kind == "enum":
        text = _join(text, "one of " + ", ".join(p.choices))
    elif p.kind == "datetime":
        text = _join(text, "an RFC 3339 date-time with timezone")
    elif p.kind == "any" and not p.description:
        text = _join(text, "any JSON value")
    if not p.required:
        default = "" if p.default is None else f", default: {show_value(p.default)}"
        # documented text is sentences: the note follows as one
        text += f" Optional{default}." if text.endswith(".") else f" (optional{default})"
    return text


def _join(text: str, more: str) -> str:
    return f"{text.rstrip('.')}: {more}" if text else more


def _param_guess(p: ParamSpec, op: OperationSpec, records: dict[str, RecordSpec]) -> str:
    stem = p.name.removesuffix("_id")
    if stem != p.name and stem in records and p.kind in ("str", "any"):
        return f"id of the {_w(stem)}"
    if p.name == "id" and op.record is not None:
        return f"id of the {_w(op.record)}"
    rspec = records.get(op.record) if op.record else None
    f = rspec.field(p.name) if rspec is not None else None
    if f is not None and f.kind == p.kind and rspec is not None:
        return f"{p.name} of the {_w(rspec.name)}"
    return p.name.replace("_", " ")


def default_description(op: OperationSpec, records: dict[str, RecordSpec]) -> str:
    if op.description:
        return op.description
    if op.kind == "events":
        return (
            "List the events of the feed (what changed in this world), oldest first, one page "
            "at a time: has_more says whether more follow, and next_cursor is the "
            "starting_after that gets them."
        )
    if op.kind == "custom" or op.record is None:
        return f"Run the {op.name} operation of the {op.service} service."
    r = records[op.record]
    if op.kind == "get":
        return f"Get one {_w(r.name)} by id. Fails with a not-found error if there is none."
    if op.kind == "list" and is_rich(op):
        return list_description(op, r)
    if op.kind == "list":
        names = [*op.filter]
        if len(names) > 1:
            names[-2:] = [f"{names[-2]} and {names[-1]}"]
        by = f", optionally filtered by {', '.join(names)} (exact match)" if names else ""
        return f"List {_w(r.plural)}{by}. Returns an array of {_w(r.plural)} in id order."
    if op.kind == "create":
        return f"Create {_a(_w(r.name))}. Returns the new {_w(r.name)}, including its id."
    if op.kind == "update":
        return (
            f"Change fields of an existing {_w(r.name)}, by id; fields left out keep their "
            "value. "
            f"Returns the updated {_w(r.name)}. Fails with a not-found error if there is none."
        )
    return (
        f"Delete {_a(_w(r.name))} by id. Returns the deleted {_w(r.name)}. Fails with a "
        "not-found error if there is none."
    )


def _w(name: str) -> str:
    """A record name as words in prose: `return_request` reads "return request"."""
    return name.replace("_", " ")


def _a(noun: str) -> str:
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


# ---------------------------------------------------------------------------------------------
# JSON Schema
# ---------------------------------------------------------------------------------------------


def arg_schema(a: Arg) -> dict[str, Any]:
    s: dict[str, Any] = {}
    if a.field is not None:
        s = json_schema(a.field, partial=a.partial)
        s.pop("default", None)
        if a.description:
            s["description"] = a.description
        if a.has_default:
            s["default"] = msgspec.to_builtins(a.default)
        return s
    jtype = _JSON_TYPE.get(a.kind)
    if jtype is not None:
        s["type"] = jtype
    if a.kind == "enum":
        s["enum"] = list(a.choices)
    elif a.kind == "datetime":
        s["format"] = "date-time"
    if a.nullable and s:
        s = or_null(s)
    if a.description:
        s["description"] = a.description
    if a.has_default:
        s["default"] = msgspec.to_builtins(a.default)
    return s


def input_schema(args: list[Arg]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {a.name: arg_schema(a) for a in args},
        "required": [a.name for a in args if a.required],
        "additionalProperties": False,
    }


# ---------------------------------------------------------------------------------------------
# Msgspec validation
# ---------------------------------------------------------------------------------------------

_UTC_DT = Annotated[datetime, msgspec.Meta(tz=True)]
_INT64 = Annotated[int, msgspec.Meta(ge=INT_MIN, le=INT_MAX)]
# NaN fails both bounds, so this also refuses NaN: neither it nor +-inf is JSON.
_FINITE_FLOAT = Annotated[float, msgspec.Meta(ge=-sys.float_info.max, le=sys.float_info.max)]


def _py_type(a: Arg) -> Any:
    if a.field is not None:
        return Any  # checked after conversion, with a JSON path (`_nested.conform`)
    if a.kind == "enum":
        t: Any = Literal[a.choices]
    else:
        t = {
            "str": str,
            "ref": str,
            "int": _INT64,
            "version": _INT64,
            "float": _FINITE_FLOAT,
            "bool": bool,
            "datetime": _UTC_DT,
            "list": list,
            "dict": dict,
            "any": Any,
        }[a.kind]
    if a.nullable and a.kind != "any":
        t = t | None
    return t


_MISSING = re.compile(r"Object missing required field `(?P<name>[^`]*)`")
_UNKNOWN = re.compile(r"Object contains unknown field `(?P<name>.*)`$", re.DOTALL)
_AT = re.compile(r"^(?P<msg>.*) - at `\$(?:\.(?P<name>\w+)|\[[^\]]*\])?(?P<rest>[^`]*)`$")


class Validator:
    """Checks one tool's arguments; `validate(args)` returns the cleaned values (only those
    given) or raises `InvalidArguments` with the message the agent sees."""

    __slots__ = ("_args", "_fields", "_nested", "_omit_nulls", "_type", "tool")

    def __init__(self, tool: str, args: list[Arg]):
        self.tool = tool
        self._args = {a.name: a for a in args}
        fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        for a in args:
            if a.required:
                fields.append((a.name, _py_type(a)))
            else:
                fields.append((a.name, _py_type(a) | msgspec.UnsetType, msgspec.UNSET))
        self._fields = tuple(a.name for a in args)
        #: optional arguments that take no null: a null for one is taken as left out (some
        #: MCP clients send null for every argument the model left out)
        self._omit_nulls = frozenset(
            a.name for a in args if not a.required and not a.nullable and a.kind != "any"
        )
        self._nested = tuple((a.name, a.field, a.partial) for a in args if a.field is not None)
        self._type = msgspec.defstruct(
            f"{tool}_args", fields, forbid_unknown_fields=True, frozen=True
        )

    def validate(self, args: Any) -> dict[str, Any]:
        if self._omit_nulls and isinstance(args, dict) and None in args.values():
            args = {k: v for k, v in args.items() if v is not None or k not in self._omit_nulls}
        try:
            obj = msgspec.convert(args, self._type, strict=True)
        except msgspec.ValidationError as exc:
            raise InvalidArguments(self.explain(args, str(exc))) from None
        except UnicodeEncodeError:  # a key with a lone surrogate
            raise InvalidArguments(self.not_unicode()) from None
        try:
            _encode(args)  # text must be UTF-8: no event could hold a lone surrogate
        except UnicodeEncodeError:
            raise InvalidArguments(self.not_unicode()) from None
        except (TypeError, msgspec.EncodeError, ValueError, RecursionError):
            pass  # Python values a test passed in: args_json logs them as it can
        out = {}
        for name in self._fields:
            v = getattr(obj, name)
            if v is not msgspec.UNSET:
                out[name] = v
        for name, field, partial in self._nested:
            if name in out:
                try:
                    out[name] = conform(field, out[name], name, partial=partial)
                except NestedError as exc:
                    raise InvalidArguments(
                        f"invalid arguments for {self.tool}: `{exc.path}`: {exc.message}"
                    ) from None
        return out

    def not_unicode(self) -> str:
        return (
            f"invalid arguments for {self.tool}: expected text of valid Unicode. Instead, "
            "received a lone surrogate (such as \\ud800), which cannot be written as UTF-8."
        )

    def explain(self, args: Any, msg: str) -> str:
        head = f"invalid arguments for {self.tool}: "
        if m := _MISSING.match(msg):
            a = self._args.get(m["name"])
            what = f" ({describe_kind(a.kind, a.choices)})" if a else ""
            return head + f"missing required argument `{m['name']}`{what}"
        if m := _UNKNOWN.match(msg):
            # From the arguments, not msgspec's text: a name may hold backticks or newlines.
            extra = [k for k in args if k not in self._args] if isinstance(args, dict) else []
            name = str(extra[0]) if extra else m["name"]
            known = ", ".join(f"`{n}`" for n in self._fields) or "none"
            close = closest(name, self._fields)
            hint = f" Did you mean `{close}`?" if close else ""
            return head + f"unknown argument `{show_name(name)}`; this tool takes: {known}.{hint}"
        m = _AT.match(msg)
        if m is None or m["name"] is None:
            if not isinstance(args, dict):
                return head + (
                    "expected an object of named arguments. Instead, received: " + show_value(args)
                )
            bad = [k for k in args if not isinstance(k, str)]
            if bad:
                return head + (
                    "expected argument names (strings). Instead, received the key "
                    + show_value(bad[0])
                )
            return head + show_name(msg, SHOW_MAX)
        name, rest, inner = m["name"], m["rest"], m["msg"]
        a = self._args.get(name)
        got = args.get(name) if isinstance(args, dict) else None
        if rest or a is None:  # inside a list/dict argument: msgspec's words are precise
            inner = show_name(inner[0].lower() + inner[1:], SHOW_MAX)
            return head + f"`{show_name(name + rest)}`: {inner}"
        want = describe_kind(a.kind, a.choices, a.nullable)
        if a.kind == "int" and isinstance(got, int) and not isinstance(got, bool):
            want = _INT_RANGE
        elif a.kind == "float" and isinstance(got, int | float) and not isinstance(got, bool):
            want = _FINITE
        text = f"`{name}`: expected {want}, got {show_value(got)}"
        if a.kind == "enum" and isinstance(got, str):
            close = closest(got, a.choices)
            if close:
                text += f". Did you mean {close!r}?"
        return head + text
