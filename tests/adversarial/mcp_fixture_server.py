"""A stdio MCP server made for the `import mcp` tests (issue 41 items 8, 9, 13; issue 42):
its tools are listed over several pages of `tools/list`, and its calls leave a trace in the
file named by `FIXTURE_CALLS` so a test sees which tools the importer called.

Run: python mcp_fixture_server.py [PAGE_SIZE]. Tools:
- `peek` (readOnlyHint true, title "Peek at it"): answers a text with line breaks,
  `\\u2028` and quotes, verbatim;
- `wipe` (destructiveHint true): would destroy; records that it was called;
- `touch` (no annotations);
- `fail_ro` (read-only): answers with isError;
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


def main() -> None:
    page = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    calls = os.environ.get("FIXTURE_CALLS")

    async def list_tools(ctx, params):  # type: ignore[no-untyped-def]
        tools = _tools()
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
