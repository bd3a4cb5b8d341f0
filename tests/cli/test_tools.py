"""`faultbench tools WORLD`: the tools an agent is offered, as text or as the tools/list JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import faultbench

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "tests" / "serve" / "worlds" / "shop.yaml"


def faultbench_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "faultbench.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=60,
    )


def test_json_is_the_tools_list_an_mcp_client_receives():
    proc = faultbench_cli("tools", str(SHOP), "--json")
    assert proc.returncode == 0, proc.stderr
    tools = json.loads(proc.stdout)["tools"]
    world = faultbench.load_world(SHOP)
    assert [t["name"] for t in tools] == [t.name for t in world.tools]
    for listed, tool in zip(tools, world.tools):
        assert listed["description"] == tool.description
        assert listed["inputSchema"] == tool.input_schema
    assert tools[0]["annotations"] == {
        "readOnlyHint": True, "idempotentHint": True, "openWorldHint": False,
    }  # fmt: skip
    assert tools[0]["title"] == "Get order"


def test_text_lists_each_tool_with_its_arguments():
    proc = faultbench_cli("tools", str(SHOP))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("get_order  (read-only, idempotent)\n    Get one order by id.")
    assert "    id: string (required) - id of the order\n" in out
    assert '    status: "placed" | "delivered" | "returned" (optional)' in out
    # a custom operation: MCP's conservative default, said out loud
    assert "\nreturn_order  (destructive)\n    Mark a delivered order as returned." in out
    assert "    note: string | null (optional)" in out


def test_a_world_that_does_not_load_exits_2(tmp_path):
    proc = faultbench_cli("tools", str(tmp_path / "missing.yaml"))
    assert proc.returncode == 2
    assert "missing.yaml: no such file" in proc.stderr


EXAMPLE_SHOP = ROOT / "examples" / "shop" / "worlds" / "shop.yaml"


def test_every_argument_of_the_example_shop_is_described_for_a_model():
    """Each argument says more than its own name: handler arguments take the docstring's
    `Args:` text, built-in ones say whose field or id they are."""
    world = faultbench.load_world(EXAMPLE_SHOP)
    for tool in world.tools:
        for name, prop in tool.input_schema["properties"].items():
            text = prop.get("description", "")
            assert text, f"{tool.name}.{name} has no description"
            assert text.split(" (")[0] != name.replace("_", " "), f"{tool.name}.{name}: {text}"
    proc = faultbench_cli("tools", str(EXAMPLE_SHOP))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert (
        "issue_refund  (destructive)\n    Refund part or all of an order's total to the customer.\n"
        "    order_id: string (required) - id of the order to refund.\n"
        "    amount: number (required) - how much to refund, in the order's currency; more "
        "than zero and at most what is left of the order's total after earlier refunds.\n"
        "    currency: string | null (optional) - the refund's currency (USD or EUR); leave it "
        "out to use the order's. Optional.\n"
    ) in out
    assert (
        '    reason: "damaged" | "wrong_item" | "not_needed" | "other" (optional) - why the '
        'customer returns it: one of damaged, wrong_item, not_needed, other (optional, default: "other")'
    ) in out
    assert "get_return  (read-only, idempotent)\n    Get one return request by id." in out
    assert "List orders, optionally filtered by customer_id and status (exact match)." in out
