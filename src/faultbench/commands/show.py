"""`faultbench show WORLD [--table T] [--seed N]`: the seeded records as aligned text tables.

Reads the world file and generates its seed rows exactly as a World would (same seed, same
rows), without building the World.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from faultbench.commands.check import load_or_report

HELP = "print a world's seeded records as tables"
MAX_CELL = 40


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("world", metavar="WORLD", help="the world file (YAML)")
    parser.add_argument(
        "--table",
        "-t",
        metavar="T",
        action="append",
        help="only this record (its name or plural, e.g. order or orders); repeatable",
    )
    parser.add_argument(
        "--seed", type=int, metavar="N", help="seed for the generated rows (default: the file's)"
    )


def run(args: argparse.Namespace) -> int:
    spec = load_or_report(args.world)
    if spec is None:
        return 2
    names = list(spec.records)
    if args.table:
        from faultbench.kernel.lowlevel import did_you_mean

        chosen = []
        for wanted in args.table:
            found = spec.accessors.get(wanted)
            if found is None:
                hint = did_you_mean(wanted, spec.accessors)
                print(
                    f"{args.world}: no table '{wanted}'; expected one of "
                    f"{', '.join(names) or '(none)'}{hint}",
                    file=sys.stderr,
                )
                return 2
            chosen.append(found)
        names = list(dict.fromkeys(chosen))

    from faultbench.kernel.lowlevel import generate_rows

    seed = spec.seed if args.seed is None else args.seed
    rows = generate_rows(spec, seed)
    out: list[str] = []
    for name in names:
        record = spec.records[name]
        if out:
            out.append("")
        count = len(rows[name])
        out.append(
            f"{name} (service {record.service}, {count} row{'' if count == 1 else 's'}, "
            f"seed {seed})"
        )
        # an object field shows as one column per field (`address.city`), recursively
        columns = [c for f in record.fields for c in _columns(f, f.name)]
        flat = [_flatten(row) for row in rows[name]]
        out.extend(table(columns, flat) if flat else ["  (no rows)"])
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def _columns(f: Any, path: str) -> list[str]:
    if f.kind == "object":
        return [c for g in f.fields for c in _columns(g, f"{path}.{g.name}")]
    return [path]


def _flatten(row: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def table(columns: list[str], rows: list[dict[str, Any]]) -> Iterable[str]:
    """An aligned plain-text table: header, rule, one line per row; numbers right-aligned."""
    cells = [[cell(row.get(c)) for c in columns] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    numeric = [
        all(isinstance(row.get(c), int | float) and not isinstance(row.get(c), bool)
            for row in rows if row.get(c) is not None)
        for c in columns
    ]  # fmt: skip

    def line(values: list[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return ("  " + "  ".join(parts)).rstrip()

    yield line(columns)
    yield "  " + "  ".join("-" * w for w in widths)
    for r in cells:
        yield line(r)


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        from faultbench.kernel.lowlevel import iso_time

        text = iso_time(value)
    elif isinstance(value, float):
        text = f"{value:.2f}" if round(value, 2) == value else repr(value)
    elif isinstance(value, list):  # a list field: `[{amount: 3, note: "x"}, ...]`
        from faultbench.kernel.lowlevel import format_value

        text = format_value(value)
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"
