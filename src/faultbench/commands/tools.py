"""`faultbench tools WORLD`: the tools an agent sees, with their input schemas."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_types import Tool as McpTool

HELP = "list the MCP tools a world serves, with their input schemas"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("world", metavar="WORLD", help="the world file (YAML)")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the tools/list result as JSON: the value an MCP client receives, indented",
    )


def run(args: argparse.Namespace) -> int:
    from faultbench.commands.check import load_or_report
    from faultbench.kernel import World

    spec = load_or_report(args.world)
    if spec is None:
        return 2
    world = World.from_spec(spec, faults=False)

    from faultbench.serve import mcp_tool

    tools = [mcp_tool(t) for t in world.tools]
    if args.json:
        listing = {
            "tools": [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools]
        }
        print(json.dumps(listing, indent=2, ensure_ascii=False))
        return 0
    for i, tool in enumerate(tools):
        if i:
            print()
        print(_describe(tool))
    return 0


def _describe(tool: McpTool) -> str:
    schema = tool.input_schema
    required = set(schema.get("required", ()))
    hints = []
    if tool.annotations is not None:
        if tool.annotations.read_only_hint:
            hints.append("read-only")
        elif tool.annotations.destructive_hint:
            hints.append("destructive")
        if tool.annotations.idempotent_hint:
            hints.append("idempotent")
    lines = [tool.name + (f"  ({', '.join(hints)})" if hints else "")]
    for text_line in (tool.description or "").splitlines():
        lines.append(f"    {text_line}" if text_line.strip() else "")
    props = schema.get("properties", {})
    if not props:
        lines.append("    arguments: none")
    for name, prop in props.items():
        flag = "required" if name in required else "optional"
        desc = f" - {prop['description']}" if prop.get("description") else ""
        lines.append(f"    {name}: {_type(prop)} ({flag}){desc}")
    return "\n".join(lines)


def _type(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return " | ".join(json.dumps(v) for v in prop["enum"])
    if "anyOf" in prop:
        return " | ".join(_type(p) for p in prop["anyOf"])
    kind: str | list[str] = prop.get("type", "any")
    if isinstance(kind, list):
        kind = " | ".join(kind)
    if prop.get("format"):
        kind += f" ({prop['format']})"
    return kind
