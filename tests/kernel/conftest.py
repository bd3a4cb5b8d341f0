"""Kernel test fixtures: a small shop world built directly as a WorldSpec."""

from __future__ import annotations

from datetime import UTC, datetime

import kernel_handlers as shop_handlers
import pytest

from faultbench.kernel import World
from faultbench.kernel._spec import (
    FieldSpec,
    OperationSpec,
    ParamSpec,
    RecordSpec,
    SeedPlan,
    ServiceSpec,
    WorldSpec,
)

T0 = datetime(2025, 6, 1, tzinfo=UTC)


def make_shop_spec(*, orders: int = 3, digest: str = "d1") -> WorldSpec:
    customer = RecordSpec(
        name="customer",
        service="shop",
        plural="customers",
        fields=(
            FieldSpec("id", "str"),
            FieldSpec("name", "str"),
            FieldSpec("vip", "bool", has_default=True, default=False),
        ),
    )
    order = RecordSpec(
        name="order",
        service="shop",
        plural="orders",
        fields=(
            FieldSpec("id", "str"),
            FieldSpec("customer", "ref", ref="customer"),
            FieldSpec("status", "enum", choices=("placed", "shipped", "refunded")),
            FieldSpec("total", "float"),
            FieldSpec("qty", "int", has_default=True, default=1),
            FieldSpec("created_at", "datetime", optional=True),
            FieldSpec("note", "str", optional=True),
        ),
    )
    refund = RecordSpec(
        name="refund",
        service="payments",
        plural="refunds",
        fields=(
            FieldSpec("id", "str"),
            FieldSpec("order", "ref", ref="order"),
            FieldSpec("amount", "float"),
            FieldSpec("created_at", "datetime"),
        ),
    )
    ops = [
        OperationSpec("get_order", "shop", "get", record="order"),
        OperationSpec("list_orders", "shop", "list", record="order", filter=("status", "customer")),
        OperationSpec("create_order", "shop", "create", record="order"),
        OperationSpec("update_order", "shop", "update", record="order"),
        OperationSpec("delete_order", "shop", "delete", record="order"),
        OperationSpec("get_customer", "shop", "get", record="customer"),
        OperationSpec(
            "issue_refund",
            "payments",
            "custom",
            record="refund",
            handler="kernel_handlers.issue_refund",
            description="Refund part of an order.",
            params=(ParamSpec("order_id", "str"), ParamSpec("amount", "float")),
        ),
        OperationSpec(
            "flaky_refund",
            "payments",
            "custom",
            record="refund",
            handler="kernel_handlers.flaky_refund",
            params=(
                ParamSpec("order_id", "str"),
                ParamSpec(
                    "mode",
                    "enum",
                    required=False,
                    default="crash",
                    choices=("crash", "deny", "bad_return", "ok"),
                ),
            ),
        ),
        OperationSpec("stats", "shop", "custom", handler="kernel_handlers.stats"),
    ]
    rows_c = tuple({"id": str(i), "name": f"cust{i}"} for i in range(1, 3))
    rows_o = tuple(
        {
            "id": str(i),
            "customer": str(1 + i % 2),
            "status": "placed",
            "total": 10.0 * i,
            "created_at": datetime(2025, 5, i, tzinfo=UTC),
        }
        for i in range(1, orders + 1)
    )
    return WorldSpec(
        name="shop",
        path=None,
        seed=7,
        clock_start=T0,
        services=(
            ServiceSpec(
                "shop", ("customer", "order"), tuple(o.name for o in ops if o.service == "shop")
            ),
            ServiceSpec("payments", ("refund",), ("issue_refund", "flaky_refund")),
        ),
        records={"customer": customer, "order": order, "refund": refund},
        operations={o.name: o for o in ops},
        faults={},
        seed_plans=(SeedPlan("customer", rows=rows_c), SeedPlan("order", rows=rows_o)),
        accessors={
            "customer": "customer",
            "customers": "customer",
            "order": "order",
            "orders": "order",
            "refund": "refund",
            "refunds": "refund",
        },
        handlers={
            "issue_refund": shop_handlers.issue_refund,
            "flaky_refund": shop_handlers.flaky_refund,
            "stats": shop_handlers.stats,
        },
        digest=digest,
    )


@pytest.fixture
def spec() -> WorldSpec:
    return make_shop_spec()


@pytest.fixture
def world(spec: WorldSpec) -> World:
    return World.from_spec(spec)
