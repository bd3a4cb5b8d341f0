"""A stdio MCP server made for the `import mcp` tests (issue 41 items 8, 9, 13; issue 42):
its tools are listed over several pages of `tools/list`, and its calls leave a trace in the
file named by `FIXTURE_CALLS` so a test sees which tools the importer called.

Run: python mcp_fixture_server.py [PAGE_SIZE [CALLS_FILE [extra]]] (the client starts a
stdio server with a bare environment, so the calls file may come as an argument; `extra`
adds the tools `deep`, `deep_structured` and `select`). Tools:
- `peek` (readOnlyHint true, title "Peek at it"): answers a text with line breaks,
  `\\u2028` and quotes, verbatim;
- `wipe` (destructiveHint true): would destroy; records that it was called;
- `touch` (no annotations);
- `fail_ro` (read-only): answers with isError;
- `deep` (read-only, `extra`): answers a JSON text 5,000 brackets deep;
- `deep_structured` (read-only, `extra`): structured content 150 objects deep;
- `select` (read-only, `extra`): answers "Error: Only SELECT queries are allowed" as a
  success unless its `query` starts with SELECT (as the reference SQLite server does);
- names that collide once made identifiers (`a-b`, `a_b`), non-ASCII ones, a long one, an
  empty one, a duplicate, a NUL in a description.
"""

from __future__ import annotations

import json
import os
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

PEEK_TEXT = 'Repository status:\n  "clean"\u2028next\x85end \\ done'
OBJECT = {"type": "object", "properties": {}}


def _tools() -> list[types.Tool]:
    tools = [
        types.Tool(
            name="peek",
            title="Peek at it",
            description="Look without touching.",
            input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
            annotations=types.ToolAnnotations(read_only_hint=True, title="Peek at it"),
        ),
        types.Tool(
            name="wipe",
            description="Delete everything.",
            input_schema=OBJECT,
            annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True),
        ),
        types.Tool(name="touch", description="Unannotated.", input_schema=OBJECT),
        types.Tool(
            name="fail_ro",
            description="Read-only, but refuses.",
            input_schema=OBJECT,
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
        types.Tool(name="a-b", description="dash", input_schema=OBJECT),
        types.Tool(name="a_b", description="underscore", input_schema=OBJECT),
        types.Tool(name="café", description="accent", input_schema=OBJECT),
        types.Tool(name="日本", description="kanji", input_schema=OBJECT),
        types.Tool(name="x" * 300, description="long", input_schema=OBJECT),
        types.Tool(name="", description="empty", input_schema=OBJECT),
        types.Tool(name="twice", description="first", input_schema=OBJECT),
        types.Tool(name="twice", description="second", input_schema=OBJECT),
        types.Tool(
            name="nul",
            description="a\x00b \u2028 c\x85d",
            input_schema={
                "type": "object",
                "properties": {"s": {"type": "string", "description": "line\u2028sep\x85nel"}},
            },
        ),
    ]
    return tools


def _extra() -> list[types.Tool]:
    read_only = types.ToolAnnotations(read_only_hint=True)
    return [
        types.Tool(name="deep", description="Deep.", input_schema=OBJECT, annotations=read_only),
        types.Tool(
            name="deep_structured",
            description="Deep.",
            input_schema=OBJECT,
            annotations=read_only,
        ),
        types.Tool(
            name="select",
            description="Run a query.",
            input_schema={
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
            annotations=read_only,
        ),
    ]


def _nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {"end": True}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def main() -> None:
    page = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    calls = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else os.environ.get("FIXTURE_CALLS")
    extra = len(sys.argv) > 3 and sys.argv[3] == "extra"

    async def list_tools(ctx, params):  # type: ignore[no-untyped-def]
        tools = _tools() + (_extra() if extra else [])
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + page
        return types.ListToolsResult(
            tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None
        )

    async def call_tool(ctx, params):  # type: ignore[no-untyped-def]
        if calls:
            with open(calls, "a") as f:
                f.write(json.dumps({"name": params.name, "arguments": params.arguments}) + "\n")
        if params.name == "peek":
            args = params.arguments or {}
            text = PEEK_TEXT if not args.get("path") else f"status of {args['path']}"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
        if params.name == "deep":
            text = "[" * 5000 + "]" * 5000
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
        if params.name == "deep_structured":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="deep")],
                structured_content=_nested(150),
            )
        if params.name == "select":
            query = str((params.arguments or {}).get("query", ""))
            text = (
                f"rows of {query}"
                if query.upper().startswith("SELECT")
                else "Error: Only SELECT queries are allowed"
            )
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
        if params.name == "fail_ro":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="Error: not allowed")],
                is_error=True,
            )
        return types.CallToolResult(content=[types.TextContent(type="text", text="done")])

    server = Server("fixture", on_list_tools=list_tools, on_call_tool=call_tool)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
