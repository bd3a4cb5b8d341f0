"""The HTML run report: one self-contained static file per session (inline CSS, JS and SVG;
no server, no network), written by `pytest --faultbench-report DIR` and `faultbench report`.

The page is rendered in the browser from embedded JSON, lazily: the overview (each group's
gate and its strip of run cells) comes from one small JSON block, and each run's details
(calls, state changes, event-log diff) sit in a JSON block of their own, parsed only when the
run is opened. So a session of 1,000 runs x 50 calls loads as fast as its overview, and a run
of 10,000 calls costs only that run's timeline when it is opened.

Everything shown is computed here from the runs' event logs through faultbench.kernel's
public API: calls from `Trace`, state changes from `replay` + `World.diff`, the diff against
the closest passing run from `diff_events`. The page itself (`_report_page.html`) only draws.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from faultbench.kernel.lowlevel import FAULT_KINDS, MODEL_KINDS

from .._gate._paired import Paired
from .._gate._report import Group, Run, closest_explained, closest_passing
from .._gate._stats import pass_hat_k
from .._gate._usage import Usage, usage_line

if TYPE_CHECKING:
    from faultbench.kernel import Event, WorldSpec


#: the world spec a run's events were recorded with, or None (its end state is not shown)
SpecFor = Callable[[Sequence["Event"]], "WorldSpec | None"]

__all__ = ["REPORT_FILE", "build_report", "spec_of", "write_report"]

REPORT_FILE = "faultbench-report.html"
#: lines of event-log diff per failing run
DIFF_LINES = 200
#: passing runs a failing run is compared with, nearest in log length first
DIFF_CANDIDATES = 8
#: characters of an answer's text kept per call (the full text of huge answers is cut)
TEXT_LIMIT = 4000

#: fault kind -> colour (the legend): the kernel's registries' (`FaultKind.colour`, and
#: `ModelKind.colour` for the model's kinds); anything else (a call's own error, a failed
#: delivery) gets "other"
KIND_COLOURS = {
    **{k.name: k.colour for k in FAULT_KINDS},
    **{k.name: k.colour for k in MODEL_KINDS},
    "other": "#555555",
}


# ---------------------------------------------------------------------------------------------
# The page: one file of HTML around the session's JSON
# ---------------------------------------------------------------------------------------------


def write_report(
    directory: Path | str,
    groups: list[Group],
    *,
    reproduce: dict[str, str] | None = None,
    shrinks: dict[str, dict[str, Any]] | None = None,
    title: str = "faultbench run report",
    comparisons: Sequence[Comparison] = (),
    spec_for: SpecFor | None = None,
) -> Path:
    """Write `DIR/faultbench-report.html`; returns its path. `spec_for` as `build_report`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / REPORT_FILE
    path.write_text(
        build_report(
            groups,
            reproduce=reproduce,
            shrinks=shrinks,
            title=title,
            comparisons=comparisons,
            spec_for=spec_for,
        ),
        encoding="utf-8",
    )
    return path


def build_report(
    groups: list[Group],
    *,
    reproduce: dict[str, str] | None = None,
    shrinks: dict[str, dict[str, Any]] | None = None,
    title: str = "faultbench run report",
    comparisons: Sequence[Comparison] = (),
    spec_for: SpecFor | None = None,
) -> str:
    """The report's HTML text; `comparisons` are `@pytest.mark.compare`'s pairs of groups
    (a-group, b-group, a, b, margin), shown with their discordant runs side by side.
    `spec_for(events)` gives the world a run's log was recorded with (its end state is shown
    against its start); by default the world file its `WorldCreated` names, which only a live
    session (whose tests loaded it) may use: a saved log is data and never chooses the code
    that runs (`faultbench report` passes the world the user named)."""
    reproduce = reproduce or {}
    shrinks = shrinks or {}
    overview: list[dict[str, Any]] = []
    blocks: list[str] = []
    specs: dict[str, WorldSpec | None] = {}
    seen: set[str] = set()  # the kinds the legend shows: those that happened
    for g_index, group in enumerate(groups):
        decoded: dict[int, list[Event]] = {}
        cells = []
        for _, run in sorted(group.runs.items()):
            rid = f"{g_index}-{run.index}"
            cells.append([run.index, run.outcome, run.tolerated, rid])
            detail = _run_detail(group, run, decoded, specs, spec_for or spec_of)
            detail["reproduce"] = reproduce.get(run.nodeid)
            detail["shrink"] = shrinks.get(run.nodeid)
            seen.update(c["fault"] for c in detail["calls"] if c.get("fault"))
            blocks.append(_script(f"run-{rid}", detail))
        overview.append({**_group_overview(group), "cells": cells})
    data = {
        "title": title,
        "generated": datetime.now().astimezone().isoformat(timespec="seconds"),
        "kinds": KIND_COLOURS,
        "legend": [k for k in KIND_COLOURS if k in seen],
        "groups": overview,
        "comparisons": [_comparison(groups, *c) for c in comparisons],
    }
    page = resources.files(__package__).joinpath("_report_page.html").read_text("utf-8")
    parts = {
        "title": _html_escape(title),
        "data": _script("faultbench-data", data),
        "runs": "\n".join(blocks),
    }
    # One pass, so a `{{...}}` inside the data is never taken for a placeholder.
    return re.sub(r"\{\{(\w+)\}\}", lambda m: parts[m[1]], page)


def _script(element_id: str, data: Any) -> str:
    # `</` inside a JSON string could close the script element: written as `<\/` (valid JSON).
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    text = text.replace("</", "<\\/")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def _html_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# ---------------------------------------------------------------------------------------------
# The overview: each group's gate, usage and paired comparison
# ---------------------------------------------------------------------------------------------


def _group_overview(group: Group) -> dict[str, Any]:
    gate = group.gate()
    outcomes = [r.outcome for r in group.runs.values()]
    lo, hi = gate.interval
    return {
        "name": group.name,
        "total": group.total,
        "min_pass_rate": group.min_pass_rate,
        "passed": gate.passed,
        "failed": gate.failed,
        "stopped": gate.stopped,
        "skipped": outcomes.count("skipped"),
        "unknown": outcomes.count("unknown"),
        "rate": gate.rate if gate.ran else None,
        "ci": [lo, hi] if gate.ran else None,
        "pass_hat_3": pass_hat_k(gate.passed, gate.ran, 3),
        "gate": None if not gate.planned or outcomes.count("unknown") else gate.ok,
        "line": gate.line() if gate.planned and not outcomes.count("unknown") else "",
        "usage": _usage_line(group, gate.passed),
    }


def _usage_line(group: Group, passed: int) -> str | None:
    """The summary's usage line of the group (None when no run called a model)."""
    return usage_line([Usage(**r.usage) for r in group.runs.values() if r.usage], passed)


#: a compared pair of groups: (a-group's name, b-group's name, a, b, margin)
Comparison = tuple[str, str, str, str, "float | None"]


def _comparison(
    groups: list[Group], group_a: str, group_b: str, a: str, b: str, margin: float | None
) -> dict[str, Any]:
    """Two agents' paired runs: the summary's lines, and the discordant runs (one passed, the
    other failed, under the same faults) side by side, each linked to its run."""
    where = {g.name: i for i, g in enumerate(groups)}
    sides = [where.get(group_a), where.get(group_b)]
    outcomes = []
    for index in sides:
        runs = {} if index is None else groups[index].runs
        outcomes.append(
            {i: r.outcome == "passed" for i, r in runs.items() if r.outcome in ("passed", "failed")}
        )
    paired = Paired.of(outcomes[0], outcomes[1])
    rows = []
    for k in sorted(set(outcomes[0]) & set(outcomes[1])):
        if outcomes[0][k] == outcomes[1][k]:
            continue
        row: dict[str, Any] = {"run": k}
        for key, index in zip(("a", "b"), sides):
            assert index is not None
            run = groups[index].runs[k]
            row[key] = {
                "rid": f"{index}-{k}",
                "outcome": run.outcome,
                "summary": run.summary,
                "message": run.message,
            }
        rows.append(row)
    return {
        "name": group_a.split("[")[0],
        "a": a,
        "b": b,
        "lines": paired.lines(a, b, margin),
        "discordant": rows,
    }


# =============================================================================================
# One run: calls, state changes, diff
# =============================================================================================


# ---------------------------------------------------------------------------------------------
# A run opened: its calls, timeline, checks and diff
# ---------------------------------------------------------------------------------------------


def _run_detail(
    group: Group,
    run: Run,
    decoded: dict[int, list[Event]],
    specs: dict[str, WorldSpec | None],
    spec_for: SpecFor,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "nodeid": run.nodeid,
        "index": run.index,
        "outcome": run.outcome,
        "tolerated": run.tolerated,
        "message": run.message,
        "summary": run.summary,
        "state_hash": run.state_hash,
        "events_file": run.events_file,
        "calls": [],
        "lanes": [],
        "state": None,
        "diff": None,
        "explained": None,
        "violations": run.violations or [],
        "usage": run.usage,
    }
    if run.events is None:
        return out
    from faultbench.kernel import decode_events

    events = decoded.get(run.index)
    if events is None:
        events = decoded[run.index] = list(decode_events(run.events.encode()))
    spec = _spec(events, specs, spec_for)
    out.update(_timeline(events, spec))
    _mark_violations(out, events)
    out["n_events"] = len(events)
    if spec is not None:
        out["state"] = _state_change(spec, events)
    if run.outcome == "failed":
        near = closest_explained(group, run, decoded, candidates=DIFF_CANDIDATES)
        if near is not None:
            out["explained"] = {"against": near[0].index, "lines": near[1].lines()}
        best = closest_passing(
            group, run, decoded, max_lines=DIFF_LINES, candidates=DIFF_CANDIDATES
        )
        if best is not None:
            other, d = best
            out["diff"] = {
                "against": other.index,
                "header": d.header(),
                "settings": d.settings,
                "rows": _side_by_side(d.lines),
            }
    return out


def _spec(
    events: list[Event], specs: dict[str, WorldSpec | None], spec_for: SpecFor
) -> WorldSpec | None:
    from faultbench.kernel import WorldCreated

    first = events[0] if events else None
    key = f"{first.path}:{first.digest}" if isinstance(first, WorldCreated) else ""
    if spec_for is not spec_of:
        return spec_for(events)  # the caller's own rule (and cache)
    if key not in specs:
        specs[key] = spec_of(events)
    return specs[key]


def _ms(t: datetime | None, origin: datetime) -> float:
    return 0.0 if t is None else round((t - origin).total_seconds() * 1000, 3)


def _timeline(events: list[Event], spec: WorldSpec | None) -> dict[str, Any]:
    """The calls as bars: lane, start and end (virtual ms since the first call), fault,
    ghost write, the call it retries, and what hover shows (arguments, text, _meta)."""
    from faultbench.kernel import (
        RecordCreated,
        RecordDeleted,
        RecordUpdated,
        Trace,
        WebhookAttempted,
    )
    from faultbench.kernel.lowlevel import iso_time

    wrote: dict[str, int] = {}
    for ev in events:
        if isinstance(ev, RecordCreated | RecordUpdated | RecordDeleted) and ev.call_id:
            wrote[ev.call_id] = wrote.get(ev.call_id, 0) + 1
    trace = Trace(events)
    calls = list(trace)
    # the text an `inject` fault planted in a call's answer, highlighted in its details
    planted = {f.call_id: f.detail.get("injected") for f in trace.faults() if f.kind == "inject"}
    # what a tool-surface fault changed in the tool list after the call (`detail["surface"]`)
    surface = {f.call_id: f.detail.get("surface") for f in trace.faults() if "surface" in f.detail}
    model = trace.model_calls
    hooks = [ev for ev in events if isinstance(ev, WebhookAttempted)]
    if not calls and not model and not hooks:
        return {"lanes": [], "calls": [], "span": 0}
    origin = min(
        [c.started_at for c in calls if c.started_at is not None]
        + [m.at for m in model]
        + [h.at for h in hooks[:1]]
    )
    lanes: list[str] = []
    lane_of: dict[str, int] = {}
    ops = {} if spec is None else spec.operations
    keyed = sorted({c.tool for c in calls}, key=lambda t: (ops[t].service if t in ops else "~", t))
    for tool in keyed:
        lane_of[tool] = len(lanes)
        lanes.append(ops[tool].qualname if tool in ops else tool)
    last_of: dict[tuple[str, str], int] = {}
    rows = []
    span = 0.0
    for i, c in enumerate(calls):
        start, end = _ms(c.started_at, origin), _ms(c.finished_at, origin)
        span = max(span, end)
        key = (c.tool, json.dumps(c.args, sort_keys=True, default=str))
        before = last_of.get(key)
        retry_of = before if before is not None and not calls[before].ok else None
        last_of[key] = i
        meta: dict[str, Any] = {"call_id": c.call_id}
        if c.started_at is not None:
            meta["started_at"] = iso_time(c.started_at)
        if c.finished_at is not None:
            meta["finished_at"] = iso_time(c.finished_at)
        if c.fault is not None:
            meta["fault"] = c.fault
        if not c.ok:
            meta["error_kind"] = c.error_kind
        text = c.text if len(c.text) <= TEXT_LIMIT else c.text[:TEXT_LIMIT] + "…"
        rows.append(
            {
                "i": i,
                "lane": lane_of[c.tool],
                "tool": c.tool,
                "k": c.k,
                "s": start,
                "e": end,
                "ok": c.ok,
                "fault": c.fault,
                "kind": c.error_kind,
                "ghost": (not c.ok) and wrote.get(c.call_id, 0) > 0,
                "writes": wrote.get(c.call_id, 0),
                "retry_of": retry_of,
                "args": c.args,
                "text": text,
                "meta": meta,
                "injected": planted.get(c.call_id),
                "surface": surface.get(c.call_id),
            }
        )
    if model:
        span = max(span, _model_lane(events, model, origin, lanes, rows))
    if hooks:
        faults = {f.call_id: f.kind for f in trace.faults() if f.tool == "webhooks"}
        span = max(span, _deliveries_lane(hooks, faults, origin, lanes, rows))
    effects = _effects(events, origin)
    if effects:
        for mark in effects:
            mark["lane"] = len(lanes)
            span = max(span, mark["t"])
        lanes.append(EFFECTS_LANE)
    return {
        "lanes": lanes,
        "calls": rows,
        "effects": effects,
        "span": span,
        "origin": iso_time(origin),
    }


#: the lane of the scheduled effects that fired (`then:`, `world.schedule`)
# ---------------------------------------------------------------------------------------------
# The timeline's other lanes: effects, violations, the model, deliveries
# ---------------------------------------------------------------------------------------------


EFFECTS_LANE = "scheduled effects"


def _effects(events: list[Event], origin: datetime) -> list[dict[str, Any]]:
    """The scheduled effects that fired, as marks: when, which record, and each field's
    change (`pending` -> `succeeded`), from `EffectFired` and the update that follows it."""
    from faultbench.kernel import EffectFired, RecordUpdated

    marks: list[dict[str, Any]] = []
    for i, ev in enumerate(events):
        if not isinstance(ev, EffectFired):
            continue
        after = events[i + 1] if i + 1 < len(events) else None
        changes: dict[str, list[Any]] = {}
        if (
            isinstance(after, RecordUpdated)
            and after.call_id is None
            and (after.table, after.id) == (ev.table, ev.id)
        ):
            changes = {k: [after.old.get(k), v] for k, v in after.changes.items()}
        marks.append(
            {
                "t": _ms(ev.at, origin),
                "effect": ev.effect_id,
                "record": ev.table,
                "id": ev.id,
                "outcome": ev.outcome,
                "changes": json.loads(json.dumps(changes, default=str)),
            }
        )
    return marks


def _mark_violations(detail: dict[str, Any], events: list[Event]) -> None:
    """Each call that broke a check carries the rules it broke, and each violation the events
    at which it broke (`at`: seq, the event as the log reads, where the timeline marks it:
    virtual ms and lane, and the call it belongs to)."""
    from faultbench.kernel.lowlevel import format_event

    # model calls (the "model" lane) have no tool call id, and no check names them
    by_id = {c["meta"]["call_id"]: c for c in detail["calls"] if "call_id" in c["meta"]}
    origin = detail.get("origin")
    start = datetime.fromisoformat(origin) if origin else None
    effects = detail["lanes"].index(EFFECTS_LANE) if EFFECTS_LANE in detail["lanes"] else None
    detail["violations"] = [dict(v) for v in detail["violations"]]  # the run's own stay as read
    for v in detail["violations"]:
        for call_id in v.get("call_ids", []):
            call = by_id.get(call_id)
            if call is not None:
                call.setdefault("broke", []).append(v["message"])
        marks = []
        for seq in v.get("events", []):
            if not 0 <= seq < len(events):
                continue  # a session file from another log: nothing to point at
            ev = events[seq]
            call = by_id.get(getattr(ev, "call_id", None) or "")
            lane = call["lane"] if call is not None else effects
            marks.append({
                "seq": seq,
                "line": format_event(ev),
                "t": None if start is None else _ms(ev.at, start),
                "lane": lane,
                "i": None if call is None else call["i"],
            })  # fmt: skip
        v["at"] = marks


def _model_lane(
    events: list[Event], model: list[Any], origin: datetime, lanes: list[str], rows: list[Any]
) -> float:
    """The agent's model calls as bars of a lane of their own, "model": each from its
    `ModelCalled` to the end of its latency (and a timeout's wait), its fault marked. Returns
    the last end."""
    from faultbench.kernel import ClockAdvanced
    from faultbench.kernel.lowlevel import iso_time, model_kind

    ends = {ev.call_id: ev.to for ev in events if isinstance(ev, ClockAdvanced) and ev.call_id}
    lane = len(lanes)
    lanes.append("model")
    span = 0.0
    for m in model:
        end = ends.get(f"model#{m.k}", m.at)
        ok = m.kind is None or not model_kind(m.kind).fails
        meta = {"model": m.model, "started_at": iso_time(m.at), **m.detail}
        span = max(span, _ms(end, origin))
        rows.append(
            {
                "i": len(rows), "lane": lane, "tool": "model", "k": m.k,
                "s": _ms(m.at, origin), "e": _ms(end, origin), "ok": ok, "fault": m.kind,
                "kind": None if ok else m.kind, "ghost": False, "writes": 0, "retry_of": None,
                "args": {}, "text": "", "meta": meta,
            }
        )  # fmt: skip
    return span


#: the lane of webhook delivery attempts (`webhooks:`, `faultbench.webhooks`)
DELIVERIES_LANE = "deliveries"


def _deliveries_lane(
    hooks: list[Any], faults: dict[str, str], origin: datetime, lanes: list[str], rows: list[Any]
) -> float:
    """Each webhook delivery attempt (`WebhookAttempted`) as a mark on a lane of its own,
    "deliveries": red when it failed, linked to the attempt it retries, the delivery's fault
    (duplicate_delivery, out_of_order, delayed, dropped) marked on its first attempt. Returns
    the last time."""
    from faultbench.kernel.lowlevel import iso_time

    lane = len(lanes)
    lanes.append(DELIVERIES_LANE)
    span = 0.0
    last: dict[str, int] = {}  # delivery -> its previous attempt's row
    for h in hooks:
        t = _ms(h.at, origin)
        span = max(span, t)
        number = h.delivery.partition("_")[2].partition("_")[0]  # dlv_<k>, dlv_<k>_2
        k = int(number) if number.isascii() and number.isdigit() else 0
        ok = h.outcome == "succeeded"
        first = h.attempt == 1 and h.delivery == f"dlv_{k}"  # not a duplicate's copy
        fault = faults.get(f"webhooks#{k}") if first else None
        meta = {"delivery": h.delivery, "event": h.event, "attempt": h.attempt,
                "outcome": h.outcome, "at": iso_time(h.at)}  # fmt: skip
        if h.status is not None:
            meta["status"] = h.status
        if h.error:
            meta["error"] = h.error
        if h.retry_at is not None:
            meta["retry_at"] = iso_time(h.retry_at)
        text = h.outcome + (f" ({h.status})" if h.status is not None else "")
        text += f": {h.error}" if h.error else ""
        rows.append(
            {
                "i": len(rows), "lane": lane, "tool": h.delivery, "k": h.attempt, "s": t, "e": t,
                "ok": ok, "fault": fault, "kind": None if ok else h.outcome, "ghost": False,
                "writes": 0, "retry_of": last.get(h.delivery), "args": {"event": h.event},
                "text": text, "meta": meta,
            }
        )  # fmt: skip
        last[h.delivery] = len(rows) - 1
    return span


# ---------------------------------------------------------------------------------------------
# State changes and the diff against the closest passing run
# ---------------------------------------------------------------------------------------------


def _state_change(spec: WorldSpec, events: list[Event]) -> dict[str, Any] | None:
    """The records the run added, removed and changed: its end state against its start (the
    world as the test got it, before the first call)."""
    from faultbench.kernel import CallStarted, FaultbenchError, replay

    first = next((i for i, e in enumerate(events) if isinstance(e, CallStarted)), len(events))
    try:
        start = replay(spec, events[:first], strict=False)
        end = replay(spec, events, strict=False)
    except (FaultbenchError, ValueError):
        return None
    diff: dict[str, Any] = end.diff(start.snapshot()).to_dict()
    return diff


def _side_by_side(lines: list[str]) -> list[list[Any]]:
    """diff_events' unified lines as aligned rows `[left, right, tag]`: tag "=" context on
    both sides, "~" a change (left removed, right added, either may be empty), "@" a hunk
    header, "…" a note."""
    rows: list[list[Any]] = []
    minus: list[str] = []
    plus: list[str] = []

    def flush() -> None:
        for n in range(max(len(minus), len(plus))):
            rows.append(
                [minus[n] if n < len(minus) else None, plus[n] if n < len(plus) else None, "~"]
            )
        minus.clear()
        plus.clear()

    for line in lines:
        if line.startswith("- "):
            minus.append(line[2:])
        elif line.startswith("+ "):
            plus.append(line[2:])
        else:
            flush()
            if line.startswith("@@"):
                rows.append([line, line, "@"])
            elif line.startswith("  "):
                rows.append([line[2:], line[2:], "="])
            else:
                rows.append([line, line, "…"])
    flush()
    return rows


def spec_of(events: Sequence[Event]) -> WorldSpec | None:
    """The world spec a log was recorded with, from the path in its `WorldCreated` (None
    when there is none or it cannot be read)."""
    from faultbench.kernel import WorldCreated, WorldFileError
    from faultbench.kernel.lowlevel import load_spec

    first = events[0] if events else None
    if not isinstance(first, WorldCreated) or not first.path:
        return None
    try:
        return load_spec(first.path)
    except (OSError, WorldFileError):
        return None
