"""Shared helpers of the importer tests: the corpus of real documents in ../shared/openapi/
(relative to the project root; tests that need a document skip, saying so, where it is
absent) and a check of a world file with the loader as it is in this tree."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "openapi"
SLOW = os.environ.get("FAULTBENCH_SLOW") == "1"


def corpus(name: str) -> Path:
    path = CORPUS / name
    if not path.is_file():
        pytest.skip(f"{path} is absent: the OpenAPI corpus lives in ../shared/openapi/")
    return path


_PROBES = {
    "nested": "services: {s: {records: {r: {tags: 'list[str]', a: {object: {b: str}}}}}}\n",
    "auth": "auth: {principals: {bot: {scopes: [a]}}}\nservices: {s: {}}\n",
    "operators": (
        "services: {s: {records: {r: {n: int}}, operations: "
        "{l: {kind: list, record: r, filter: {n: [gt]}}}}}\n"
    ),
    "page": (
        "services: {s: {records: {r: {n: int}}, operations: "
        "{l: {kind: list, record: r, page: {style: cursor, size: 10, max_size: 100}}}}}\n"
    ),
}


def loader_reads(feature: str) -> bool:
    """Whether this tree's world-file reader reads one of issue 21's parts the importer
    writes (`nested`, `auth`, `operators`, `page`); before that work lands, worlds are
    checked without the parts it lacks."""
    from faultbench.kernel import WorldFileError
    from faultbench.kernel.lowlevel import load_spec

    try:
        load_spec("probe.yaml", text="name: probe\n" + _PROBES[feature])
    except WorldFileError:
        return False
    return True


def without_issue21_parts(world: dict[str, Any]) -> dict[str, Any]:
    """The world with what this tree's reader does not read yet taken out."""
    nested, auth, operators, page = (loader_reads(f) for f in _PROBES)
    if not auth:
        world = {k: v for k, v in world.items() if k != "auth"}
    records: dict[str, Any] = {}
    for svc in world.get("services", {}).values():
        for rec, fields in (svc.get("records") or {}).items():
            if not nested:
                svc["records"][rec] = {
                    k: v
                    for k, v in fields.items()
                    if not (isinstance(v, dict) and ("object" in v or "list" in v))
                    and not (isinstance(v, str) and v.startswith("list["))
                }
            records[rec] = svc["records"][rec]
    for svc in world.get("services", {}).values():
        for op in (svc.get("operations") or {}).values():
            if not auth:  # scopes and idempotency come with issue 21's auth work
                op.pop("scopes", None)
                op.pop("idempotency", None)
            if not page:
                op.pop("page", None)
                op.pop("sort", None)
            if isinstance(op.get("filter"), dict) and not operators:
                op["filter"] = [f for f, ops in op["filter"].items() if "eq" in ops]
            if isinstance(op.get("filter"), list):
                names = records.get(op.get("record"), {})
                op["filter"] = [f for f in op["filter"] if f in names]
    return world


def checkable(world_file: Path) -> Path:
    """A world file `faultbench check` of this tree can read: the file itself once issue
    21's reader reads all of it, else a copy without the parts it lacks (beside it, for
    its handlers)."""
    if all(loader_reads(f) for f in _PROBES):
        return world_file
    data = without_issue21_parts(yaml.safe_load(world_file.read_text()))
    copy = world_file.with_name(world_file.stem + "_flat.yaml")
    copy.write_text(yaml.safe_dump(data, sort_keys=False))
    return copy
