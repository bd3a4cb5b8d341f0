"""`faultbench report EVENTS_DIR -o DIR`: the HTML run report of a saved session.

EVENTS_DIR is what `pytest --faultbench-events EVENTS_DIR` wrote: one JSON Lines event log per
run and `faultbench-session.json` (outcomes, assertion messages, reproduce commands). Without
the session file the runs are grouped by file name and their outcomes shown as unknown.

A log is data: it never chooses the code that runs. Each run's end state against its start
is shown only with the world file the user names (`--world WORLD`, or `--world-beside-log`:
the file the log names, looked up in the log's own folder), and only for a log whose
recorded digest is that file's (loading a world file imports its handlers). Logs are read
as `replay` reads them: regular files of at most 1 GiB, a bad line named by `file:line`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from faultbench.kernel import Event, WorldSpec

HELP = "write the HTML run report of a folder of event logs (pytest --faultbench-events DIR)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Write one self-contained HTML file (no server, no network) showing each test's pass"
        " rate and gate, and per run a timeline of its calls in virtual time, its faults,"
        " its end state against its start and, for a failing run, its event log against the"
        " closest passing run. EVENTS_DIR is what `pytest --faultbench-events DIR` wrote."
    )
    parser.add_argument("events_dir", metavar="EVENTS_DIR", help="the folder of event logs")
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        default=".",
        help="the folder to write faultbench-report.html into (default: here)",
    )
    parser.add_argument("--title", default=None, help="the report's title")
    parser.add_argument(
        "--world",
        metavar="WORLD",
        help="the world file the runs were made with: shows each run's end state (only for "
        "logs whose digest is this file's)",
    )
    parser.add_argument(
        "--world-beside-log",
        action="store_true",
        help="use the world file each log names, from the logs' folder, if its digest is the "
        "one the log records",
    )
    parser.add_argument(
        "--partial",
        action="store_true",
        help="show a log that breaks off (a run killed mid-write) up to its last complete "
        "call, instead of refusing it",
    )


def run(args: argparse.Namespace) -> int:
    from faultbench.kernel import encode_events
    from faultbench.testing import read_session, write_report

    from .replay import BadInput, read_events

    def warn(message: str) -> None:
        print(f"faultbench report: warning: {message}", file=sys.stderr)

    def read(path: Path) -> str:
        events = read_events(path, warn=warn, partial=args.partial)
        return encode_events(events).decode()

    directory = Path(args.events_dir)
    try:
        if args.world is not None and args.world_beside_log:
            raise BadInput("pass --world WORLD or --world-beside-log, not both")
        session = read_session(directory, read)
    except (OSError, ValueError, BadInput) as exc:
        print(f"faultbench report: {exc}", file=sys.stderr)
        return 2
    worlds = _Worlds(directory, args.world, args.world_beside_log, warn)
    try:
        title = args.title or f"faultbench: {directory.resolve().name}"
        path = write_report(
            args.output,
            session.groups,
            reproduce=session.reproduce,
            shrinks=session.shrinks,
            title=title,
            spec_for=worlds.spec_for,
        )
    except BadInput as exc:
        print(f"faultbench report: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(
            f"faultbench report: {args.output}: cannot write: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2
    runs = sum(len(g.runs) for g in session.groups)
    print(f"{path} ({len(session.groups)} tests, {runs} runs, {path.stat().st_size:,} bytes)")
    if not worlds.shown and args.world is None and not args.world_beside_log:
        print(
            "note: end states are shown with --world WORLD (or --world-beside-log): a log "
            "never chooses the world file, whose handlers loading it imports",
            file=sys.stderr,
        )
    return 0


class _Worlds:
    """Each log's world spec, by the user's rule: `--world`, `--world-beside-log`, or none.
    A log recorded with another file (its digest differs) gets none, and a warning."""

    def __init__(
        self, directory: Path, given: str | None, beside: bool, warn: Callable[[str], None]
    ) -> None:
        # what a message names as the log: the runs of one folder share its world file
        self.logs = directory / "*.jsonl"
        self.given = given
        self.beside = beside
        self.warn = warn
        self.loaded: dict[Path, WorldSpec] = {}
        self.refused: set[str] = set()
        self.shown = False

    def spec_for(self, events: Sequence[Event]) -> WorldSpec | None:
        from faultbench.kernel import ReplayError, WorldCreated, WorldFileError
        from faultbench.kernel.lowlevel import spec_for_log

        from .replay import BadInput, world_path

        if self.given is None and not self.beside:
            return None
        first = events[0] if events else None
        if not isinstance(first, WorldCreated):
            return None
        try:
            path = world_path(list(events), self.logs, self.given, self.beside)
        except BadInput as exc:
            self._once(str(exc))
            return None
        spec = self.loaded.get(path)
        try:
            if spec is None:
                spec = self.loaded[path] = spec_for_log(path, first)
            elif first.digest != spec.digest:
                raise ReplayError(
                    f"a log was recorded with a world file of digest {first.digest[:12]}..., "
                    f"but {path} has digest {spec.digest[:12]}...; its end state is not shown"
                )
        except WorldFileError as exc:
            raise BadInput(str(exc)) from None
        except (ReplayError, OSError) as exc:
            self._once(f"{path}: {' '.join(str(exc).split())}")
            return None
        self.shown = True
        return spec

    def _once(self, message: str) -> None:
        if message not in self.refused:
            self.refused.add(message)
            self.warn(message)
