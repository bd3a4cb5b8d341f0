"""A live MCP server's tools as a world: same names, descriptions and input schemas.

`read_server` connects through `faultbench.serve.connect_client` (the installed SDK's own
client, mcp 1.x or 2.x) to a stdio command or a streamable HTTP URL and lists the tools.
With `record=True` it calls only what is safe to call: the tools the server marks
`readOnlyHint: true` (with the arguments given for it, else the candidates of
`_candidates.py`: the smallest arguments, then examples, defaults, enums and generated
values, until one is accepted), and the tools the user names with arguments (`--call`),
with a warning naming their `destructiveHint`. Every answer is kept per argument set, an
error as an error. `world_text` writes the world: every tool a custom operation whose
`input_schema:` is the server's, verbatim, so an agent lists the same tools; a family of
tools that looks like CRUD over one resource (`create_note` with `get_note`, `list_notes`,
`update_note` or `delete_note`) gets a record, from the create tool's arguments, and
handlers that write and read that table, so the imported world keeps state; every other
tool answers what the server answered to the same arguments, else its first answer, or the
smallest value its output schema accepts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._candidates import candidates
from ._document import Document
from ._emit import _block, _comment, _doc, _text, json_text, key, scalar
from ._names import identifier, record_name, snake, tool_name
from ._openapi_import import ImportedWorld
from ._shapes import FieldTypes, answer

_VERBS = {
    "create": "create", "add": "create", "new": "create", "insert": "create",
    "get": "get", "read": "get", "fetch": "get", "show": "get",
    "list": "list", "search": "list", "find": "list",
    "update": "update", "edit": "update", "set": "update", "modify": "update",
    "delete": "delete", "remove": "delete",
}  # fmt: skip


@dataclass
class ServerTools:
    """What a server said: its name, its tools in wire form, answers recorded per tool."""

    name: str
    tools: list[dict[str, Any]]
    #: per recorded tool: the value a call with arguments never recorded gets (the first
    #: answer the server gave without an error)
    recorded: dict[str, Any] = field(default_factory=dict)
    #: per called tool: every answer, per argument set, in the order of the calls
    answers: dict[str, list[Answer]] = field(default_factory=dict)
    #: per recorded tool: the arguments that worked, where they came from, refusals before
    recorded_with: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: per tool whose every try was refused: the refusals (its stub answers the default)
    fell_back: dict[str, list[str]] = field(default_factory=dict)
    #: per tool `--record` did not call: why (it is not marked read-only)
    not_called: dict[str, str] = field(default_factory=dict)
    #: tools called although not marked read-only (`--call` named them), with their hints
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Answer:
    """One call's answer: the arguments, where they came from, and the value the server
    gave, or the text of the error it answered with (`isError`, or a protocol error)."""

    arguments: dict[str, Any]
    origin: str
    value: Any = None
    error: str | None = None
    #: the server's answer carried `structuredContent` (else the value is read from its text)
    structured: bool = False


#: nesting depth of a recorded answer kept as a value; a deeper one is kept as its text
MAX_ANSWER_DEPTH = 100
#: characters of a refusal kept in a note
_NOTE = 300
# text a server answers an error with while saying it succeeded ("Error: Only SELECT
# queries are allowed"): a refusal for the choice of arguments, recorded as the server gave it
_ERROR_TEXT = re.compile(r"\s*(\w+ )?error\b\s*:", re.IGNORECASE)


def _depth(value: Any) -> int:
    """How deep lists and objects nest in `value` (iterative: any depth)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level + 1)
            if deepest > MAX_ANSWER_DEPTH:
                return deepest
            stack.extend((v, level + 1) for v in item)
    return deepest


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _value(result: dict[str, Any]) -> tuple[Any, str | None]:
    """A tool result's value (its structured content, else its text, as JSON when it is) and,
    when that value could not be kept as data, why (it is then the text)."""
    texts = [c.get("text", "") for c in result.get("content") or [] if c.get("type") == "text"]
    text = "\n".join(texts)
    if "structuredContent" in result:
        value = result["structuredContent"]
        if _depth(value) <= MAX_ANSWER_DEPTH:
            return value, None
        try:
            return json.dumps(value), (
                f"its structured content nests deeper than {MAX_ANSWER_DEPTH} levels (kept as "
                "its JSON)"
            )
        except (RecursionError, ValueError, TypeError):
            return text, ("its structured content nests too deep to keep (kept its text content)")
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        return text, f"its text is JSON nested deeper than {MAX_ANSWER_DEPTH} levels"
    except ValueError:
        return text, None
    if _depth(value) > MAX_ANSWER_DEPTH:
        return text, f"its text is JSON nested deeper than {MAX_ANSWER_DEPTH} levels"
    return value, None


def read_only(tool: dict[str, Any]) -> bool:
    """The server marks `tool` safe to call: `annotations.readOnlyHint` is true."""
    annotations = tool.get("annotations")
    return isinstance(annotations, dict) and annotations.get("readOnlyHint") is True


def hints(tool: dict[str, Any]) -> str:
    """What the server says of `tool`'s effects, for a warning or a note."""
    annotations = tool.get("annotations")
    if not isinstance(annotations, dict) or "destructiveHint" not in annotations:
        return "no destructiveHint: MCP assumes it may destroy"
    return f"destructiveHint: {json.dumps(annotations['destructiveHint'])}"


async def read_server(
    target: str | list[str],
    *,
    record: bool = False,
    arguments: Mapping[str, Any] | None = None,
    timeout: float = 30,
) -> ServerTools:
    """The server's tools; with `record`, the answers of those it marks read-only (with
    the arguments of `arguments[tool]`, else candidates) and of those `arguments` names (with
    its arguments only, and a warning). `arguments[tool]` is one argument set (a dict) or a
    list of them."""
    from faultbench.serve import connect_client, to_wire

    given = {name: _sets(value) for name, value in (arguments or {}).items()}
    async with connect_client(target, timeout=timeout) as client:
        tools, notes = await _every_page(client)
        tools = [to_wire(t) for t in tools]
        name = "mcp_server"
        info = getattr(client, "server_info", None) or getattr(
            getattr(client, "initialize_result", None), "server_info", None
        )
        if info is not None and getattr(info, "name", None):
            name = str(info.name)
        out = ServerTools(name, tools, notes=notes)
        if not record:
            return out
        listed = {str(t.get("name")) for t in tools}
        for unknown in sorted(set(given) - listed):
            out.warnings.append(f"--call {unknown}: the server lists no such tool; not called")
        done: set[str] = set()
        for tool in tools:
            tool_name_ = str(tool.get("name"))
            if tool_name_ in done:  # a duplicate name: the server answers one tool
                continue
            done.add(tool_name_)
            sets = given.get(tool_name_)
            if not read_only(tool):
                if not sets:
                    out.not_called[tool_name_] = (
                        f"not marked readOnlyHint: true ({hints(tool)}); pass --call "
                        f"{tool_name_[:80]}=JSON to call it"
                    )
                    continue
                out.warnings.append(
                    f"{tool_name_[:80]}: called with the arguments of --call although the server "
                    f"does not mark it read-only ({hints(tool)}); the real server may have "
                    "changed"
                )
            await _record(client, tool, sets, out)
    if out.not_called:
        shown = ", ".join(repr(n[:40]) for n in list(out.not_called)[:10])
        more = f" and {len(out.not_called) - 10} more" if len(out.not_called) > 10 else ""
        out.notes.append(
            f"not called, as the server does not mark them read-only: {shown}{more} (their "
            "stubs answer the default; --call TOOL=JSON calls one, with a warning)"
        )
    return out


def _sets(value: Any) -> list[dict[str, Any]]:
    return [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, dict)]


#: pages of `tools/list` read at most (a server whose cursors never end is cut there)
MAX_PAGES = 1000


async def _every_page(client: Any) -> tuple[list[Any], list[str]]:
    """Every tool over every page of `tools/list` (following `nextCursor`), and a note if
    the pages did not end."""
    listed = await client.list_tools()
    tools = list(listed.tools)
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        cursor = getattr(listed, "next_cursor", None) or getattr(listed, "nextCursor", None)
        if not cursor:
            return tools, []
        if cursor in seen:
            return tools, [f"tools/list gave the cursor {cursor!r:.60} twice; stopped there"]
        seen.add(cursor)
        listed = await client.list_tools(cursor=cursor)
        tools.extend(listed.tools)
    return tools, [f"tools/list had more than {MAX_PAGES} pages; read the first {MAX_PAGES}"]


def failure_cause(exc: BaseException) -> str:
    """The real cause of a failed import on one line: an exception group (anyio's task
    groups wrap the one that matters) is opened down to what it holds."""
    causes: list[BaseException] = []
    stack: list[BaseException] = [exc]
    while stack:
        e = stack.pop()
        if isinstance(e, BaseExceptionGroup):
            stack.extend(reversed(e.exceptions))
        else:
            causes.append(e)
    text = "; ".join(
        f"{type(c).__name__}: {' '.join(str(c).split()) or type(c).__name__}" for c in causes
    )
    return text[:500]


async def _record(
    client: Any, tool: dict[str, Any], given: list[dict[str, Any]] | None, out: ServerTools
) -> None:
    """Call `tool` with each argument set of `given` (--call), else with the candidates of
    `_candidates.py` until the server accepts one; keep every answer (an error as an error),
    or say why the stub falls back."""
    from faultbench.serve import to_wire

    name = str(tool["name"])
    if given:
        tries: list[tuple[str, Any]] = [("the arguments given with --call", g) for g in given]
    else:
        tries = list(candidates(tool.get("inputSchema") or {}))
    refused: list[str] = []
    answers = out.answers.setdefault(name, [])
    for origin, args in tries:
        try:
            result = to_wire(await client.call_tool(name, args))
        except Exception as exc:  # a server's failure is a note, not an aborted import
            cause = failure_cause(exc)
            refused.append(f"{json.dumps(args)} ({origin}): {cause}"[:_NOTE])
            if type(exc).__name__ not in ("McpError", "MCPError"):  # the session may be gone
                break
            answers.append(Answer(args, origin, error=cause))
            continue
        value, kept_as_text = _value(result)
        if kept_as_text:
            out.notes.append(f"{name}: answer kept as text: {kept_as_text}")
        structured = "structuredContent" in result
        if result.get("isError"):
            text = value if isinstance(value, str) else json.dumps(value)
            refused.append(f"{json.dumps(args)} ({origin}): {text[:200]}"[:_NOTE])
            answers.append(Answer(args, origin, error=text, structured=structured))
            continue
        answers.append(Answer(args, origin, value=value, structured=structured))
        looks_refused = isinstance(value, str) and _ERROR_TEXT.match(value)
        if looks_refused and not given:
            refused.append(f"{json.dumps(args)} ({origin}): {value[:200]}"[:_NOTE])
            continue
        if name not in out.recorded:
            out.recorded[name] = value
            out.recorded_with[name] = {
                "arguments": args, "from": origin, "refused": len(refused),
                "structured": structured,
            }  # fmt: skip
        if given:
            continue
        if refused:
            out.notes.append(
                f"{name}: recorded with {origin} {json.dumps(args)} after the server refused "
                f"{len(refused)} other argument set(s) (first: {refused[0]})"
            )
        return
    if name in out.recorded:
        return
    out.fell_back[name] = refused
    out.notes.append(
        f"{name}: the server refused all {len(refused)} argument set(s) tried (last: "
        f"{refused[-1] if refused else 'none'}); each is recorded as that error, other "
        "arguments get the default (pass --call NAME=JSON with arguments it accepts)"
    )


# ---------------------------------------------------------------------------------------------
# CRUD families
# ---------------------------------------------------------------------------------------------


def _verb_noun(tool: str) -> tuple[str, str] | None:
    words = snake(tool).split("_")
    if len(words) < 2 or words[0] not in _VERBS:
        return None
    verb = _VERBS[words[0]]
    noun = "_".join(words[1:])
    if verb == "list" and noun.endswith("s"):
        noun = noun[:-1]
    return verb, noun


def _id_argument(schema: dict[str, Any], noun: str) -> str | None:
    props = schema.get("properties") or {}
    required = list(schema.get("required") or props)
    for name in (*required, *props):
        low = snake(name)
        if low in ("id", f"{noun}_id") or low.endswith("_id") or low == "uid":
            return str(name)
    return None


@dataclass
class Family:
    noun: str
    record: str
    tools: dict[str, str]  # verb -> tool name
    fields: dict[str, Any]
    id_args: dict[str, str]  # tool -> its id argument


def families(tools: Sequence[dict[str, Any]]) -> tuple[list[Family], list[tuple[str, str]]]:
    """CRUD-looking families (a create and at least one other verb over the same noun), and
    the fields of their records that could not be mapped."""
    by_noun: dict[str, dict[str, dict[str, Any]]] = {}
    for tool in tools:
        vn = _verb_noun(tool["name"])
        if vn is not None:
            by_noun.setdefault(vn[1], {}).setdefault(vn[0], tool)
    out: list[Family] = []
    skipped: list[tuple[str, str]] = []
    taken: set[str] = set()
    for noun, verbs in by_noun.items():
        if "create" not in verbs or len(verbs) < 2:
            continue
        create_schema = verbs["create"].get("inputSchema") or {}
        record = record_name(noun, taken)
        types = FieldTypes(Document(dict(create_schema)), {})
        fields = types.fields(create_schema, record, depth=0, stack=())
        fields.pop("id", None)
        skipped.extend(types.skipped)
        id_args: dict[str, str] = {}
        ok = True
        for verb in ("get", "update", "delete"):
            if verb in verbs:
                arg = _id_argument(verbs[verb].get("inputSchema") or {}, noun)
                if arg is None:
                    ok = False
                id_args[verbs[verb]["name"]] = arg or ""
        if ok and fields:
            out.append(
                Family(noun, record, {v: t["name"] for v, t in verbs.items()}, fields, id_args)
            )
    return out, skipped


# ---------------------------------------------------------------------------------------------
# The world and its handlers
# ---------------------------------------------------------------------------------------------


def _schema_yaml(schema: dict[str, Any], pad: str) -> list[str]:
    """A JSON Schema as indented JSON (JSON is YAML), kept exactly as the server sent it."""
    lines = json_text(schema, indent=2).split("\n")
    return [f"{pad}input_schema: {lines[0]}", *(f"{pad}  {ln}" for ln in lines[1:])]


#: MCP's four hints and what a client takes each to be when a server leaves it out
_HINTS = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}


def copied_annotations(tool: dict[str, Any]) -> dict[str, bool] | None:
    """The server's hints on `tool` as a world file holds them: all four, a hint the server
    left out written with the value MCP gives an absent hint (so the world's own defaults for
    a custom operation, which a file's `annotations:` override hint by hint, cannot stand in
    for it). None when the server gave no annotations: the world lists the tool with a custom
    operation's conservative hints."""
    annotations = tool.get("annotations")
    if not isinstance(annotations, dict):
        return None
    given = {k: v for k, v in annotations.items() if k in _HINTS and isinstance(v, bool)}
    return {k: given.get(k, absent) for k, absent in _HINTS.items()}


def world_text(server: ServerTools, fams: list[Family], *, source: str, handlers: str) -> str:
    lines = [
        f"# Imported from the MCP server `{_comment(source)}` by `faultbench import mcp`. Every "
        "tool has the",
        "# server's name, description and input schema; its answer comes from",
        f"# {handlers}.py (CRUD families write and read a record; the rest answer a value",
        "# recorded from the server, or the smallest one their output schema accepts).",
        f"name: {scalar(identifier(snake(server.name) or 'mcp_server'))}",
        "seed: 1",
        "services:",
        "  tools:",
    ]
    if fams:
        lines.append("    records:")
        for fam in fams:
            lines.append(f"      # from the arguments of {_comment(fam.tools['create'])}")
            lines.append(f"      {key(fam.record)}:")
            lines.extend(_block(fam.fields, 4))
    lines.append("    operations:")
    for tool, (name, func) in zip(server.tools, world_names(server.tools)):
        lines.append(f"      {key(name)}:")
        lines.append("        kind: custom")
        lines.append(f"        handler: {handlers}.{func}")
        desc = tool.get("description")
        if desc:
            lines.extend(
                _text("        description:", desc, "          ")
                if "\n" in desc
                else [f"        description: {scalar(desc)}"]
            )
        title = tool.get("title")
        if isinstance(title, str):
            lines.append(f"        title: {scalar(title)}")
        hinted = copied_annotations(tool)
        if hinted is not None:
            lines.append(f"        annotations: {json_text(hinted)}")
        lines.extend(_schema_yaml(tool.get("inputSchema") or {"type": "object"}, "        "))
    return "\n".join(lines) + "\n"


def _func(tool: str) -> str:
    return identifier(re.sub(r"\W", "_", tool), "tool")


_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def world_names(tools: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """Per tool, in the server's order: (its name in the world, its handler's name). A name
    the world file takes (1 to 64 letters, digits, `_`, `-`) and no earlier tool has stays as
    it is; any other (non-ASCII, too long, empty, a duplicate) is renamed, and so is a
    handler whose identifier another tool's already has (`a-b` and `a_b`)."""
    names: set[str] = set()
    funcs: set[str] = set()
    out: list[tuple[str, str]] = []
    for tool in tools:
        raw = str(tool.get("name", ""))
        name = raw if _TOOL_NAME.fullmatch(raw) else (tool_name(raw) if raw else "tool")
        name = _free(name, names, 64)
        func = _free(_func(name), funcs, 200)
        out.append((name, func))
    return out


def _free(name: str, taken: set[str], most: int) -> str:
    found, n = name[:most], 2
    while found in taken:
        suffix = f"_{n}"
        found, n = name[: most - len(suffix)] + suffix, n + 1
    taken.add(found)
    return found


def handlers_text(server: ServerTools, fams: list[Family], *, source: str) -> str:
    crud = {t: (verb, fam) for fam in fams for verb, t in fam.tools.items()}
    out = [
        f'"""Handlers of the tools imported from the MCP server `{_doc(source)}` by `faultbench',
        "import mcp`. Edit them freely: a handler reads and writes the world's tables, and its",
        'answer is what the agent gets."""',
        "",
        "from __future__ import annotations",
        "",
        "import json",
        "from typing import Any",
        "",
        "#: the key of a recorded answer that was an error (an unlikely key of a real answer)",
        '_ERROR = "faultbench:recorded_error"',
        "",
        "",
        "def _fields(args: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:",
        "    return {k: v for k, v in args.items() if k in names}",
        "",
        "",
        "def _recorded(answers: dict[str, Any], args: dict[str, Any], default: Any) -> Any:",
        '    """The answer recorded for these arguments (an error raises as the server\'s',
        '    error), else `default`, the answer for arguments never recorded."""',
        "    found = answers.get(json.dumps(args, sort_keys=True, default=str), default)",
        "    if isinstance(found, dict) and set(found) == {_ERROR}:",
        "        raise ValueError(found[_ERROR])",
        "    return found",
        "",
    ]
    for tool, (_, func) in zip(server.tools, world_names(server.tools)):
        name = tool["name"]
        out.append("")
        out.append(f"def {func}(world: Any, clock: Any, **args: Any) -> Any:")
        if name in crud:
            verb, fam = crud[name]
            names = tuple(fam.fields)
            table = f"world.table({fam.record!r})"
            ident = fam.id_args.get(name, "")
            if verb == "create":
                out.append(f"    return {table}.insert(**_fields(args, {names!r})).to_dict()")
            elif verb == "list":
                out.append(f"    wanted = _fields(args, {names!r})")
                out.append(f"    return [r.to_dict() for r in {table}.where(**wanted)]")
            elif verb == "get":
                out.append(f"    row = {table}.get(str(args[{ident!r}]))")
                out.append("    if row is None:")
                out.append(
                    f'        raise LookupError(f"no {fam.noun} with id {{args[{ident!r}]!r}}")'
                )
                out.append("    return row.to_dict()")
            elif verb == "update":
                out.append(
                    f"    return {table}.update(str(args[{ident!r}]), "
                    f"**_fields(args, {names!r})).to_dict()"
                )
            else:
                out.append(f"    {table}.delete(str(args[{ident!r}]))")
                out.append(f"    return {{'id': str(args[{ident!r}]), 'deleted': True}}")
        elif server.answers.get(name):
            default = server.recorded[name] if name in server.recorded else _default(tool)
            out.append("    # answers recorded from the server by argument set (their JSON, keys")
            out.append("    # sorted); other arguments get the value `_recorded` is given last")
            out.append("    answers = {")
            for key_, found in _by_arguments(server.answers[name]).items():
                out.append(f"        {key_!r}: {found!r},")
            out.append("    }")
            out.append(f"    return _recorded(answers, args, {default!r})")
        else:
            out.append(f"    return {_default(tool)!r}")
        out.append("")
    return "\n".join(out)


def _default(tool: dict[str, Any]) -> Any:
    """What a tool never recorded answers: the smallest value its output schema accepts."""
    schema = tool.get("outputSchema")
    return answer(Document(dict(schema)), schema) if isinstance(schema, dict) else None


def _by_arguments(answers: list[Answer]) -> dict[str, Any]:
    """Recorded answers by the JSON of their arguments (keys sorted), as the handlers module
    looks them up: a value, or `{_ERROR: text}` for an error. The first answer to an
    argument set is kept."""
    out: dict[str, Any] = {}
    for a in answers:
        k = json.dumps(a.arguments, sort_keys=True, default=str)
        if k not in out:
            out[k] = a.value if a.error is None else {"faultbench:recorded_error": a.error}
    return out


# ---------------------------------------------------------------------------------------------
# import_mcp
# ---------------------------------------------------------------------------------------------


def import_mcp(
    target: str | list[str],
    *,
    record: bool = False,
    arguments: Mapping[str, Any] | None = None,
    handlers_module: str = "imported_handlers",
    timeout: float = 30,
) -> ImportedWorld:
    """Map the tools of the MCP server at `target` (a stdio command as an argv list, or a
    streamable HTTP URL) to a world.

    With `record`, the tools the server marks `readOnlyHint: true` are called (with
    `arguments[tool]`, else candidate arguments until the server accepts one, at most
    `MAX_TRIES`), and so are the tools `arguments` names, whatever their hints (with those
    arguments only; the report's `warnings` say so with each one's `destructiveHint`); no
    other tool is called (`not_called` says why). `arguments[tool]` is one argument set or a
    list of them. Each answer is recorded per argument set, an error as that error; the
    report says which tools were recorded with which arguments (`recorded_with`) and which
    fell back and why (`fell_back`)."""
    import anyio

    server = anyio.run(
        lambda: read_server(target, record=record, arguments=arguments, timeout=timeout)
    )
    fams, skipped = families(server.tools)
    source = target if isinstance(target, str) else " ".join(target)
    module = identifier(handlers_module, "handlers")
    crud = {t for fam in fams for t in fam.tools.values()}
    renamed = [
        {"server": str(t.get("name", "")), "world": name, "handler": func}
        for t, (name, func) in zip(server.tools, world_names(server.tools))
        if name != t.get("name")
    ]
    for r in renamed:
        server.notes.append(
            f"tool {r['server'][:80]!r} is {r['world']!r} in the world (a world tool name is 1 "
            "to 64 letters, digits, '_' or '-', and each is distinct)"
        )
    report = {
        "server": server.name,
        "renamed": renamed,
        "tools": len(server.tools),
        "crud": len(crud),
        "custom": len(server.tools) - len(crud),
        "recorded": sorted(server.recorded),
        "recorded_with": server.recorded_with,
        "fell_back": server.fell_back,
        "not_called": server.not_called,
        "warnings": server.warnings,
        "answers": {
            name: [
                {
                    "arguments": a.arguments,
                    "from": a.origin,
                    "error": a.error is not None,
                    "structured": a.structured,
                }
                for a in answers
            ]
            for name, answers in server.answers.items()
        },
        "records": {fam.record: sorted(fam.tools.values()) for fam in fams},
        "fields_skipped": [{"where": w, "why": y} for w, y in skipped],
        "notes": server.notes,
    }
    return ImportedWorld(
        world=world_text(server, fams, source=source, handlers=module),
        handlers_module=module,
        handlers=handlers_text(server, fams, source=source),
        report=report,
    )
