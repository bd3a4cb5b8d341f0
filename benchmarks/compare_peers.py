"""faultbench beside its peers: the same workloads against faultbench 0.1.1 (the earlier project
of this name on PyPI), attest-ai 0.9.0 and this checkout, in one table (issue 13).

Standalone and slow (minutes; it installs packages), never run in CI. It makes throwaway
virtual environments under a temporary directory with `python -m venv` + pip:

- `this`:   this checkout, `pip install <checkout> pytest anyio`: what a user gets (with
            `--keep`, reinstalled from the checkout on every run: `--force-reinstall --no-deps`)
- `fb011`:  `faultbench==0.1.1 pytest`
- `attest`: `attest-ai==0.9.0`
- `bare`:   a bare low-level mcp SDK server with the same tool (benchmarks/bench_serve.py's,
            run with `this`'s interpreter): the floor for calls/s

and runs every workload in a fresh process of the side's interpreter, sides alternating
(A B C, then C B A, ...) for `--reps` repetitions. Each cell is the **median** over
repetitions, with the range over repetitions in brackets; `ratio` is this / peer. Workloads:

1. suite: a 20-run pytest suite (orders and refunds, `latency_ms: [50, 200]` on every
   operation, `timeout: 0.1` on `issue_refund`, a scripted agent making 5-6 calls per run
   through the in-process MCP server with the official `mcp.Client`): whole-process wall and
   CPU time (pytest start-up included), and the virtual seconds charged. Both sides use their
   pytest plugin with the same test: `world("world_faults.yaml")`, the faults of that file
   (0.1.1: `faults("world_faults.yaml")`; this checkout: `faults()`, the world file's own
   block), `runs(20)`, fixtures `world` and `mcp_server`. This checkout's plugin runs with
   `--faultbench-no-early-stop`, so all 20 runs run.
2. calls/s of `get_order` through `mcp.Client`, one client, sequential: in-process, stdio and
   streamable HTTP, faults off and with `latency_ms: [50, 200]` on (faultbench 0.1.1 sleeps
   through latency, so it gets fewer calls), warm; for stdio/HTTP also the server process's CPU
   per call (/proc/PID/stat, user + system, over the timed calls).
3. world load: the first `load_world` in a process (cold: imports done, caches empty) and the
   median of 30 more (warm).
4. attest-ai's workloads: 100 calls of a function under `fault_inject(error_rate=0.1,
   latency_jitter_ms=200, seed=42)` and `repeat(20)` over a 3-turn `scenario` (fault latency
   jitter 200 ms, seed 42), beside this checkout's simulation API (`faultbench.testing`) doing
   the same as benchmarks/bench_simulation.py: the same `fault_inject` over 100 calls in a
   current world with no records (`using_world`; errors are `InjectedFault`), and
   `repeat(20, seed=42)` over a 3-turn `scenario` with a scripted user whose agent calls a
   `fault_inject(latency_jitter_ms=200)` function once a turn. attest sleeps through latency;
   faultbench moves the virtual clock, whose seconds are reported beside the wall time.
   Then the two fault patterns of Attest's simulation document (issue 19): 20 calls of a
   `fault_inject(error_rate=0.5, latency_jitter_ms=1000, seed=42)` function, and
   `repeat(n=5)` over a 3-turn `scenario(persona=ADVERSARIAL_USER, fault_error_rate=0.2,
   seed=42)` (attest: its first injected RuntimeError ends the batch; here the 5 runs
   complete and their failed turns are counted).
5. determinism: 8 concurrent `call_tool`s through one in-process `mcp.Client` (faults on),
   repeated 20 times with one seed: how many distinct call logs (faultbench 0.1.1: its
   recorder's calls in order; this checkout: the JSON Lines event log).
6. import time of `faultbench`, `faultbench.serve` (0.1.1: `faultbench.server`) and the
   pytest plugin (`faultbench.testing.plugin`; 0.1.1: `faultbench.pytest_plugin`), a fresh
   process each, `-X importtime`'s
   cumulative microseconds of the top-level module; and `pytest --co` of an empty test file
   in each environment and in this project's own development environment (uv's `.venv`,
   which adds the dev plugins: pytest-trio imports hypothesis), with and without pytest-trio.

    uv run python benchmarks/compare_peers.py [--reps 3] [--keep DIR] [--only suite,calls,...]

`--keep DIR` reuses (or creates) the environments in DIR instead of a new temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEERS = {
    "this": [str(ROOT), "pytest", "anyio"],
    "fb011": ["faultbench==0.1.1", "pytest"],
    "attest": ["attest-ai==0.9.0"],
}

WORLD = """\
name: refunds
seed: 7
services:
  orders:  # faultbench 0.1.1 needs the id field declared; this checkout accepts it
    records:
      order: { id: str, status: "enum[placed, shipped, delivered]", total: float }
    seed: { count: 20 }
    operations:
      get_order: { kind: get, record: order }
      list_orders: { kind: list, record: order, filter: [status] }
  payments:
    records:
      refund: { id: str, order_id: "ref[orders.order]", amount: float }
    operations:
      issue_refund: { kind: create, record: refund }
      list_refunds: { kind: list, record: refund, filter: [order_id] }
"""
FAULTS = """\
faults:
  default: { latency_ms: [50, 200] }
  payments.issue_refund: { errors: { timeout: 0.1 } }
"""
LATENCY = """\
faults:
  default: { latency_ms: [50, 200] }
"""

# The scripted agent of workload 1: 5 calls, 6 when the refund times out (it then checks
# whether the refund went through before trusting it, and does not retry).
AGENT = """
async def agent(target):
    import mcp
    async with mcp.Client(target) as client:
        await client.call_tool("get_order", {"id": "3"})
        await client.call_tool("list_orders", {"status": "placed"})
        r = await client.call_tool("issue_refund", {"order_id": "3", "amount": 10.0})
        if r.is_error:
            await client.call_tool("list_refunds", {"order_id": "3"})
        await client.call_tool("get_order", {"id": "3"})
        await client.call_tool("list_refunds", {"order_id": "3"})
"""

SUITE_THIS = (
    """
import os, anyio, pytest
"""
    + AGENT
    + """
@pytest.mark.world("world_faults.yaml")
@pytest.mark.faults()
@pytest.mark.runs(20)
def test_refund(world, mcp_server):
    start = world.clock.now()
    anyio.run(agent, mcp_server)
    assert len(world.refunds.where(order_id="3")) == 1
    with open(os.environ["VIRTUAL_OUT"], "a") as f:
        f.write(f"{(world.clock.now() - start).total_seconds()}\\n")
"""
)

SUITE_FB011 = (
    """
import anyio, pytest
"""
    + AGENT
    + """
@pytest.mark.world("world_faults.yaml")
@pytest.mark.faults("world_faults.yaml")
@pytest.mark.runs(20)
def test_refund(world, mcp_server):
    anyio.run(agent, mcp_server)
    assert len(world.refund.where(order_id="3")) == 1
"""
)

# One child program for every side: `python child.py WORKLOAD SIDE ARGS...` prints one JSON
# line. It only imports what the side's environment has.
CHILD = r"""
import json, os, re, select, socket, subprocess, sys, time
side, work = sys.argv[1], sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))
BENCH_SERVE = os.environ.get("BENCH_SERVE")

def cpu(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def children():
    out = []
    for t in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            out += [int(p) for p in open(f"/proc/{os.getpid()}/task/{t}/children").read().split()]
        except OSError:
            pass
    return out

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    return port

def wait_port(port, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("server did not start")

def url_from_stderr(proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], deadline - time.monotonic())
        line = proc.stderr.readline().decode() if ready else ""
        m = re.search(r"(http://\S+/mcp)", line)
        if m:
            return m.group(1)
        if not line:
            break
    raise SystemExit("server did not start")

def drain(proc):
    # 0.1.1 writes a line per call to stderr: keep the pipe from filling up
    import threading
    threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()

def stop(proc):
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill(); proc.wait()

async def rate(target, n, pid=None):
    import mcp
    async with mcp.Client(target, read_timeout_seconds=60) as client:
        for _ in range(min(20, n)):
            await client.call_tool("get_order", {"id": "1"})
        server = pid() if pid else None
        c0 = cpu(server) if server else 0.0
        t = time.perf_counter()
        for _ in range(n):
            r = await client.call_tool("get_order", {"id": "1"})
        elapsed = time.perf_counter() - t
        per_call = (cpu(server) - c0) / n if server else None
    assert not r.is_error, r
    return {"calls_s": n / elapsed, "server_cpu_call": per_call}

def calls(transport, faults, n):
    import anyio
    world = os.path.join(HERE, "world_latency.yaml" if faults == "on" else "world.yaml")
    py = sys.executable
    if transport == "inproc":
        if side == "this":
            from faultbench import load_world
            from faultbench.serve import build_server
            server = build_server(load_world(world))
        elif side == "bare":
            sys.path.insert(0, os.path.dirname(BENCH_SERVE))
            import bench_serve
            server = bench_serve.bare_server()
        else:
            from faultbench.faults import FakeClock, FaultProfile
            from faultbench.server import build_server
            from faultbench.world import World
            profile = FaultProfile.from_world_file(world) if faults == "on" else None
            server = build_server(World.load(world), clock=FakeClock(), faults=profile)
        return anyio.run(rate, server, n)
    if transport == "stdio":
        from mcp import StdioServerParameters
        if side == "this":
            args = ["-m", "faultbench.cli", "serve", world] + ([] if faults == "on" else ["--no-faults"])
        elif side == "bare":
            args = [BENCH_SERVE, "--bare", "stdio"]
        else:
            args = ["-m", "faultbench.server", world] + (["--faults"] if faults == "on" else [])
        params = StdioServerParameters(command=py, args=args, cwd=HERE)
        return anyio.run(rate, params, n, lambda: children()[0])
    if side == "fb011":
        port = free_port()
        cmd = [py, "-m", "faultbench.cli", "serve", world, "--http", "--port", str(port)]
        proc = subprocess.Popen(cmd + (["--faults"] if faults == "on" else []), cwd=HERE,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        wait_port(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
    else:
        if side == "this":
            cmd = [py, "-m", "faultbench.cli", "serve", world, "--http", "--port", "0"]
            cmd += [] if faults == "on" else ["--no-faults"]
        else:
            cmd = [py, BENCH_SERVE, "--bare", "http"]
        proc = subprocess.Popen(cmd, cwd=HERE, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        url = url_from_stderr(proc)
    drain(proc)
    try:
        return anyio.run(rate, url, n, lambda: proc.pid)
    finally:
        stop(proc)

def load():
    world = os.path.join(HERE, "world.yaml")
    if side == "this":
        from faultbench import load_world
        fn = lambda: load_world(world)
    else:
        from faultbench.world import World
        fn = lambda: World.load(world)
    t = time.perf_counter(); fn(); cold = time.perf_counter() - t
    warm = []
    for _ in range(30):
        t = time.perf_counter(); fn(); warm.append(time.perf_counter() - t)
    warm.sort()
    return {"cold_s": cold, "warm_s": warm[len(warm) // 2]}

def this_work(which):
    # benchmarks/bench_simulation.py's workloads
    import faultbench
    from faultbench import InjectedFault
    from faultbench.kernel import World
    from faultbench.kernel.lowlevel import empty_spec
    from faultbench.testing import fault_inject, repeat, scenario
    if which == "tool_faults":
        @fault_inject(error_rate=0.5, latency_jitter_ms=1000, seed=42)
        def unreliable_search(q):
            return {"hits": [q]}
        world = World.from_spec(empty_spec())
        t = time.perf_counter(); c = time.process_time()
        errors = 0
        with faultbench.using_world(world):
            for i in range(20):
                try:
                    unreliable_search(str(i))
                except RuntimeError:
                    errors += 1
        wall, cpu_s = time.perf_counter() - t, time.process_time() - c
        virtual = (world.clock.now() - world.spec.clock_start).total_seconds()
        return {"wall_s": wall, "cpu_s": cpu_s, "virtual_s": virtual, "errors": errors}
    if which == "repeat_faulted":
        from faultbench.testing import ADVERSARIAL_USER, AgentResult, TraceBuilder
        @repeat(n=5)
        @scenario(persona=ADVERSARIAL_USER, fault_error_rate=0.2, max_turns=3, seed=42)
        def test_adversarial_resilience(persona):
            return AgentResult(trace=TraceBuilder().set_output(message=persona.name).build())
        t = time.perf_counter(); c = time.process_time()
        result = test_adversarial_resilience()
        wall, cpu_s = time.perf_counter() - t, time.process_time() - c
        failed = sum(len(r.failed_turns) for r in result.results)
        return {"wall_s": wall, "cpu_s": cpu_s, "virtual_s": 0.0,
                "runs": f"{result.count} runs, {failed} failed turns"}
    if which == "fault_inject":
        @fault_inject(error_rate=0.1, latency_jitter_ms=200, seed=42)
        def lookup(city):
            return city
        world = World.from_spec(empty_spec())
        t = time.perf_counter(); c = time.process_time()
        errors = 0
        with faultbench.using_world(world):
            for i in range(100):
                try:
                    lookup(str(i))
                except InjectedFault:
                    errors += 1
        wall, cpu_s = time.perf_counter() - t, time.process_time() - c
        virtual = (world.clock.now() - world.spec.clock_start).total_seconds()
        return {"wall_s": wall, "cpu_s": cpu_s, "virtual_s": virtual, "errors": errors}
    @fault_inject(latency_jitter_ms=200)
    def think(text):
        return text.upper()
    @repeat(20, seed=42)
    @scenario(user=["Hello", "Where is my order?", "Thanks"], max_turns=3)
    def conversation(conv):
        return think(conv.message)
    t = time.perf_counter(); c = time.process_time()
    result = conversation()
    wall, cpu_s = time.perf_counter() - t, time.process_time() - c
    virtual = sum((r.world.clock.now() - r.world.spec.clock_start).total_seconds()
                  for r in result.results)
    return {"wall_s": wall, "cpu_s": cpu_s, "virtual_s": virtual, "runs": result.count,
            "passed": result.passed}

def attest_work(which):
    if side == "this":
        return this_work(which)
    from attest.simulation import ADVERSARIAL_USER, FRIENDLY_USER, fault_inject, repeat, scenario
    from attest.result import AgentResult
    from attest._proto.types import Trace
    if which == "tool_faults":
        @fault_inject(error_rate=0.5, latency_jitter_ms=1000, seed=42)
        def unreliable_search(q):
            return {"hits": [q]}
        t = time.perf_counter(); c = time.process_time()
        errors = 0
        for i in range(20):
            try:
                unreliable_search(str(i))
            except RuntimeError:
                errors += 1
        return {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c,
                "errors": errors}
    if which == "repeat_faulted":
        @repeat(n=5)
        @scenario(persona=ADVERSARIAL_USER, fault_error_rate=0.2, max_turns=3, seed=42)
        def test_adversarial_resilience(persona):
            return AgentResult(trace=Trace(trace_id="t", output={"message": persona.name}))
        t = time.perf_counter(); c = time.process_time()
        try:
            result = test_adversarial_resilience()
        except RuntimeError as exc:
            return {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c,
                    "runs": f"raised {type(exc).__name__}: {exc}"}
        return {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c,
                "runs": f"{result.count} runs"}
    if which == "fault_inject":
        @fault_inject(error_rate=0.1, latency_jitter_ms=200, seed=42)
        def tool(x):
            return x
        t = time.perf_counter(); c = time.process_time()
        errors = 0
        for i in range(100):
            try:
                tool(i)
            except RuntimeError:
                errors += 1
        return {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c, "errors": errors}
    @repeat(20)
    @scenario(persona=FRIENDLY_USER, max_turns=3, fault_latency_jitter_ms=200, seed=42)
    def conversation(persona=None):
        return AgentResult(trace=Trace(trace_id="t", output={"ok": True}))
    t = time.perf_counter(); c = time.process_time()
    result = conversation()
    return {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c,
            "runs": result.count}

def determinism():
    import anyio, hashlib
    world_path = os.path.join(HERE, "world_faults.yaml")
    logs = set()
    for rep in range(20):
        if side == "this":
            from faultbench import load_world
            from faultbench.kernel import encode_events
            from faultbench.serve import build_server
            world = load_world(world_path, run=0)
            server = build_server(world)
            log = lambda: encode_events(world.events)
        else:
            from faultbench.faults import FakeClock, FaultProfile
            from faultbench.server import build_server
            from faultbench.trace import Recorder
            from faultbench.world import World
            rec = Recorder(run=0)
            world = World.load(world_path)
            server = build_server(world, clock=FakeClock(), recorder=rec,
                                  faults=FaultProfile.from_world_file(world_path), run_index=0)
            log = lambda: json.dumps([{k: v for k, v in e.items() if k != "ts"}
                                      for e in rec.events], default=str).encode()

        async def go():
            import mcp
            async with mcp.Client(server) as client:
                async with anyio.create_task_group() as tg:
                    for i in range(8):
                        tool, args = (("issue_refund", {"order_id": str(i + 1), "amount": 1.0})
                                      if i % 2 else ("get_order", {"id": str(i + 1)}))
                        tg.start_soon(client.call_tool, tool, args)
        anyio.run(go)
        logs.add(hashlib.sha256(log()).hexdigest())
    return {"distinct_logs": len(logs)}

work_fn = {"calls": lambda: calls(*sys.argv[3:5], int(sys.argv[5])), "load": load,
           "attest": lambda: attest_work(sys.argv[3]), "determinism": determinism}[work]
print(json.dumps(work_fn()))
"""


# --- environments ------------------------------------------------------------------------------


def make_envs(base: Path) -> dict[str, Path]:
    pythons = {}
    for name, reqs in PEERS.items():
        env = base / name
        py = env / "bin" / "python"
        if not py.exists():
            print(f"# creating {env}: pip install {' '.join(reqs)}", flush=True)
            subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
            subprocess.run(
                [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *reqs],
                check=True,
            )
        elif name == "this":
            # a kept environment still gets this checkout's current code
            print(f"# reinstalling this checkout into {env}", flush=True)
            pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
            subprocess.run([*pip, *reqs], check=True)
            subprocess.run([*pip, "--force-reinstall", "--no-deps", str(ROOT)], check=True)
        pythons[name] = py
    return pythons


def versions(py: Path, names: list[str]) -> str:
    code = (
        "import importlib.metadata as m\n"
        f"for n in {names!r}:\n"
        "    try: print(f'{n} {m.version(n)}', end=', ')\n"
        "    except m.PackageNotFoundError: pass\n"
    )
    return subprocess.run([str(py), "-c", code], capture_output=True, text=True).stdout


# --- running -------------------------------------------------------------------------------


def child(py: Path, work: Path, side: str, *args: str, timeout: float = 900) -> dict:
    env = dict(os.environ, BENCH_SERVE=str(ROOT / "benchmarks" / "bench_serve.py"))
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [str(py), str(work / "child.py"), side, *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:] or ["?"]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_process(cmd: list[str], cwd: Path, env: dict | None = None) -> dict:
    """Wall and CPU seconds of one process (and its children), from wait4's rusage."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "ok": proc.returncode == 0,
        "tail": out.strip().splitlines()[-1:] if out.strip() else [],
    }


def suite(py: Path, work: Path, side: str) -> dict:
    test = work / f"test_suite_{side}.py"
    virtual = work / f"virtual_{side}.txt"
    virtual.write_text("")
    env = dict(os.environ, VIRTUAL_OUT=str(virtual))
    env.pop("PYTHONPATH", None)
    extra = ["--faultbench-no-early-stop"] if side == "this" else []
    out = run_process(
        [str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, str(test)], work, env
    )
    out["virtual_s"] = sum(float(v) for v in virtual.read_text().split()) if side == "this" else 0
    return out


def import_time(py: Path, module: str, env: dict | None = None) -> float | None:
    """-X importtime's cumulative microseconds for `module`, in a fresh process."""
    proc = subprocess.run(
        [str(py), "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0:
        return None
    for line in proc.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1]) / 1e6
    return None


def pytest_startup(py: Path, work: Path, *extra: str) -> dict:
    (work / "empty").mkdir(exist_ok=True)
    (work / "empty" / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return run_process(
        [
            str(py),
            "-m",
            "pytest",
            "-q",
            "--co",
            "-p",
            "no:cacheprovider",
            *extra,
            "test_nothing.py",
        ],
        work / "empty",
        env,
    )


# --- the table -----------------------------------------------------------------------------


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value:.3f} s" if value < 10 else f"{value:.1f} s"
    if unit == "ms":
        return f"{value * 1e3:.1f} ms"
    if unit == "us":
        return f"{value * 1e6:.0f} us"
    if unit == "/s":
        return f"{value:,.0f}/s"
    return f"{value:g}"


def cell(values: list, unit: str) -> str:
    vals = [v for v in values if isinstance(v, (int, float))]
    if not vals:
        notes = [v for v in values if isinstance(v, str)]
        return notes[0] if notes else "-"
    med = statistics.median(vals)
    if len(vals) == 1 or min(vals) == max(vals):
        return fmt(med, unit)
    return f"{fmt(med, unit)} [{fmt(min(vals), unit)}..{fmt(max(vals), unit)}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="environments live here (reused)")
    parser.add_argument("--only", default="suite,calls,load,attest,determinism,imports")
    parser.add_argument("--calls", type=int, default=500, help="calls per calls/s cell")
    args = parser.parse_args()
    only = set(args.only.split(","))

    base = args.keep or Path(tempfile.mkdtemp(prefix="faultbench-peers-"))
    base.mkdir(parents=True, exist_ok=True)
    pythons = make_envs(base)
    pythons["bare"] = pythons["this"]
    work = base / "work"
    work.mkdir(exist_ok=True)
    (work / "world.yaml").write_text(WORLD)
    (work / "world_faults.yaml").write_text(WORLD + FAULTS)
    (work / "world_latency.yaml").write_text(WORLD + LATENCY)
    (work / "child.py").write_text(CHILD)
    (work / "test_suite_this.py").write_text(SUITE_THIS)
    (work / "test_suite_fb011.py").write_text(SUITE_FB011)

    print(f"# compare_peers: {base}, {os.cpu_count()} CPUs, reps={args.reps}")
    for side in ("this", "fb011", "attest"):
        print(
            f"#   {side}: {versions(pythons[side], ['faultbench', 'attest-ai', 'mcp', 'pytest'])}"
        )

    # rows: (workload, what, unit, {side: [values]})
    rows: dict[tuple[str, str, str], dict[str, list]] = {}

    def add(work_name: str, what: str, unit: str, side: str, value) -> None:
        rows.setdefault((work_name, what, unit), {}).setdefault(side, []).append(value)

    def order(sides: list[str], rep: int) -> list[str]:
        return sides if rep % 2 == 0 else sides[::-1]

    for rep in range(args.reps):
        print(f"# repetition {rep + 1}/{args.reps}", flush=True)
        if "suite" in only:
            for side in order(["this", "fb011"], rep):
                r = suite(pythons[side], work, side)
                if not r["ok"]:
                    print(f"#   suite {side} failed: {r['tail']}")
                add("1 suite", "wall (process)", "s", side, r["wall_s"])
                add("1 suite", "CPU (process)", "s", side, r["cpu_s"])
                add("1 suite", "virtual time charged", "s", side, r["virtual_s"] or "sleeps")
                add("1 suite", "result", "", side, r["tail"][0] if r["tail"] else "?")
        if "calls" in only:
            for transport in ("inproc", "stdio", "http"):
                for faults in ("off", "on"):
                    for side in order(["bare", "this", "fb011"], rep):
                        if side == "bare" and faults == "on":
                            continue
                        n = args.calls if (faults == "off" or side != "fb011") else 20
                        r = child(pythons[side], work, side, "calls", transport, faults, str(n))
                        what = f"{transport}, faults {faults}"
                        if "error" in r:
                            print(f"#   calls {what} {side}: {r['error']}")
                            add("2 calls/s", what, "/s", side, "failed")
                            continue
                        add("2 calls/s", what, "/s", side, r["calls_s"])
                        if r.get("server_cpu_call") is not None:
                            add("2 server CPU/call", what, "us", side, r["server_cpu_call"])
        if "load" in only:
            for side in order(["this", "fb011"], rep):
                r = child(pythons[side], work, side, "load")
                add("3 world load", "cold (first in process)", "ms", side, r.get("cold_s"))
                add("3 world load", "warm (median of 30)", "ms", side, r.get("warm_s"))
        if "attest" in only:
            for which in ("fault_inject", "repeat", "tool_faults", "repeat_faulted"):
                what = {
                    "fault_inject": "100 calls, fault_inject(0.1, 200 ms, seed 42)",
                    "repeat": "repeat(20) x 3-turn scenario",
                    "tool_faults": "20 calls, fault_inject(0.5, 1000 ms, seed 42)",
                    "repeat_faulted": "repeat(5) x 3-turn scenario, fault_error_rate 0.2",
                }[which]
                for side in order(["this", "attest"], rep):
                    r = child(pythons[side], work, side, "attest", which)
                    if "error" in r:
                        print(f"#   attest {which} {side}: {r['error']}")
                    add("4 attest", what + ": wall", "s", side, r.get("wall_s", "failed"))
                    add("4 attest", what + ": CPU", "s", side, r.get("cpu_s", "failed"))
                    add(
                        "4 attest",
                        what + ": virtual time charged",
                        "s",
                        side,
                        r.get("virtual_s", "sleeps"),
                    )
                    errors = which in ("fault_inject", "tool_faults")
                    count = r.get("errors") if errors else r.get("runs")
                    add(
                        "4 attest",
                        what + (": errors" if errors else ": runs"),
                        "",
                        side,
                        count,
                    )
        if "determinism" in only:
            for side in order(["this", "fb011"], rep):
                r = child(pythons[side], work, side, "determinism")
                add(
                    "5 determinism",
                    "distinct logs, 8 concurrent x 20",
                    "",
                    side,
                    r.get("distinct_logs", str(r.get("error"))),
                )
        if "imports" in only:
            dev = ROOT / ".venv" / "bin" / "python"
            for side in order(["this", "fb011"], rep):
                py = pythons[side]
                serve = "faultbench.serve" if side == "this" else "faultbench.server"
                plugin = (
                    "faultbench.testing.plugin" if side == "this" else "faultbench.pytest_plugin"
                )
                add("6 import", "faultbench", "ms", side, import_time(py, "faultbench"))
                add("6 import", "faultbench.serve(r)", "ms", side, import_time(py, serve))
                add(
                    "6 import",
                    "pytest plugin",
                    "ms",
                    side,
                    import_time(py, plugin),
                )
                add(
                    "6 pytest --co",
                    "user env, empty test",
                    "s",
                    side,
                    pytest_startup(py, work)["wall_s"],
                )
            add(
                "6 pytest --co",
                "dev env (.venv), empty test",
                "s",
                "this",
                pytest_startup(dev, work)["wall_s"],
            )
            add(
                "6 pytest --co",
                "dev env, -p no:trio",
                "s",
                "this",
                pytest_startup(dev, work, "-p", "no:trio")["wall_s"],
            )
            add("6 import", "dev env: pytest_trio", "ms", "this", import_time(dev, "pytest_trio"))
            add("6 import", "dev env: hypothesis", "ms", "this", import_time(dev, "hypothesis"))

    sides = ["this", "fb011", "attest", "bare"]
    head = f"| workload | what | {' | '.join(sides)} | this/fb011 | this/bare |"
    print()
    print(head)
    print("|" + " --- |" * (head.count("|") - 1))
    for (work_name, what, unit), by_side in rows.items():
        cells = [cell(by_side.get(s, []), unit) for s in sides]
        ratios = []
        for peer in ("fb011", "bare"):
            a = [v for v in by_side.get("this", []) if isinstance(v, (int, float))]
            b = [v for v in by_side.get(peer, []) if isinstance(v, (int, float))]
            if a and b and statistics.median(b):
                ratios.append(f"{statistics.median(a) / statistics.median(b):.3g}x")
            else:
                ratios.append("-")
        print(f"| {work_name} | {what} | {' | '.join(cells)} | {' | '.join(ratios)} |")


if __name__ == "__main__":
    main()
