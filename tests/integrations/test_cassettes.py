"""Real-model runs recorded once and replayed offline: pytest-recording (VCR.py) cassettes,
one per test and run id, with the API key filtered out. The "real model" here is a small
OpenAI-compatible fake server on 127.0.0.1 started by the test, so nothing leaves the machine.
The conftest used is the one docs/INTEGRATIONS.md shows."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

pytest.importorskip("pytest_recording")
pytest.importorskip("pydantic_ai")

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-test-do-not-record-0123456789"

WORLD = """\
services:
  orders:
    records: { order: { status: enum[placed, delivered] } }
    seed: { rows: [{ id: "1", status: delivered }] }
    operations: { get_order: { kind: get, record: order } }
"""

TEST = """\
import os

import pytest
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from faultbench.integrations import pydantic_ai


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.vcr
@pytest.mark.anyio
@pytest.mark.world("world.yaml")
@pytest.mark.runs(2)
async def test_agent(world, mcp_server):
    provider = OpenAIProvider(base_url=os.environ["FAKE_OPENAI_URL"], api_key=os.environ["OPENAI_API_KEY"])
    model = OpenAIChatModel("gpt-test", provider=provider)
    run = await pydantic_ai.run_agent(model, os.environ["PROMPT"], mcp=mcp_server)
    assert run.ok, run.error
    print("TRANSCRIPT", run.output, "|", run.trace.summary())
"""


def docs_conftest() -> str:
    """The conftest.py docs/INTEGRATIONS.md tells users to write."""
    doc = (ROOT / "docs" / "INTEGRATIONS.md").read_text()
    return doc.split("```python\n# conftest.py\n", 1)[1].split("```", 1)[0]


class FakeOpenAI(BaseHTTPRequestHandler):
    """Chat completions: ask for order 1 first, then answer with what the tool said."""

    calls: ClassVar[list[dict]] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).calls.append({"auth": self.headers.get("authorization"), "body": body})
        tool_results = [m for m in body["messages"] if m["role"] == "tool"]
        if not tool_results:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_order", "arguments": '{"id": "1"}'},
                    }
                ],
            }
        else:
            status = json.loads(tool_results[-1]["content"])["status"]
            message = {"role": "assistant", "content": f"order 1 is {status}"}
        answer = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_openai():
    FakeOpenAI.calls = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", server
    finally:
        server.shutdown()
        server.server_close()


def test_record_once_then_replay_offline_and_fail_clearly_on_a_changed_request(
    pytester, fake_openai, monkeypatch
):
    url, server = fake_openai
    pytester.makefile(".yaml", world=WORLD)
    pytester.makeconftest(docs_conftest())
    pytester.makepyfile(test_agent=TEST)
    monkeypatch.setenv("FAKE_OPENAI_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("PROMPT", "Where is order 1?")

    # 1. Record: the model's traffic goes to the (fake) provider and into one cassette per run.
    recorded = pytester.runpytest_subprocess("-s", "--record-mode=once", "-p", "no:cacheprovider")
    recorded.assert_outcomes(passed=2)
    assert len(FakeOpenAI.calls) == 4  # two model turns per run
    assert FakeOpenAI.calls[0]["auth"] == f"Bearer {SECRET}"
    cassettes = sorted(p.name for p in (pytester.path / "cassettes").rglob("*.yaml"))
    assert cassettes == ["test_agent[run0].yaml", "test_agent[run1].yaml"]
    text = "".join(p.read_text() for p in (pytester.path / "cassettes").rglob("*.yaml"))
    assert SECRET not in text
    assert "get_order" in text
    transcripts = re.findall(r"TRANSCRIPT .*", recorded.stdout.str())
    assert transcripts == ["TRANSCRIPT order 1 is delivered | get_order"] * 2

    # 2. Replay with the provider gone: the same transcript, no network.
    server.shutdown()
    server.server_close()
    calls = len(FakeOpenAI.calls)
    replayed = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    replayed.assert_outcomes(passed=2)
    assert re.findall(r"TRANSCRIPT .*", replayed.stdout.str()) == transcripts
    assert len(FakeOpenAI.calls) == calls

    # 3. The agent changed (another prompt): the request matches no recording. The run fails,
    # naming the request and how to record it again.
    monkeypatch.setenv("PROMPT", "Where is my order?")
    changed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "run1")
    changed.assert_outcomes(failed=1, deselected=1)
    out = changed.stdout.str()
    assert "Can't play back this request: no recorded interaction matches it" in out
    assert re.search(r"POST http://127\.0\.0\.1:\d+/v1/chat/completions\n", out)
    assert "cassettes/test_agent/test_agent[run1].yaml" in out
    assert 'Re-record: pytest "test_agent.py::test_agent[run1]" --record-mode=rewrite' in out
