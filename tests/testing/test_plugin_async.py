"""The fixtures under the three async styles, with the scripted agent and the official MCP
client: in-process (`mcp_server`) and over streamable HTTP (`mcp_url`)."""

from __future__ import annotations

ASYNC_STYLES = """
import pytest
from scripted_agent import refund_order

pytestmark = [pytest.mark.world("world.yaml"), pytest.mark.runs(3)]

@pytest.fixture
def anyio_backend():
    return "asyncio"

@pytest.mark.asyncio
async def test_asyncio(world, mcp_server, trace):
    await refund_order(mcp_server, "1", careful=True)
    assert len(world.refunds.where(order_id="1")) == 1
    assert trace.summary() == "get_order → list_refunds → issue_refund → update_order → get_order"

@pytest.mark.anyio
async def test_anyio(world, mcp_server):
    await refund_order(mcp_server, "1", careful=True)
    assert world.orders.get("1").status == "returned"

@pytest.mark.trio
async def test_trio(world, mcp_server, clock):
    start = clock.now()
    await refund_order(mcp_server, "1", careful=True)
    assert len(world.refunds.where(order_id="1")) == 1
    assert clock.now() == start  # no faults marker: fault-free, no latency

def test_sync(world, mcp_server):
    import trio
    trio.run(refund_order, mcp_server, "1")
    assert len(world.refunds.all()) == 1
"""


def test_sync_asyncio_anyio_and_trio_tests_all_work(fb):
    fb.makepyfile(test_styles=ASYNC_STYLES)
    result = fb.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=12)
    result.stdout.fnmatch_lines(
        [
            "test_styles.py::test_asyncio: 3/3 passed (100%) *",
            "test_styles.py::test_anyio: 3/3 passed (100%) *",
            "test_styles.py::test_trio: 3/3 passed (100%) *",
            "test_styles.py::test_sync: 3/3 passed (100%) *",
        ]
    )


def test_mcp_url_serves_the_same_world_over_http_with_inline_faults(fb):
    fb.makepyfile(
        test_http="""
        import pytest
        from scripted_agent import refund_order

        @pytest.mark.world("world.yaml")
        @pytest.mark.faults({"payments.issue_refund": {"script": {1: "timeout"}}})
        @pytest.mark.runs(2)
        @pytest.mark.trio
        async def test_careful(world, mcp_url, trace):
            assert mcp_url.startswith("http://127.0.0.1:") and mcp_url.endswith("/mcp")
            await refund_order(mcp_url, "1", careful=True)
            assert len(world.refunds.where(order_id="1")) == 1
            assert trace.summary() == (
                "get_order → list_refunds → issue_refund!timeout → list_refunds → "
                "update_order → get_order"
            )

        @pytest.mark.world("world.yaml")
        @pytest.mark.faults({"payments.issue_refund": {"script": {1: "timeout"}}})
        @pytest.mark.anyio
        async def test_naive(world, mcp_url):
            await refund_order(mcp_url, "1")
            assert len(world.refunds.where(order_id="1")) == 1

        @pytest.fixture
        def anyio_backend():
            return "asyncio"
        """
    )
    result = fb.runpytest()
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "test_http.py::test_naive: 0/1 passed (0%) * -> FAIL",
            "    run0: get_order → issue_refund!timeout → issue_refund → update_order → get_order",
            "        AssertionError: assert 2 == 1",
        ]
    )
