"""Run by .ci/clients in a throwaway venv holding one framework: every tool of every example
world (and of the worlds named after the checkout) through that framework's own MCP client
over stdio (`python -m faultbench serve WORLD`): DSPy's `Tool.from_mcp_tool`, AutoGen's
`mcp_server_tools`, Semantic Kernel's `add_plugin`; for CrewAI's mcpadapt, also a call with every
optional argument left out, as a CrewAI agent passes it (as null).

    python clients_probe.py dspy|autogen|sk|crewai CHECKOUT [WORLD...]
"""

import asyncio
import glob
import sys

WT = sys.argv[2] if len(sys.argv) > 2 else "/work/wt-i40"
WORLDS = sorted(glob.glob(f"{WT}/examples/*/worlds/*.yaml")) + sys.argv[3:]
fw = sys.argv[1]


def argv(world):
    return [sys.executable, "-m", "faultbench", "serve", world]


async def dspy_probe(world):
    import dspy
    import mcp
    from mcp.client.stdio import StdioServerParameters, stdio_client

    cmd = argv(world)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:])
    async with stdio_client(params) as (r, w), mcp.ClientSession(r, w) as s:
        await s.initialize()
        tools = (await s.list_tools()).tools
        out = [dspy.Tool.from_mcp_tool(s, t) for t in tools]
        assert all(t.args for t in out if t.name == "issue_refund")
        return len(out)


async def autogen_probe(world):
    from autogen_ext.tools.mcp import StdioServerParams, mcp_server_tools

    cmd = argv(world)
    tools = await mcp_server_tools(StdioServerParams(command=cmd[0], args=cmd[1:]))
    schemas = [t.schema for t in tools]  # the JSON schema each tool builds
    return len(schemas)


async def sk_probe(world):
    from semantic_kernel import Kernel
    from semantic_kernel.connectors.mcp import MCPStdioPlugin

    cmd = argv(world)
    async with MCPStdioPlugin(name="w", command=cmd[0], args=cmd[1:]) as plugin:
        k = Kernel()
        k.add_plugin(plugin)
        fns = k.get_full_list_of_function_metadata()
        return len(fns)


async def crewai_probe(world):
    from mcp import StdioServerParameters
    from mcpadapt.core import MCPAdapt
    from mcpadapt.crewai_adapter import CrewAIAdapter

    cmd = argv(world)
    with MCPAdapt(StdioServerParameters(command=cmd[0], args=cmd[1:]), CrewAIAdapter()) as tools:
        by_name = {t.name: t for t in tools}
        if "list_orders" in by_name:  # the shop: a list tool with its filters left out
            tool = by_name["list_orders"]
            # what a CrewAI agent's call passes: the arguments as validated by the tool's
            # model, every optional one the model left out as null (mcpadapt 0.1.19 drops a
            # null where the schema takes none; the server takes it as left out either way)
            args = tool.args_schema().model_dump()
            assert args, args
            assert all(v is None for v in args.values()), args
            out = tool.run(**args)
            assert str(out).startswith("[{"), out
        return len(tools)


async def main():
    bad = 0
    for world in WORLDS:
        try:
            n = await {
                "dspy": dspy_probe,
                "autogen": autogen_probe,
                "sk": sk_probe,
                "crewai": crewai_probe,
            }[fw](world)
            print("ok", fw, world.rsplit("/", 1)[-1], n, "tools")
        except Exception as e:
            bad += 1
            print("FAIL", fw, world, type(e).__name__, str(e)[:400])
    sys.exit(1 if bad else 0)


asyncio.run(main())
