"""Shrinking a failing run's fault schedule: the smallest subset of the faults it received
that still makes the test fail.

Every fault is a decision keyed by (seed, run, operation, k), and the run's event log says
which decisions were taken (`FaultInjected` after the `CallStarted` that numbers the call).
Each one can be pinned as a `script:` entry (`{"payments.issue_refund": {"script": {2:
{"kind": "timeout", "commit": true}}}}`), with no other rule in force: a probe re-runs the
test under exactly that block and reports whether it still fails. Delta debugging (ddmin,
Zeller and Hildebrandt 2002) then searches the subsets: halves first, then complements,
then finer splits, until no single fault can be dropped.

A probe is one more run of the test in a fresh `pytest` process (`probe_pytest`), with the
block passed as `--faultbench-faults JSON`, which the plugin puts in force instead of the
test's own faults marker. With a deterministic agent (scripted models, replayed cassettes)
the result is exact; with a live model every probe is one more model run, so the number of
probes is bounded (`budget`).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from faultbench.kernel.lowlevel import FaultPin, faults_received, pin_block

if TYPE_CHECKING:
    from faultbench.kernel import WorldSpec

__all__ = [
    "DEFAULT_BUDGET",
    "Pin",
    "Probe",
    "ShrinkResult",
    "ddmin",
    "faults_received",
    "pin_block",
    "probe_pytest",
    "shrink",
]

#: one fault a run received (the kernel reads them from the log: `faults_received`)
Pin = FaultPin

#: probes per failing run unless `--faultbench-shrink-budget` says otherwise
DEFAULT_BUDGET = 64


def describe(pins: Sequence[Pin]) -> str:
    return ", ".join(str(p) for p in pins)


# =============================================================================================
# ddmin
# =============================================================================================


@dataclass
class ShrinkResult:
    """What shrinking found. `verdict` is one of

    - "minimal": `pins` still fail the test and none of them can be dropped;
    - "budget": the probes ran out; `pins` still fail, and may not be minimal;
    - "no_faults": the test fails with no fault at all (the bug is not fault handling);
    - "not_reproduced": it passes with all its faults pinned (the failure depends on
      something else: latency, wall time, a live model's randomness);
    - "error": a probe could not run (`message` says why).
    """

    verdict: str
    pins: list[Pin] = field(default_factory=list)
    received: list[Pin] = field(default_factory=list)
    probes: int = 0
    message: str = ""
    block: dict[str, Any] | None = None

    def headline(self) -> str:
        if self.verdict == "no_faults":
            return "fails without faults: the bug is not fault handling"
        if self.verdict == "not_reproduced":
            return (
                f"passes with its {len(self.received)} faults pinned: the failure depends "
                "on more than the faults (latency, wall time, a live model)"
            )
        if self.verdict == "error":
            return f"cannot shrink: {self.message}"
        only = f"fails with only: {describe(self.pins)}"
        if self.verdict == "budget":
            only += f" (probe budget used up: may not be minimal, of {len(self.received)})"
        else:
            n = len(self.received)
            only += f" (of {n} fault{'' if n == 1 else 's'})"
        return only


class ProbeError(Exception):
    """A probe could not tell whether the test fails."""


def ddmin(
    items: Sequence[Pin], fails: Callable[[list[Pin]], bool], *, budget: int = DEFAULT_BUDGET
) -> ShrinkResult:
    """Shrink `items` to a minimal failing subset, calling `fails(subset)` at most `budget`
    times. Probes the empty set first (does it fail without faults?), then all of them (does
    pinning them reproduce the failure?), then ddmin; a subset already probed is not probed
    again."""
    items = list(items)
    seen: dict[frozenset[Pin], bool] = {}
    count = 0

    class _Spent(Exception):
        pass

    def probe(subset: list[Pin]) -> bool:
        nonlocal count
        key = frozenset(subset)
        if key not in seen:
            if count >= budget:
                raise _Spent
            count += 1
            seen[key] = fails(subset)
        return seen[key]

    result = ShrinkResult("minimal", received=items)
    try:
        if probe([]):
            result.verdict = "no_faults"
            return result
        if not items or not probe(items):
            result.verdict = "not_reproduced"
            return result
        current, n = items, 2
        while len(current) >= 2:
            chunks = _split(current, n)
            for chunk in chunks:
                if probe(chunk):
                    current, n = chunk, 2
                    break
            else:
                complements = [] if n == 2 else chunks
                for chunk in complements:
                    rest = [p for p in current if p not in chunk]
                    if probe(rest):
                        current, n = rest, max(n - 1, 2)
                        break
                else:
                    if n >= len(current):
                        break
                    n = min(2 * n, len(current))
        result.pins = current
    except _Spent:
        result.verdict = "budget"
        result.pins = min((list(s) for s, f in seen.items() if f), key=len, default=items)
        result.pins.sort(key=items.index)
    except ProbeError as exc:
        result.verdict = "error"
        result.message = str(exc)
    finally:
        result.probes = count
    return result


def _split(items: list[Pin], n: int) -> list[list[Pin]]:
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return [c for c in out if c]


# =============================================================================================
# Probing a pytest test in a fresh process
# =============================================================================================


@dataclass
class Probe:
    """How to re-run one test item: `pytest [args] NODEID --faultbench-faults BLOCK` in `cwd`."""

    nodeid: str
    args: list[str] = field(default_factory=list)
    cwd: str | None = None
    #: the command people type (`pytest "t.py::test_x[run4]"`), for the reproduce line
    shown: str | None = None

    def command(self, block: dict[str, Any] | None) -> list[str]:
        cmd = [sys.executable, "-m", "pytest", self.nodeid, *self.args]
        if block is not None:
            cmd += ["--faultbench-faults", json.dumps(block, sort_keys=True)]
        return cmd

    def reproduce(self, block: dict[str, Any]) -> str:
        head = self.shown or f"pytest {shlex.quote(self.nodeid)}"
        return f"{head} --faultbench-faults {shlex.quote(json.dumps(block, sort_keys=True))}"

    def run(self, block: dict[str, Any] | None) -> dict[str, Any]:
        """Run the item once; returns its run record from the session file (outcome,
        message, events)."""
        from ._sessionfile import read_session

        with tempfile.TemporaryDirectory(prefix="faultbench-probe-") as tmp:
            cmd = [
                *self.command(block),
                "-p",
                "no:cacheprovider",
                "-q",
                "--faultbench-events",
                tmp,
            ]
            env = {**os.environ, "FAULTBENCH_PROBE": "1"}
            proc = subprocess.run(
                cmd, cwd=self.cwd, env=env, capture_output=True, text=True, check=False
            )
            try:
                session = read_session(Path(tmp))
            except (OSError, ValueError):
                session = None
            runs = [] if session is None else [r for g in session.groups for r in g.runs.values()]
            if len(runs) != 1:
                tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
                raise ProbeError(
                    f"expected `{' '.join(map(shlex.quote, cmd[2:5]))}` to run one faultbench "
                    f"run; instead it ran {len(runs)} (exit status {proc.returncode}):\n{tail}"
                )
            run = runs[0]
            if run.outcome == "failed" and run.events is None:
                raise ProbeError(f"the test failed before it ran: {run.message}")
            return {"outcome": run.outcome, "message": run.message, "events": run.events}


def shrink(
    pins: Sequence[Pin],
    spec: WorldSpec,
    fails: Callable[[dict[str, Any]], bool],
    *,
    budget: int = DEFAULT_BUDGET,
) -> ShrinkResult:
    """ddmin over `pins`, where `fails(block)` runs the test under a `faults:` block."""
    result = ddmin(pins, lambda subset: fails(pin_block(subset, spec)), budget=budget)
    if result.verdict in ("minimal", "budget"):
        result.block = pin_block(result.pins, spec)
    elif result.verdict == "no_faults":
        result.block = {}
    return result


def probe_pytest(probe: Probe) -> Callable[[dict[str, Any]], bool]:
    """`fails(block)` for `shrink`: one fresh pytest process per call."""

    def fails(block: dict[str, Any]) -> bool:
        outcome: str = probe.run(block)["outcome"]
        return outcome == "failed"

    return fails
