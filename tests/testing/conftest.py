from __future__ import annotations

from pathlib import Path

import pytest

import faultbench

# pytester's in-process runs (`runpytest()`) take modules first imported during the run out of
# sys.modules afterwards. The world-file reader (and pyyaml under it) is imported lazily, so
# load it now: a second copy would hold other yaml node classes than the first.
faultbench.kernel.lowlevel.load_spec(Path(__file__).parent / "worlds" / "refund.yaml")

HERE = Path(__file__).parent
WORLD = HERE / "worlds" / "refund.yaml"
AGENT = HERE / "scripted_agent.py"

#: a sync agent that refunds blindly through world.call (no MCP): a timeout after the commit
#: refunds twice
NAIVE = """
def naive(world, order_id="1"):
    order = world.call("get_order", {"id": order_id}).value
    for _ in range(3):
        if world.call("issue_refund", {"order_id": order_id, "amount": order["total"]}).ok:
            return
"""


@pytest.fixture(autouse=True)
def _reproduce_with_pytest(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reproduce lines of the sessions these tests start begin with `pytest`, whatever
    launched this suite (`uv run`, `python -m`): tests/testing/test_reproduce.py checks the
    launchers themselves."""
    monkeypatch.setenv("FAULTBENCH_PYTEST", "pytest")


@pytest.fixture
def fb(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester directory with the refund world (`world.yaml`), the scripted MCP agent
    (`scripted_agent.py`) and the naive sync agent (`naive.py`)."""
    pytester.makefile(".yaml", world=WORLD.read_text())
    pytester.makepyfile(scripted_agent=AGENT.read_text(), naive=NAIVE)
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\naddopts = -p no:cacheprovider\n"
    )
    return pytester
