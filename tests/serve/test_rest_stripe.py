"""The official `stripe` SDK against a slice of Stripe's OpenAPI document, imported
(`faultbench import openapi`) and served (`faultbench serve --rest`): customers, payment
intents, charges and refunds created through the SDK, listed with its auto-pagination, and
an injected timeout after commit that the SDK sees as the 504 it is."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from faultbench import load_world
from faultbench.serve import serve_in_thread
from tests.importers.conftest import corpus

stripe = pytest.importorskip("stripe", reason="stripe is a dev dependency of the main environment")

PATHS = ["/v1/customers", "/v1/payment_intents", "/v1/charges", "/v1/refunds"]


@pytest.fixture(scope="module")
def stripe_world_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from faultbench.importers import import_openapi

    folder = tmp_path_factory.mktemp("stripe")
    imported = import_openapi(
        corpus("stripe_spec3.yaml"),
        paths=PATHS,
        handlers_module="stripe_handlers",
        idempotency=True,
    )
    world = folder / "stripe.yaml"
    world.write_text(
        imported.world + "faults:\n  refunds.create_refund:\n    script: {2: timeout}\n"
        "  customers.get_customer:\n    script: {2: http_429, 3: http_503}\n"
    )
    (folder / "stripe_handlers.py").write_text(imported.handlers)
    return world


@pytest.fixture
def client(stripe_world_file: Path) -> Any:
    world = load_world(stripe_world_file)
    # the world's auth: block has a principal per security scheme; its token is the API key
    api_key = world.issue_token("bearerAuth") if world.spec.auth is not None else "sk_test"
    with serve_in_thread(world, rest=True) as url:
        sdk = stripe.StripeClient(
            api_key,
            base_addresses={"api": url.removesuffix("/mcp")},
            max_network_retries=0,
        )
        yield sdk, world


def test_the_stripe_sdk_creates_charges_and_refunds_and_lists_them(client):
    sdk, world = client
    ada = sdk.v1.customers.create({"email": "ada@example.com", "name": "Ada"})
    assert (ada.object, ada.email) == ("customer", "ada@example.com")
    intent = sdk.v1.payment_intents.create({"amount": 5000, "currency": "usd", "customer": ada.id})
    assert (intent.amount, intent.customer) == (5000, ada.id)
    charge = sdk.v1.charges.create({"amount": 5000, "currency": "usd", "customer": ada.id})
    refund = sdk.v1.refunds.create({"charge": charge.id, "amount": 1000})
    assert (refund.object, refund.charge, refund.amount) == ("refund", charge.id, 1000)
    for i in range(4):
        sdk.v1.customers.create({"email": f"user{i}@example.com"})
    listed = sdk.v1.customers.list({"limit": 2})
    emails = [c.email for c in listed.auto_paging_iter()]
    assert emails == ["ada@example.com", *(f"user{i}@example.com" for i in range(4))]
    assert len(world.customers.all()) == 5
    assert sdk.v1.charges.retrieve(charge.id).amount == 5000


def test_without_the_api_key_the_sdk_gets_a_401(stripe_world_file):
    world = load_world(stripe_world_file)
    if world.spec.auth is None:
        pytest.skip("this tree's reader has no auth: yet (issue 21)")
    with serve_in_thread(world, rest=True) as url:
        sdk = stripe.StripeClient(
            "sk_test_unknown", base_addresses={"api": url.removesuffix("/mcp")},
            max_network_retries=0,
        )  # fmt: skip
        with pytest.raises(stripe.AuthenticationError) as info:
            sdk.v1.customers.create({"email": "ada@example.com"})
        assert info.value.http_status == 401


def test_the_sdk_sees_a_timeout_after_commit_and_the_refund_is_there(client):
    sdk, world = client
    ada = sdk.v1.customers.create({"email": "ada@example.com"})
    charge = sdk.v1.charges.create({"amount": 5000, "currency": "usd", "customer": ada.id})
    sdk.v1.refunds.create({"charge": charge.id, "amount": 1000})
    with pytest.raises(stripe.APIError) as info:
        sdk.v1.refunds.create({"charge": charge.id, "amount": 2000})
    assert info.value.http_status == 504
    # the write committed before the answer was lost: a blind retry would refund twice
    amounts = [r.amount for r in sdk.v1.refunds.list({"charge": charge.id}).auto_paging_iter()]
    assert amounts == [1000, 2000]
    assert [c.fault for c in world.trace.calls_to("create_refund")] == [None, "timeout"]


@pytest.fixture(scope="module")
def stripe_error() -> Any:
    """A validator of Stripe's declared error body (`components.schemas.error`), $refs
    resolved against the whole document."""
    import yaml
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    document = yaml.load(corpus("stripe_spec3.yaml").read_text(), Loader=loader)
    registry = Registry().with_resource(
        "urn:stripe", Resource.from_contents(document, default_specification=DRAFT202012)
    )
    return Draft202012Validator({"$ref": "urn:stripe#/components/schemas/error"}, registry=registry)


def test_errors_come_in_stripes_error_schema_and_the_sdk_reads_them(client, stripe_error):
    sdk, world = client
    ada = sdk.v1.customers.create({"email": "ada@example.com"})
    charge = sdk.v1.charges.create({"amount": 5000, "currency": "usd", "customer": ada.id})
    seen: list[Any] = []

    def fails(cls: type, call: Any) -> Any:
        with pytest.raises(cls) as info:
            call()
        stripe_error.validate(info.value.json_body)  # the document's own schema
        seen.append(info.value)
        return info.value

    missing = fails(stripe.InvalidRequestError, lambda: sdk.v1.customers.retrieve("cus_gone"))
    assert (missing.http_status, missing.error.type, missing.error.code) == (
        404, "invalid_request_error", "not_found",
    )  # fmt: skip
    assert "cus_gone" in missing.error.message
    limited = fails(stripe.RateLimitError, lambda: sdk.v1.customers.retrieve(ada.id))
    assert (limited.http_status, limited.error.code) == (429, "http_429")
    down = fails(stripe.APIError, lambda: sdk.v1.customers.retrieve(ada.id))
    assert (down.http_status, down.error.type) == (503, "api_error")
    bad = fails(
        stripe.InvalidRequestError,
        lambda: sdk.v1.refunds.create({"charge": charge.id, "amount": "lots"}),
    )
    assert (bad.http_status, bad.error.code) == (400, "invalid_arguments")
    sdk.v1.refunds.create({"charge": charge.id, "amount": 100}, {"idempotency_key": "k1"})
    lost = fails(stripe.APIError, lambda: sdk.v1.refunds.create({"charge": charge.id}))
    assert (lost.http_status, lost.error.type, lost.error.code) == (504, "api_error", "timeout")
    reused = fails(
        stripe.APIError,  # Stripe's SDK has no class of its own for a 409
        lambda: sdk.v1.refunds.create(
            {"charge": charge.id, "amount": 200}, {"idempotency_key": "k1"}
        ),
    )
    assert (reused.http_status, reused.error.type) == (409, "idempotency_error")
    # nothing in the answers tells an injected fault from a real failure (no --debug-meta)
    assert [e.headers.get("x-faultbench-fault") for e in seen] == [None] * 6
    # the same calls in the world's log: the 404 and the two faults were get_customer's
    assert [c.fault for c in world.trace.calls_to("get_customer")] == [None, "http_429", "http_503"]


def test_an_operation_without_a_declared_error_schema_answers_faultbenchs_own(tmp_path):
    from faultbench.importers import import_openapi

    imported = import_openapi(corpus("swagger_petstore_v3.yaml"), handlers_module="pets")
    assert "errors:" not in imported.world  # the petstore declares no error bodies
    (tmp_path / "pets.yaml").write_text(imported.world)
    (tmp_path / "pets.py").write_text(imported.handlers)
    world = load_world(tmp_path / "pets.yaml")
    import httpx

    token = world.issue_token(next(iter(imported.report["principals"])))
    with serve_in_thread(world, rest=True) as url:
        answer = httpx.get(
            url.removesuffix("/mcp") + "/pet/12345", headers={"Authorization": f"Bearer {token}"}
        )
    assert answer.status_code == 404
    assert answer.json()["error"]["type"] == "not_found"


#: The answers of the served slice that still violate Stripe's document (docs/IMPORT.md,
#: "What Schemathesis still finds"): each is a required property whose value is an object or
#: a list that the create does not take, so the record has no value for it to answer.
KNOWN_VIOLATIONS = {
    ("POST /v1/charges", "billing_details"),
    ("POST /v1/charges/{charge}/dispute", "balance_transactions"),
    ("POST /v1/customers/{customer}/cash_balance", "settings"),
    ("POST /v1/customers/{customer}/subscriptions", "automatic_tax"),
    ("POST /v1/payment_intents", "payment_method_types"),
}


def test_schemathesis_fuzzing_the_served_slice(stripe_world_file):
    """Schemathesis against the served Stripe slice (issue 22): every operation of the four
    paths, 5 seeded examples each, sent with the world's API key. No request gets a 5xx, and
    no answer violates the document but the explained ones above."""
    schemathesis = pytest.importorskip("schemathesis", reason="a dev dependency")
    from hypothesis import HealthCheck, given, settings
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import response_schema_conformance

    from faultbench.importers._document import read_document

    world = load_world(stripe_world_file)
    world.set_faults({})  # the fixture's scripted 429/503/504 are what not_a_server_error flags
    key = world.issue_token("bearerAuth")
    schema = schemathesis.openapi.from_dict(read_document(corpus("stripe_spec3.yaml")))
    labels: list[str] = []
    server_errors: list[str] = []
    violations: set[tuple[str, str]] = set()
    with serve_in_thread(world, rest=True) as url:
        base = url.removesuffix("/mcp")
        for found in schema.get_all_operations():
            operation = found.ok()
            if operation.path.rstrip("/").split("/{")[0] not in PATHS:
                continue
            labels.append(operation.label)

            @settings(
                max_examples=5, derandomize=True, database=None, deadline=None,
                suppress_health_check=list(HealthCheck),
            )  # fmt: skip
            @given(case=operation.as_strategy())
            def check(case):
                label = case.operation.label
                response = case.call(base_url=base, headers={"Authorization": f"Bearer {key}"})
                try:
                    case.validate_response(response, checks=[not_a_server_error])
                except (Exception, BaseExceptionGroup) as exc:  # collected: all are tried
                    server_errors.append(f"{label}: {exc}"[:500])
                try:
                    case.validate_response(response, checks=[response_schema_conformance])
                except (Exception, BaseExceptionGroup) as exc:
                    missing = re.search(
                        r"'(\w+)' is a required property|\"(\w+)\" is a re", str(exc)
                    )
                    name = (missing.group(1) or missing.group(2)) if missing else str(exc)[:300]
                    violations.add((label, name))

            check()
    assert len(labels) == 74  # every operation under the four paths
    assert server_errors == []
    assert violations <= KNOWN_VIOLATIONS, violations - KNOWN_VIOLATIONS
    assert len(world.trace.calls) >= len(labels)  # the requests reached the world
