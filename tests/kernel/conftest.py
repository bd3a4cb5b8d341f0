"""Kernel test fixtures: the small shop of tests/worlds/kernel_shop.yaml."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from faultbench.kernel import World, WorldSpec
from faultbench.kernel.lowlevel import load_spec

WORLD_FILE = Path(__file__).parents[1] / "worlds" / "kernel_shop.yaml"
T0 = datetime(2025, 6, 1, tzinfo=UTC)

_SPEC = load_spec(WORLD_FILE)


def make_shop_spec(**changes) -> WorldSpec:
    """The shop's spec (loaded once), optionally with some fields replaced."""
    return msgspec.structs.replace(_SPEC, **changes) if changes else _SPEC


@pytest.fixture
def spec() -> WorldSpec:
    return make_shop_spec()


@pytest.fixture
def world(spec: WorldSpec) -> World:
    return World.from_spec(spec)
