"""World files the adversarial tests serve (`faultbench serve --rest`)."""

from __future__ import annotations

CRM = """\
name: crm
seed: 3
services:
  crm:
    records:
      customer: { email: str, name: str }
    seed:
      customer: { rows: [{ id: "1", email: ada@example.com, name: Ada }] }
    operations:
      create_customer:
        kind: create
        record: customer
        http: { method: POST, path: /v1/customers }
      list_customers:
        kind: list
        record: customer
        filter: [email]
        http: { method: GET, path: /v1/customers }
      get_customer:
        kind: get
        record: customer
        http: { method: GET, path: "/v1/customers/{customer}" }
      delete_customer:
        kind: delete
        record: customer
        http: { method: DELETE, path: "/v1/customers/{customer}" }
"""

#: the same world behind `auth:` (every call needs a token)
CRM_AUTH = CRM.replace(
    "seed: 3\n",
    "seed: 3\nauth:\n  principals:\n    clerk: { scopes: [crm] }\n",
).replace("        record: customer\n", "        record: customer\n        scopes: [crm]\n")
