"""Many `--isolate` sessions at once: latency and the server's memory, which must come back
down when the sessions end.

    FAULTBENCH_SLOW=1 uv run pytest -s tests/soak/test_load.py   # 50 sessions x 200 calls
"""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import anyio
import mcp
import pytest

from tests.serve.serve_helpers import ServeProcess

from .conftest import size

SHOP = Path(__file__).resolve().parents[2] / "examples" / "shop" / "worlds" / "shop.yaml"


@pytest.fixture
def anyio_backend():
    return "trio"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def sessions(base: str) -> list[str]:
    with urllib.request.urlopen(f"{base}/faultbench/sessions", timeout=10) as answer:
        return json.loads(answer.read())["sessions"]


@pytest.mark.anyio
async def test_isolated_sessions_under_load_answer_fast_and_free_their_worlds():
    n_sessions, n_calls = size(10, 50), size(20, 200)
    server = ServeProcess(str(SHOP), "--http", "--port", "0", "--isolate")
    try:
        pid = server.proc.pid
        before = rss_mb(pid)
        latencies: list[float] = []
        errors = 0
        peak = before

        async def agent(i: int) -> None:
            nonlocal errors, peak
            async with mcp.Client(server.url, read_timeout_seconds=60) as client:
                for k in range(n_calls):
                    started = time.perf_counter()
                    if k % 4 == 3:
                        result = await client.call_tool(
                            "issue_refund", {"order_id": str(k % 30 + 1), "amount": 1.0}
                        )
                    else:
                        result = await client.call_tool("get_order", {"id": str(k % 30 + 1)})
                    latencies.append(time.perf_counter() - started)
                    # a refund the shop's rules refuse is an answer; a crash is not
                    kind = (result.meta or {}).get("error_kind")
                    errors += kind in ("internal_error", "no_session", "invalid_arguments")
                peak = max(peak, rss_mb(pid))

        started = time.monotonic()
        with anyio.fail_after(600):
            async with anyio.create_task_group() as tg:
                for i in range(n_sessions):
                    tg.start_soon(agent, i)
        took = time.monotonic() - started
        await anyio.sleep(0.5)
        left = sessions(server.base)
        after = rss_mb(pid)
    finally:
        server.stop()
    latencies.sort()
    p50 = latencies[len(latencies) // 2] * 1000
    p99 = latencies[int(len(latencies) * 0.99)] * 1000
    print(
        f"\n{n_sessions} --isolate sessions x {n_calls} calls in {took:.1f} s: p50 {p50:.1f} ms,"
        f" p99 {p99:.1f} ms, errors {errors}; server RSS {before:.0f} -> peak {peak:.0f} -> "
        f"{after:.0f} MB after the sessions closed; sessions left open: {len(left)}"
    )
    assert errors == 0
    assert left == []
    assert len(latencies) == n_sessions * n_calls
