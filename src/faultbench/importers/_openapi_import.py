"""`import_openapi`: a document in, a world file, its handlers and a coverage report out."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._document import Document, ImportProblem, read_document
from ._emit import handlers_text, world_text
from ._mapping import Mapping
from ._names import identifier
from ._openapi import map_document

__all__ = ["ImportProblem", "ImportedWorld", "import_openapi"]


@dataclass(frozen=True)
class ImportedWorld:
    """The world file's text, the generated handlers module (its name and text; '' when no
    operation is custom) and the coverage report (`report`, JSON data)."""

    world: str
    handlers_module: str
    handlers: str
    report: dict[str, Any]


def import_openapi(
    spec: str | Path,
    *,
    tags: list[str] | tuple[str, ...] = (),
    paths: list[str] | tuple[str, ...] = (),
    handlers_module: str = "imported_handlers",
    idempotency: bool = False,
) -> ImportedWorld:
    """Map the OpenAPI 3.0/3.1 document at `spec` to a world. `tags` / `paths` keep only the
    operations with one of those tags / under one of those paths (a prefix or a glob).
    `idempotency`: every create, update and delete takes an idempotency key (an operation
    with an `Idempotency-Key` header parameter does anyway).
    Raises ImportProblem for a document that is not OpenAPI 3, OSError if it cannot be read."""
    doc = Document(read_document(spec))
    try:
        mapping = map_document(doc, tags=tags, paths=paths, idempotency=idempotency)
    except RecursionError:
        raise ImportProblem(
            f"{spec}: its schemas refer to one another too deeply to map; expected schemas "
            "nested a few dozen levels"
        ) from None
    except (TypeError, AttributeError, KeyError, ValueError) as exc:
        # a part of the document of a shape OpenAPI does not allow, met where the mapping
        # did not expect it: said on one line, not a traceback
        raise ImportProblem(
            f"{spec}: a part of the document is not of the shape OpenAPI 3 gives it "
            f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]}); check it with an "
            "OpenAPI validator"
        ) from None
    source = Path(spec).name
    module = identifier(handlers_module, "handlers")
    return ImportedWorld(
        world=world_text(mapping, source=source, handlers=module),
        handlers_module=module,
        handlers=handlers_text(mapping, source=source),
        report=coverage(mapping, source),
    )


def coverage(m: Mapping, source: str) -> dict[str, Any]:
    crud = [o for o in m.operations if o.kind != "custom"]
    custom = [o for o in m.operations if o.kind == "custom"]
    skipped_ops = [s for s in m.skipped if s.get("part") != "parameter"]
    return {
        "document": source,
        "title": m.title,
        "openapi": m.version,
        "world": m.name,
        "operations": {
            "in_document": m.total_operations,
            "imported": len(m.operations),
            "crud": len(crud),
            "custom": len(custom),
            "skipped": len(skipped_ops),
        },
        "schemas": {"in_document": m.total_schemas, "records": len(m.records)},
        "principals": dict(m.principals),
        "mapped": [
            {
                "method": o.method.upper(),
                "path": o.path,
                "operation_id": o.operation_id,
                "tool": o.tool,
                "kind": o.kind,
                **({"record": o.record} if o.record else {}),
            }
            for o in m.operations
        ],
        "skipped": skipped_ops,
        "parameters_not_mapped": [s for s in m.skipped if s.get("part") == "parameter"],
        "fields_skipped": m.fields_skipped,
        "notes": m.notes,
    }
