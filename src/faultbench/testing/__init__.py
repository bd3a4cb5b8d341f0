"""faultbench's pytest shell: markers, fixtures, N seeded runs and the pass-rate gate.

The plugin (`faultbench.testing.plugin`) is registered through the `pytest11` entry point,
so installing faultbench is enough::

    @pytest.mark.world("world.yaml")
    @pytest.mark.faults()
    @pytest.mark.runs(20)
    @pytest.mark.min_pass_rate(0.9)
    async def test_refund(world, mcp_server): ...

This package imports pytest and faultbench's kernel only (no mcp, trio or anyio: the fixtures
that serve a world import `faultbench.serve` when a test asks for them). See docs/TESTING.md.
"""

from ._handles import Faults as Faults
from ._handles import LiveTrace as LiveTrace
from ._runs import RunInfo as RunInfo
from ._runs import derive_seed as derive_seed
from ._stats import Gate as Gate
from ._stats import decide as decide
from ._stats import pass_hat_k as pass_hat_k
from ._stats import required_passes as required_passes
from ._stats import wilson_interval as wilson_interval

__all__ = [
    "Faults",
    "Gate",
    "LiveTrace",
    "RunInfo",
    "decide",
    "derive_seed",
    "pass_hat_k",
    "required_passes",
    "wilson_interval",
]
