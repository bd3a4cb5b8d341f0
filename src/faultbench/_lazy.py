"""Names a package imports on first use (PEP 562), for `faultbench.kernel.lowlevel` and
`faultbench.testing`: a module that pays for pyyaml, or a pytest run that uses no simulation
name, imports none of what it does not use."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, namespace: dict[str, Any], where: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of a module whose names `where` maps to the (relative,
    to `package`) modules they live in; `"module:attr"` when the name is another there.

    A name is read from its module as `sys.modules` holds it at each look-up, never kept in
    the package: a module dropped from `sys.modules` and imported again (pytest's `pytester`
    restores `sys.modules` after each in-process run) would otherwise leave the package
    handing out the old copy's classes, and `isinstance` against the new copy's would fail.
    A look-up costs a dict read more than an attribute."""
    modules = {name: place.partition(":") for name, place in where.items()}

    def __getattr__(name: str) -> object:
        place = modules.get(name)
        if place is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        module, _, attr = place
        full = importlib.util.resolve_name(module, package)
        loaded = sys.modules.get(full)
        if loaded is None:
            loaded = importlib.import_module(full)
        return getattr(loaded, attr or name)

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
