"""Names a package imports on first use (PEP 562), for `faultbench.kernel.lowlevel` and
`faultbench.testing`: a module that pays for pyyaml, or a pytest run that uses no simulation
name, imports none of what it does not use."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, namespace: dict[str, Any], where: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of a module whose names `where` maps to the (relative,
    to `package`) modules they live in; `"module:attr"` when the name is another there. A
    name, once looked up, is an ordinary attribute."""

    def __getattr__(name: str) -> object:
        place = where.get(name)
        if place is None:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        module, _, attr = place.partition(":")
        value = getattr(importlib.import_module(module, package), attr or name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
