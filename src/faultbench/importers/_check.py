"""The round trip of every import: the world an importer wrote is loaded, as `faultbench
check` would load it, before the import is called a success."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from ._openapi_import import ImportedWorld


def load_problem(imported: ImportedWorld, path: Path | None = None) -> str | None:
    """Load the world `imported` wrote at `path` (its handlers module beside it), or, without
    a path, a copy of both in a temporary folder. None when it loads, else the problem: the
    loader's message (file:line:col and the fix), or the exception that stopped it."""
    if path is not None:
        return _load(path)
    with tempfile.TemporaryDirectory(prefix="faultbench-import-") as folder:
        world = Path(folder) / "imported.yaml"
        world.write_text(imported.world, encoding="utf-8")
        if imported.handlers:
            handlers = Path(folder) / f"{imported.handlers_module}.py"
            handlers.write_text(imported.handlers, encoding="utf-8")
        try:
            return _load(world)
        finally:  # the copy's handlers module goes with the folder
            for name, module in list(sys.modules.items()):
                if str(getattr(module, "__file__", None) or "").startswith(folder):
                    del sys.modules[name]


def _load(path: Path) -> str | None:
    from faultbench.kernel import WorldFileError, load_world

    try:
        load_world(path, faults=False)
    except WorldFileError as exc:
        return str(exc)
    except Exception as exc:  # a loader failure is the import's failure: named, not raised
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    return None
