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


def loader_has_nested_fields() -> bool:
    """Whether this tree's world-file reader reads issue 21's nested fields and auth (the
    importer writes them; before that work lands, worlds are checked without those parts)."""
    from faultbench.kernel import WorldFileError
    from faultbench.kernel.lowlevel import load_spec

    text = (
        "name: probe\nauth: {principals: {bot: {scopes: [a]}}}\n"
        "services: {s: {records: {r: {tags: 'list[str]', a: {object: {b: str}}}}}}\n"
    )
    try:
        load_spec("probe.yaml", text=text)
    except WorldFileError:
        return False
    return True


_NEW_OPERATION_KEYS = ("page", "sort", "scopes", "idempotency")


def without_issue21_parts(world: dict[str, Any]) -> dict[str, Any]:
    """The world with what only issue 21's reader reads taken out: auth, nested and list
    fields, operation keys page/sort/scopes/idempotency, filters with operators."""
    world = {k: v for k, v in world.items() if k != "auth"}
    records: dict[str, Any] = {}
    for svc in world.get("services", {}).values():
        for rec, fields in (svc.get("records") or {}).items():
            svc["records"][rec] = {
                k: v
                for k, v in fields.items()
                if not (isinstance(v, dict) and ("object" in v or "list" in v))
                and not (isinstance(v, str) and v.startswith("list["))
            }
            records[rec] = svc["records"][rec]
    for svc in world.get("services", {}).values():
        for op in (svc.get("operations") or {}).values():
            for k in _NEW_OPERATION_KEYS:
                op.pop(k, None)
            if isinstance(op.get("filter"), dict):
                op["filter"] = [f for f, ops in op["filter"].items() if "eq" in ops]
            if op.get("filter") is not None:
                names = records.get(op.get("record"), {})
                op["filter"] = [f for f in op["filter"] if f in names]
    return world


def checkable(world_file: Path) -> Path:
    """A world file `faultbench check` of this tree can read: the file itself once issue
    21's reader is here, else a copy without those parts (beside it, for its handlers)."""
    if loader_has_nested_fields():
        return world_file
    data = without_issue21_parts(yaml.safe_load(world_file.read_text()))
    copy = world_file.with_name(world_file.stem + "_flat.yaml")
    copy.write_text(yaml.safe_dump(data, sort_keys=False))
    return copy
