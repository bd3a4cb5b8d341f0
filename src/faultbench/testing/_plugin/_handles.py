"""What the `trace` and `faults` fixtures hand a test: live views of the run's world.

`world.trace` is an immutable snapshot of the calls so far, so a fixture that returned one at
set-up would stay empty; these read the world afresh on every use.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from faultbench.kernel import CallResult, FaultInjected, Trace, World

__all__ = ["Faults", "LiveTrace"]


class LiveTrace:
    """The `trace` fixture: `world.trace`, read anew on every use, so it always shows every
    call made so far (`trace.count("issue_refund")`, `trace.summary()`, `list(trace)`...).
    `trace.now` is the frozen `Trace` of this moment."""

    __slots__ = ("_world",)

    def __init__(self, world: World):
        self._world = world

    @property
    def now(self) -> Trace:
        return self._world.trace

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._world.trace, name)

    def __len__(self) -> int:
        return len(self._world.trace)

    def __iter__(self) -> Iterator[CallResult]:
        return iter(self._world.trace)

    def __getitem__(self, i: int) -> CallResult:
        return self._world.trace[i]

    def __bool__(self) -> bool:
        return bool(self._world.trace)

    def __str__(self) -> str:
        return str(self._world.trace)

    def __repr__(self) -> str:
        return f"<LiveTrace of {self._world.name}: {self._world.trace.summary() or 'no calls'}>"


class Faults:
    """The `faults` fixture: the fault rules of this run's world.

    `faults.rules` are the rules in force (key -> FaultRule), `faults.block` the same as a
    `faults:` block; `faults.set({...})` replaces them mid-test and `faults.clear()` removes
    them (both logged as `FaultsChanged`, so a replay of the run sees them); `faults.injected`
    lists the faults injected so far (`FaultInjected` events).
    """

    __slots__ = ("_world",)

    def __init__(self, world: World):
        self._world = world

    @property
    def rules(self) -> dict[str, Any]:
        return self._world.fault_rules

    @property
    def block(self) -> dict[str, Any]:
        from faultbench.kernel.lowlevel import render_faults

        return render_faults(self._world.fault_rules)

    @property
    def injected(self) -> list[FaultInjected]:
        return self._world.trace.faults()

    def set(self, rules: Any) -> None:
        """Replace the rules in force with a `faults:` block (dict or YAML text)."""
        self._world.set_faults(rules)

    def clear(self) -> None:
        self._world.set_faults({})

    def __bool__(self) -> bool:
        return bool(self._world.fault_rules)

    def __repr__(self) -> str:
        return f"<Faults of {self._world.name}: {self.block or 'none'}>"
