from __future__ import annotations

import pytest

import faultbench
from faultbench.serve import MCP_VERSION

from .serve_helpers import SHOP, ServeProcess

MCP_MAJOR = int(MCP_VERSION.split(".", 1)[0])

# These files test through mcp 2.x's `mcp.Client` (its protocol modes, 2026-07-28) and its HTTP
# client (httpx2); test_sdks.py covers the same paths through the 1.x SDK's own client.
collect_ignore = (
    [
        "test_server.py",
        "test_http.py",
        "test_stdio.py",
        "test_limits.py",
        "test_auth.py",
        "test_later.py",
        "test_webhooks_serve.py",
        "test_fast_calls.py",
        "test_stdio_direct.py",
        "test_http_direct.py",
        "test_seam.py",
        "test_mcp_realism.py",
    ]
    if MCP_MAJOR < 2
    else []
)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param


@pytest.fixture
def shop():
    """The shop world without faults."""
    return faultbench.load_world(SHOP, faults=False)


@pytest.fixture
def faulty_shop():
    """The shop world with its scripted faults."""
    return faultbench.load_world(SHOP)


@pytest.fixture
def serve_http():
    started: list[ServeProcess] = []

    def start(*args: str, **kw) -> ServeProcess:
        p = ServeProcess(*args, "--http", "--port", "0", **kw)
        started.append(p)
        return p

    yield start
    for p in started:
        p.kill()
