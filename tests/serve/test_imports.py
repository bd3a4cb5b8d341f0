"""`faultbench.serve` imports what its caller uses (PEP 562): `build_server` pulls in the SDK's
server and not the HTTP app, Hypercorn, the stdio loop (trio) or the thread server; every
public name still resolves, to the object its module defines."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from .serve_helpers import SHOP

_SHELL_MODULES = (
    "trio",
    "hypercorn",
    "faultbench.serve._http",
    "faultbench.serve._control",
    "faultbench.serve._rest",
    "faultbench.serve._stdio",
    "faultbench.serve._thread",
)

_PROBE = """
import json, sys
from faultbench.serve import build_server
import faultbench
server = build_server(faultbench.load_world(sys.argv[1], faults=False))
print(json.dumps(sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules)))
"""


def test_build_server_imports_no_transport():
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(SHOP), json.dumps(_SHELL_MODULES)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out) == []


def test_every_public_name_resolves_to_its_module_object():
    import faultbench.serve as serve
    from faultbench.serve import _http, _journal, _sdk, _server, _stdio, _thread

    assert set(serve.__all__) <= set(dir(serve))
    homes = {
        "connect_client": _sdk.connect,
        "to_wire": _sdk.dump,
        "serve_stdio": _stdio.serve_stdio,
        "serve_in_thread": _thread.serve_in_thread,
        "build_app": _http.build_app,
        "Journals": _journal.Journals,
        "WorldServer": _server.WorldServer,
        "MCP_VERSION": _sdk.MCP_VERSION,
    }
    for name in serve.__all__:
        home = importlib.import_module(serve._LAZY[name].split(":")[0], "faultbench.serve")
        attribute = serve._LAZY[name].partition(":")[2] or name
        assert getattr(serve, name) is getattr(home, attribute), name
    for name, value in homes.items():
        assert getattr(serve, name) is value, name
    with pytest.raises(AttributeError, match="no_such_name"):
        serve.no_such_name  # noqa: B018
