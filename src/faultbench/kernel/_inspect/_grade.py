"""Grading a run: its policies over the calls, its expectations on the end state, its score.

`grade(checks, trace)` reads only the trace and the log it was built from: the calls (tool,
arguments, outcome, in start order), which calls wrote records (record events carry their
`call_id`), and the records before the first call and at the end (folded from the record
events). Each broken rule is a `Violation` that names the calls that broke it (1-based, as
`print(trace)` numbers them), so a message, the terminal summary and the HTML report point at
the same place.

What counts (docs/CHECKS.md):

- `at_most_once` counts calls that *took effect*: a call that succeeded, or one that wrote a
  record before it failed (a timeout after the commit). A 500 that wrote nothing is not an
  effect, so retrying it is fine.
- `no_retry_after` calls a retry a later call with the same tool and the same arguments.
- `never` counts every attempt, failed or not.
- `before` needs a *successful* earlier call.
- `requires_confirmation` needs a confirming user turn (`turns`: (calls finished before the
  turn, its text)) since the previous call under confirmation; a run without turns confirmed
  nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

import msgspec

from .._spec import Checks, Policy, RecordExpectation, _equal
from .._store import (
    CallFailed,
    CallStarted,
    CallSucceeded,
    Event,
    RecordCreated,
    RecordDeleted,
    RecordUpdated,
)
from .._text import format_value
from ._diff import StateDiff, diff_tables

if TYPE_CHECKING:
    from .._calls import CallResult

__all__ = ["Grade", "Violation", "grade"]

Tables = dict[str, dict[str, dict[str, Any]]]
Record = tuple[str, str]  # (table, id)

#: a user's turn that confirms: yes, ok, sure, go ahead, confirm(ed), please do, do it, proceed
_CONFIRMS = re.compile(
    r"\b(yes|yeah|yep|ok|okay|sure|go ahead|confirm|confirmed|please do|do it|proceed)\b", re.I
)
_DENIES = re.compile(r"\b(no|not|don't|do not|cancel that|stop|wait)\b", re.I)


class Violation(msgspec.Struct, frozen=True):
    """One broken rule: which, in words, the calls (1-based) that broke it, and the events
    (their `seq` in the log) at which it broke (see `_breaking_events`)."""

    rule: str  # "never", "expect_state", "nothing_else_changes", ...
    message: str
    calls: tuple[int, ...] = ()
    call_ids: tuple[str, ...] = ()
    events: tuple[int, ...] = ()

    def __str__(self) -> str:
        return self.message


class Grade(msgspec.Struct, frozen=True):
    """What `grade` found: the violations, each milestone's hit, and the score in [0, 1]."""

    violations: tuple[Violation, ...] = ()
    milestones: dict[str, bool] = {}
    weights: dict[str, float] = {}

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def score(self) -> float | None:
        """Weight of the milestones hit over the total weight; None without milestones."""
        total = sum(self.weights.values())
        if not total:
            return None
        return sum(w for name, w in self.weights.items() if self.milestones.get(name)) / total

    @property
    def reward(self) -> float:
        """The run as a reward (docs/ENVIRONMENTS.md): the milestone score, 0 when an
        expectation or a policy broke; without milestones 1, or 0 when something broke."""
        if self.violations:
            return 0.0
        score = self.score
        return 1.0 if score is None else float(score)

    def message(self) -> str:
        n = len(self.violations)
        lines = [f"Expected the run to keep its checks. Instead, {n} violation{'s' * (n != 1)}:"]
        lines += ["  " + v.message for v in self.violations]
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


def grade(
    checks: Checks | Policy,
    calls: Sequence[CallResult],
    events: Iterable[Event],
    *,
    turns: Sequence[tuple[int, str]] | None = None,
) -> Grade:
    """Grade the run whose calls (in start order) and log are given."""
    if isinstance(checks, Policy):
        checks = Checks(policy=checks)
    events = list(events)
    writers = {
        e.call_id for e in events
        if isinstance(e, RecordCreated | RecordUpdated | RecordDeleted) and e.call_id is not None
    }  # fmt: skip
    found: list[Violation] = []
    found += _policy(checks.policy, list(calls), writers, turns)
    records: dict[int, list[Record]] = {}  # id(violation) -> the records it is about
    start = end = None
    if (
        checks.expect_state
        or checks.nothing_else_changes
        or any(m.state for m in checks.milestones)
    ):
        start, end = _fold(events)
        found += _expectations(checks, start, end, records)
    if found:
        found = _breaking_events(found, events, records)
    hits: dict[str, bool] = {}
    weights: dict[str, float] = {}
    for m in checks.milestones:
        weights[m.name] = m.weight
        if m.call is not None:
            hits[m.name] = any(c.ok and m.call.matches(c.tool, c.args) for c in calls)
        elif m.state is not None and start is not None and end is not None:
            hits[m.name] = _expectation_holds(m.state, start, end) is None
    return Grade(tuple(found), hits, weights)


def _breaking_events(
    found: list[Violation], events: list[Event], records: Mapping[int, Sequence[Record]]
) -> list[Violation]:
    """Each violation with the events at which it broke: for a rule over calls, the start of
    each call that broke it (`at_most_once`: the effect of each call after the first, its
    first record write or else its answer; `no_retry_after`: the retry's start); for a rule
    over the end state, the last write to each record it is about (`records`, by the
    violation's id)."""
    started: dict[str, int] = {}
    effect: dict[str, int] = {}
    last_write: dict[tuple[str, str], int] = {}
    for e in events:
        if isinstance(e, CallStarted):
            started.setdefault(e.call_id, e.seq)
        elif isinstance(e, RecordCreated | RecordUpdated | RecordDeleted):
            last_write[(e.table, e.id)] = e.seq
            if e.call_id is not None:
                effect.setdefault(e.call_id, e.seq)
        elif isinstance(e, CallSucceeded | CallFailed):
            effect.setdefault(e.call_id, e.seq)
    out = []
    for v in found:
        if v.rule == "at_most_once":
            seqs = [effect[c] for c in v.call_ids[1:] if c in effect]
        elif v.rule == "no_retry_after":
            seqs = [started[c] for c in v.call_ids[-1:] if c in started]
        elif v.call_ids:
            seqs = [started[c] for c in v.call_ids if c in started]
        else:  # a rule over the end state: the writes that left its records so
            seqs = [last_write[r] for r in records.get(id(v), ()) if r in last_write]
        out.append(msgspec.structs.replace(v, events=tuple(sorted(set(seqs)))))
    return out


# ---------------------------------------------------------------------------------------------
# Policies
# ---------------------------------------------------------------------------------------------


def _call(no: int, c: CallResult) -> str:
    args = ", ".join(f"{k}={format_value(v, 40)}" for k, v in c.args.items())
    outcome = "" if c.ok else f" [{c.error_kind or 'failed'}]"
    return f"call {no} {c.tool}({args}){outcome}"


def _nos(nos: Sequence[int]) -> str:
    if len(nos) == 1:
        return f"call {nos[0]}"
    return "calls " + ", ".join(map(str, nos[:-1])) + f" and {nos[-1]}"


def _v(rule: str, text: str, nos: Sequence[int], calls: Sequence[CallResult]) -> Violation:
    return Violation(rule, text, tuple(nos), tuple(calls[n - 1].call_id for n in nos))


def _policy(
    policy: Policy,
    calls: list[CallResult],
    writers: set[str],
    turns: Sequence[tuple[int, str]] | None,
) -> list[Violation]:
    out: list[Violation] = []
    numbered = list(enumerate(calls, 1))
    for rule in policy.before:
        for no, c in numbered:
            if not fnmatchcase(c.tool, rule.tool):
                continue
            ok = any(
                e.ok and fnmatchcase(e.tool, rule.first) and _related(rule.match, c.args, e.args)
                for e in calls[: no - 1]
            )
            if not ok:
                on = (
                    " matching " + ", ".join(f"{a}={b}" for a, b in rule.match) if rule.match
                    else " sharing an argument value"
                )  # fmt: skip
                out.append(_v("before", f"before: {{{rule.tool}: {rule.first}}}: {_call(no, c)} "
                              f"had no successful {rule.first}{on} before it", [no], calls))  # fmt: skip
    for once in policy.at_most_once:
        groups: dict[str, list[int]] = {}
        for no, c in numbered:
            if fnmatchcase(c.tool, once.tool) and (c.ok or c.call_id in writers):
                key = ", ".join(f"{k}={format_value(c.args.get(k))}" for k in once.key)
                groups.setdefault(c.tool + (f" for {key}" if key else ""), []).append(no)
        for what, nos in groups.items():
            if len(nos) > 1:
                keys = f"{once.tool}: [{', '.join(once.key)}]" if once.key else once.tool
                out.append(_v("at_most_once", f"at_most_once: {{{keys}}}: {what} took effect "
                              f"{len(nos)} times ({_nos(nos)})", nos, calls))  # fmt: skip
    for pattern in policy.never:
        nos = [no for no, c in numbered if pattern.matches(c.tool, c.args)]
        if nos:
            shown = "; ".join(_call(no, calls[no - 1]) for no in nos)
            out.append(_v("never", f"never: {pattern}: {shown}", nos, calls))
    if policy.requires_confirmation:
        out += _confirmation(policy.requires_confirmation, numbered, calls, turns)
    for retry in policy.no_retry_after:
        for no, c in numbered:
            if c.ok or c.error_kind not in retry.kinds or not fnmatchcase(c.tool, retry.tool):
                continue
            again = next(
                (n for n, d in numbered[no:] if d.tool == c.tool and d.args == c.args), None
            )
            if again is not None:
                kinds = ", ".join(retry.kinds)
                head = f"[{kinds}]" if retry.tool == "*" else f"{{{retry.tool}: [{kinds}]}}"
                out.append(_v("no_retry_after", f"no_retry_after: {head}: {_call(again, calls[again - 1])} "
                              f"retried call {no}, which failed with {c.error_kind}", [no, again], calls))  # fmt: skip
    for tool, limit in policy.max_calls:
        nos = [no for no, c in numbered if fnmatchcase(c.tool, tool)]
        if len(nos) > limit:
            out.append(_v("max_calls", f"max_calls: {{{tool}: {limit}}}: {len(nos)} calls to "
                          f"{tool} ({_nos(nos[limit:])} over the limit)", nos[limit:], calls))  # fmt: skip
    return out


def _related(
    match: tuple[tuple[str, str], ...], later: Mapping[str, Any], earlier: Mapping[str, Any]
) -> bool:
    if match:
        return all(a in later and b in earlier and _equal(later[a], earlier[b]) for a, b in match)
    if not earlier:
        return True
    return any(
        _equal(x, y) for x in later.values() for y in earlier.values()
        if isinstance(x, str | int) and not isinstance(x, bool)
    )  # fmt: skip


def _confirmation(
    patterns: tuple[str, ...],
    numbered: list[tuple[int, CallResult]],
    calls: list[CallResult],
    turns: Sequence[tuple[int, str]] | None,
) -> list[Violation]:
    out = []
    confirms = sorted(
        n for n, text in turns or () if _CONFIRMS.search(text) and not _DENIES.search(text)
    )
    used = 0  # calls finished when the last confirmation was used
    for no, c in numbered:
        if not any(fnmatchcase(c.tool, p) for p in patterns):
            continue
        # a confirming turn after the previous guarded call and before this one
        if any(used <= n <= no - 1 for n in confirms):
            used = no
            continue
        why = (
            "no user turn" if not turns
            else "no confirming user turn since the last such call" if used
            else "no confirming user turn"
        )  # fmt: skip
        rule = f"requires_confirmation: [{', '.join(patterns)}]"
        out.append(
            _v("requires_confirmation", f"{rule}: {_call(no, c)} had {why} before it", [no], calls)
        )
    return out


# ---------------------------------------------------------------------------------------------
# Expectations on the end state
# ---------------------------------------------------------------------------------------------


def _fold(events: Iterable[Event]) -> tuple[Tables, Tables]:
    """The records before the first call, and at the end (records are replaced, never
    changed in place, so the first view stays as it was)."""
    tables: Tables = {}
    start: Tables | None = None
    for e in events:
        if isinstance(e, CallStarted) and start is None:
            start = {t: dict(recs) for t, recs in tables.items()}
        elif isinstance(e, RecordCreated):
            tables.setdefault(e.table, {})[e.id] = dict(e.fields)
        elif isinstance(e, RecordUpdated):
            recs = tables.setdefault(e.table, {})
            recs[e.id] = {**recs.get(e.id, {}), **e.changes}
        elif isinstance(e, RecordDeleted):
            tables.get(e.table, {}).pop(e.id, None)
    if start is None:
        start = {t: dict(recs) for t, recs in tables.items()}
    return start, tables


def _matching(e: RecordExpectation, records: Mapping[str, Mapping[str, Any]]) -> list[str]:
    return [rid for rid, r in records.items() if all(c.holds(r) for c in e.where)]


def _expectation_holds(e: RecordExpectation, start: Tables, end: Tables) -> str | None:
    """None when `e` holds, else why not."""
    return _expectation(e, start, end)[0]


def _expectation(e: RecordExpectation, start: Tables, end: Tables) -> tuple[str | None, list[str]]:
    """(None, []) when `e` holds, else why not and the ids of the records it is about."""
    before = start.get(e.table, {})
    after = end.get(e.table, {})
    ids = _matching(e, after)
    where = " and ".join(map(str, e.where)) or "any"
    head = f"expect_state: {e.table} where {where}"
    if e.count is not None and len(ids) != e.count:
        return f"{head}: expected exactly {e.count}, found {len(ids)}{_ids(ids)}", ids
    if e.count is None and not ids and not (e.unchanged and not _matching(e, before)):
        return f"{head}: expected at least one at the end, found none", []
    if e.unchanged:
        moved = [
            rid for rid in set(ids) | set(_matching(e, before)) if before.get(rid) != after.get(rid)
        ]
        if moved:
            changes = str(diff_tables({e.table: {r: before.get(r, {}) for r in moved if r in before}},
                                      {e.table: {r: after[r] for r in moved if r in after}}))  # fmt: skip
            return (
                f"{head}: expected unchanged, but {_plural(len(moved))} changed:\n    "
                + changes.replace("\n", "\n    ")
            ), moved
    if e.changed is not None:
        same = [rid for rid in ids if before.get(rid) == after[rid]]
        if same:
            return f"{head}: expected changed, but {', '.join(same)} ended as it started", same
        wrong = [
            f"{rid} has {k}={format_value(after[rid].get(k))}"
            for rid in ids for k, v in e.changed.items() if not _equal(after[rid].get(k), v)
        ]  # fmt: skip
        if wrong:
            return f"{head}: expected {format_value(e.changed)}, but " + "; ".join(wrong), ids
    return None, []


def _ids(ids: list[str]) -> str:
    return f" ({', '.join(ids[:10])}{', ...' if len(ids) > 10 else ''})" if ids else ""


def _plural(n: int) -> str:
    return f"{n} record{'s' * (n != 1)}"


def _expectations(
    checks: Checks, start: Tables, end: Tables, records: dict[int, list[Record]]
) -> list[Violation]:
    """The broken expectations; `records` gets, by each violation's id, its records."""
    out = []
    for e in checks.expect_state:
        why, ids = _expectation(e, start, end)
        if why is not None:
            out.append(Violation("expect_state", why))
            records[id(out[-1])] = [(e.table, rid) for rid in ids]
    if checks.nothing_else_changes:
        diff = collateral(checks.expect_state, start, end)
        if diff:
            text = str(diff).replace("\n", "\n    ")
            out.append(Violation(
                "nothing_else_changes",
                f"nothing_else_changes: {_plural(len(diff))} changed outside expect_state:\n    {text}",
            ))  # fmt: skip
            records[id(out[-1])] = [(d.table, d.id) for d in diff]
    return out


def collateral(expected: Sequence[RecordExpectation], start: Tables, end: Tables) -> StateDiff:
    """The changes from `start` to `end` that no expectation allows (one with a `count` or
    `changed` allows any change to the records it matches, before or after)."""
    diff = diff_tables(start, end)
    allowed: set[tuple[str, str]] = set()
    for e in expected:
        if e.allows_change:
            for side in (start, end):
                allowed.update((e.table, rid) for rid in _matching(e, side.get(e.table, {})))
    return StateDiff([d for d in diff if (d.table, d.id) not in allowed])
