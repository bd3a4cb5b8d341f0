"""The faults a run received, read back from its event log as `script:` entries.

Every fault is a decision keyed by (seed, run, operation, k), and the log says which were
taken: a `FaultInjected` after the `CallStarted` that numbers the call. Pinned as `script:`
entries, with no other rule in force, they inject exactly those faults again: what shrinking
(`faultbench.testing`) and anyone reproducing one failure by hand need.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .._faults import MODEL_KEY, Enactment, enactment, model_kind
from .._faults import kind as fault_kind
from .._spec import WorldSpec
from .._store import CallStarted, FaultInjected, ModelCalled

__all__ = ["FaultPin", "faults_received", "pin_block", "protocol_fault"]

#: the pseudo-tool of webhook deliveries' faults (`FaultInjected.tool`, `_world/_webhooks.py`)
_WEBHOOKS = "webhooks"


@dataclass(frozen=True, order=True)
class FaultPin:
    """One fault a run received, as the script entry that reproduces it."""

    tool: str
    k: int
    kind: str
    options: tuple[tuple[str, Any], ...] = ()

    def __str__(self) -> str:
        return f"{self.tool}#{self.k} {self.kind}"

    def entry(self) -> str | dict[str, Any]:
        """The `script:` value: the kind alone, or the kind with its options."""
        return {"kind": self.kind, **dict(self.options)} if self.options else self.kind


def faults_received(events: Iterable[Any]) -> list[FaultPin]:
    """The faults a run's event log shows, each pinned to its call (tool, k), in log order.

    A `rate_limit` refusal (which no script can name) is pinned as the `http_429` the agent
    read, with the same retry-after; `commit` is kept only for the kinds that accept it.
    """
    k_of: dict[str, int] = {}
    pins: list[FaultPin] = []
    for ev in events:
        if isinstance(ev, CallStarted) and ev.k is not None:
            k_of[ev.call_id] = ev.k
        elif isinstance(ev, ModelCalled) and ev.kind is not None:
            pins.append(_model_pin(ev))
        elif isinstance(ev, FaultInjected) and (ev.call_id in k_of or ev.tool == _WEBHOOKS):
            # a webhook delivery's fault names its k in the call id (`_world/_webhooks.py`)
            tail = ev.call_id.rpartition("#")[2]
            if ev.call_id in k_of:
                k = k_of[ev.call_id]
            elif tail.isascii() and tail.isdigit():
                k = int(tail)
            else:
                continue
            kind = "http_429" if ev.kind == "rate_limit" else ev.kind
            try:
                spec = fault_kind(kind)
            except (KeyError, ValueError):
                continue  # a kind this version cannot script
            detail = ev.detail or {}
            # Options at their default are left out: `timeout`, not `{kind: timeout, ...}`.
            options = {
                o.name: detail[o.name]
                for o in spec.options
                if detail.get(o.name) is not None and detail[o.name] != o.default
            }
            if (
                spec.commit_option
                and "commit" in detail
                and detail["commit"] != spec.default_commit
            ):
                options["commit"] = detail["commit"]
            pins.append(FaultPin(ev.tool, k, kind, tuple(sorted(options.items()))))
    return pins


def _model_pin(ev: ModelCalled) -> FaultPin:
    """A model fault as the `model:` script entry that reproduces it (`how` is drawn again
    from the same key, so it needs no option)."""
    assert ev.kind is not None
    detail = ev.detail or {}
    options = {
        o.name: detail[o.name]
        for o in model_kind(ev.kind).options
        if detail.get(o.name) is not None and detail[o.name] != o.default
    }
    return FaultPin(MODEL_KEY, ev.k, ev.kind, tuple(sorted(options.items())))


def pin_block(pins: Iterable[FaultPin], spec: WorldSpec) -> dict[str, Any]:
    """The `faults:` block that injects exactly `pins` and nothing else."""
    block: dict[str, Any] = {}
    for pin in sorted(pins):
        op = spec.operations.get(pin.tool) if pin.tool != MODEL_KEY else None
        key = op.qualname if op is not None else pin.tool
        if pin.tool == _WEBHOOKS and op is None and spec.webhooks is not None:
            key = f"{spec.webhooks.service}.{_WEBHOOKS}"
        block.setdefault(key, {"script": {}})["script"][pin.k] = pin.entry()
    return block


def protocol_fault(events: Sequence[Any], call_id: str) -> Enactment | None:
    """What an MCP server must do with the answer of call `call_id` (`_faults/_protocol.py`),
    read from the `FaultInjected` of that call in `events` (a world's log, searched from its
    end back to the call's start); None when the call got no protocol fault."""
    first = getattr(events, "first", 0)
    for i in range(len(events) - 1, first - 1, -1):
        ev = events[i]
        if isinstance(ev, FaultInjected) and ev.call_id == call_id:
            return enactment(ev.kind, ev.detail)
        if isinstance(ev, CallStarted) and ev.call_id == call_id:
            return None
    return None
