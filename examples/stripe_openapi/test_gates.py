"""A slice of Stripe's own OpenAPI document, imported (`faultbench import openapi
--idempotency`), served as its REST API (`serve_in_thread(world, rest=True)`, as `faultbench
serve --rest` does) and driven by the official `stripe` SDK. Refunds time out after commit
30% of the time: over 20 seeded runs the naive agent's gate fails, the careful one's passes.
The document comes from ../shared/openapi/ (skipped, saying so, where it is absent)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from faultbench import load_world
from faultbench.serve import serve_in_thread

stripe = pytest.importorskip("stripe", reason="stripe is a dev dependency of the main environment")

from . import agents  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "openapi"
PATHS = ["/v1/customers", "/v1/charges", "/v1/refunds"]
FAULTS = "faults:\n  refunds.create_refund:\n    errors: {timeout: 0.3}\n"
RUNS, MIN_PASS_RATE = 20, 0.95


@pytest.fixture(scope="module")
def world_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from faultbench.importers import import_openapi

    spec = CORPUS / "stripe_spec3.yaml"
    if not spec.is_file():
        pytest.skip(f"{spec} is absent: the OpenAPI corpus lives in ../shared/openapi/")
    folder = tmp_path_factory.mktemp("stripe_openapi")
    imported = import_openapi(
        spec, paths=PATHS, idempotency=True, handlers_module="stripe_handlers"
    )
    (folder / "stripe_handlers.py").write_text(imported.handlers)
    world = folder / "stripe.yaml"
    world.write_text(imported.world + FAULTS)
    return world


def _pass_rate(world_file: Path, agent: Any) -> float:
    passed = 0
    for run in range(RUNS):
        world = load_world(world_file, seed=7, run=run)
        api_key = world.issue_token("bearerAuth")
        with serve_in_thread(world, rest=True) as url:
            sdk = stripe.StripeClient(
                api_key, base_addresses={"api": url.removesuffix("/mcp")}, max_network_retries=0
            )
            customer = sdk.v1.customers.create({"email": "ada@example.com"})
            charge = sdk.v1.charges.create(
                {"amount": 5000, "currency": "usd", "customer": customer.id}
            )
            try:
                agent(sdk, charge.id, 1500)
            except stripe.APIError:
                pass  # gave up: the gate below decides
        refunds = [r.amount for r in world.refunds.all() if r.charge == charge.id]
        passed += refunds == [1500]
    return passed / RUNS


def test_the_naive_agent_fails_its_gate(world_file):
    rate = _pass_rate(world_file, agents.naive_refund)
    assert rate < MIN_PASS_RATE, f"the naive agent passed {rate:.0%} of {RUNS} runs"


def test_the_careful_agent_passes_its_gate(world_file):
    rate = _pass_rate(world_file, agents.careful_refund)
    assert rate >= MIN_PASS_RATE, f"the careful agent passed {rate:.0%} of {RUNS} runs"
