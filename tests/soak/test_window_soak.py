"""`kill -9` of a long `faultbench serve --http --events FILE --keep-events N` session (issue
25, item 12): the server keeps only a window of its log in memory and cuts it many times, but
the journal on disk still holds every acknowledged write, and replays to a state that has
each of them.

    FAULTBENCH_SLOW=1 uv run pytest -s tests/soak/test_window_soak.py   # 10 kills, 2,000+ calls each
"""

from __future__ import annotations

import random
import signal
import threading
import time

import faultbench
from faultbench.kernel import decode_events
from tests.serve.serve_helpers import ServeProcess

from .conftest import SLOW, size
from .test_kill import mcp_call, open_session

WORLD = """\
name: long
seed: 3
clock: { start: 2025-06-01T00:00:00Z }
services:
  orders:
    records:
      order: { status: "enum[placed, shipped]", total: float }
    seed: { order: 50 }
    operations:
      get_order: { kind: get, record: order }
      update_order: { kind: update, record: order }
"""


def test_killing_a_windowed_session_loses_no_acknowledged_write(tmp_path):
    world = tmp_path / "long.yaml"
    world.write_text(WORLD)
    spec = faultbench.load_world(world).spec
    trials, keep = size(2, 10), 50
    rng = random.Random(25)
    lost = acked_total = 0
    for trial in range(trials):
        events = tmp_path / f"run{trial}.jsonl"
        server = ServeProcess(
            str(world), "--http", "--port", "0", "--events", str(events),
            "--keep-events", str(keep),
        )  # fmt: skip
        acked: dict[str, float] = {}  # order id -> the total its last acknowledged write set
        sent: dict[str, float] = {}  # order id -> the total of the write in flight at the kill
        stop = threading.Event()
        try:
            base = server.base
            session = open_session(base)

            def hammer(base=base, session=session, acked=acked, sent=sent, stop=stop):
                i = 0
                while not stop.is_set():
                    order, total = str(i % 50 + 1), float(i)
                    sent.clear()
                    sent[order] = total
                    try:
                        answer = mcp_call(base, session, i, "update_order",
                                          {"id": order, "total": total})  # fmt: skip
                    except Exception:
                        return  # killed mid-request: not acknowledged
                    if not answer["result"]["isError"]:
                        acked[order] = total
                    i += 1

            worker = threading.Thread(target=hammer, daemon=True)
            worker.start()
            time.sleep(rng.uniform(2, 6) if SLOW else rng.uniform(0.5, 1.5))
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait(10)
            stop.set()
            worker.join(30)
        finally:
            server.kill()
        calls = sum(1 for _ in acked)
        lines = events.read_bytes().split(b"\n")
        whole = b"\n".join(lines[:-1]) + b"\n"  # a torn last line was never acknowledged
        log = decode_events(whole)
        replayed = faultbench.replay(spec, log)
        acked_total += len(log)
        # the write in flight may have landed though its answer was lost: its total is no loss
        missing = [
            o for o, t in acked.items() if replayed.orders.get(o).total not in (t, sent.get(o))
        ]
        lost += len(missing)
        assert len(log) > 4 * keep, f"trial {trial}: {len(log)} events, no cut to test"
        if missing:
            print(f"trial {trial}: lost {missing[:5]} of {calls} orders")
    print(
        f"\nkills of --keep-events {keep} sessions: {trials}, events journalled: {acked_total}, "
        f"acknowledged writes lost: {lost}"
    )
    assert lost == 0
