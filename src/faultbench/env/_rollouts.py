"""`rollouts`: a policy over many runs of a world, in this process, a process pool or on Ray.

Each episode is run i of the world at the given seed (`Episode.start(seed, i)`), played by
the policy until it replies or `max_steps` steps; its seed rows and faults depend on (seed,
i) alone, so every backend gives the same episodes whatever the worker or the order.
Episodes are cut into chunks of consecutive runs, one task each; results come back sorted by
run.

Three outcomes: passed, failed (the agent's doing: a broken check, a missed milestone, a
policy that raised) and crashed (not the agent's: the environment raised, a tool hit a bug in
faultbench or the world's handlers, or the worker died). Rates are over the episodes that did
not crash.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from faultbench.integrations import Policy
from faultbench.kernel import Checks, WorldSpec
from faultbench.testing import pass_hat_k, wilson_interval

from ._episode import Episode, WorldLike, spec_of, world_checks

if TYPE_CHECKING:
    from faultbench.kernel import CallResult

__all__ = ["BACKENDS", "Call", "EpisodeResult", "Rollouts", "rollouts"]

BACKENDS = ("local", "process", "ray")


@dataclass(frozen=True)
class Call:
    """One tool call of an episode, as the trace has it."""

    tool: str
    args: dict[str, Any]
    ok: bool
    error_kind: str | None = None
    fault: str | None = None
    call_id: str = ""
    error: str | None = None
    #: when the call began and answered, in the world's virtual time
    started_at: datetime | None = None
    finished_at: datetime | None = None

    def __str__(self) -> str:
        return self.tool if self.ok else f"{self.tool}!{self.error_kind or 'error'}"


@dataclass(frozen=True)
class EpisodeResult:
    """One episode: run `run` of the world, its reward and whether it passed its checks, the
    world's `state_hash` at the end, the calls made, how it ended. `crashed`: it ended in an
    error that is not the agent's (`error` says which); it then neither passed nor failed.
    `events`: the event log, when `rollouts(..., events=True)`."""

    run: int
    reward: float
    passed: bool
    state_hash: str
    calls: tuple[Call, ...] = ()
    steps: int = 0
    truncated: bool = False
    reply: str | None = None
    score: float | None = None
    violations: tuple[str, ...] = ()
    crashed: bool = False
    error: str | None = None
    events: tuple[Any, ...] | None = field(default=None, compare=False)
    #: the world's virtual time at the episode's start and end (its spans' bounds)
    started_at: datetime | None = None
    ended_at: datetime | None = None

    @property
    def key(self) -> tuple[int, float, bool, str]:
        """(run, reward, passed, state_hash): what two backends must agree on."""
        return (self.run, self.reward, self.passed, self.state_hash)

    @property
    def summary(self) -> str:
        return " → ".join(map(str, self.calls))


@dataclass(frozen=True)
class Rollouts:
    """The episodes of a `rollouts` call, sorted by run, and their statistics (over the
    episodes that did not crash)."""

    episodes: list[EpisodeResult]
    seed: int
    backend: str
    #: the world's name
    world: str = ""

    @property
    def crashed(self) -> list[EpisodeResult]:
        return [e for e in self.episodes if e.crashed]

    @property
    def graded(self) -> list[EpisodeResult]:
        """The episodes that ran to their end: passed or failed, not crashed."""
        return [e for e in self.episodes if not e.crashed]

    @property
    def failed(self) -> list[EpisodeResult]:
        return [e for e in self.episodes if not e.crashed and not e.passed]

    @property
    def passed(self) -> int:
        return sum(e.passed for e in self.episodes if not e.crashed)

    @property
    def pass_rate(self) -> float:
        n = len(self.graded)
        return self.passed / n if n else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        """The 95% Wilson interval of the pass rate (the gate's)."""
        return wilson_interval(self.passed, len(self.graded))

    @property
    def mean_reward(self) -> float:
        graded = self.graded
        return sum(e.reward for e in graded) / len(graded) if graded else 0.0

    def pass_k(self, k: int) -> float | None:
        """pass^k: the chance that k episodes in a row all pass, tau-bench's estimator
        C(passed, k) / C(n, k), as the gate computes it; None with fewer than k episodes."""
        return pass_hat_k(self.passed, len(self.graded), k)

    def keys(self) -> list[tuple[int, float, bool, str]]:
        return [e.key for e in self.episodes]


# ---------------------------------------------------------------------------------------------
# One episode
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """What a worker needs to play episodes: picklable (a spec travels as its file's path
    where it has one)."""

    world: str | WorldSpec
    policy: Policy
    seed: int
    prompt: str
    max_steps: int
    faults: bool
    checks: Checks
    principal: str | None
    events: bool


_specs: dict[str, WorldSpec] = {}


def _episode_of(job: Job) -> Episode:
    if isinstance(job.world, WorldSpec):
        spec = job.world
    else:  # a worker process: one load per process and path
        spec = _specs.get(job.world) or _specs.setdefault(job.world, spec_of(job.world))
    return Episode(
        spec,
        prompt=job.prompt,
        faults=job.faults,
        max_steps=job.max_steps,
        checks=job.checks,
        principal=job.principal,
    )


def play(episode: Episode, job: Job, run: int) -> EpisodeResult:
    """Run `run` played by the job's policy to its end."""
    try:
        episode.start(job.seed, run)
    except Exception as exc:
        return _crashed(run, f"the environment failed to start: {_what(exc)}")
    policy = job.policy
    while True:
        try:
            action = policy(tuple(episode.seen))
        except Exception as exc:  # the agent's own failure
            return _ended(episode, job, run, error=f"the policy raised {_what(exc)}")
        try:
            step = episode.step(action)
        except Exception as exc:
            return _crashed(run, f"the environment failed: {_what(exc)}", episode)
        result: CallResult | None = step.info.get("result")
        if result is not None and result.traceback is not None:
            return _crashed(
                run,
                f"{result.tool}: {result.error} (a bug in faultbench or the world's handlers)",
                episode,
            )
        if step.terminated or step.truncated:
            return _ended(episode, job, run)


def _what(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _calls(episode: Episode) -> tuple[Call, ...]:
    return tuple(
        Call(
            c.tool,
            c.args,
            c.ok,
            c.error_kind,
            c.fault,
            call_id=c.call_id,
            error=c.error,
            started_at=c.started_at,
            finished_at=c.finished_at,
        )
        for c in episode.results()
    )


def _times(episode: Episode | None) -> tuple[datetime | None, datetime | None]:
    """The episode's start and end in its world's virtual time."""
    world = None if episode is None else episode.world
    if world is None:
        return None, None
    return world.events[0].at, world.clock.now()


def _ended(episode: Episode, job: Job, run: int, *, error: str | None = None) -> EpisodeResult:
    world = episode.world
    assert world is not None
    graded = episode.graded
    violations: tuple[str, ...] = ()
    if error is not None or graded is None:  # the policy raised: a failed run
        reward, passed, score = 0.0, False, None
    else:
        reward, passed = graded.reward, graded.passed
        score, violations = graded.score, graded.violations
    return EpisodeResult(
        run=run,
        reward=reward,
        passed=passed,
        state_hash=world.state_hash(),
        calls=_calls(episode),
        steps=episode.steps,
        truncated=episode.done and episode.reply is None,
        reply=episode.reply,
        score=score,
        violations=violations,
        error=error,
        events=tuple(world.events) if job.events else None,
        started_at=_times(episode)[0],
        ended_at=_times(episode)[1],
    )


def _crashed(run: int, error: str, episode: Episode | None = None) -> EpisodeResult:
    world = None if episode is None else episode.world
    return EpisodeResult(
        run=run,
        reward=0.0,
        passed=False,
        state_hash="" if world is None else world.state_hash(),
        calls=() if world is None or episode is None else _calls(episode),
        steps=0 if episode is None else episode.steps,
        crashed=True,
        error=error,
        started_at=_times(episode)[0],
        ended_at=_times(episode)[1],
    )


def play_chunk(job: Job, runs: Sequence[int]) -> list[EpisodeResult]:
    """A worker's task: the runs of one chunk, one episode object reused."""
    episode = _episode_of(job)
    return [play(episode, job, run) for run in runs]


# ---------------------------------------------------------------------------------------------
# Backends
# ---------------------------------------------------------------------------------------------


def rollouts(
    world: WorldLike,
    policy: Policy,
    episodes: int | Iterable[int],
    *,
    seed: int | None = 0,
    prompt: str = "",
    backend: str = "local",
    max_steps: int = 50,
    workers: int | None = None,
    faults: bool = True,
    checks: Checks | Mapping[str, Any] | None = None,
    principal: str | None = None,
    events: bool = False,
    otel: Any = None,
) -> Rollouts:
    """Play `policy(seen) -> ToolCall | Reply` (the policies the integrations' scripted
    models take) over runs 0..episodes-1 (or the run indices given) of `world` at world seed
    `seed` (None: the world file's).

    `backend`: "local" (this process), "process" (a pool of `workers` processes, default
    one per CPU; the policy must be picklable, e.g. a module-level function) or "ray" (the
    connected Ray cluster, `ray.init()` first for a real one; a local one is started
    otherwise; `workers` tasks, default one per CPU of the cluster). Every backend gives the
    same episodes. `checks`: added to the world file's; `events=True` keeps each episode's
    event log. `otel`: export each episode as OpenTelemetry spans (`faultbench.otel.
    export_episodes`, in virtual time) through this TracerProvider, or the global one with
    True, once all have come back.
    """
    if backend not in BACKENDS:
        raise ValueError(
            f"Expected backend in {', '.join(map(repr, BACKENDS))}. Instead, received: {backend!r}"
        )
    runs = list(range(episodes)) if isinstance(episodes, int) else [int(r) for r in episodes]
    if any(r < 0 for r in runs):
        raise ValueError("Expected run indices >= 0")
    if workers is not None and workers < 1:
        raise ValueError(f"Expected workers >= 1. Instead, received: {workers!r}")
    spec = spec_of(world)
    world_seed = spec.seed if seed is None else int(seed)
    job = Job(
        world=spec if backend == "local" or spec.path is None else spec.path,
        policy=policy,
        seed=world_seed,
        prompt=prompt,
        max_steps=max_steps,
        faults=faults,
        checks=world_checks(spec, checks),
        principal=principal,
        events=events,
    )
    Episode(spec, max_steps=max_steps)  # bad arguments fail here, before any worker starts
    if backend == "local" or not runs:
        out = play_chunk(job, runs)
    elif backend == "process":
        out = _on_processes(job, runs, workers or os.cpu_count() or 1)
    else:
        out = _on_ray(job, runs, workers)
    result = Rollouts(sorted(out, key=lambda e: e.run), world_seed, backend, spec.name)
    if otel:
        from faultbench.otel import export_episodes

        export_episodes(result, None if otel is True else otel)
    return result


def _chunks(runs: list[int], n: int) -> list[list[int]]:
    """`runs` cut into at most `n` chunks of consecutive runs, sizes differing by one."""
    n = max(1, min(n, len(runs)))
    size, extra = divmod(len(runs), n)
    out, at = [], 0
    for i in range(n):
        end = at + size + (i < extra)
        out.append(runs[at:end])
        at = end
    return out


def _lost(runs: Sequence[int], why: str) -> list[EpisodeResult]:
    return [_crashed(run, why) for run in runs]


def _on_processes(job: Job, runs: list[int], workers: int) -> list[EpisodeResult]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # not fork: the caller may hold threads (a Ray driver, an event loop) a fork would copy
    # stopped; forkserver and spawn pass sys.path on, so the policy's module imports there
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    chunks = _chunks(runs, workers * 4)
    out: list[EpisodeResult] = []
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [(pool.submit(play_chunk, job, chunk), chunk) for chunk in chunks]
        for future, chunk in futures:
            try:
                out += future.result()
            except Exception as exc:  # the worker died, or the job could not travel
                out += _lost(chunk, f"the worker process failed: {_what(exc)}")
    return out


def _on_ray(job: Job, runs: list[int], workers: int | None) -> list[EpisodeResult]:
    try:
        import ray
    except ImportError as exc:
        raise ImportError(
            "rollouts(backend='ray') needs Ray: pip install 'faultbench[ray]'"
        ) from exc
    if not ray.is_initialized():
        ray.init()
    if workers is None:
        cpus = ray.cluster_resources().get("CPU", 1)  # type: ignore[no-untyped-call]  # Ray leaves it unannotated
        workers = max(1, int(cpus))
    remote = ray.remote(play_chunk)
    chunks = _chunks(runs, workers * 4)
    refs = [(remote.remote(job, chunk), chunk) for chunk in chunks]
    out: list[EpisodeResult] = []
    for ref, chunk in refs:
        try:
            got: list[EpisodeResult] = ray.get(ref)
            out += got
        except Exception as exc:  # a RayError: the task or its worker failed
            out += _lost(chunk, f"the Ray task failed: {_what(exc)}")
    return out
