"""A scripted agent reads the prompt (issue 39): the policy is handed a `History`, the tool
results so far and `prompt`, what the user asked, under every framework of this environment,
so a scripted agent can act on an order id in the prompt as a model would."""

from __future__ import annotations

import importlib
import re

import pytest

from faultbench.integrations import History, Reply, ToolCall

from .conftest import FRAMEWORKS

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_policy_gets_what_the_user_asked(shop, framework):
    module = importlib.import_module(f"faultbench.integrations.{framework}")
    placed = shop.orders.where(status="placed")[-1]
    prompts: list[str] = []

    def reader(seen):
        assert isinstance(seen, History)
        prompts.append(seen.prompt)
        if not seen:
            order_id = re.search(r"order (\S+?)\?", seen.prompt).group(1)
            return ToolCall("get_order", {"id": order_id})
        return Reply(f"Order {seen[-1].value['id']} is {seen[-1].value['status']}.")

    run = await module.run_agent(
        module.scripted_model(reader), f"Where is my order {placed.id}? Thanks.", mcp=shop
    )
    assert run.ok, run.error
    assert set(prompts) == {f"Where is my order {placed.id}? Thanks."}
    assert run.trace.summary() == "get_order"
    assert run.trace[0].args == {"id": placed.id}
