"""Airflow's own generated Python SDK (`apache-airflow-client`, which ships the API's
FastAPI-generated document as `v2.yaml`) against `faultbench serve --rest` on the world
imported from that document, with no hand-written handler (issue 42): pools and variables
created, read, listed with limit/offset/total/pattern, patched and deleted; a body breaking
the schema gets the declared 422."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import httpx
import pytest

from faultbench import load_world
from faultbench.importers import import_openapi
from faultbench.serve import serve_in_thread

client = pytest.importorskip(
    "airflow_client.client", reason="a dev dependency (apache-airflow-client)"
)


def _document() -> Path:
    doc = Path(str(importlib.metadata.distribution("apache-airflow-client").locate_file("v2.yaml")))
    if not doc.is_file():
        pytest.skip("apache-airflow-client ships no v2.yaml in this version")
    return doc


@pytest.fixture
def airflow(tmp_path):
    imported = import_openapi(_document(), handlers_module="airflow_handlers")
    (tmp_path / "airflow.yaml").write_text(imported.world)
    (tmp_path / "airflow_handlers.py").write_text(imported.handlers)
    world = load_world(tmp_path / "airflow.yaml", faults=False)
    token = world.issue_token(next(iter(world.spec.auth.principals)))
    with serve_in_thread(world, rest=True) as url:
        yield url.removesuffix("/mcp"), token


def test_the_sdk_does_crud_with_pages_totals_and_patterns(airflow):
    from airflow_client.client.api.pool_api import PoolApi
    from airflow_client.client.api.variable_api import VariableApi
    from airflow_client.client.exceptions import NotFoundException
    from airflow_client.client.models.pool_body import PoolBody
    from airflow_client.client.models.pool_patch_body import PoolPatchBody
    from airflow_client.client.models.variable_body import VariableBody

    base, token = airflow
    config = client.Configuration(host=base, access_token=token)
    with client.ApiClient(config) as api:
        pools = PoolApi(api)
        made = pools.post_pool(PoolBody(name="etl_small", slots=2, description="nightly"))
        assert (made.name, made.slots, made.description) == ("etl_small", 2, "nightly")
        pools.post_pool(PoolBody(name="etl_large", slots=8))
        pools.post_pool(PoolBody(name="reports", slots=1))
        assert pools.get_pool("etl_large").slots == 8
        page = pools.get_pools(limit=1, offset=1, pool_name_pattern="etl")
        assert page.total_entries == 2
        assert [p.name for p in page.pools] == ["etl_small"]
        assert pools.get_pools(limit=0).total_entries == 3
        changed = pools.patch_pool("reports", PoolPatchBody(slots=5))
        assert (changed.name, changed.slots) == ("reports", 5)
        pools.delete_pool("reports")
        with pytest.raises(NotFoundException):
            pools.get_pool("reports")
        assert pools.get_pools().total_entries == 2
        variables = VariableApi(api)
        variables.post_variable(VariableBody(key="region", value="eu-west-1"))
        assert variables.get_variable("region").value == "eu-west-1"
        assert [v.key for v in variables.get_variables(variable_key_pattern="reg").variables] == [
            "region"
        ]
    # a body breaking the schema: the declared 422, which the SDK's own model reads
    from airflow_client.client.models.http_validation_error import HTTPValidationError

    bad = httpx.post(
        f"{base}/api/v2/pools",
        json={"name": "x", "slots": "many"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert bad.status_code == 422
    error = HTTPValidationError.from_json(bad.text)
    assert error is not None
    assert error.detail is not None
    assert "slots" in error.detail[0].msg
    # a record whose schema declares an integer id (a backfill) is answered with a number
    made = httpx.post(
        f"{base}/api/v2/backfills",
        json={
            "dag_id": "etl",
            "from_date": "2025-01-01T00:00:00Z",
            "to_date": "2025-01-02T00:00:00Z",
        },
        headers={"Authorization": f"Bearer {token}"},
    )
    assert made.status_code == 200, made.text
    assert made.json()["id"] == 1
    got = httpx.get(f"{base}/api/v2/backfills/1", headers={"Authorization": f"Bearer {token}"})
    assert got.json()["id"] == 1
