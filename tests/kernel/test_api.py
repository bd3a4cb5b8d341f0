"""The public API is docs/API.md: each package's `__all__` is exactly the names its section
there lists, every name resolves, the two kernel doors never share one, and `faultbench`
re-exports `faultbench.kernel` name for name."""

from __future__ import annotations

import importlib
import re
import types
from pathlib import Path

import pytest

import faultbench
import faultbench.kernel

API = Path(__file__).parents[2] / "docs" / "API.md"
#: a section of docs/API.md: "## `package`", up to the next "## "
SECTION = re.compile(r"^## `([\w.]+)`\n(.*?)(?=^## |\Z)", re.M | re.S)
#: one public name: a list item that starts with it
ENTRY = re.compile(r"^- `(\w+)`", re.M)


def documented() -> dict[str, list[str]]:
    """Package -> the names its section of docs/API.md lists, in order."""
    return {m[1]: ENTRY.findall(m[2]) for m in SECTION.finditer(API.read_text("utf-8"))}


PACKAGES = [
    "faultbench.kernel",
    "faultbench.kernel.lowlevel",
    "faultbench.testing",
    "faultbench.serve",
    "faultbench.env",
]


def test_api_md_has_a_section_per_public_package():
    assert list(documented()) == PACKAGES


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_exactly_what_api_md_lists(package):
    module = importlib.import_module(package)
    listed = documented()[package]
    assert len(listed) == len(set(listed)), "a name listed twice"
    missing = set(module.__all__) - set(listed)  # exported, not in the contract
    extra = set(listed) - set(module.__all__)  # in the contract, not exported
    assert (missing, extra) == (set(), set())
    assert len(module.__all__) == len(set(module.__all__))
    for name in module.__all__:
        assert getattr(module, name) is not None
        assert not name.startswith("_")


def test_package_reexports_the_kernel():
    assert set(faultbench.__all__) == set(faultbench.kernel.__all__) | {"__version__"}
    for name in faultbench.kernel.__all__:
        assert getattr(faultbench, name) is getattr(faultbench.kernel, name)


def test_the_kernel_names_are_the_real_objects():
    from faultbench.kernel._world._replay import replay
    from faultbench.kernel._world._world import World, load_world

    assert faultbench.World is World
    assert faultbench.load_world is load_world
    assert faultbench.replay is replay


def test_nothing_public_outside_all():
    for module in (faultbench, faultbench.kernel):
        public = {n for n in dir(module) if not n.startswith("_")}
        # subpackages (faultbench.kernel, .serve once imported) are attributes, not exports
        extra = {
            n
            for n in public - set(module.__all__)
            if not isinstance(getattr(module, n), types.ModuleType)
        }
        assert extra == set(), module.__name__


def test_the_two_kernel_doors_never_overlap():
    import faultbench.kernel.lowlevel as lowlevel

    # a name is either the user's or the shells'
    assert set(lowlevel.__all__).isdisjoint(faultbench.kernel.__all__)
    # (pytest's assertion rewriting adds `@py_*` names to modules of a plugin's distribution)
    public = {n for n in dir(lowlevel) if not n.startswith(("_", "@"))}
    assert public == set(lowlevel.__all__)
