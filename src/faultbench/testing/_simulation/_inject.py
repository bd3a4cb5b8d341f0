"""`fault_inject(...)`: faults for any Python callable, in virtual time.

The wrapper asks a kernel `InjectionPlan` for each call's decision, so a wrapped function
fails the way a world's tool fails. By default (Attest's behaviour) a failing call raises
`InjectedError`, a `RuntimeError` (and a `faultbench.InjectedFault` of kind `http_500`)
whose message is `Injected fault in <function name>`, before the function runs. With
`errors=` the kinds are typed (`http_500`, `timeout`, ... see
`faultbench.kernel.lowlevel.INJECTABLE_KINDS`),
raised as `faultbench.InjectedFault` with the kind in `.kind` and the text a tool would
answer; a `timeout` runs the function (its effects stay) and then fails,
`timeout_before_commit` and the HTTP kinds fail without running it.

Latency never sleeps. Inside a world's tool call (a mock tool, or a helper a tool calls) it
is charged to that call (`faultbench.kernel.lowlevel.running_call()`), with the fault, so the call ends
later in virtual time and `trace.faults()` lists it. Elsewhere it moves the current world's
virtual clock (`faultbench.using_world`, `scenario`, the pytest `world` fixture); without
one it is only added up (`wrapper.injected.virtual_s`). Decisions are a pure function of
(seed, run, target, k), k being this wrapper's own call count in the current world (or
`repeat` run, or else since it was made or `wrapper.injected.reset()`): the same seed and
call index give the same decision whatever ran before, and the runs of a `repeat` batch,
which have different run indexes, get different faults.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from faultbench.kernel import InjectedFault, World, current_world
from faultbench.kernel.lowlevel import InjectionPlan, running_call

from ._repeat import current_run, is_async, not_awaited

__all__ = ["Injected", "InjectedError", "fault_inject"]

#: The default kind: Attest's `RuntimeError`, raised as `InjectedError` (an http_500).
DEFAULT_KINDS = ("http_500",)
_NO_WORLD_NOW = datetime(2025, 6, 1, tzinfo=UTC)  # only rate limits read it; none here


class InjectedError(InjectedFault, RuntimeError):
    """What a `fault_inject` wrapper without `errors=` raises: `RuntimeError("Injected fault
    in <function name>")`, as Attest's, and an `InjectedFault` of kind `http_500` (a world's
    tool that raises it answers the agent with this message)."""

    kind = "http_500"


@dataclass(eq=False)
class Injected:
    """What a `fault_inject` wrapper did (`wrapper.injected`): its calls, the faults it
    injected as (k, kind), and the virtual seconds it charged (latency, timeouts).
    `reset()` clears them and restarts the wrapper's fault sequence at its first call."""

    calls: int = 0
    faults: list[tuple[int, str]] = field(default_factory=list)
    virtual_s: float = 0.0
    #: the wrapper's call counts: outside any world or run, and per world
    _own: int = field(default=0, repr=False)
    _worlds: weakref.WeakKeyDictionary[World, int] = field(
        default_factory=weakref.WeakKeyDictionary, repr=False
    )

    def reset(self) -> None:
        self.calls, self.faults, self.virtual_s, self._own = 0, [], 0.0, 0
        self._worlds.clear()

    def next_k(self, world: World | None, run: Any) -> int:
        """This call's index (1-based) in its scope: the world, else the run, else its own."""
        self.calls += 1
        if world is not None:
            k = self._worlds[world] = self._worlds.get(world, 0) + 1
        elif run is not None:
            k = run.counters[id(self)] = run.counters.get(id(self), 0) + 1
        else:
            k = self._own = self._own + 1
        return k


def _error_rates(error_rate: float, errors: Any) -> dict[str, float]:
    if isinstance(error_rate, bool) or not isinstance(error_rate, int | float):
        raise TypeError(f"Expected error_rate: float. Instead, received: {error_rate!r}")
    if not 0 <= error_rate <= 1:
        raise ValueError(f"Expected 0 <= error_rate <= 1. Instead, received: {error_rate!r}")
    if isinstance(errors, Mapping):
        if error_rate:
            raise ValueError(
                "Expected either error_rate with a list of kinds (errors=['http_503']), or "
                "errors={kind: probability} alone. Instead, received both error_rate="
                f"{error_rate!r} and errors={dict(errors)!r}."
            )
        return dict(errors)
    kinds: Sequence[str]
    if errors is None:
        kinds = DEFAULT_KINDS
    elif isinstance(errors, str):
        kinds = (errors,)
    else:
        kinds = tuple(errors)
    if not kinds:
        return {}
    return {k: error_rate / len(kinds) for k in kinds}


def fault_inject(
    error_rate: float = 0.0,
    latency_jitter_ms: float = 0,
    seed: int | None = None,
    errors: Mapping[str, float] | Sequence[str] | str | None = None,
    *,
    name: str | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap a sync or async callable so that its calls fail and take time as `errors` and
    `latency_jitter_ms` say.

    - `error_rate`: chance per call of an error: by default `InjectedError` (a
      RuntimeError, "Injected fault in <name>", raised before the function runs); with
      `errors` (a kind or a list of kinds) shared by those typed kinds; or
      `errors={"http_503": 0.05, "timeout": 0.02}` alone.
    - `latency_jitter_ms`: each call takes a uniform 0..jitter ms of virtual time (never
      a sleep).
    - `seed`: the seed of the draws; default: the current world's, else the current
      `repeat` run's, else 0.
    - `name`: "service.name" in messages (default: the function's module and name).
    """
    rates = _error_rates(error_rate, errors)
    jitter = float(latency_jitter_ms)
    InjectionPlan("check.arguments", errors=rates, latency_ms=(0.0, jitter))  # raises early
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise TypeError(f"Expected an integer seed (or None). Instead, received: {seed!r}")

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(fn):
            raise TypeError(f"Expected a function to wrap. Instead, received: {fn!r}")
        target = name or _target(fn)
        plan = InjectionPlan(target, errors=rates, latency_ms=(0.0, jitter) if jitter else None)
        stats = Injected()
        lock = threading.Lock()
        fname = getattr(fn, "__name__", None) or type(fn).__name__

        def decide() -> Any:
            world = current_world()
            run = current_run()
            with lock:
                k = stats.next_k(world, run)
            use_seed = seed
            if use_seed is None:
                use_seed = world.seed if world is not None else run.seed if run else 0
            index = world.run if world is not None else run.index if run else 0
            now = world.clock.now() if world is not None else _NO_WORLD_NOW
            decision = plan.decide(k, seed=use_seed, run=index, now=now)
            if decision is None:
                return None
            with lock:
                stats.virtual_s += decision.duration_s
                if decision.kind is not None:
                    stats.faults.append((k, decision.kind))
            call = running_call()
            if call is not None:
                # inside a world's tool: the call takes longer and records the fault
                detail = {**decision.detail(), "function": target, "k": k}
                call.charge(decision.duration_s, decision.kind, detail)
            elif world is not None and decision.duration_s:
                world.clock.advance(decision.duration_s)
            return decision

        def failure(decision: Any) -> InjectedFault:
            if errors is None:
                return InjectedError(f"Injected fault in {fname}")
            return plan.error(decision)

        if is_async(fn):

            @functools.wraps(fn)
            async def ainjected(*args: Any, **kwargs: Any) -> Any:
                decision = decide()
                if decision is None or decision.kind is None:
                    return await fn(*args, **kwargs)
                if decision.commit:
                    await fn(*args, **kwargs)
                raise failure(decision)

            ainjected.injected = stats  # type: ignore[attr-defined]  # a documented attribute of the wrapper
            return ainjected

        @functools.wraps(fn)
        def injected(*args: Any, **kwargs: Any) -> Any:
            decision = decide()
            if decision is None or decision.kind is None:
                value = fn(*args, **kwargs)
                if _is_coroutine(value):
                    raise not_awaited(fn, value)
                return value
            if decision.commit:
                fn(*args, **kwargs)
            raise failure(decision)

        injected.injected = stats  # type: ignore[attr-defined]  # a documented attribute of the wrapper
        return injected

    return decorate


def _is_coroutine(value: Any) -> bool:
    import inspect

    return inspect.iscoroutine(value)


def _target(fn: Callable[..., Any]) -> str:
    module = (getattr(fn, "__module__", None) or "app").rpartition(".")[2].strip("_") or "app"
    fname = getattr(fn, "__name__", None) or type(fn).__name__
    return f"{module}.{fname}"
