"""The examples' demo: `uv run pytest examples/shop` also runs the naive agent's gate.

Each example's `naive_gate.py` holds a 20-run pass-rate gate that the naive agent fails, as
it should: that failing summary is what the example is there to show. So the file is
collected only when pytest is pointed at its example folder (or at the file itself):
`uv run pytest examples/shop` shows the real failing gate and exits 1, while `uv run pytest`
(the whole suite, and CI) leaves it out and checks instead, in tests/test_demo.py, that
running the folder fails the gate for the right reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

DEMO_FILE = "naive_gate.py"


def _asked_for(config: pytest.Config, folder: Path) -> bool:
    """Every path on the command line lies inside `folder` (none: the suite's testpaths)."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return False
    root = config.invocation_params.dir
    paths = [(root / arg.split("::")[0]).resolve() for arg in config.args]
    return bool(paths) and all(p == folder or folder in p.parents for p in paths)


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    if file_path.name == DEMO_FILE and _asked_for(parent.config, file_path.parent):
        if parent.session.isinitpath(file_path):
            return None  # named on the command line: pytest collects it already
        return pytest.Module.from_parent(parent, path=file_path)
    return None


from .transports import gated as gated  # noqa: E402  (the examples' fixtures)
from .transports import reach as reach  # noqa: E402
