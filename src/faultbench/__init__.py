"""faultbench: a fake, stateful, deliberately broken world for tool-using AI agents.

::

    import faultbench

    world = faultbench.load_world("world.yaml", seed=1)
    result = world.call("get_order", {"id": "1"})
    assert world.trace.count("get_order") == 1

The kernel (worlds, events, replay) is re-exported here; the MCP server lives in
`faultbench.serve` and the pytest plugin in `faultbench.testing`, imported only when used.
"""

import typing as _typing

from . import kernel as _kernel

if _typing.TYPE_CHECKING:
    from .kernel import *  # noqa: F403  (the kernel's public names are faultbench's)

__version__ = "0.2.0.dev0"

__all__ = [*_kernel.__all__, "__version__"]


def __getattr__(name: str) -> object:
    # The kernel's public names, looked up there: some are imported on first use (see
    # `faultbench.kernel`), and a star import here would import them all at once.
    if name in _kernel.__all__:
        value = getattr(_kernel, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
