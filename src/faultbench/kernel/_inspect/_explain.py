"""A diff that explains: two runs aligned by their calls, the divergence said in words, then
the record-level difference of their end states.

An event-log diff (`diff_events`) marks every `ClockAdvanced` as different, because each run
draws its own latencies; around the one line that matters, most of the marked lines are
timing noise. Here the unit is the call, keyed by tool and arguments, aligned with difflib:
where the two runs called the same thing, only the outcome can differ; where one called more
(a retry), the extra calls and what they wrote are the story::

    call 3 issue_refund: run0 succeeded, run12 timeout after commit -> run12 retried (call 4) -> refund 2 created
    end state (- run0, + run12):
      + refund 2 {order_id: "1", amount: 25.0, ...}

Timing is left out: clock steps are not calls, and a record that differs only in its times
(a `created_at` a latency later) is not a difference; `diff_events` still gives the whole
event view.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import msgspec

from .._store import Event, RecordCreated, RecordDeleted, RecordUpdated
from .._text import format_value
from ._diff import RecordChanged, RecordDiff, StateDiff, diff_tables
from ._grade import _fold
from ._trace import Trace

if TYPE_CHECKING:
    from .._calls import CallResult

__all__ = ["RunExplanation", "explain_runs"]

_key = msgspec.json.Encoder(order="deterministic")


class RunExplanation:
    """How run b differs from run a: `sentences` (one per divergence, in b's call order),
    `state` (a's end state -> b's), and `distance` (calls that differ plus records that
    differ: how to pick the closest of several runs). Falsy when they do not differ."""

    __slots__ = ("a", "b", "distance", "same_calls", "sentences", "state")

    def __init__(self, a: str, b: str, sentences: list[str], state: StateDiff, distance: int):
        self.a = a
        self.b = b
        self.sentences = sentences
        self.state = state
        self.distance = distance
        self.same_calls = not sentences

    def __bool__(self) -> bool:
        return bool(self.sentences or self.state)

    def lines(self, *, max_records: int = 20) -> list[str]:
        if not self:
            return [f"the same calls, outcomes and end state as {self.a}"]
        out = (
            list(self.sentences) if self.sentences else [f"the same calls and outcomes as {self.a}"]
        )
        if self.state:
            records = str(self.state).splitlines()
            out.append(f"end state (- {self.a}, + {self.b}):")
            out += ["  " + r for r in records[:max_records]]
            if len(records) > max_records:
                out.append(f"  ... {len(records) - max_records} more records")
        else:
            out.append(f"end state: the same as {self.a}'s")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return f"<RunExplanation {self.b} against {self.a}: {len(self.sentences)} divergences>"

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "sentences": list(self.sentences),
            "state": self.state.to_dict(),
            "distance": self.distance,
        }


def explain_runs(
    a: Iterable[Event], b: Iterable[Event], *, a_name: str = "a", b_name: str = "b"
) -> RunExplanation:
    """Explain how the run logged in `b` differs from the run logged in `a`."""
    a_events, b_events = list(a), list(b)
    calls_a, calls_b = Trace(a_events).calls, Trace(b_events).calls
    effects_a, effects_b = _effects(a_events), _effects(b_events)
    keys_a = [_call_key(c) for c in calls_a]
    keys_b = [_call_key(c) for c in calls_b]
    sentences: list[list[str]] = []
    current: list[str] | None = None
    differing = 0
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                ca, cb = calls_a[i], calls_b[j]
                oa = _outcome(ca, effects_a)
                ob = _outcome(cb, effects_b)
                if oa == ob:
                    current = None
                    continue
                differing += 1
                where = f"call {j + 1}" + (f" ({a_name}'s call {i + 1})" if i != j else "")
                current = [f"{where} {cb.tool}: {a_name} {oa}, {b_name} {ob}"]
                sentences.append(current)
            continue
        for i in range(i1, i2):  # only in a
            differing += 1
            phrase = f"{b_name} did not call {_show(calls_a[i])} ({a_name}'s call {i + 1})"
            current = _add(sentences, current, phrase)
        seen = set(keys_b[:j1])
        for j in range(j1, j2):  # only in b
            differing += 1
            cb = calls_b[j]
            verb = "retried" if keys_b[j] in seen else f"called {_show(cb)}"
            outcome = "" if cb.ok else f": {_outcome(cb, effects_b)}"
            current = _add(sentences, current, f"{b_name} {verb} (call {j + 1}{outcome})")
            current.extend(effects_b.get(cb.call_id, []))
            seen.add(keys_b[j])
    _, end_a = _fold(a_events)
    _, end_b = _fold(b_events)
    state = StateDiff([d for d in diff_tables(end_a, end_b) if not _timing_only(d)])
    return RunExplanation(
        a_name, b_name, [" -> ".join(s) for s in sentences], state, differing + len(state)
    )


_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")


def _is_time(value: Any) -> bool:
    return isinstance(value, datetime) or (isinstance(value, str) and bool(_TIME.match(value)))


def _timing_only(d: RecordDiff) -> bool:
    """A record whose only changes are times: each run draws its own latencies."""
    return isinstance(d, RecordChanged) and all(
        _is_time(c.old) and _is_time(c.new) for c in d.changes.values()
    )


def _add(sentences: list[list[str]], current: list[str] | None, phrase: str) -> list[str]:
    if current is None:
        current = []
        sentences.append(current)
    current.append(phrase)
    return current


def _call_key(c: CallResult) -> bytes:
    return _key.encode((c.tool, c.args))


def _show(c: CallResult) -> str:
    args = ", ".join(f"{k}={format_value(v, 30)}" for k, v in c.args.items())
    return f"{c.tool}({args})"


def _outcome(c: CallResult, effects: dict[str, list[str]]) -> str:
    if c.ok:
        return "succeeded" + (f" [{c.fault}]" if c.fault else "")
    kind = c.error_kind or "failed"
    return kind + (" after commit" if effects.get(c.call_id) else "")


def _effects(events: Sequence[Event]) -> dict[str, list[str]]:
    """What each call wrote, in words: `refund 2 created`, `order 1 updated (status)`."""
    out: dict[str, list[str]] = {}
    for e in events:
        if isinstance(e, RecordCreated) and e.call_id:
            out.setdefault(e.call_id, []).append(f"{e.table} {e.id} created")
        elif isinstance(e, RecordUpdated) and e.call_id:
            fields = ", ".join(e.changes)
            out.setdefault(e.call_id, []).append(f"{e.table} {e.id} updated ({fields})")
        elif isinstance(e, RecordDeleted) and e.call_id:
            out.setdefault(e.call_id, []).append(f"{e.table} {e.id} deleted")
    return out
