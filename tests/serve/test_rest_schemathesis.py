"""Schemathesis fuzzes a world served with `--rest` from the OpenAPI document it was imported
from: bounded (15 examples an operation) and seeded (derandomized), no request it makes gets a
5xx and no answer violates the document's response schemas. (It found a header echoing
request keys that latin-1 cannot hold, `null` for unset properties the document wants left
out, and a required property a create left unset.)"""

from __future__ import annotations

import json

import pytest

from faultbench import load_world
from faultbench.serve import serve_in_thread
from tests.importers.test_openapi import THINGS

schemathesis = pytest.importorskip(
    "schemathesis", reason="a dev dependency of the main environment"
)


def test_fuzzed_requests_get_no_server_error_and_answers_the_document_accepts(tmp_path):
    from hypothesis import HealthCheck, given, settings
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import response_schema_conformance

    from faultbench.importers import import_openapi

    spec = tmp_path / "things.json"
    spec.write_text(json.dumps(THINGS))
    imported = import_openapi(spec, handlers_module="things_handlers")
    (tmp_path / "things.yaml").write_text(imported.world)
    (tmp_path / "things_handlers.py").write_text(imported.handlers)
    world = load_world(tmp_path / "things.yaml")
    schema = schemathesis.openapi.from_dict(THINGS)
    failures: list[str] = []
    labels: list[str] = []
    with serve_in_thread(world, rest=True) as url:
        base = url.removesuffix("/mcp")
        for found in schema.get_all_operations():
            operation = found.ok()
            labels.append(operation.label)

            @settings(
                max_examples=15, derandomize=True, database=None, deadline=None,
                suppress_health_check=list(HealthCheck),
            )  # fmt: skip
            @given(case=operation.as_strategy())
            def check(case):
                response = case.call(base_url=base)
                try:
                    case.validate_response(
                        response, checks=[not_a_server_error, response_schema_conformance]
                    )
                except Exception as exc:  # collected: every operation is tried
                    failures.append(f"{case.method} {case.formatted_path}: {exc}"[:500])

            check()
    assert len(labels) == 6
    assert failures == []
    assert len(world.trace.calls) > 6 * 5  # the requests reached the world
