"""Load time of a world file: `load_spec` (parse + validate) and `generate_rows` (seed data).

The world is generated here: 3 services, 7 records, 50 seed rows per record (350 rows), with
enums, refs across services, datetimes, a custom-free set of 12 operations and a faults block.
"Warm" means after one untimed load, so imports and the handler/module caches are in place:
the time a test suite pays per world after the first. Reported: median and p90 of 30 runs.
If `faultbench.load_world` exists, it is measured too (it also builds the World: seed events,
tables, tools).

    uv run python benchmarks/bench_load.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from faultbench.kernel.lowlevel import generate_rows, load_spec

RUNS = 30
TARGET_MS = 5.0

WORLD = """\
name: bench
seed: 1
clock: { start: 2025-06-01T00:00:00Z }
services:
  customers:
    records:
      customer:
        name: str
        email: str
        city: str
        country: str
        tier: enum[standard, silver, gold]
        joined_at: datetime
      address:
        customer_id: ref[customers.customer]
        street: str
        city: str
        postal_code: str
    seed: { count: 50 }
    operations:
      get_customer: { kind: get, record: customer }
      list_customers: { kind: list, record: customer, filter: [city, tier] }
      add_address: { kind: create, record: address }
  orders:
    records:
      order:
        customer_id: ref[customers.customer]
        status: enum[placed, shipped, delivered, returned]
        total: float
        currency: enum[USD, EUR, GBP]
        placed_at: datetime
        note: str?
      line_item:
        order_id: ref[orders.order]
        product: str
        quantity: int
        price: float
      shipment:
        order_id: ref[order]
        carrier: enum[ups, dhl, fedex]
        shipped_at: datetime
        delivered: bool
    seed: { count: 50 }
    operations:
      get_order: { kind: get, record: order }
      list_orders: { kind: list, record: order, filter: [customer_id, status] }
      update_order: { kind: update, record: order }
      list_items: { kind: list, record: line_item, filter: [order_id] }
      get_shipment: { kind: get, record: shipment }
  payments:
    records:
      payment:
        order_id: ref[orders.order]
        amount: float
        method: enum[card, bank, wallet]
        created_at: datetime
      refund:
        payment_id: ref[payment]
        amount: float
        reason: str
        created_at: datetime
    seed: { count: 50 }
    operations:
      get_payment: { kind: get, record: payment }
      issue_refund: { kind: create, record: refund }
      list_refunds: { kind: list, record: refund, filter: [payment_id] }
      delete_refund: { kind: delete, record: refund }
faults:
  default: { latency_ms: [20, 120] }
  payments.*: { errors: { http_503: 0.02 } }
  payments.issue_refund:
    errors: { timeout: 0.1, http_500: { p: 0.02, commit: false } }
    rate_limit: { calls: 5, per_seconds: 60 }
  orders.get_order: { not_found_if_newer_than: 2h, script: { 2: timeout } }
"""


def timed(fn, runs: int = RUNS) -> list[float]:
    fn()  # warm
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return samples


def p90(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=10)[-1]


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.yaml"
        path.write_text(WORLD)
        spec = load_spec(path)
        rows = generate_rows(spec, spec.seed)
        assert len(spec.services) == 3
        assert len(spec.records) == 7
        assert all(len(r) == 50 for r in rows.values())

        results = [
            ("yaml.safe_load (C loader), reference", timed(
                lambda: yaml.load(WORLD, Loader=yaml.CSafeLoader))),
            ("load_spec", timed(lambda: load_spec(path))),
            ("generate_rows (350 rows)", timed(lambda: generate_rows(spec, spec.seed))),
            ("load_spec + generate_rows", timed(
                lambda: generate_rows(load_spec(path), spec.seed))),
        ]  # fmt: skip
        try:
            from faultbench import load_world
        except ImportError:
            load_world = None
        if load_world is not None:
            results.append(("faultbench.load_world (World built)", timed(lambda: load_world(path))))

    print(f"world: 3 services, 7 records, 350 seed rows, {len(WORLD.splitlines())} lines")
    print(f"Python {sys.version.split()[0]}, pyyaml {yaml.__version__}, libyaml "
          f"{'yes' if yaml.__with_libyaml__ else 'no'}; {RUNS} warm runs each")  # fmt: skip
    print()
    print(f"{'measured':40} {'median ms':>10} {'p90 ms':>10}")
    print(f"{'-' * 40} {'-' * 10} {'-' * 10}")
    for name, samples in results:
        print(f"{name:40} {statistics.median(samples):10.3f} {p90(samples):10.3f}")
    combined = statistics.median(results[3][1])
    verdict = "OK" if combined < TARGET_MS else "OVER TARGET"
    print()
    print(
        f"load_spec + generate_rows: {combined:.3f} ms median, target < {TARGET_MS} ms: {verdict}"
    )
    return 0 if combined < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
