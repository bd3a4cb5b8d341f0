"""Rate-limit windows: each tool's admitted calls, as the state keeps them.

A `rate_limit: {calls: N, per_seconds: S}` rule refuses a call while N calls to its tool
started less than S seconds ago and were admitted (valid, and not refused with a 429). The
question a call asks is therefore never "which calls are in the window" but only "is the N-th
newest admitted call still inside it, and if so, since when": the window's length is counted,
not walked.

The state keeps a tool's admitted calls as a persistent list, newest first, so a snapshot or a
fork shares it (O(1)) and a replay rebuilds it from the log's `CallStarted` and
`FaultInjected` events alone. Each node knows its depth (the number of older admitted calls)
and carries a jump pointer (Myers, "An applicative random-access stack", 1983: the skew-binary
scheme), so the node `d` calls older is reached in O(min(d, log n)) steps, and pushing a node
costs O(1). The costs per call are then:

- admitting a call (`pushed`, which the reducer's `_call_started` writes out, since it runs
  for every admitted call of every tool): O(1), about 1,000 instructions more than the plain
  linked list this replaced;
- refusing the newest call (`without`, what every 429 is: it is logged right after its own
  `CallStarted`): O(1); refusing an older one (a hand-written log) rebuilds the newer nodes
  only;
- deciding (`wait`): O(1) while fewer than N calls were ever admitted (the N-th newest does
  not exist), else one jump to the N-th newest, O(min(N, log n)), and one time comparison:
  start times never decrease along the list (the clock never goes back), so "the N-th newest
  is inside the window" is "at least N are".

None of this is hashed: it is derived from the log, like the table indexes.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

#: One admitted call to a tool and, through `older`, every one before it: a tuple
#: (at, call_id, older, depth, jump, span), built once per admitted call by the reducer, so as
#: cheap to build as Python allows (a class would cost a call ~2,000 instructions more):
#: - at: when the call started (its `CallStarted.at`); call_id: its id;
#: - older: the admitted call before this one, or None;
#: - depth: the number of admitted calls before this one (the oldest has depth 0);
#: - jump: an older node (the skew-binary jump), or None for the oldest;
#: - span: how far `jump` goes, depth - jump.depth: 1, 3, 7, 15... (2**i - 1); 0 for the oldest.
Admitted = tuple[datetime, str, "Admitted | None", int, "Admitted | None", int]


class Window:
    """A tool's admitted calls as the fault plan reads them (`FaultPlan.decide(recent=)`):
    a view of the state's list, so the plan can tell it from a plain list of start times."""

    __slots__ = ("head",)

    def __init__(self, head: Admitted | None) -> None:
        self.head = head


def pushed(head: Admitted | None, at: datetime, call_id: str) -> Admitted:
    """`head` with one more admitted call, the newest."""
    if head is None:
        return (at, call_id, None, 0, None, 0)
    jump = head[4]
    # Two jumps of equal length merge into one twice as long (plus one): skew-binary numbers.
    if jump is not None and head[5] == jump[5]:
        return (at, call_id, head, head[3] + 1, jump[4], 2 * head[5] + 1)
    return (at, call_id, head, head[3] + 1, head, 1)


def without(head: Admitted | None, call_id: str) -> Admitted | None:
    """`head` without the admitted call `call_id` (a refused one), or `head` itself if that
    call is not in it. O(1) for the newest call; an older one costs the newer nodes, which
    are pushed again over the nodes before it."""
    if head is None:
        return None
    if head[1] == call_id:
        return head[2]
    newer = []
    node: Admitted | None = head
    while node is not None and node[1] != call_id:
        newer.append(node)
        node = node[2]
    if node is None:
        return head
    rest = node[2]
    for n in reversed(newer):
        rest = pushed(rest, n[0], n[1])
    return rest


def since(head: Admitted | None, horizon: datetime) -> Admitted | None:
    """`head` with only the calls admitted after `horizon` (start times never decrease along
    the list): `head` itself when its oldest call is, else the newer calls pushed again, so
    O(calls kept). What a long session's window keeps (`Book.rate_reach_s`)."""
    newer = []
    node = head
    while node is not None and node[0] > horizon:
        newer.append(node)
        node = node[2]
    if node is None:
        return head
    rest: Admitted | None = None
    for n in reversed(newer):
        rest = pushed(rest, n[0], n[1])
    return rest


def older_by(node: Admitted, distance: int) -> Admitted:
    """The admitted call `distance` calls older than `node` (0: `node`)."""
    target = node[3] - distance
    at: Admitted | None = node
    while at is not None and at[3] != target:
        jump = at[4]
        at = jump if jump is not None and jump[3] >= target else at[2]
    if at is None:
        raise ValueError(f"Expected a distance of at most {node[3]}. Instead, received: {distance}")
    return at


def wait(head: Admitted | None, calls: int, per_seconds: float, now: datetime) -> float | None:
    """Seconds until a call at `now` would be admitted, or None if it is admitted now: the
    sliding window of `rate_limit: {calls, per_seconds}` over the admitted calls `head`.

    A call counts while it started less than `per_seconds` ago. The wait is rounded up to
    whole seconds (HTTP Retry-After is an integer), so a caller that waits it out is always
    admitted. The same answers as counting every start time in the window (the property test
    in tests/kernel/store/test_order.py compares the two).
    """
    cutoff = now - timedelta(seconds=per_seconds)
    if calls <= 0:
        return float(max(1, math.ceil(per_seconds)))
    if head is None or head[3] + 1 < calls:
        return None  # fewer admitted calls than the limit, ever
    nth = older_by(head, calls - 1)  # admitted once this one leaves the window
    age = (now - nth[0]).total_seconds()
    if nth[0] <= cutoff or age >= per_seconds:
        return None
    return float(max(1, math.ceil(per_seconds - age - 1e-9)))
