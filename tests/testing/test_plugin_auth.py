"""`@pytest.mark.principal(NAME)`: the run's MCP servers act as a principal of a world with
`auth:` (in-process `mcp_server`, `mcp_command`'s `--principal`, and `mcp_url`'s bearer token,
which `run_agent` sends under each framework)."""

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


HTTP_TESTS = """
import pytest
from faultbench.integrations import Reply, ToolCall
from faultbench.integrations import openai_agents, pydantic_ai

pytestmark = [pytest.mark.world("world.yaml"), pytest.mark.anyio]
FRAMEWORKS = pytest.mark.parametrize("framework", [pydantic_ai, openai_agents])


def refund(seen):
    if not seen:
        return ToolCall("issue_refund", {"order_id": "o1", "amount": 5})
    return Reply(seen[-1].text)


async def run(framework, url):
    return await framework.run_agent(framework.scripted_model(refund), "refund", mcp=url)


@FRAMEWORKS
@pytest.mark.principal("support_agent")
async def test_the_token_goes_with_the_url(world, mcp_url, framework):
    assert mcp_url.headers["Authorization"].startswith("Bearer ")
    agent = await run(framework, mcp_url)
    assert agent.ok, agent.error
    assert agent.trace.count("issue_refund", ok=True) == 1
    assert len(world.refunds) == 1


@pytest.mark.principal("support_agent")
async def test_the_bare_url_is_refused(world, mcp_url):
    agent = await run(pydantic_ai, str(mcp_url))  # a plain str: no headers
    assert "401 Unauthorized" in agent.output
    assert len(world.refunds) == 0


@pytest.mark.principal("readonly_bot")
async def test_the_principal_is_the_marked_one(world, mcp_url):
    agent = await run(openai_agents, mcp_url)
    assert "403 Forbidden: insufficient_scope" in agent.output
    assert len(world.refunds) == 0


def test_no_principal_no_headers(mcp_url):
    assert mcp_url.headers == {}
"""


def test_mcp_url_carries_the_marked_principals_token(pytester: pytest.Pytester):
    pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")
    pytest.importorskip("agents", reason="the openai-agents extra is not installed")
    pytester.makefile(".yaml", world=WORLD)
    pytester.makepyfile(test_http=HTTP_TESTS)
    pytester.makeconftest(
        "import pytest\n\n@pytest.fixture\ndef anyio_backend():\n    return 'asyncio'\n"
    )
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\naddopts = -p no:cacheprovider\n"
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:trio")
    result.assert_outcomes(passed=5)
