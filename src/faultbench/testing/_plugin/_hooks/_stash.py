"""What the plugin keeps on pytest's nodes and config (stash keys), and a node's plan: read
by every hook family (`_collection`, `_fixtures`, `_session`; the session itself is kept
under `_session.SESSION_KEY`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from ..._gate._runs import RUN_PARAM, Plan
from .._command import ServeCommand

if TYPE_CHECKING:  # named in the keys' strings, which ruff does not read
    from faultbench.kernel import World, WorldSpec  # noqa: F401

__all__ = [
    "AGENT_CALLS_KEY",
    "COMMAND_KEY",
    "FAULTS_OFF_KEY",
    "FIXTURES",
    "PLAN_KEY",
    "PROBLEM_KEY",
    "RUN_KEY",
    "SPECS_KEY",
    "STOPPED_KEY",
    "TOLERATED_KEY",
    "WORLD_KEY",
    "is_faultbench",
    "plan_of",
    "runs_of",
]

#: a run item's identity: group, run, total, min_pass_rate (set at collection)
RUN_KEY = pytest.StashKey[dict[str, Any]]()
#: the world a run's `world` fixture made
WORLD_KEY = pytest.StashKey["World"]()
#: set on an item that early stop skips
STOPPED_KEY = pytest.StashKey[bool]()
#: parsed world files by path, shared by the runs of a session
SPECS_KEY = pytest.StashKey[dict[Path, tuple[int, "WorldSpec"]]]()
#: the `mcp_command` a run used: its journal is the run's world
COMMAND_KEY = pytest.StashKey[ServeCommand]()
#: a node's `Plan` (None: not ours), once read
PLAN_KEY = pytest.StashKey["Plan | None"]()
_UNREAD: Any = object()
#: [world file name, its fault rules] of a run the world file's rules were left off in
FAULTS_OFF_KEY = pytest.StashKey[list[Any]]()
#: the failure message of a run the gate tolerated
TOLERATED_KEY = pytest.StashKey[str]()
#: the cause of a run that was a set-up problem, not an agent failure
PROBLEM_KEY = pytest.StashKey[str]()
#: the agent helper calls (`run_agent`) a run's body made
AGENT_CALLS_KEY = pytest.StashKey[list[Any]]()
#: the fixtures that make a test one of faultbench's (its async test runs on asyncio here)
FIXTURES = ("world", "mcp_server", "mcp_url", "mcp_command", "trace", "clock", "faults")


def plan_of(node: Any, *, keep: bool = True) -> Plan | None:
    """The plan of `node`'s markers, read once per node from its set-up on (a run's hooks
    and fixtures ask for it several times); `keep=False` during collection, where another
    plugin may still add markers."""
    got = node.stash.get(PLAN_KEY, _UNREAD) if keep else _UNREAD
    if got is not _UNREAD:
        return cast("Plan | None", got)
    try:
        plan = Plan.of(node)
    except ValueError as exc:
        pytest.fail(f"{node.nodeid}: {exc}", pytrace=False)
    seed = node.config.getoption("faultbench_seed", None)
    if plan is not None and seed is not None:  # the command line's, over the marker's
        plan = dataclasses.replace(plan, seed=seed)
    if keep:
        node.stash[PLAN_KEY] = plan
    return plan


def runs_of(config: pytest.Config, plan: Plan) -> int:
    option = config.getoption("runs", None)
    return plan.runs if option is None else option


def is_faultbench(item: Any) -> bool:
    """The test carries faultbench's markers or fixtures."""
    if item.get_closest_marker("world") is not None or item.get_closest_marker("runs"):
        return True
    return any(name in FIXTURES or name == RUN_PARAM for name in item.fixturenames)
