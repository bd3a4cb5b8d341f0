"""`import faultbench` stays light: no mcp, trio, anyio or pytest, in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import json, sys, time
t = time.perf_counter()
import faultbench
import faultbench.kernel
ms = (time.perf_counter() - t) * 1000
heavy = sorted(m for m in ("mcp", "trio", "anyio", "pytest", "hypercorn", "asyncio", "yaml")
               if m in sys.modules)
print(json.dumps({"ms": ms, "heavy": heavy}))
"""


def test_import_faultbench_pulls_in_no_heavy_dependency():
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True
    ).stdout
    report = json.loads(out)
    assert report["heavy"] == [], report
