"""Faults in the MCP protocol itself: what an MCP server does with the answer of a call the
plan gave one of the kinds whose effect is "protocol" (`_kinds.py`).

The kernel decides, as for every fault: the plan draws the kind from the seed, the call runs
as usual in the world (its writes stay), the `FaultInjected` event records the kind and its
options, and the virtual clock moves by what the kind says (`ignore_cancel`'s `timeout_s`).
What the server then does on the wire, the serve shell enacts from an `Enactment`, which is
data: which notifications to send before the answer, how long to hold it, and whether only
the client's `notifications/cancelled` ends the wait. Pure: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ._kinds import KINDS

__all__ = ["PROTOCOL_KINDS", "Enactment", "enactment"]

#: the fault kinds an MCP server enacts on the wire
PROTOCOL_KINDS = frozenset(k.name for k in KINDS if k.effect == "protocol")


class Enactment(msgspec.Struct, frozen=True):
    """What an MCP server does with the answer of a call that got a protocol fault, in order:
    send `progress` progress notifications (to a client that sent a progress token) and
    `list_changed` `notifications/tools/list_changed`; then hold the answer `hold_s` real
    seconds, a cancellation from the client ignored (`ignore_cancel`); then, if
    `until_cancelled`, send nothing more until the client cancels (after which MCP forbids an
    answer); else send the answer."""

    kind: str
    progress: int = 0
    #: the `total` the progress notifications announce (they stop at `progress` of it)
    total: int = 0
    list_changed: int = 0
    hold_s: float = 0.0
    until_cancelled: bool = False


def enactment(kind: str, detail: Mapping[str, Any]) -> Enactment | None:
    """The `Enactment` of a fault of `kind` whose `FaultInjected.detail` is `detail`; None for
    a kind an MCP server does not enact."""
    if kind not in PROTOCOL_KINDS:
        return None
    times = int(detail.get("times") or 0)
    if kind == "answer_after_cancel":
        return Enactment(kind, until_cancelled=True)
    if kind == "ignore_cancel":
        return Enactment(kind, hold_s=float(detail.get("timeout_s") or 0.0))
    if kind == "progress_stall":
        return Enactment(kind, progress=times, total=2 * times, until_cancelled=True)
    return Enactment(kind, list_changed=times)
