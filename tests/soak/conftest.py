"""Soak tests of issue 14: fuzzing, kills, load. Each runs small in CI; `FAULTBENCH_SLOW=1`
runs the full sizes the issue reports (and prints the figures: `pytest -s tests/soak`)."""

from __future__ import annotations

import os

SLOW = os.environ.get("FAULTBENCH_SLOW") == "1"


def size(fast: int, slow: int) -> int:
    """How many cases to try: `slow` with FAULTBENCH_SLOW=1, else `fast`."""
    return slow if SLOW else fast
