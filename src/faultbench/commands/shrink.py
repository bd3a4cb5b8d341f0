"""`faultbench shrink NODEID`: the smallest subset of a failing run's faults that still fails
it.

The run's faults are read from its event log (`--events FILE`, e.g. from `pytest
--faultbench-events DIR`), or from one more run of the test. Each probe re-runs the test in
a fresh `pytest` process with `--faultbench-faults` pinning a subset of those faults as
`script:` entries and no other rule in force; ddmin picks the subsets.

A log given with `--events` is data: the world file it names is never loaded on its say-so.
The world comes from `--world WORLD`, or `--world-beside-log` (the file the log names, in the
log's folder), and is loaded only if its digest is the one the log records, as `replay`
does. The log is read as `replay` reads it (a regular file of at most 1 GiB).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from faultbench.kernel import Event

HELP = "find the smallest subset of a failing run's faults that still fails it (ddmin)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from faultbench.testing import DEFAULT_BUDGET

    parser.description = (
        "Re-run one failing pytest run (a node id such as 'tests/test_refund.py::test_refund[run4]')"
        " under subsets of the faults it received, each pinned as a script: entry with every"
        " other fault off, and print the smallest subset that still fails it, with the command"
        " that reproduces it. With a live model every probe is one more model run: bound them"
        " with --budget. Exit 0 when a subset was found, 1 when the run does not fail as"
        " pinned, 2 on bad input."
    )
    parser.add_argument("nodeid", metavar="NODEID", help="the failing run's pytest node id")
    parser.add_argument(
        "--events",
        metavar="FILE",
        default=None,
        help="the run's event log (JSON Lines); default: run the test once to get it",
    )
    parser.add_argument(
        "--world",
        metavar="WORLD",
        help="the world file the run was made with (needed with --events)",
    )
    parser.add_argument(
        "--world-beside-log",
        action="store_true",
        help="with --events: the world file the log names, from the log's folder",
    )
    parser.add_argument(
        "--budget",
        type=int,
        default=DEFAULT_BUDGET,
        metavar="N",
        help=f"at most N probes, i.e. test runs (default {DEFAULT_BUDGET})",
    )
    parser.add_argument(
        "--pytest-args",
        default="",
        metavar="ARGS",
        help="more arguments for every pytest run, as one string (e.g. '--runs 50')",
    )


def run(args: argparse.Namespace) -> int:
    from faultbench.kernel import ReplayError, WorldFileError, decode_events
    from faultbench.kernel.lowlevel import faults_received, spec_for_log
    from faultbench.testing import Probe, ProbeError, probe_pytest, shrink

    from .replay import BadInput, read_events, world_path

    if args.budget < 1:
        print(
            f"faultbench shrink: Expected --budget N with N >= 1. Instead, received: {args.budget}",
            file=sys.stderr,
        )
        return 2
    extra = shlex.split(args.pytest_args)
    probe = Probe(args.nodeid, extra)
    probe.shown = " ".join(["pytest", shlex.quote(args.nodeid), *map(shlex.quote, extra)])
    try:
        if args.events is not None:
            events = read_events(args.events)
            world = world_path(events, args.events, args.world, args.world_beside_log)
        else:
            first = probe.run(None)
            if first["outcome"] != "failed":
                print(f"faultbench shrink: {args.nodeid} did not fail ({first['outcome']})")
                return 1
            events = decode_events(first["events"])
            # the log this run of the test just wrote: its world is the one the test loads
            world = Path(args.world or _named(events))
        spec = spec_for_log(world, events[0])  # type: ignore[arg-type]
    except (OSError, ValueError, ProbeError, BadInput, ReplayError, WorldFileError) as exc:
        print(f"faultbench shrink: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    pins = faults_received(events)
    print(f"{args.nodeid}: {len(pins)} faults received; shrinking (at most {args.budget} probes)")
    result = shrink(pins, spec, probe_pytest(probe), budget=args.budget)
    print(f"{args.nodeid}: {result.headline()}")
    print(f"    {result.probes} probe{'s' if result.probes != 1 else ''}")
    if result.block is not None:
        print(f"    Reproduce: {probe.reproduce(result.block)}")
    return 0 if result.verdict in ("minimal", "budget", "no_faults") else 1


def _named(events: list[Event]) -> str:
    from faultbench.kernel import WorldCreated

    first = events[0] if events else None
    if not isinstance(first, WorldCreated) or not first.path:
        raise ValueError("the run's log names no world file; pass it with --world WORLD")
    return first.path
