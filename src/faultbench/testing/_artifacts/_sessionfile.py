"""`faultbench-session.json`: what a pytest session knew about its runs, next to their event
logs (`--faultbench-events DIR`), so `faultbench report DIR` and `faultbench shrink` can work
from saved logs: each group's runs with their outcome, assertion message, call line, state
hash, event-log file and the command that reproduces them.

Without the file (logs copied by hand), `read_session` rebuilds the groups from the file
names alone (`<test id>.run4.jsonl`), with outcomes unknown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._gate._report import Group, Run

__all__ = ["SESSION_FILE", "Session", "read_session", "write_session"]

SESSION_FILE = "faultbench-session.json"
VERSION = 1

_RUN_FILE = re.compile(r"^(?P<group>.+)\.run(?P<index>\d+)\.jsonl$")


@dataclass
class Session:
    groups: list[Group]
    #: nodeid -> the command that reproduces it
    reproduce: dict[str, str] = field(default_factory=dict)
    #: nodeid -> shrink result as plain JSON (headline, pins, reproduce)
    shrinks: dict[str, dict[str, Any]] = field(default_factory=dict)
    title: str = "faultbench run report"


#: what a run's grade (docs/CHECKS.md) and usage leave in the session file, so `faultbench
#: report` shows what the live report showed
GRADE_FIELDS = (
    "violations", "score", "milestones", "min_mean_score", "attacked", "utility",
    "attack_succeeded", "usage", "group_budget",
)  # fmt: skip


def write_session(
    directory: Path,
    groups: list[Group],
    reproduce: Callable[[str], str],
    shrinks: dict[str, dict[str, Any]] | None = None,
) -> Path:
    """Write the session file into `directory` (the event logs' folder)."""
    directory.mkdir(parents=True, exist_ok=True)
    data = {
        "version": VERSION,
        "groups": [
            {
                "name": g.name,
                "total": g.total,
                "min_pass_rate": g.min_pass_rate,
                "runs": [
                    {
                        "nodeid": r.nodeid,
                        "index": r.index,
                        "outcome": r.outcome,
                        "tolerated": r.tolerated,
                        "message": r.message,
                        "summary": r.summary,
                        "state_hash": r.state_hash,
                        "events_file": None if r.events_file is None else Path(r.events_file).name,
                        "reproduce": reproduce(r.nodeid),
                        # the grade (docs/CHECKS.md), when the run had checks
                        **{
                            key: getattr(r, key)
                            for key in GRADE_FIELDS
                            if getattr(r, key) not in (None, False)
                        },
                    }
                    for _, r in sorted(g.runs.items())
                ],
            }
            for g in groups
        ],
        "shrinks": shrinks or {},
    }
    path = directory / SESSION_FILE
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False))
    return path


#: the largest session file read
MAX_SESSION_BYTES = 64 * 2**20


def _read_text(path: Path) -> str:
    """A log as text, read as a regular file of at most 1 GiB (what `replay` reads)."""
    from faultbench.kernel.lowlevel import read_bounded

    limit = 1024 * 2**20
    data = read_bounded(path, limit)
    if len(data) > limit:
        raise ValueError(f"{path}: larger than {limit // 2**20} MiB; expected an event log")
    return data.decode("utf-8", "replace")


def read_session(directory: Path, read: Callable[[Path], str] | None = None) -> Session:
    """The groups of a folder of event logs, with their events loaded (by `read`, default:
    as text, regular files only, bounded). Raises OSError when the folder cannot be read,
    ValueError when it holds nothing to show or its session file is not one."""
    read = read or _read_text
    meta = directory / SESSION_FILE
    if meta.exists():
        from faultbench.kernel.lowlevel import read_bounded

        raw = read_bounded(meta, MAX_SESSION_BYTES)
        if len(raw) > MAX_SESSION_BYTES:
            raise ValueError(f"{meta}: larger than {MAX_SESSION_BYTES // 2**20} MiB")
        try:
            return _session(directory, json.loads(raw), read)
        except RecursionError:
            raise ValueError(f"{meta}: nested too deeply; expected a session file") from None
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(
                f"{meta}: not a session file written by faultbench ({type(exc).__name__}: "
                f"{str(exc)[:100]})"
            ) from None
    by_group: dict[str, Group] = {}
    for path in sorted(directory.glob("*.jsonl")):
        m = _RUN_FILE.match(path.name)
        name, index = (m["group"], int(m["index"])) if m else (path.stem, 0)
        group = by_group.setdefault(name, Group(name, 0, None))
        run = Run(f"{name}[run{index}]", index, outcome="unknown", events_file=str(path))
        run.events = read(path)
        group.runs[index] = run
        group.total = len(group.runs)
    if not by_group:
        raise ValueError(f"{directory}: no event logs (*.jsonl) and no {SESSION_FILE}")
    return Session(list(by_group.values()))


def _session(directory: Path, data: Any, read: Callable[[Path], str]) -> Session:
    groups, reproduce = [], {}
    for g in data.get("groups", []):
        group = Group(g["name"], g["total"], g.get("min_pass_rate"))
        for r in g["runs"]:
            run = Run(
                r["nodeid"],
                r["index"],
                outcome=r["outcome"],
                tolerated=r.get("tolerated", False),
                message=r.get("message"),
                summary=r.get("summary"),
                state_hash=r.get("state_hash"),
                **{key: r[key] for key in GRADE_FIELDS if key in r},
            )
            name = r.get("events_file")
            if name:
                # a file name in the folder, as write_session writes it: never a path the
                # session file chooses (`../../etc/...`)
                if not isinstance(name, str) or Path(name).name != name or name in (".", ".."):
                    raise ValueError(
                        f"{directory / SESSION_FILE}: events_file {str(name)[:80]!r} is not a "
                        "file name in its folder; expected the name of an event log beside it"
                    )
                path = directory / name
                run.events_file = str(path)
                if path.exists():
                    run.events = read(path)
            if r.get("reproduce"):
                reproduce[run.nodeid] = r["reproduce"]
            group.runs[run.index] = run
        groups.append(group)
    return Session(groups, reproduce, dict(data.get("shrinks", {})))
