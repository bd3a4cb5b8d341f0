"""`@pytest.mark.principal(NAME)`: the run's MCP servers act as a principal of a world with
`auth:` (in-process `mcp_server`, and `mcp_command`'s `--principal`)."""

from __future__ import annotations

import pytest

WORLD = """
auth:
  principals:
    support_agent: { scopes: [refunds:write] }
    readonly_bot: { scopes: [] }
services:
  payments:
    records:
      refund: { order_id: str, amount: int }
    operations:
      issue_refund: { kind: create, record: refund, scopes: [refunds:write] }
"""

TESTS = """
import mcp
import pytest

pytestmark = pytest.mark.world("world.yaml")


@pytest.mark.principal("support_agent")
async def test_agent_may_refund(world, mcp_server):
    async with mcp.Client(mcp_server) as client:
        result = await client.call_tool("issue_refund", {"order_id": "o1", "amount": 5})
    assert not result.is_error
    assert len(world.refunds) == 1


@pytest.mark.principal("readonly_bot")
async def test_bot_may_not(world, mcp_server):
    async with mcp.Client(mcp_server) as client:
        result = await client.call_tool("issue_refund", {"order_id": "o1", "amount": 5})
    assert "403 Forbidden: insufficient_scope" in result.content[0].text


async def test_no_principal_no_token(world, mcp_server):
    async with mcp.Client(mcp_server) as client:
        result = await client.call_tool("issue_refund", {"order_id": "o1", "amount": 5})
    assert result.content[0].text.startswith("401 Unauthorized")


@pytest.mark.principal("nobody")
def test_unknown_principal(mcp_server):
    pass


@pytest.mark.principal("support_agent")
def test_command_serves_as_the_principal(mcp_command):
    assert mcp_command[mcp_command.index("--principal") + 1] == "support_agent"
"""


@pytest.fixture
def desk(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", world=WORLD)
    pytester.makepyfile(test_desk=TESTS)
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\naddopts = -p no:cacheprovider\n"
    )
    return pytester


def test_the_principal_marker_sets_who_the_servers_act_as(desk):
    result = desk.runpytest_subprocess("-q")
    result.assert_outcomes(passed=4, errors=1)  # a set-up problem, not an agent failure
    result.stdout.fnmatch_lines(
        ["*test_unknown_principal*@pytest.mark.principal: unknown principal 'nobody'*"]
    )
    assert "During handling" not in result.stdout.str()
