"""Mutated world files and event logs: every one loads or is refused cleanly (a
`WorldFileError`; for logs exit 0, 1 or 2 with no traceback), fast.

    FAULTBENCH_SLOW=1 uv run pytest -s tests/soak/test_fuzz.py   # 4,000 world files, 2,000 logs
"""

from __future__ import annotations

import contextlib
import io
import random
import re
import signal
import time
from pathlib import Path

import faultbench
from faultbench.cli import main
from faultbench.kernel import WorldFileError, encode_events
from faultbench.kernel.lowlevel import load_spec

from .conftest import size

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    ROOT / "examples" / "shop" / "worlds" / "shop.yaml",
    ROOT / "examples" / "bank" / "worlds" / "bank.yaml",
    ROOT / "tests" / "worlds" / "full.yaml",
    ROOT / "tests" / "worlds" / "faults.yaml",
]
HOSTILE = [
    "*a",
    "&a [1, 2, 3]",
    "[" * 300 + "]" * 300,
    "[" * 1200 + "]" * 1200,
    "{a: " * 300 + "1" + "}" * 300,
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "1e999",
    "-1",
    "99999999999999999999999",
    "!!python/object:os.system 'true'",
    "'\\ud800'",
    "~",
    "[]",
    "{}",
    "enum[]",
    "ref[nope]",
    "latency_ms: [1e300, 1e308]",
    "count: 1000000",
    "<<: *a",
]
SLOW_S = 5.0
#: nine levels of nine aliases: `*i` stands for 387 million values
BOMB = ["a0: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]"] + [
    f"a{n}: &{q} [{', '.join(['*' + p] * 9)}]"
    for n, (p, q) in enumerate(zip("abcdefgh", "bcdefghi"), 1)
]
_VALUE = re.compile(r"(:\s*)([^,{}\[\]\n#]+)")


class _Slow(Exception):
    pass


def _alarm(signum, frame):
    raise _Slow


def mutate(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(9)
        i = rng.randrange(len(lines)) if lines else 0
        if op == 0 and lines:
            del lines[i]
        elif op == 1 and lines:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif op == 2 and lines:
            line = lines[i]
            if ":" in line:
                key = line.split(":", 1)[0]
                lines[i] = f"{key}: {rng.choice(HOSTILE)}"
        elif op == 3 and lines:
            line = lines[i]
            j = rng.randrange(len(line) + 1)
            lines[i] = (
                line[:j]
                + rng.choice(["\t", "'", '"', "[", "{", ": ", "&a ", "*a", "\x00", "é"])
                + line[j:]
            )
        elif op == 4:
            lines = lines[: rng.randrange(len(lines) + 1)]
        elif op == 5 and lines:
            lines.insert(i, "x: &a " + rng.choice(HOSTILE) + "\ny: [" + ", ".join(["*a"] * 9) + "]")
        elif op == 6 and lines:
            lines[i] = "  " * rng.randrange(12) + lines[i].lstrip()
        elif op == 7 and lines:  # a value inside a line, flow mappings included
            spots = list(_VALUE.finditer(lines[i]))
            if spots:
                m = rng.choice(spots)
                value = rng.choice([*HOSTILE, "*i"])
                lines[i] = lines[i][: m.start(2)] + value + lines[i][m.end(2) :]
        elif op == 8:
            lines = [*BOMB, *lines]
    return "\n".join(lines) + "\n"


def test_mutated_world_files_are_loaded_or_refused_cleanly(tmp_path):
    rng = random.Random(14)
    n = size(300, 4000)
    foreign: list[tuple[str, str]] = []
    slow = []
    worst = 0.0
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for i in range(n):
            source = SOURCES[i % len(SOURCES)]
            text = mutate(source.read_text(), rng)
            started = time.monotonic()
            signal.setitimer(signal.ITIMER_REAL, 30)
            try:
                # named as the original, so handler imports resolve as they do for it
                load_spec(source, text=text)
            except WorldFileError:
                pass
            except _Slow:
                slow.append(text)
            except Exception as exc:
                foreign.append((type(exc).__name__, text))
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            took = time.monotonic() - started
            worst = max(worst, took)
            if took > SLOW_S:
                slow.append(text)
    finally:
        signal.signal(signal.SIGALRM, previous)
    print(
        f"\nworld files fuzzed: {n}, foreign exceptions: {len(foreign)}, runs over {SLOW_S:g} s:"
        f" {len(slow)}, slowest: {worst:.2f} s"
    )
    assert not foreign, foreign[:3]
    assert not slow, slow[:1]


def _log_mutations(line: dict, rng: random.Random) -> None:
    keys = [k for k in line if k != "type"]
    op = rng.randrange(6)
    if op == 0 and keys:
        line[rng.choice(keys)] = rng.choice(
            [None, "x", -1, 1.5, [], {}, True, "9999-12-31T23:59:59Z"]
        )
    elif op == 1:
        line[rng.choice(["extra", "sudo", "seq2"])] = 1
    elif op == 2 and keys:
        del line[rng.choice(keys)]
    elif op == 3:
        line["seq"] = line.get("seq", 0) + rng.choice([-1, 1, 1000])
    elif op == 4 and isinstance(line.get("fields"), dict) and line["fields"]:
        line["fields"][rng.choice(list(line["fields"]))] = rng.choice([None, "x", 10**30, [1]])
    elif op == 5:
        line["at"] = rng.choice(["0001-01-01T00:00:00Z", "2000-01-01T00:00:00Z", "not a time"])


def test_mutated_event_logs_exit_0_1_or_2_without_a_traceback(tmp_path):
    import json

    world_file = SOURCES[0]
    world = faultbench.load_world(world_file)
    for i in range(30):
        world.call(
            rng_tool := ["get_order", "list_orders", "update_order"][i % 3],
            {"id": str(i % 5 + 1), "status": "delivered"}
            if rng_tool == "update_order"
            else ({"id": str(i % 5 + 1)} if rng_tool == "get_order" else {}),
        )
    world.clock.advance(60)
    lines = [json.loads(x) for x in encode_events(world.events).splitlines()]
    rng = random.Random(14)
    n = size(100, 2000)
    tracebacks = []
    codes: dict[int, int] = {}
    log = tmp_path / "log.jsonl"
    for _ in range(n):
        rows = [json.loads(json.dumps(r)) for r in lines]
        for _ in range(rng.randint(1, 3)):
            _log_mutations(rows[rng.randrange(len(rows))], rng)
        log.write_text("".join(json.dumps(r) + "\n" for r in rows))
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                code = main(["replay", str(log), "--world", str(world_file)])
        except Exception as exc:
            tracebacks.append(f"{type(exc).__name__}: {exc}")
            continue
        codes[code] = codes.get(code, 0) + 1
    print(
        f"\nhostile logs tried: {n}, exit codes: {dict(sorted(codes.items()))}, tracebacks: {len(tracebacks)}"
    )
    assert not tracebacks, tracebacks[:3]
    assert set(codes) <= {0, 1, 2}


def test_logs_steering_replay_beside_them_are_refused_without_a_traceback(tmp_path):
    """Issue 25: `--world-beside-log` with crafted digests, names and bytes. Exit 0, 1 or 2;
    never a traceback, a hang, the contents of a file the log points at, or an import of a
    handler the log's digest does not vouch for."""
    import json
    import os
    import shutil

    from tests.serve.serve_helpers import SHOP

    world_file = tmp_path / "shop.yaml"
    shutil.copy(SHOP, world_file)
    shutil.copy(SHOP.parent / "shop_handlers.py", tmp_path / "shop_handlers.py")
    world = faultbench.load_world(world_file)
    for i in range(10):
        world.call("update_order", {"id": str(i % 3 + 1), "status": "delivered"})
    good = [json.loads(x) for x in encode_events(world.events).splitlines()]
    (tmp_path / "secret.txt").write_text("password: hunter2\n")
    marker = tmp_path / "ran"
    (tmp_path / "payload.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\ndef op(world, clock):\n    return 1\n"
    )
    (tmp_path / "evil.yaml").write_text(
        "name: shop\nservices:\n  s:\n    records: {order: {status: str}}\n"
        "    operations: {pay: {kind: custom, handler: payload.op}}\n"
    )
    os.mkfifo(tmp_path / "fifo.yaml")
    rng = random.Random(25)
    n = size(60, 1500)
    codes: dict[int, int] = {}
    tracebacks, leaks = [], 0
    log = tmp_path / "log.jsonl"
    for _ in range(n):
        rows = [dict(r) for r in good]
        first = rows[0]
        op = rng.randrange(6)
        if op == 0:
            first.pop("digest", None) if rng.random() < 0.5 else first.update(digest="")
        elif op == 1:
            first["digest"] = rng.choice(["x" * 64, "0" * 64, "DEADBEEF", 7, None])
        if op <= 2 or rng.random() < 0.5:
            first["path"] = rng.choice(
                ["secret.txt", "evil.yaml", "fifo.yaml", "w" * 300, "a\x00b", "..", "", 5,
                 "../../etc/passwd", "/dev/zero", str(world_file)]
            )  # fmt: skip
        data = "".join(json.dumps(r) + "\n" for r in rows).encode()
        if op == 4:  # bytes that are not UTF-8, somewhere
            at = rng.randrange(len(data))
            data = data[:at] + bytes([rng.choice([0xFF, 0xC0, 0x80])]) + data[at:]
        elif op == 5:  # cut anywhere
            data = data[: rng.randrange(len(data))]
        log.write_bytes(data)
        err = io.StringIO()
        argv = ["replay", str(log), "--world-beside-log"]
        if rng.random() < 0.2:
            argv = ["replay", str(log), "--world", str(world_file)]
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                signal.alarm(30)  # a FIFO read would block: fail instead of hanging
                try:
                    code = main(argv)
                finally:
                    signal.alarm(0)
        except Exception as exc:
            tracebacks.append(f"{type(exc).__name__}: {exc}")
            continue
        leaks += "hunter2" in err.getvalue()
        codes[code] = codes.get(code, 0) + 1
    print(
        f"\nsteering logs tried: {n}, exit codes: {dict(sorted(codes.items()))}, tracebacks: "
        f"{len(tracebacks)}, leaks: {leaks}, handlers imported: {int(marker.exists())}"
    )
    assert not tracebacks, tracebacks[:3]
    assert set(codes) <= {0, 1, 2}
    assert leaks == 0
    assert not marker.exists()
