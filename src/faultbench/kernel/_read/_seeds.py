"""The loader's seed pass: `seed:` of each service -> seed plans (a count and explicit rows).

A plan is kept per record; a service-level `count` applies to each of its records. Explicit
rows are checked field by field and converted to the field types; refs in them must name ids
the seed will create, which `plan_ids` (the generator's own id rule) tells without generating
a single row.
"""

from __future__ import annotations

from typing import Any

from .._spec import NestedError, SeedPlan, _coerce, _expected, conform, plan_ids, ref_targets
from .._text import did_you_mean, id_order, one_of, short_repr
from ._base import _LoaderBase

#: seed rows per record; a slip of the keyboard (`count: 10000000000`) must not hang a load
MAX_ROWS = 1_000_000
#: seed rows of all records together: ten records of a million each took 25 s and 3.6 GB; two
#: million (a million-record table and what it refers to) take about 5 s and 0.7 GB
MAX_WORLD_ROWS = 2_000_000


class _SeedLoader(_LoaderBase):
    def service_seed(self, svc: str, body: dict[Any, Any]) -> None:
        if "seed" not in body:
            return
        before = self.seed_rows()
        self._service_seed(svc, body)
        total = self.seed_rows()
        if before <= MAX_WORLD_ROWS < total:
            self.at_key(
                body, "seed",
                f"the seed of service '{svc}' brings the world to {total:_} seed rows; "
                f"expected at most {MAX_WORLD_ROWS:_} in a whole world; lower the counts",
            )  # fmt: skip

    def seed_rows(self) -> int:
        return sum(p["count"] + len(p["rows"]) for p in self.plans.values())

    def _service_seed(self, svc: str, body: dict[Any, Any]) -> None:
        block = self.mapping(body, "seed", "seed", "seed: {count: 20} or seed: {order: 20}")
        if not block:
            return
        own = self.services[svc]["records"]
        allowed = ("count", "rows", *own)
        if "count" in block:
            count = self.count(block, "count")
            for rec in own:
                self.plans.setdefault(rec, {"count": 0, "rows": []})["count"] = count
        for key, value in block.items():
            if key == "count":
                continue
            if key == "rows":
                if len(own) == 1:
                    self.plans.setdefault(own[0], {"count": 0, "rows": []})
                    self.plans[own[0]]["rows"] = self.rows(own[0], block, key)
                else:
                    self.at_key(
                        block, key,
                        f"service '{svc}' has {len(own)} records ({', '.join(own)}), so its rows "
                        "must say which; expected them under a record, e.g. "
                        f"seed: {{{own[0] if own else 'record'}: {{rows: [...]}}}}",
                    )  # fmt: skip
            elif key in own:
                plan = self.plans.setdefault(key, {"count": 0, "rows": []})
                if isinstance(value, dict):
                    self.unknown_keys(value, ("count", "rows"), f"the seed of '{key}'")
                    if "count" in value:
                        plan["count"] = self.count(value, "count")
                    if "rows" in value:
                        plan["rows"] = self.rows(key, value, "rows")
                else:
                    plan["count"] = self.count(block, key)
            elif key in self.records:
                owner = self.records[key].service
                self.at_key(
                    block, key,
                    f"record '{key}' belongs to service '{owner}', not '{svc}'; expected its "
                    f"seed under services.{owner}.seed",
                )  # fmt: skip
            else:
                self.at_key(
                    block, key,
                    f"unknown key '{key}' in the seed of service '{svc}'; expected count, rows "
                    f"or a record of the service ({one_of(own)}){did_you_mean(key, allowed)}",
                )  # fmt: skip

    def count(self, parent: dict[Any, Any], key: str) -> int:
        value = parent[key]
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_ROWS:
            return value
        self.at_value(
            parent, key,
            f"invalid row count {short_repr(value)}; expected a whole number from 0 to {MAX_ROWS:_}, "
            "e.g. 20",
        )  # fmt: skip
        return 0

    def rows(self, rec: str, parent: dict[Any, Any], key: str) -> list[dict[str, Any]]:
        value = parent[key]
        if not isinstance(value, list):
            self.at_value(
                parent, key,
                f"rows must be a list of records, not {type(value).__name__}; expected e.g. "
                "rows: [{id: A1, status: placed}]",
            )  # fmt: skip
            return []
        spec = self.records[rec]
        names = [f.name for f in spec.fields]
        out: list[dict[str, Any]] = []
        seen: dict[str, int] = {}
        for i, row in enumerate(value):
            if not isinstance(row, dict):
                self.at_value(value, i, f"a row of '{rec}' must be a mapping of field values")
                continue
            clean: dict[str, Any] = {}
            for name, raw in row.items():
                field = spec.field(name)
                if field is None and name in self.unreadable.get(rec, ()):
                    continue  # its declaration's error says why, and how to fix it
                if field is None:
                    self.at_key(
                        row, name,
                        f"'{name}' is not a field of record '{rec}'; expected one of "
                        f"{one_of(names)}{did_you_mean(name, names)}",
                    )  # fmt: skip
                    continue
                if name == "id":
                    if isinstance(raw, str | int) and not isinstance(raw, bool) and str(raw):
                        ident = str(raw)
                        if ident in seen:
                            self.at_value(
                                row, name,
                                f"id {short_repr(ident)} is used twice in the rows of '{rec}'; "
                                "expected unique ids",
                            )  # fmt: skip
                        seen[ident] = i
                        clean["id"] = ident
                    else:
                        self.at_value(
                            row, name, f"invalid id {short_repr(raw)}; expected text or a number"
                        )
                    continue
                if field.nested and raw is not None:
                    try:
                        clean[name] = conform(field, raw, name)
                    except NestedError as exc:
                        self.at_value(
                            row, name,
                            f"invalid value for {rec}.{exc.path}: {exc.message}",
                        )  # fmt: skip
                    continue
                ok, coerced = _coerce(field, raw)
                if not ok:
                    self.at_value(
                        row, name,
                        f"invalid value {short_repr(raw)} for {rec}.{name} ({field.raw}); expected "
                        f"{_expected(field)}{self.enum_hint(field, raw)}",
                    )  # fmt: skip
                    continue
                clean[name] = coerced
            out.append(clean)
            self.row_where[id(clean)] = row
        return out

    def check_seed_refs(self) -> None:
        """Explicit ref values name seeded ids; a required ref has rows to point at."""
        ids = {
            rec: set(plan_ids(SeedPlan(rec, p["count"], tuple(p["rows"]))))
            for rec, p in self.plans.items()
        }
        for rec, spec in self.records.items():
            plan = self.plans.get(rec, {"count": 0, "rows": []})
            for field in spec.fields:
                if field.nested:
                    self.nested_seed_refs(rec, field, plan["rows"], ids)
                    continue
                if field.kind != "ref" or field.ref is None or field.ref not in self.records:
                    continue
                target = ids.get(field.ref, set())
                for row in plan["rows"]:
                    value = row.get(field.name)
                    if value is not None and value not in target:
                        written = self.row_where[id(row)]
                        sample = ", ".join(sorted(target, key=id_order)[:5])
                        self.at_value(
                            written, field.name,
                            f"{rec}.{field.name} {short_repr(value)} is not the id of any seeded "
                            f"'{field.ref}'; expected one of its ids"
                            + (f" ({sample}{', ...' if len(target) > 5 else ''})" if target else
                               f", but '{field.ref}' has no seed rows"),
                        )  # fmt: skip
                needs = plan["count"] > 0 or any(field.name not in r for r in plan["rows"])
                if needs and not target and not field.optional:
                    owner = self.records[field.ref].service
                    self.doc.problem(
                        self.pos(field.loc),
                        f"{rec}.{field.name} ({field.raw}) needs '{field.ref}' rows to point "
                        f"at, but '{field.ref}' has no seed rows while '{rec}' gets some; "
                        f"expected seed: {{{field.ref}: N}} under services.{owner}, or an "
                        f"optional field ({field.raw}?)",
                    )

    def nested_seed_refs(
        self, rec: str, field: Any, rows: list[dict[str, Any]], ids: dict[str, set[str]]
    ) -> None:
        """Refs inside a list or an object of explicit rows name seeded ids, too."""
        for row in rows:
            for path, target, value in ref_targets(field, row.get(field.name)):
                if target in self.records and value not in ids.get(target, set()):
                    self.at_value(
                        self.row_where[id(row)], field.name,
                        f"{rec}.{path} {short_repr(value)} is not the id of any seeded "
                        f"'{target}'; expected one of its ids",
                    )  # fmt: skip
