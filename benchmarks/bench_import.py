"""Import time and coverage of `faultbench import openapi` over the OpenAPI corpus.

For each document of ../shared/openapi/ (relative to the project root): the wall time of
`import_openapi(doc)` (reading and parsing the document, resolving `$ref`s, mapping, writing
the world text and handlers), best of `--repeat` runs in one process, cold for the first
(nothing cached between runs: each builds its own resolver); and the coverage: operations
in the document, mapped as CRUD, left custom, skipped; schemas, records; fields not mapped.
The baseline, measured the same way in the same process, is reading the document alone
(`read_document`: JSON or libyaml), which bounds what the mapping itself costs.

    uv run python benchmarks/bench_import.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from faultbench.importers import import_openapi
from faultbench.importers._document import read_document

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "openapi"


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    docs = sorted(p for p in CORPUS.glob("*") if p.suffix in (".json", ".yaml"))
    if not docs:
        raise SystemExit(f"no documents in {CORPUS}")
    print(
        f"{'document':28} {'read s':>7} {'import s':>8} {'ops':>5} {'crud':>5} {'custom':>6} "
        f"{'skip':>5} {'schemas':>7} {'records':>7} {'fields not mapped':>17}"
    )
    for doc in docs:
        read = best(lambda d=doc: read_document(d), args.repeat)
        total = best(lambda d=doc: import_openapi(d), args.repeat)
        r = import_openapi(doc).report
        o, s = r["operations"], r["schemas"]
        print(
            f"{doc.name:28} {read:7.2f} {total:8.2f} {o['in_document']:5} {o['crud']:5} "
            f"{o['custom']:6} {o['skipped']:5} {s['in_document']:7} {s['records']:7} "
            f"{len(r['fields_skipped']):17}"
        )


if __name__ == "__main__":
    main()
