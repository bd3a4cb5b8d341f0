"""Scaling benchmark: what one call costs as the world and the log grow (issue 13).

Measured per world size n (records in `order`, n/10 customers), in one fresh process per
size and side, wall clock, each figure the median of `--reps` batches:

- get          `World.call("get_order", {"id": ...})`, no faults
- list none    `list_orders` with a `customer` filter matching nothing
- list few     `list_orders` with a `customer` filter matching about 10 rows
- pick+write   `orders.update(...)` then `orders.pick(customer=...)`: a read right after a
               write (the state just changed, so nothing cached from the last state helps)
- pick after write  the `pick` of pick+write alone (the write untimed): the median call
- scan pick    `orders.pick(status="refunded", total=...)` after a write: an unindexed
               `where` that stops at its first match
- KB/record    tracemalloc's traced memory of the world (records, indexes, log) / n

per list size n (records in `charge`; `--lists`), list operations with operators and pages
(issue 21), faults off, warm, each the median of `--reps` batches:

- get          `get_charge(id)`: the baseline, a call that reads one record
- range        `range_charges(amount_gte=x, amount_lt=x+50, limit=10)`: a range filter on the
               sort field, about 0.05% of the table matching, a page of 10
- page         `page_charges(limit=10, starting_after=<next_cursor>)`: the calls of one cursor
               walk through the table in id order, each from where the last one stopped
- filtered page  `page_charges(status="failed", limit=10, starting_after=...)`: the same
               through an equality bucket (a third of the records)
- deep offset  `offset_charges(status="failed", offset=x, limit=10)`, x anywhere in the
               bucket's first half: an offset page at any depth, with its `total`
- range offset `offset_range(amount_gte=x, amount_lt=x+40000, offset=y, limit=10)`: the same
               under a range filter on the sort field, y anywhere in the range's first half
- create       `create_charge(status=..., amount=x)`: a write that adds the record to the id
               order, a status bucket and the sorted amount index (the table grows by the
               calls measured: a few thousand records)

and one page walk of every record of a 10k-record table (`--walk`): its calls at limit 10
(1000 pages) and at limit 100 (100 pages), total and per page, and the per-page cost of the
walk's last 100 pages over its first 100 (about 1 when a page costs O(page), whatever its
depth; about 10 at limit 10 if each page re-read the records before it);

and per log length m (events, written by `get_order` calls on a 1k-record world):

- journal      one call + the `faultbench serve --events` journal writing the new events
- trace        one call + `world.trace.count()`
- rate 429     one call to a tool under `rate_limit: {calls: 5, per_seconds: 60}` with no
               latency, so every call after the 5th in a window is refused, after m calls
- events[i]    `world.events[i]` at a random i, after 10k nested forks (m = 10k forks)
- faulted      a call under `latency_ms: [50, 200]` + `errors: {timeout: 0.1}` / a call with
               faults off (a ratio; the fault plan's per-call setup)

`--ab OTHER_SRC` measures this checkout and another one's `src/` (e.g. `git archive main
src | tar -x -C /tmp/before`) alternately, A B A B..., one process per side and size, and
prints medians, ranges and after/before ratios. `--plot FILE.png` draws the per-size
figures (needs matplotlib: `uv sync --group bench`).

Run: `uv run python benchmarks/bench_scale.py [--sizes 1000,10000,100000] [--reps 3]
[--lists 10000,100000,1000000] [--walk 10000] [--only lists,walk]
[--ab /tmp/before/src] [--clock cpu] [--plot docs/scale.png] [--json out.json]`
(`--clock cpu`: the per-call figures in the process's CPU time instead of wall time)
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
SRC = HERE.parents[1] / "src"

WORLD = """
name: scale
seed: 1
clock: {{ start: 2025-01-01T00:00:00Z }}
services:
  shop:
    records:
      customer: {{ name: str }}
      order:
        customer: ref[customer]
        status: enum[placed, shipped, refunded]
        total: float
    seed:
      customer: {customers}
      order: {orders}
    operations:
      get_order: {{ kind: get, record: order }}
      list_orders: {{ kind: list, record: order, filter: [status, customer] }}
      update_order: {{ kind: update, record: order }}
      limited: {{ kind: get, record: order }}
faults:
  shop.limited: {{ rate_limit: {{ calls: 5, per_seconds: 60 }} }}
"""

FAULTY = """
  shop.get_order:
    latency_ms: [50, 200]
    errors: {{ timeout: 0.1 }}
"""


def _world(n: int, tmp: str, faulty: bool = False):
    from faultbench import load_world

    path = Path(tmp) / f"scale_{n}_{int(faulty)}.yaml"
    text = WORLD.format(customers=max(n // 10, 1), orders=n)
    if faulty:
        text += FAULTY.format()
    path.write_text(text)
    return load_world(path)


#: `--clock cpu`: per-call figures in CPU seconds of the process (steadier than wall time on
#: a machine other work keeps busy; the default is wall time)
CLOCK = time.process_time if os.environ.get("BENCH_SCALE_CLOCK") == "cpu" else time.perf_counter


def _per_call(fn, n: int, reps: int) -> float:
    """Median seconds per call of `fn(i)` over `reps` batches of `n` calls."""
    times = []
    for r in range(reps):
        t = CLOCK()
        for i in range(n):
            fn(r * n + i)
        times.append((CLOCK() - t) / n)
    return statistics.median(times)


def _calls_for(seconds_each: float, budget: float = 0.3) -> int:
    return max(1, min(2000, int(budget / max(seconds_each, 1e-7))))


def _probe(fn) -> float:
    t = time.perf_counter()
    fn(0)
    return time.perf_counter() - t


def measure_size(n: int, reps: int) -> dict[str, float]:
    import tracemalloc

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        world = _world(n, tmp)
        out["kb_per_record"] = (tracemalloc.get_traced_memory()[0] - base) / n / 1024
        tracemalloc.stop()
        customers = max(n // 10, 1)
        rng = random.Random(0)
        ids = [str(rng.randint(1, n)) for _ in range(4096)]
        custs = [str(rng.randint(1, customers)) for _ in range(4096)]
        orders = world.orders

        def get(i):
            world.call("get_order", {"id": ids[i % 4096]})

        def list_none(i):
            world.call("list_orders", {"customer": "nobody"})

        def list_few(i):
            world.call("list_orders", {"customer": custs[i % 4096]})

        def write(i):
            orders.update(ids[i % 4096], total=float(i))

        def pick_write(i):
            orders.update(ids[i % 4096], total=float(i))
            orders.pick(customer=custs[i % 4096])

        def pick_only(i):
            # the pick alone, timed right after an untimed write
            orders.update(ids[i % 4096], total=float(i))
            t = time.perf_counter()
            orders.pick(customer=custs[i % 4096])
            picked.append(time.perf_counter() - t)

        def scan_pick(i):
            orders.update(ids[i % 4096], total=float(i))
            orders.pick(status="refunded")

        for name, fn in [
            ("get", get),
            ("list_none", list_none),
            ("list_few", list_few),
            ("write", write),
            ("pick_write", pick_write),
            ("scan_pick", scan_pick),
        ]:
            fn(0)  # warm
            calls = _calls_for(_probe(fn))
            out[name] = _per_call(fn, calls, reps)
        picked: list[float] = []
        for i in range(_calls_for(out["pick_write"])):
            pick_only(i)
        out["pick_after_write"] = statistics.median(picked)
    return out


LISTS = """
name: lists
seed: 1
clock: {{ start: 2025-01-01T00:00:00Z }}
services:
  pay:
    records:
      charge:
        status: enum[pending, succeeded, failed]
        amount: int
    seed:
      charge: {n}
    operations:
      range_charges:
        kind: list
        record: charge
        filter: {{ amount: [gte, lt] }}
        sort: [amount]
        page: {{ style: cursor, size: 10 }}
      page_charges: {{ kind: list, record: charge, filter: [status], page: {{ style: cursor }} }}
      offset_charges: {{ kind: list, record: charge, filter: [status], page: {{ style: offset }} }}
      offset_range: {{ kind: list, record: charge, filter: {{ amount: [gte, lt] }},
                      sort: [amount], page: {{ style: offset, size: 10 }} }}
      get_charge: {{ kind: get, record: charge }}
      create_charge: {{ kind: create, record: charge }}
"""


def _lists_world(n: int, tmp: str):
    from faultbench import load_world

    path = Path(tmp) / f"lists_{n}.yaml"
    path.write_text(LISTS.format(n=n))
    return load_world(path, faults=False)


class _Walker:
    """Successive pages of one cursor walk, starting over at the end."""

    def __init__(self, world, tool: str, **args):
        self.world, self.tool, self.args, self.cursor = world, tool, args, None

    def __call__(self, i: int) -> None:
        args = dict(self.args)
        if self.cursor is not None:
            args["starting_after"] = self.cursor
        page = self.world.call(self.tool, args).value
        self.cursor = page["next_cursor"]


def measure_lists(n: int, reps: int) -> dict[str, float]:
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        world = _lists_world(n, tmp)
        rng = random.Random(0)
        lows = [rng.randrange(100, 99_950) for _ in range(4096)]

        def ranged(i):
            x = lows[i % 4096]
            world.call("range_charges", {"amount_gte": x, "amount_lt": x + 50, "limit": 10})

        ids = [str(rng.randint(1, n)) for _ in range(4096)]

        def get(i):
            world.call("get_charge", {"id": ids[i % 4096]})

        deep = [rng.randrange(n // 6) for _ in range(4096)]

        def deep_offset(i):
            world.call("offset_charges", {"status": "failed", "offset": deep[i % 4096]})

        def range_offset(i):
            x = lows[i % 4096] % 50_000
            args = {"amount_gte": x, "amount_lt": x + 40_000, "offset": deep[i % 4096]}
            world.call("offset_range", args)

        statuses = ("pending", "succeeded", "failed")

        def create(i):
            args = {"status": statuses[i % 3], "amount": lows[i % 4096]}
            assert world.call("create_charge", args).ok

        for name, fn in [
            ("get", get),
            ("create", create),
            ("range", ranged),
            ("page", _Walker(world, "page_charges", limit=10)),
            ("filtered_page", _Walker(world, "page_charges", status="failed", limit=10)),
            ("deep_offset", deep_offset),
            ("range_offset", range_offset),
        ]:
            fn(0)  # warm
            out[name] = _per_call(fn, _calls_for(_probe(fn)), reps)
    return out


def measure_walk(n: int, reps: int) -> dict[str, float]:
    """Walk every record of an n-record table, page by page."""
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        world = _lists_world(n, tmp)
        for limit in (10, 100):
            totals, ratios = [], []
            for _ in range(reps):
                per_page, cursor, seen = [], None, 0
                t0 = time.perf_counter()
                while True:
                    args: dict = {"limit": limit}
                    if cursor is not None:
                        args["starting_after"] = cursor
                    t = time.perf_counter()
                    page = world.call("page_charges", args).value
                    per_page.append(time.perf_counter() - t)
                    seen += len(page["data"])
                    if not page["has_more"]:
                        break
                    cursor = page["next_cursor"]
                totals.append(time.perf_counter() - t0)
                assert seen == n, (seen, n)
                k = max(1, len(per_page) // 10)
                ratios.append(statistics.median(per_page[-k:]) / statistics.median(per_page[:k]))
            pages = -(-n // limit)
            out[f"walk_{limit}"] = statistics.median(totals)
            out[f"per_page_{limit}"] = statistics.median(totals) / pages
            out[f"last_first_{limit}"] = statistics.median(ratios)
    return out


def measure_log(m: int, reps: int) -> dict[str, float]:
    """Costs after a log of about m events (m/4 get_order calls)."""
    from faultbench.serve._journal import Journal

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        world = _world(1000, tmp)
        calls = m // 4
        for i in range(calls):
            world.call("get_order", {"id": str(i % 1000 + 1)})
        out["events"] = len(world.events)
        journal = Journal(Path(tmp) / "events.jsonl", world)

        def journaled(i):
            world.call("get_order", {"id": "1"})
            journal.sync()

        def traced(i):
            world.call("get_order", {"id": "1"})
            world.trace.count()

        for name, fn in [("journal", journaled), ("trace", traced)]:
            fn(0)
            out[name] = _per_call(fn, _calls_for(_probe(fn)), reps)
        journal.close()

        # rate limit: m/4 calls to the limited tool (most refused), then the cost of one more
        limited = _world(1000, tmp)
        for _ in range(calls):
            limited.call("limited", {"id": "1"})

        def hammer(i):
            limited.call("limited", {"id": "1"})

        out["rate_429"] = _per_call(hammer, _calls_for(_probe(hammer)), reps)
    return out


def measure_forks(depth: int, reps: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        world = _world(100, tmp)
        for i in range(depth):
            world.call("get_order", {"id": str(i % 100 + 1)})
            world = world.fork()
        events = world.events
        n = len(events)
        rng = random.Random(0)
        at = [rng.randrange(n) for _ in range(4096)]

        def index(i):
            events[at[i % 4096]]

        def tail(i):
            events[n - 10 :]

        return {
            "forks": depth,
            "events": n,
            "event_i": _per_call(index, 2000, reps),
            "tail10": _per_call(tail, 2000, reps),
        }


def measure_faults(reps: int) -> dict[str, float]:
    """A call under latency + timeout rules against a call with no rule for its tool, in
    alternating batches of 1,000 (A B A B...), so machine load hits both sides alike."""
    with tempfile.TemporaryDirectory() as tmp:
        worlds = {"plain": _world(1000, tmp), "faulted": _world(1000, tmp, faulty=True)}
        times: dict[str, list[float]] = {"plain": [], "faulted": []}
        ratios = []
        for world in worlds.values():
            world.call("get_order", {"id": "1"})  # warm
        for r in range(max(reps, 1) * 4):
            batch = {}
            for name in ("plain", "faulted") if r % 2 == 0 else ("faulted", "plain"):
                world = worlds[name]
                t = time.perf_counter()
                for i in range(1000):
                    world.call("get_order", {"id": str(i % 1000 + 1)})
                batch[name] = (time.perf_counter() - t) / 1000
                times[name].append(batch[name])
            ratios.append(batch["faulted"] / batch["plain"])
        out = {name: statistics.median(v) for name, v in times.items()}
        out["faulted_ratio"] = statistics.median(ratios)
        return out


# --- driver -----------------------------------------------------------------------------------


def child(kind: str, arg: int, reps: int) -> None:
    fn = {
        "size": measure_size,
        "log": measure_log,
        "forks": measure_forks,
        "lists": measure_lists,
        "walk": measure_walk,
    }.get(kind)
    result = measure_faults(reps) if kind == "faults" else fn(arg, reps)  # type: ignore[misc]
    print(json.dumps(result))


CLOCK_OPTION = "wall"


def run_child(src: Path, kind: str, arg: int, reps: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(src))
    if CLOCK_OPTION == "cpu":
        env["BENCH_SCALE_CLOCK"] = "cpu"
    proc = subprocess.run(
        [sys.executable, str(HERE), "--child", kind, str(arg), str(reps)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{src} {kind} {arg} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def main(argv: list[str]) -> None:
    if argv and argv[0] == "--child":
        child(argv[1], int(argv[2]), int(argv[3]))
        return
    opts = dict(zip(argv[::2], argv[1::2]))
    global CLOCK_OPTION
    CLOCK_OPTION = opts.get("--clock", "wall")
    sizes = [int(s) for s in opts.get("--sizes", "1000,10000,100000").split(",")]
    logs = [int(s) for s in opts.get("--logs", "2000,10000,100000").split(",")]
    forks = int(opts.get("--forks", "10000"))
    lists = [int(s) for s in opts.get("--lists", "10000,100000,1000000").split(",") if s]
    walk = int(opts.get("--walk", "10000"))
    reps = int(opts.get("--reps", "3"))
    rounds = int(opts.get("--rounds", "3"))
    sides = {"after": SRC}
    if "--ab" in opts:
        sides = {"before": Path(opts["--ab"]).resolve(), "after": SRC}
    jobs = (
        [("size", n) for n in sizes]
        + [("log", m) for m in logs]
        + [("forks", forks), ("faults", 0)]
        + [("lists", n) for n in lists]
        + ([("walk", walk)] if walk else [])
    )
    if "--only" in opts:  # e.g. --only lists,walk
        jobs = [job for job in jobs if job[0] in opts["--only"].split(",")]
    results: dict[tuple[str, str, int], list[dict[str, float]]] = {}
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, sides: {list(sides)}, "
        f"clock: {CLOCK_OPTION}"
    )
    for kind, arg in jobs:
        # 1M-record worlds take a while to build: one round is enough to see the order
        job_rounds = 1 if kind in ("size", "lists") and arg >= 1_000_000 else rounds
        for r in range(job_rounds):
            order = list(sides.items())
            if r % 2:  # A B, then B A: neither side always runs first
                order.reverse()
            for side, src in order:
                results.setdefault((side, kind, arg), []).append(run_child(src, kind, arg, reps))
        for side in sides:
            runs = results[(side, kind, arg)]
            keys = runs[0].keys()
            cells = []
            for key in keys:
                vals = [run[key] for run in runs]
                med = statistics.median(vals)
                if key in ("events", "forks", "faulted_ratio") or key.startswith(
                    ("kb_", "last_first")
                ):
                    cells.append(f"{key}={med:.3g}")
                else:
                    cells.append(f"{key}={fmt(med)} [{fmt(min(vals))}..{fmt(max(vals))}]")
            print(f"{side:6} {kind:5} {arg:>8}: " + "  ".join(cells), flush=True)
        if len(sides) == 2:
            before, after = (results[(s, kind, arg)] for s in ("before", "after"))
            ratios = []
            for key in before[0]:
                if key in ("events", "forks"):
                    continue
                b = statistics.median(run[key] for run in before)
                a = statistics.median(run[key] for run in after)
                ratios.append(f"{key}={a / b:.3g}x" if b else f"{key}=-")
            print(f"{'ratio':6} {kind:5} {arg:>8}: after/before " + "  ".join(ratios), flush=True)
    if "--json" in opts:
        Path(opts["--json"]).write_text(
            json.dumps({f"{s}|{k}|{a}": v for (s, k, a), v in results.items()}, indent=1)
        )
    if "--plot" in opts:
        plot(results, sides, sizes, Path(opts["--plot"]))


def plot(results, sides, sizes, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("--plot needs matplotlib: uv sync --group bench") from None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    styles = {"before": "--", "after": "-"}
    for side in sides:
        for key, label in [
            ("get", "get"),
            ("list_none", "list matching nothing"),
            ("pick_after_write", "pick after a write"),
        ]:
            ys = [statistics.median(r[key] for r in results[(side, "size", n)]) for n in sizes]
            ax.plot(sizes, ys, styles[side], marker="o", label=f"{label} ({side})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("records in the table")
    ax.set_ylabel("seconds per call (median)")
    ax.set_title("faultbench: cost of one read as the world grows")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
