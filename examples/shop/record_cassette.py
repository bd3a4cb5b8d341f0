"""Record the model traffic of `test_agents.py`'s recorded-model tests into their cassettes:
`test_a_recorded_model` (Pydantic AI) and `test_a_recorded_agents_sdk_model` (the OpenAI
Agents SDK), both over OpenAI's chat-completions API.

    uv run python examples/shop/record_cassette.py          # against a fake model (below)
    OPENAI_API_KEY=... uv run python examples/shop/record_cassette.py --real   # gpt-5-mini
    uv run python examples/shop/record_cassette.py --test test_a_recorded_agents_sdk_model

Without `--real` the "model" is an OpenAI-compatible chat-completions server on 127.0.0.1
started here, which plays a careful support agent turn by turn: read the order, open the
return, refund, and after a failed refund look at the order's refunds before answering. The
cassettes shipped in cassettes/ were recorded this way: no OpenAI key was available to record
a real model. Either way the test then replays the cassette offline (`uv run pytest`), with
no key and no network; keys are filtered out of the file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

#: the tests that replay a cassette, one per framework
TESTS = ("test_a_recorded_model", "test_a_recorded_agents_sdk_model")

#: the careful agent's tool calls, one per turn, by how many tool results it has seen
STEPS = [
    ("get_order", {"id": "1"}),
    ("create_return", {"order_id": "1", "reason": "damaged"}),
    ("issue_refund", {"order_id": "1", "amount": 25.0}),
    ("list_refunds", {"order_id": "1"}),
]


class FakeChatCompletions(BaseHTTPRequestHandler):
    """`POST /v1/chat/completions`, answered as OpenAI does, playing STEPS."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        seen = [m for m in body["messages"] if m["role"] == "tool"]
        # Pydantic AI sends a failed call as a JSON error, the Agents SDK as the error's text
        refund = str(seen[2].get("content")) if len(seen) >= 3 else ""
        refund_failed = '"error"' in refund or "Gateway Timeout" in refund
        if len(seen) < 3 or (len(seen) == 3 and refund_failed):
            name, args = STEPS[len(seen)]
            message: dict[str, object] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{len(seen) + 1}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ],
            }
        else:
            message = {
                "role": "assistant",
                "content": "The refund of 25.00 went through once; the return is open.",
            }
        answer = {
            "id": f"chatcmpl-{len(seen) + 1}",
            "object": "chat.completion",
            "created": 1764633600,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": 120 + 40 * len(seen),
                "completion_tokens": 20,
                "total_tokens": 140 + 40 * len(seen),
            },
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", action="store_true", help="record gpt-5-mini (needs a key)")
    parser.add_argument(
        "--test",
        action="append",
        choices=TESTS,
        help="the test whose cassette to record (repeatable; default: all of them)",
    )
    options = parser.parse_args()
    env = dict(os.environ)
    server = None
    if options.real:
        if not env.get("OPENAI_API_KEY"):
            raise SystemExit("--real records OpenAI's gpt-5-mini: set OPENAI_API_KEY")
        env.pop("SHOP_MODEL_URL", None)
    else:
        server = ThreadingHTTPServer(("127.0.0.1", 0), FakeChatCompletions)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        env["SHOP_MODEL_URL"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
        env["OPENAI_API_KEY"] = "sk-fake-server"
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                *(f"examples/shop/test_agents.py::{name}" for name in options.test or TESTS),
                "--record-mode=rewrite",
                "-p",
                "no:cacheprovider",
                "-q",
            ],
            cwd=ROOT,
            env=env,
            check=False,
        )
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
    raise SystemExit(done.returncode)


if __name__ == "__main__":
    main()
