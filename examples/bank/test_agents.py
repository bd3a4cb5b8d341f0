"""The bank's agents, one run each, over streamable HTTP (`faultbench serve --http`).

The read right after the transfer is pinned stale (`accounts.get_account: {script: {2:
stale_read}}`): the naive agent pays twice, the careful one checks the ledger and pays once.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from . import agents

pytestmark = pytest.mark.anyio

WORLD = Path(__file__).parent / "worlds" / "bank.yaml"
FRAMEWORKS = ["pydantic_ai", "openai_agents"]
STALE_SECOND_READ = {"accounts.get_account": {"script": {"2": "stale_read"}}}


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
def bank():
    """`faultbench serve bank.yaml --http --port 0` on 127.0.0.1; yields its MCP URL."""
    server = subprocess.Popen(
        [sys.executable, "-m", "faultbench.cli", "serve", str(WORLD), "--http", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stderr.readline()
        found = re.search(r"http://\S+/mcp", line)
        assert found, line
        yield found.group(0)
    finally:
        server.terminate()
        server.wait(10)


def control(url: str, method: str, path: str, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url.removesuffix("/mcp") + "/faultbench" + path,
        data=data,
        method=method,
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def payments(url: str) -> list[int]:
    tables = control(url, "GET", "/state")["tables"]
    return [
        t["amount"]
        for t in tables["transfer"]
        if (t["from_account"], t["to_account"]) == (agents.PAYER, agents.PAYEE)
    ]


async def run(framework: str, policy, url: str):
    control(url, "POST", "/reset")  # the seeded bank, call counts from 1
    control(url, "PUT", "/faults", STALE_SECOND_READ)
    module = importlib.import_module(f"faultbench.integrations.{framework}")
    return await module.run_agent(
        module.scripted_model(policy), agents.PROMPT, mcp=url, system_prompt=agents.SYSTEM_PROMPT
    )


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_naive_agent_pays_twice_after_a_stale_read(framework, bank):
    result = await run(framework, agents.naive, bank)
    assert result.trace.summary() == (
        "get_account → transfer_money → get_account!stale_read → transfer_money → get_account"
    )
    assert payments(bank) == [agents.AMOUNT, agents.AMOUNT]


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_careful_agent_checks_the_ledger_and_pays_once(framework, bank):
    result = await run(framework, agents.careful, bank)
    assert result.ok
    assert result.trace.summary() == (
        "get_account → transfer_money → get_account!stale_read → list_transfers"
    )
    assert payments(bank) == [agents.AMOUNT]
    balances = {a["id"]: a["balance"] for a in control(bank, "GET", "/state")["tables"]["account"]}
    assert balances == {**balances, "ACC-1": 25000 - 3000, "ACC-2": 2000 + 3000}


@pytest.mark.skipif(
    not os.environ.get("OPENAI_API_KEY"),
    reason="set OPENAI_API_KEY to run the bank task with a real model (gpt-5-mini)",
)
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_real_model(framework, bank):
    control(bank, "POST", "/reset")
    control(bank, "PUT", "/faults", STALE_SECOND_READ)
    module = importlib.import_module(f"faultbench.integrations.{framework}")
    model = "openai:gpt-5-mini" if framework == "pydantic_ai" else "gpt-5-mini"
    result = await module.run_agent(
        model, agents.PROMPT, mcp=bank, system_prompt=agents.SYSTEM_PROMPT
    )
    assert payments(bank) == [agents.AMOUNT], f"{result.trace.summary()}\n{result.output}"
