"""`faultbench import openapi SPEC [-o WORLD] [--tags ...] [--paths ...] [--json]`: a world
file from an OpenAPI 3.0/3.1 document (docs/IMPORT.md).

With `-o world.yaml` the world is written there and, when some operations are custom, their
generated handlers beside it as `world_handlers.py`; without it the world goes to standard
output. `--json` prints the coverage report (what was mapped as CRUD, left custom, skipped
and why). Exit 2 for a document that cannot be imported, with the reason on one line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HELP = "make a world file from an OpenAPI document (faultbench import openapi SPEC -o WORLD)"


def _words(values: list[str] | None) -> list[str]:
    return [w for v in values or () for w in v.split(",") if w.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="source", metavar="SOURCE", required=True)
    oa = sub.add_parser("openapi", help="an OpenAPI 3.0 or 3.1 document (JSON or YAML)")
    oa.add_argument("spec", metavar="SPEC", help="the OpenAPI document")
    oa.add_argument("-o", "--output", metavar="WORLD", help="write the world file here")
    oa.add_argument(
        "--tags", action="append", metavar="TAG",
        help="only operations with one of these tags (repeat or comma-separate)",
    )  # fmt: skip
    oa.add_argument(
        "--paths", action="append", metavar="PATH",
        help="only operations under these paths (a prefix such as /v1/charges, or a glob)",
    )  # fmt: skip
    oa.add_argument(
        "--json", action="store_true", help="print the coverage report as JSON on stdout"
    )


def run(args: argparse.Namespace) -> int:
    try:
        from faultbench.importers import ImportProblem, import_openapi
    except ModuleNotFoundError as exc:  # pragma: no cover - referencing comes with mcp
        print(
            f"faultbench import needs {exc.name}: pip install 'faultbench[import]'",
            file=sys.stderr,
        )
        return 2
    out = Path(args.output) if args.output else None
    if args.json and out is None:
        print(
            "--json prints the coverage report; pass -o WORLD for the world file", file=sys.stderr
        )
        return 2
    module = f"{out.stem}_handlers" if out is not None else "imported_handlers"
    try:
        imported = import_openapi(
            args.spec, tags=_words(args.tags), paths=_words(args.paths), handlers_module=module
        )
    except ImportProblem as exc:
        print(exc, file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{args.spec}: cannot read: {exc.strerror or exc}", file=sys.stderr)
        return 2
    ops = imported.report["operations"]
    if not ops["imported"]:
        print(
            f"{args.spec}: no operation selected (of {ops['in_document']}); check --tags and "
            "--paths",
            file=sys.stderr,
        )
        return 2
    if out is None:
        sys.stdout.write(imported.world)
        if imported.handlers:
            print(
                f"note: {ops['custom']} custom operations answer from {module}.py, which only "
                "-o writes",
                file=sys.stderr,
            )
        return 0
    out.write_text(imported.world, encoding="utf-8")
    wrote = [str(out)]
    if imported.handlers:
        handlers = out.with_name(f"{imported.handlers_module}.py")
        handlers.write_text(imported.handlers, encoding="utf-8")
        wrote.append(str(handlers))
    if args.json:
        sys.stdout.write(json.dumps(imported.report, indent=2, sort_keys=False) + "\n")
    records = imported.report["schemas"]["records"]
    print(
        f"wrote {' and '.join(wrote)}: {records} records, {ops['imported']} tools "
        f"({ops['crud']} CRUD, {ops['custom']} custom), {ops['skipped']} operations skipped",
        file=sys.stderr,
    )
    return 0
