"""`faultbench import openapi SPEC [-o WORLD] [--tags ...] [--paths ...] [--json]`: a world
file from an OpenAPI 3.0/3.1 document; `faultbench import mcp [-o WORLD] [--record] -- COMMAND
ARGS...` (or `--url URL`): one from a live MCP server's tools (docs/IMPORT.md).

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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from faultbench.importers import ImportedWorld

HELP = "make a world file from an OpenAPI document or a live MCP server (import openapi|mcp)"


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
        "--idempotency", action="store_true",
        help="every create, update and delete takes an Idempotency-Key (as Stripe's do, "
        "though its document does not say so)",
    )  # fmt: skip
    oa.add_argument(
        "--json", action="store_true", help="print the coverage report as JSON on stdout"
    )
    mc = sub.add_parser(
        "mcp", help="a live MCP server: faultbench import mcp -o WORLD -- COMMAND ARGS..."
    )
    mc.add_argument("-o", "--output", metavar="WORLD", help="write the world file here")
    mc.add_argument("--url", help="a streamable HTTP server's URL (instead of a command)")
    mc.add_argument(
        "--record", action="store_true",
        help="call the tools the server marks read-only (and those --call names) and answer "
        "what the server answered",
    )  # fmt: skip
    mc.add_argument(
        "--call", action="append", metavar="TOOL=JSON", default=[],
        help="arguments --record calls TOOL with (repeat for more sets); the only way a tool "
        "not marked read-only is called",
    )  # fmt: skip
    mc.add_argument("--timeout", type=float, default=30, help="seconds to wait for the server")
    mc.add_argument("--json", action="store_true", help="print the import report as JSON")
    mc.add_argument("server_command", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS")


def run(args: argparse.Namespace) -> int:
    if args.source == "mcp":
        return _run_mcp(args)
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
            args.spec, tags=_words(args.tags), paths=_words(args.paths),
            handlers_module=module, idempotency=args.idempotency,
        )  # fmt: skip
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
        if not _loads(imported, None):
            return 2
        sys.stdout.write(imported.world)
        if imported.handlers:
            print(
                f"note: {ops['custom']} custom operations answer from {module}.py, which only "
                "-o writes",
                file=sys.stderr,
            )
        return 0
    wrote = [str(out)]
    files = {out: imported.world}
    if imported.handlers:
        handlers = out.with_name(f"{imported.handlers_module}.py")
        files[handlers] = imported.handlers
        wrote.append(str(handlers))
    if not _write(files) or not _loads(imported, out):
        return 2
    if args.json:
        sys.stdout.write(json.dumps(imported.report, indent=2, sort_keys=False) + "\n")
    records = imported.report["schemas"]["records"]
    print(
        f"wrote {' and '.join(wrote)}: {records} records, {ops['imported']} tools "
        f"({ops['crud']} CRUD, {ops['custom']} custom), {ops['skipped']} operations skipped",
        file=sys.stderr,
    )
    return 0


def _write(files: dict[Path, str]) -> bool:
    """Write each file, or say on one line why one cannot be written (a missing folder, a
    full disk, `/dev/full`); False then."""
    for path, text in files.items():
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            why = exc.strerror or str(exc)
            hint = " (create the folder first)" if isinstance(exc, FileNotFoundError) else ""
            print(f"{path}: cannot write: {why}{hint}", file=sys.stderr)
            return False
    return True


def _loads(imported: ImportedWorld, out: Path | None) -> bool:
    """The round trip: the world just made loads (from `out`, else from a copy), or one line
    says why not (the files written stay, to be read); False then."""
    from faultbench.importers._check import load_problem

    problem = load_problem(imported, out)
    if problem is None:
        return True
    where = str(out) if out is not None else "the imported world"
    print(
        f"{where}: made, but it does not load (a bug of faultbench import; please report it "
        f"with its source): {problem}",
        file=sys.stderr,
    )
    return False


def _run_mcp(args: argparse.Namespace) -> int:
    from faultbench.importers import import_mcp

    command = list(args.server_command or [])
    if command[:1] == ["--"]:
        command = command[1:]
    if bool(command) == bool(args.url):
        print(
            "expected a server: faultbench import mcp -o WORLD -- COMMAND ARGS..., or --url URL",
            file=sys.stderr,
        )
        return 2
    calls: dict[str, list[dict[str, object]]] = {}
    for item in args.call:
        tool, eq, text = item.partition("=")
        try:
            value = json.loads(text) if eq else None
        except ValueError:
            value = None
        if not isinstance(value, dict):
            print(f"--call {item}: expected TOOL=JSON with a JSON object", file=sys.stderr)
            return 2
        calls.setdefault(tool, []).append(value)
    out = Path(args.output) if args.output else None
    module = f"{out.stem}_handlers" if out is not None else "imported_handlers"
    try:
        imported = import_mcp(
            args.url or command, record=args.record, arguments=calls,
            handlers_module=module, timeout=args.timeout,
        )  # fmt: skip
    except Exception as exc:  # the server's own failure (cannot start, not MCP): one line
        from faultbench.importers._mcp import failure_cause

        print(f"cannot read the server's tools: {failure_cause(exc)}", file=sys.stderr)
        return 2
    r = imported.report
    for warning in r["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    if out is None:
        if not _loads(imported, None):
            return 2
        sys.stdout.write(imported.world)
        print(f"note: the handlers module {module}.py is written only with -o", file=sys.stderr)
        return 0
    handlers = out.with_name(f"{imported.handlers_module}.py")
    if not _write({out: imported.world, handlers: imported.handlers}):
        return 2
    if not _loads(imported, out):
        return 2
    if args.json:
        sys.stdout.write(json.dumps(imported.report, indent=2) + "\n")
    print(
        f"wrote {out} and {handlers}: {r['tools']} tools ({r['crud']} in CRUD families over "
        f"{len(r['records'])} records, {r['custom']} custom, {len(r['recorded'])} recorded)",
        file=sys.stderr,
    )
    for note in r["notes"]:
        print(f"note: {note}", file=sys.stderr)
    return 0
