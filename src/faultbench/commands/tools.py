"""`faultbench tools WORLD`: the tools an agent sees, with their input schemas."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

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

    from faultbench.serve import mcp_tool, to_wire

    # Wire form, as the installed MCP SDK (1.x or 2.x) lists the tools.
    tools = [to_wire(mcp_tool(t)) for t in world.tools]
    if args.json:
        listing = {"tools": tools}
        print(json.dumps(listing, indent=2, ensure_ascii=False))
        return 0
    for i, tool in enumerate(tools):
        if i:
            print()
        print(_describe(tool))
    return 0


def _describe(tool: dict[str, Any]) -> str:
    schema = tool["inputSchema"]
    required = set(schema.get("required", ()))
    hints = []
    annotations = tool.get("annotations")
    if annotations is not None:
        if annotations.get("readOnlyHint"):
            hints.append("read-only")
        elif annotations.get("destructiveHint"):
            hints.append("destructive")
        if annotations.get("idempotentHint"):
            hints.append("idempotent")
    lines = [tool["name"] + (f"  ({', '.join(hints)})" if hints else "")]
    for text_line in (tool.get("description") or "").splitlines():
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
