"""Schemathesis over the CRUD operations of an imported world served with `--rest`: the
figures of docs/IMPORT.md's per-document tables (failures by check, an example of each)."""

from __future__ import annotations

import collections
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from faultbench import load_world
from faultbench.importers import import_openapi

CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "positive_data_acceptance",
)


def imported_world(tmp_path: Path, source: Path, name: str) -> tuple[Any, Any]:
    """(the import, the loaded world) of the document at `source`."""
    imported = import_openapi(source, handlers_module=f"{name}_handlers")
    (tmp_path / f"{name}.yaml").write_text(imported.world)
    (tmp_path / f"{name}_handlers.py").write_text(imported.handlers)
    sys.path.insert(0, str(tmp_path))
    try:
        world = load_world(tmp_path / f"{name}.yaml", faults=False)
    finally:
        sys.path.remove(str(tmp_path))
    return imported, world


@dataclass
class Fuzzed:
    tried: int = 0
    #: operations Schemathesis cannot generate requests for (a regex it does not support)
    unfuzzable: list[str] = field(default_factory=list)
    failures: collections.Counter[str] = field(default_factory=collections.Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def row(self, name: str, report: dict[str, Any]) -> str:
        ops = report["operations"]
        found = ", ".join(f"{k} {v}" for k, v in sorted(self.failures.items())) or "none"
        tried = f"{self.tried - len(self.unfuzzable)}" + (
            f" ({len(self.unfuzzable)} more Schemathesis cannot generate)"
            if self.unfuzzable
            else ""
        )
        return f"| {name} | {ops['crud']} | {ops['custom']} | {tried} | {found} |"


def fuzz(
    source: Path, imported: Any, world: Any, *, examples: int = 5,
    keep: Callable[[str], bool] = lambda path: True,
) -> Fuzzed:  # fmt: skip
    """Every CRUD operation (whose path `keep` accepts) fuzzed with `examples` seeded cases."""
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, given, settings
    from schemathesis import checks as core_checks
    from schemathesis.core import errors
    from schemathesis.specs.openapi import checks as openapi_checks

    from faultbench.serve import serve_in_thread

    crud = {(m["method"], m["path"]) for m in imported.report["mapped"] if m["kind"] != "custom"}
    principals = world.spec.auth.principals if world.spec.auth else {}
    token = world.issue_token(next(iter(principals))) if principals else None
    headers = {"Authorization": f"Bearer {token}"} if token else None
    chosen = [getattr(core_checks, c, None) or getattr(openapi_checks, c) for c in CHECKS]
    schema = schemathesis.openapi.from_path(str(source))
    out = Fuzzed()
    with serve_in_thread(world, rest=True) as url:
        base = url.removesuffix("/mcp")
        for found in schema.get_all_operations():
            operation = found.ok()
            if (operation.method.upper(), operation.path) not in crud or not keep(operation.path):
                continue
            out.tried += 1

            @settings(
                max_examples=examples, derandomize=True, database=None, deadline=None,
                suppress_health_check=list(HealthCheck),
            )  # fmt: skip
            @given(case=operation.as_strategy())
            def check(case: Any) -> None:
                response = case.call(base_url=base, headers=headers)
                try:
                    case.validate_response(response, checks=chosen)
                except BaseException as exc:  # collected: every operation is tried
                    for sub in getattr(exc, "exceptions", [exc]):
                        kind = type(sub).__name__
                        if kind == "UndefinedStatusCode" and response.status_code == 404:
                            kind += "(404)"  # a missing record where no 404 is declared
                        out.failures[kind] += 1
                        out.examples.setdefault(
                            kind,
                            f"{case.method} {case.formatted_path} {case.body!r:.120}: "
                            f"{response.status_code} {response.text[:200]}",
                        )

            try:
                check()
            except errors.InvalidRegexPattern:  # Schemathesis's limit, not the world's
                out.unfuzzable.append(f"{operation.method.upper()} {operation.path}")
    return out
