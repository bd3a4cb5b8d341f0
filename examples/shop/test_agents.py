"""The shop's agents, one run each, with the refund's timeout pinned by a fault script.

`payments.issue_refund: {script: {1: timeout}}`: the first refund is written, then the call
fails after 30 virtual seconds. The naive agent refunds twice; the careful one once.
(The 20-run pass-rate gates come with the pytest plugin.)
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

import faultbench
from faultbench.serve import build_server

from ..transports import FRAMEWORKS
from . import agents

pytestmark = pytest.mark.anyio

WORLD = Path(__file__).parent / "worlds" / "shop.yaml"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def world():
    world = faultbench.load_world(WORLD)
    world.set_faults({"payments.issue_refund": {"script": {1: "timeout"}}})
    return world


async def run(framework: str, policy, world):
    module = importlib.import_module(f"faultbench.integrations.{framework}")
    return await module.run_agent(
        module.scripted_model(policy),
        agents.PROMPT,
        mcp=build_server(world),
        system_prompt=agents.SYSTEM_PROMPT,
    )


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_naive_agent_refunds_twice_under_a_timeout(framework, world):
    result = await run(framework, agents.naive, world)
    assert result.ok  # it believes it succeeded...
    summary = result.trace.summary()
    assert "issue_refund!timeout → issue_refund" in summary
    assert summary == "get_order → create_return → issue_refund!timeout → issue_refund"
    # ...and the customer got the money twice
    refunds = world.refunds.where(order_id=agents.ORDER)
    assert [r.amount for r in refunds] == [agents.AMOUNT, agents.AMOUNT]


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_careful_agent_refunds_once(framework, world):
    result = await run(framework, agents.careful, world)
    assert result.ok
    assert result.trace.summary() == (
        "get_order → create_return → issue_refund!timeout → list_refunds"
    )
    assert [r.amount for r in world.refunds.where(order_id=agents.ORDER)] == [agents.AMOUNT]
    assert world.orders.get(agents.ORDER).status == "returned"
    assert "went through" in result.output


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_careful_agent_retries_a_refund_that_did_not_go_through(framework, world):
    world.set_faults({"payments.issue_refund": {"script": {1: "timeout_before_commit"}}})
    result = await run(framework, agents.careful, world)
    assert result.trace.summary() == (
        "get_order → create_return → issue_refund!timeout_before_commit → list_refunds"
        " → issue_refund"
    )
    assert [r.amount for r in world.refunds.where(order_id=agents.ORDER)] == [agents.AMOUNT]


def test_returns_close_thirty_days_after_the_order(world):
    world.clock.advance(30 * 86400)  # order 1 was placed on 2025-05-15
    result = world.call("create_return", {"order_id": agents.ORDER, "reason": "damaged"})
    assert not result.ok
    assert "was placed 46 days ago; returns close after 30 days" in result.text
    result = world.call("create_return", {"order_id": "4", "reason": "damaged"})
    assert "only delivered orders can be returned" in result.text


@pytest.mark.skipif(
    not os.environ.get("OPENAI_API_KEY"),
    reason="set OPENAI_API_KEY to run the shop task with a real model (gpt-5-mini)",
)
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_real_model(framework, world):
    module = importlib.import_module(f"faultbench.integrations.{framework}")
    result = await module.run_agent(
        real_model(framework),
        agents.PROMPT,
        mcp=build_server(world),
        system_prompt=agents.SYSTEM_PROMPT,
    )
    refunded = [r.amount for r in world.refunds.where(order_id=agents.ORDER)]
    assert refunded == [agents.AMOUNT], f"{result.trace.summary()}\n{result.output}"


def real_model(framework: str):
    """gpt-5-mini as each framework names it (LangChain's needs `langchain-openai`)."""
    if framework == "smolagents":
        from smolagents import OpenAIServerModel

        return OpenAIServerModel(model_id="gpt-5-mini")
    return "gpt-5-mini" if framework == "openai_agents" else "openai:gpt-5-mini"


# --- a real model's traffic, recorded once and replayed offline ------------------------------

#: where the recorded model answered: OpenAI, or the OpenAI-compatible fake server of
#: record_cassette.py (the shipped cassette's); a replay needs neither
MODEL_URL = os.environ.get("SHOP_MODEL_URL", "https://api.openai.com/v1")


@pytest.fixture(scope="module")
def vcr_config():
    """Keys out of the cassette; a request is matched by method, path and body, not host,
    so a cassette recorded against the fake server replays whatever the URL."""
    return {
        "filter_headers": ["authorization", "x-api-key", "api-key"],
        "match_on": ["method", "path", "query", "body"],
    }


@pytest.mark.vcr
async def test_a_recorded_model(world):
    """The careful task with a real model's traffic replayed from
    cassettes/test_agents/test_a_recorded_model.yaml, offline and without a key. The shipped
    cassette was recorded against record_cassette.py's OpenAI-compatible fake server, not
    OpenAI (no key was at hand): `OPENAI_API_KEY=... uv run python
    examples/shop/record_cassette.py --real` records gpt-5-mini instead."""
    pytest.importorskip("pydantic_ai", reason="Pydantic AI needs mcp 2.x (its own environment)")
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from faultbench.integrations import pydantic_ai

    key = os.environ.get("OPENAI_API_KEY", "sk-replay-needs-no-key")
    model = OpenAIChatModel("gpt-5-mini", provider=OpenAIProvider(base_url=MODEL_URL, api_key=key))
    result = await pydantic_ai.run_agent(
        model, agents.PROMPT, mcp=build_server(world), system_prompt=agents.SYSTEM_PROMPT
    )
    _refunded_once(result, world)


# Against api.openai.com the Agents SDK adds `store` and a `prompt_cache_key` drawn anew for
# each run to its requests (not against another server): out of the body on both sides
@pytest.mark.vcr(filter_post_data_parameters=["prompt_cache_key", "store"])
async def test_a_recorded_agents_sdk_model(world):
    """The same task under the OpenAI Agents SDK, its chat-completions traffic replayed from
    cassettes/test_agents/test_a_recorded_agents_sdk_model.yaml, offline and without a key.
    Recorded, like the Pydantic AI one, against record_cassette.py's OpenAI-compatible fake
    server (no key was at hand); `--real` records gpt-5-mini."""
    pytest.importorskip("agents", reason="the OpenAI Agents SDK is not installed here")
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    from faultbench.integrations import openai_agents

    key = os.environ.get("OPENAI_API_KEY", "sk-replay-needs-no-key")
    client = AsyncOpenAI(base_url=MODEL_URL, api_key=key, max_retries=0)
    model = OpenAIChatCompletionsModel("gpt-5-mini", openai_client=client)
    result = await openai_agents.run_agent(
        model, agents.PROMPT, mcp=build_server(world), system_prompt=agents.SYSTEM_PROMPT
    )
    _refunded_once(result, world)


def _refunded_once(result, world):
    """The recorded careful agent: one refund, the timeout seen, the refunds looked up."""
    refunded = [r.amount for r in world.refunds.where(order_id=agents.ORDER)]
    assert result.ok, repr(result.error)
    assert refunded == [agents.AMOUNT], f"{result.trace.summary()}\n{result.output}"
    assert result.trace.summary() == (
        "get_order → create_return → issue_refund!timeout → list_refunds"
    )
