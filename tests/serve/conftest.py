from __future__ import annotations

import pytest

import faultbench

from .serve_helpers import SHOP, ServeProcess


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
