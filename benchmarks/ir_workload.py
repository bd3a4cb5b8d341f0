"""A fixed kernel workload to count instructions of (issue 17: repeatable on a loaded machine,
where wall-clock medians move by 10-30%). Run it under callgrind twice, with N and with 0 or
2N, and divide the difference: instructions per call or per event, comparable between commits.

    valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        .venv/bin/python benchmarks/ir_workload.py WHAT N [go]

WHAT: `call` (N x `World.call("get_order")`, faults off), `agent` (calls that create, update,
get and fail until the log holds N events), `callsreplay` (`agent`, then with `go` its log
replayed), `faults` (N x bench_faults.py's fork suite: 20 forked runs of 5 calls each, latency
and 10% timeouts on, `world.trace` read per run), `ratelimit` (N x `World.call("get_order")`
under `rate_limit: {calls: 1000000, per_seconds: 60}` without latency, so every call is
admitted and the window holds all of them: `ratelimit 20000` minus `ratelimit 19000` is the
cost of a call after 19,000 in the window). Run from the root of the tree to measure (it reads tests/worlds/kernel_shop.yaml),
with that tree's interpreter; it imports `load_spec` from where either layout keeps it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from faultbench.kernel import World, replay

try:
    from faultbench.kernel.lowlevel import load_spec
except ImportError:  # before issue 17's layout (6a89e9f)
    from faultbench.kernel import load_spec  # type: ignore[attr-defined,no-redef]

SPEC = load_spec(Path("tests/worlds/kernel_shop.yaml"))


def calls(n: int) -> None:
    w = World.from_spec(SPEC, faults=False)
    args = {"id": "2"}
    for _ in range(n):
        w.call("get_order", args)


def agent(n: int) -> World:
    w = World.from_spec(SPEC, faults=False)
    i = 0
    while len(w.events) < n:
        i += 1
        created = w.call("create_order", {"customer": "1", "status": "placed", "total": 1})
        w.call("update_order", {"id": created.value["id"], "status": "shipped"})
        w.call("get_order", {"id": str(i % 50 + 1)})
        w.call("get_order", {"id": 7})  # invalid: logged, no record event
    return w


def hammered(n: int) -> None:
    w = World.from_spec(SPEC)
    w.set_faults({"shop.get_order": {"rate_limit": {"calls": 1_000_000, "per_seconds": 60}}})
    args = {"id": "2"}
    for _ in range(n):
        w.call("get_order", args)


def main() -> None:
    what, n, go = sys.argv[1], int(sys.argv[2]), sys.argv[3:] == ["go"]
    if what == "call":
        calls(n)
    elif what == "agent":
        agent(n)
    elif what == "faults":
        sys.path.insert(0, str(Path(__file__).parent))
        import bench_faults  # a sibling script, for its world and suite

        spec = load_spec("bench.yaml", text=bench_faults.WORLD)
        bench_faults.suite(spec, "fork", True)  # warm: the plan's keys, the indexes
        for _ in range(n):
            bench_faults.suite(spec, "fork", True)
    elif what == "ratelimit":
        hammered(n)
    elif what == "callsreplay":
        log = list(agent(n).events)
        if go:
            replay(SPEC, log)
    else:
        raise SystemExit(
            f"Expected call, agent, faults, ratelimit or callsreplay. Instead, received: {what!r}"
        )


if __name__ == "__main__":
    main()
