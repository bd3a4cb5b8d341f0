import subprocess
import sys


def test_cli_without_command_exits_2_with_usage():
    proc = subprocess.run(
        [sys.executable, "-m", "faultbench.cli"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert "usage: faultbench" in proc.stderr


def test_the_package_ships_py_typed():
    """PEP 561: type checkers read faultbench's annotations only if `py.typed` is installed."""
    from importlib.resources import files

    assert files("faultbench").joinpath("py.typed").is_file()


STALE = """
import sys

import faultbench.serve  # the package stays; its modules are imported below, then dropped
from faultbench.kernel import World
from faultbench.kernel.lowlevel import load_spec

before = set(sys.modules)
old = faultbench.serve.build_server  # looked up once: imports faultbench.serve._server
for name in set(sys.modules) - before:  # as pytester restores sys.modules after a run
    del sys.modules[name]

from faultbench.serve import build_server, serve_in_thread  # imported again
from faultbench.serve._server import WorldServer

assert build_server is not old
world = World.from_spec(load_spec(sys.argv[1]))
assert isinstance(build_server(world), WorldServer)
with serve_in_thread(world) as url:  # _thread.py's own isinstance check
    assert url.endswith("/mcp")
print("ok")
"""


def test_lazy_names_follow_modules_imported_again(tmp_path):
    # A package's lazily imported name once kept the first copy of its module: after pytester
    # dropped that module, serve_in_thread took a WorldServer for a World.
    from pathlib import Path

    world = Path(__file__).parent / "testing" / "worlds" / "refund.yaml"
    proc = subprocess.run(
        [sys.executable, "-c", STALE, str(world)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
