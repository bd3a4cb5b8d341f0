"""`import faultbench` stays light: no mcp, trio, anyio or pytest, in a fresh interpreter.

What each module may import is import-linter's job (the contracts in pyproject.toml, run by
`lint-imports` in CI). These tests check what a static contract cannot: what is in
`sys.modules` once the kernel has run (handler modules, `importlib`, imports inside functions
that only run on some paths), and that the lazily exported names stay lazy."""

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


_USE_EVERYTHING = """
import json, pkgutil, sys, importlib
import faultbench.kernel as k
for info in pkgutil.iter_modules(k.__path__):
    importlib.import_module("faultbench.kernel." + info.name)
import faultbench.commands.replay, faultbench.commands.diff
world = k.load_world(sys.argv[1])
world.call("get_order", {"id": "1"})
world.call("get_order", {"id": 1})
world.call("issue_refund", {"order_id": "1", "amount": 2})
world.call("flaky_refund", {"order_id": "1"})
fork = world.fork(run=1)
fork.call("issue_refund", {"order_id": "2", "amount": 2})
again = k.replay(world.spec, k.encode_events(fork.events))
assert again.state_hash() == fork.state_hash()
str(k.diff_events(world.events, fork.events)), str(fork.diff(world)), fork.trace.summary()
heavy = sorted(m for m in ("mcp", "trio", "anyio", "pytest", "hypercorn", "asyncio")
               if m in sys.modules)
print(json.dumps(heavy))
"""


def test_the_whole_kernel_in_use_pulls_in_no_shell_dependency():
    """Every kernel module imported, and a world loaded, called, forked, replayed and diffed:
    still none of the shells' dependencies (the lazy imports stay lazy)."""
    from .conftest import WORLD_FILE

    out = subprocess.run(
        [sys.executable, "-c", _USE_EVERYTHING, str(WORLD_FILE)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out) == []
