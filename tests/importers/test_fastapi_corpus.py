"""FastAPI-generated documents nobody tuned the importer for (issue 42), shipped inside PyPI
wheels and never copied here: read from the installed packages, or from the wheels in the
folder `FAULTBENCH_WHEELS` names (`pip download --no-deps apache-airflow-core
apache-airflow-providers-fab apache-airflow-providers-edge3
apache-airflow-providers-keycloak -d DIR`); skipped with that message where absent.

Always: each imports, passes the loader, and maps to CRUD what its conventions say. With
`FAULTBENCH_SLOW=1`: Schemathesis on every operation mapped to CRUD, with `-s` printing the
per-document table of docs/IMPORT.md (failures by check); no request gets a 5xx, and no
answer has an undeclared content type or status (but a missing record's 404 where the
document declares none)."""

from __future__ import annotations

import importlib.metadata
import os
import zipfile
from pathlib import Path

import pytest

from .fuzz import fuzz, imported_world

#: (wheel, path inside it)
DOCUMENTS = {
    "airflow_rest": ("apache_airflow_core", "airflow/api_fastapi/core_api/openapi/v2-rest-api-generated.yaml"),
    "airflow_ui": ("apache_airflow_core", "airflow/api_fastapi/core_api/openapi/_private_ui.yaml"),
    "airflow_simple_auth": ("apache_airflow_core", "airflow/api_fastapi/auth/managers/simple/openapi/v2-simple-auth-manager-generated.yaml"),
    "airflow_edge": ("apache_airflow_providers_edge3", "airflow/providers/edge3/worker_api/v2-edge-generated.yaml"),
    "airflow_fab": ("apache_airflow_providers_fab", "airflow/providers/fab/auth_manager/api_fastapi/openapi/v2-fab-auth-manager-generated.yaml"),
    "airflow_keycloak": ("apache_airflow_providers_keycloak", "airflow/providers/keycloak/auth_manager/openapi/v2-keycloak-auth-manager-generated.yaml"),
    # the REST document as the generated SDK ships it (a dev dependency: always here)
    "airflow_client": ("apache_airflow_client", "v2.yaml"),
}  # fmt: skip

_HOW = (
    "not installed and no wheel in $FAULTBENCH_WHEELS: `pip download --no-deps "
    "apache-airflow-core apache-airflow-providers-fab apache-airflow-providers-edge3 "
    "apache-airflow-providers-keycloak -d DIR` and set FAULTBENCH_WHEELS=DIR"
)


def document(name: str, into: Path) -> Path:
    """The document's text from the installed package or its wheel, written into `into`."""
    wheel, inner = DOCUMENTS[name]
    try:
        dist = importlib.metadata.distribution(wheel.replace("_", "-"))
    except importlib.metadata.PackageNotFoundError:
        dist = None
    found = Path(str(dist.locate_file(inner))) if dist is not None else None
    if found is not None and found.is_file():
        return found
    folder = os.environ.get("FAULTBENCH_WHEELS")
    for whl in sorted(Path(folder).glob(f"{wheel}-*.whl")) if folder else []:
        with zipfile.ZipFile(whl) as z:
            if inner in z.namelist():
                out = into / Path(inner).name
                out.write_bytes(z.read(inner))
                return out
    pytest.skip(f"{name}: {_HOW}")


def _world(tmp_path: Path, name: str):
    source = document(name, tmp_path)
    imported, world = imported_world(tmp_path, source, name)
    return source, imported, world


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_each_document_imports_and_loads(tmp_path, name):
    _source, imported, world = _world(tmp_path, name)
    ops = imported.report["operations"]
    assert ops["imported"] == ops["in_document"] - ops["skipped"]
    assert len(world.spec.operations) == ops["imported"]
    for m in imported.report["mapped"]:
        # tools follow the operation ids (snake_case in every Airflow document)
        assert m["tool"] == m["operation_id"][:64], m


#: checks that must find nothing on CRUD operations (the others, and a get's 404 where the
#: document declares none, are listed in docs/IMPORT.md)
_MUST_PASS = {"ServerError", "UndefinedStatusCode", "UndefinedContentType"}


#: documents where Schemathesis finds nothing at all on the CRUD operations
_ZERO = {
    "airflow_rest",
    "airflow_client",
    "airflow_fab",
    "airflow_simple_auth",
    "airflow_edge",
    "airflow_keycloak",
}

#: without FAULTBENCH_SLOW: the SDK's document, its pools and variables only
_SMALL = ("airflow_client", ("/api/v2/pools", "/api/v2/variables"))


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_schemathesis_on_the_crud_operations(tmp_path, name):
    slow = bool(os.environ.get("FAULTBENCH_SLOW"))
    if not slow and name != _SMALL[0]:
        pytest.skip("FAULTBENCH_SLOW=1 runs it (the SDK's pools and variables run always)")
    source, imported, world = _world(tmp_path, name)
    found = fuzz(source, imported, world, keep=lambda p: slow or p.startswith(_SMALL[1]))
    print("\n" + found.row(name, imported.report))
    print(found.examples)
    assert {k: found.examples[k] for k in found.failures if k in _MUST_PASS} == {}
    if name in _ZERO:  # the target met: no failure of any check
        assert found.examples == {}
