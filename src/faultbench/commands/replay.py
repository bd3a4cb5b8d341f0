"""`faultbench replay EVENTS.jsonl [--world WORLD]`: rebuild a world from its event log, print
its final state and state hash, and check the hash against `--expect-hash` when given.

Exit status: 0 the log replays (and matches `--expect-hash` when given), 1 it does not replay
or the hash differs, 2 bad input (missing or malformed file, a log that breaks off, no world to
replay against).

A log is data: it never chooses the code that runs. The world file comes from `--world`, or,
with `--world-beside-log`, is the file the log names looked up in the log's own folder; its
digest is compared with the log's before it is loaded (loading imports its handlers), and a
log that carries no digest is refused. Logs and world files are read only if they are regular
files, logs up to `--max-size` (default 1 GiB), world files up to 64 MiB.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from faultbench.kernel import Event, WorldSpec

#: told what a --partial replay leaves out
Warn = Callable[[str], None]

#: the largest event log read by default (`--max-size`)
MAX_LOG_BYTES = 1024 * 2**20

HELP = "rebuild a world from an event log (JSON Lines) and print (or check) its state hash"


class BadInput(Exception):
    """A file the command cannot use; the message says where and how to fix it."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Rebuild a world from an event log written by `faultbench serve --events FILE` (or"
        " `encode_events`), print its final tables and state hash. Exit 0 when the log replays"
        " (and the hash matches --expect-hash), 1 when it does not, 2 on bad input."
    )
    parser.add_argument("events", metavar="EVENTS.jsonl", help="the event log, JSON Lines")
    parser.add_argument(
        "--world",
        metavar="WORLD",
        help="the world file the log was made with",
    )
    parser.add_argument(
        "--world-beside-log",
        action="store_true",
        help="use the world file the log names, from the log's folder (not the path it records)",
    )
    parser.add_argument(
        "--partial",
        action="store_true",
        help="replay a log that breaks off (a last line cut short, a call never answered) up "
        "to its last complete call, instead of refusing it",
    )
    parser.add_argument(
        "--max-size",
        type=int,
        metavar="MIB",
        default=MAX_LOG_BYTES // 2**20,
        help=f"read an event log of at most MIB MiB (default: {MAX_LOG_BYTES // 2**20}); "
        "only regular files are read",
    )
    parser.add_argument(
        "--expect-hash",
        metavar="HASH",
        help="the state hash the live world reported; exit 1 if the replay differs",
    )
    parser.add_argument(
        "--table", action="append", metavar="T", help="print only this table (repeatable)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the state and hash as one JSON object"
    )


def read_events(
    path: str | Path,
    *,
    warn: Warn | None = None,
    partial: bool = False,
    lines: dict[int, int] | None = None,
    max_bytes: int = MAX_LOG_BYTES,
) -> list[Event]:
    """Decode an event log file, naming `file:line` for the first line that is not an event.

    `LogRewound` lines (a reset or restore under `serve --events`) are applied. A log that
    breaks off (a last line cut short, or a call started and never answered: what a writer
    killed mid-write, or a file cut by other means, leaves behind) is refused, or with
    `partial` cut back to its last complete call, and `warn` (if given) is told. `lines`, if
    given, is filled with seq -> line number. Only a regular file of at most `max_bytes`
    is read (a FIFO, a device or a directory is refused).
    """
    import msgspec

    from faultbench.kernel import AnyEvent
    from faultbench.kernel.lowlevel import add_log_line, read_bounded

    decoder = msgspec.json.Decoder(AnyEvent)
    try:
        data = read_bounded(path, max_bytes)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file. Expected an event log (JSON Lines).") from None
    except OSError as exc:
        raise BadInput(
            f"{path}: cannot read: {exc.strerror or exc}. Expected an event log (JSON Lines)."
        ) from None
    if len(data) > max_bytes:
        raise BadInput(
            f"{path}: larger than {max_bytes // 2**20} MiB, the most `faultbench replay` reads. "
            "Expected an event log; pass --max-size MIB to read a bigger one."
        )
    events: list[Event] = []
    where: dict[int, int] = {} if lines is None else lines
    rows = data.splitlines()
    torn = bool(data) and not data.endswith(b"\n")
    for lineno, line in enumerate(rows, 1):
        if not line.strip():
            continue
        try:
            ev = decoder.decode(line)
            add_log_line(events, ev, lineno)
        except (msgspec.DecodeError, RecursionError, UnicodeDecodeError) as exc:
            why = (
                "nested too deeply"
                if isinstance(exc, RecursionError)
                else f"not UTF-8: byte 0x{exc.object[exc.start]:02x}"
                if isinstance(exc, UnicodeDecodeError)
                else str(exc)
            )
            if torn and lineno == len(rows):
                _broken(
                    f"{path}:{lineno}: the log breaks off here: its last line is cut short "
                    f"({why}), as a writer stopped mid-write leaves it",
                    partial,
                    warn,
                )
                break
            shown = line[:80].decode("utf-8", "replace") + ("…" if len(line) > 80 else "")
            raise BadInput(
                f"{path}:{lineno}: Expected one event as a JSON object with a known"
                f' "type" and its fields. Instead, received: {shown!r} ({why})'
            ) from None
        if type(ev).__name__ != "LogRewound":
            where[ev.seq] = lineno
    _cut_unanswered(path, events, where, partial, warn)
    return events


def _broken(message: str, partial: bool, warn: Warn | None) -> None:
    if not partial:
        raise BadInput(
            f"{message}. Expected a complete log; pass --partial to replay it up to its last "
            "complete call."
        )
    if warn is not None:
        warn(f"{message}; replaying what comes before (--partial)")


def _cut_unanswered(
    path: str | Path, events: list[Event], where: dict[int, int], partial: bool, warn: Warn | None
) -> None:
    """A log written by faultbench holds each call whole (its events are written together):
    a call started and never answered means the file was cut."""
    from faultbench.kernel import CallFailed, CallStarted, CallSucceeded

    open_calls: dict[str, int] = {}
    for i, ev in enumerate(events):
        if isinstance(ev, CallStarted):
            open_calls[ev.call_id] = i
        elif isinstance(ev, CallSucceeded | CallFailed):
            open_calls.pop(ev.call_id, None)
    if open_calls:
        call, i = min(open_calls.items(), key=lambda item: item[1])
        _broken(
            f"{path}:{where.get(events[i].seq, '?')}: the log breaks off inside call {call}: it "
            "started here and was never answered",
            partial,
            warn,
        )
        del events[i:]


def world_path(
    events: list[Event], events_path: str | Path, given: str | None, beside: bool = False
) -> Path:
    """The world file to replay against: `--world`, or with `beside` the file the log names,
    by its name only, in the log's own folder. Never a path the log chooses."""
    from faultbench.kernel import WorldCreated

    if given is not None:
        p = Path(given)
        if not _is_file(p):
            try:
                there = p.exists()
            except (OSError, ValueError):
                there = False
            what = "not a regular file; expected a world file" if there else "no such world file"
            raise BadInput(f"{given}: {what} (given with --world).")
        return p
    first = events[0] if events else None
    if not isinstance(first, WorldCreated):
        kind = type(first).__name__ if first is not None else "an empty file"
        raise BadInput(
            f"{events_path}:1: Expected the log to start with a WorldCreated event."
            f" Instead, received: {kind}. Is this a faultbench event log?"
        )
    name = Path(first.path).name if first.path else ""
    if not beside:
        named = f", and names {name!r}" if name else ""
        raise BadInput(
            f"{events_path}: Expected --world WORLD: the world file to replay against (it runs "
            f"its handlers' code, so a log never chooses it{named}). Pass --world WORLD, or "
            "--world-beside-log to use the file of that name in the log's folder."
        )
    if not name or name in (".", ".."):
        raise BadInput(
            f"{events_path}: the log does not record its world file's name."
            " Pass it with --world WORLD."
        )
    if not re.fullmatch(r"[0-9a-f]{64}", first.digest or ""):
        # Without a digest nothing says the file beside the log is the one it was written
        # with: loading it would run its handlers on the log's say-so.
        raise BadInput(
            f"{events_path}: the log carries no SHA-256 digest of its world file (WorldCreated"
            ".digest is missing or malformed), so --world-beside-log cannot check the file "
            "beside it before loading it (loading runs its handlers). Pass the world file "
            "with --world WORLD."
        )
    if len(name.encode("utf-8", "surrogateescape")) > 255:
        raise BadInput(
            f"{events_path}: the log names a world file whose name is longer than 255 bytes, "
            "which no file in the log's folder can have. Pass it with --world WORLD."
        )
    candidate = Path(events_path).parent / name
    if not _is_file(candidate):
        raise BadInput(
            f"{events_path}: the log names the world file {name!r}, which is not in the log's "
            f"folder ({candidate.parent}). Pass it with --world WORLD."
        )
    return candidate


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long, a NUL byte
        return False


def run(args: argparse.Namespace) -> int:
    import msgspec

    from faultbench.kernel import FaultbenchError, ReplayError, WorldFileError

    def warn(message: str) -> None:
        print(f"faultbench replay: warning: {message}", file=sys.stderr)

    lines: dict[int, int] = {}
    try:
        if args.max_size < 1:
            raise BadInput(
                f"Expected --max-size of 1 MiB or more. Instead, received: {args.max_size}"
            )
        events = read_events(
            args.events,
            warn=warn,
            partial=args.partial,
            lines=lines,
            max_bytes=args.max_size * 2**20,
        )
        path = world_path(events, args.events, args.world, args.world_beside_log)
    except BadInput as exc:
        print(f"faultbench replay: {exc}", file=sys.stderr)
        return 2

    from faultbench import replay

    try:
        world = replay(path, events)
    except WorldFileError as exc:
        print(f"faultbench replay: {exc}", file=sys.stderr)
        return 2
    except (ReplayError, FaultbenchError) as exc:
        seq = getattr(exc, "seq", None)
        where = f"{args.events}:{lines[seq]}" if seq in lines else str(args.events)
        print(f"faultbench replay: {where}: does not replay: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"faultbench replay: {path}: cannot read: {exc.strerror or exc}", file=sys.stderr)
        return 2

    got = world.state_hash()
    if args.table:
        unknown = [t for t in args.table if t not in world.tables]
        if unknown:
            print(
                f"faultbench replay: Expected a table name, one of: {', '.join(world.tables)}."
                f" Instead, received: {unknown[0]!r}",
                file=sys.stderr,
            )
            return 2
    tables = {
        t: [_in_field_order(row, world.spec, t) for row in rows]
        for t, rows in world.to_dict().items()
        if not args.table or t in args.table
    }

    # The log records no state hash (no event carries one), so --expect-hash is the only
    # thing to check the replay against.
    expected = args.expect_hash
    mismatch = expected is not None and expected != got

    if args.json:
        out = {
            "world": str(path),
            "events": len(events),
            "state_hash": got,
            "verified": expected is not None and not mismatch,
            "tables": tables,
        }
        print(json.dumps(msgspec.to_builtins(out), indent=2, ensure_ascii=False))
    else:
        _print_tables(tables)
        print(f"replayed {len(events)} events from {args.events} against {path}")
        print(f"calls: {world.trace.count()} ({world.trace.count(ok=False)} failed)")
        print(f"state hash: {got}")
    if mismatch:
        print(
            f"faultbench replay: hash mismatch. Expected {expected} (from --expect-hash)."
            f" Instead, the replay gives: {got}",
            file=sys.stderr,
        )
    elif expected is not None and not args.json:
        print("hash verified: --expect-hash")
    return 1 if mismatch else 0


def _in_field_order(row: dict[str, Any], spec: WorldSpec, table: str) -> dict[str, Any]:
    # A log read back from JSON Lines has its keys sorted (deterministic bytes); show records
    # the way the world file declares them.
    record = spec.records.get(table)
    if record is None:
        return row
    names = [f.name for f in record.fields]
    return {**{k: row[k] for k in names if k in row}, **row}


def _print_tables(
    tables: dict[str, list[dict[str, Any]]] | dict[str, dict[str, dict[str, Any]]],
) -> None:
    from faultbench.kernel.lowlevel import format_value, id_order

    for name, rows in tables.items():
        rows = rows if isinstance(rows, dict) else {str(r.get("id")): r for r in rows}
        print(f"{name} ({len(rows)} record{'' if len(rows) == 1 else 's'})")
        for rid in sorted(rows, key=id_order):
            fields = {k: v for k, v in rows[rid].items() if k != "id"}
            print(f"  {rid} {format_value(fields)}")
