"""faultbench: a fake, stateful, deliberately broken world for tool-using AI agents.

::

    import faultbench

    world = faultbench.load_world("world.yaml", seed=1)
    result = world.call("get_order", {"id": "1"})
    assert world.trace.count("get_order") == 1

The kernel (worlds, events, replay) is re-exported here; the MCP server lives in
`faultbench.serve` and the pytest plugin in `faultbench.testing`, imported only when used.
"""

from . import kernel as _kernel
from .kernel import *  # noqa: F403  (the kernel's public names are faultbench's)

__version__ = "0.2.0.dev0"

__all__ = [*_kernel.__all__, "__version__"]
