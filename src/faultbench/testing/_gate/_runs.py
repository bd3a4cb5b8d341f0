"""What a test's markers ask for (`Plan`), what one run of it is (`RunInfo`), and how runs
are named and grouped.

Seeds: every run of a test starts from the same world, `load_world(path, seed=S, run=i)`
with S from `@pytest.mark.seed` (default: the world file's seed). The seed data depends on S
alone, so all runs start from identical records and two runs' event logs differ only where
the agent or the faults made them differ; the run index i picks the fault draws (the kernel
decides the k-th call to an operation from (S, i, operation, k)). `RunInfo.seed` is a further
per-run integer derived from (S, i), for the randomness of the code under test (a model's
sampling seed, `random.Random(faultbench_run.seed)`).
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MARKERS", "Plan", "RunInfo", "derive_seed", "group_of", "near_miss", "run_id"]

#: marker name -> the line `pytest --markers` shows
MARKERS = {
    "world": "world(path): the world file this test runs in, relative to the test file; "
    "the `world` fixture loads it fresh for every run (faultbench)",
    "faults": "faults(rules=None): the fault rules of each run: a dict (a `faults:` block), "
    "a path to a world file whose `faults:` block applies, or no argument for the test's "
    "own world file's block. Without this marker a test runs fault-free (faultbench)",
    "runs": "runs(n, concurrency=None): run this test n times, as items test_x[run0] ... "
    "(--runs N overrides); an async test runs up to `concurrency` of them at once in one event "
    "loop (default: --faultbench-concurrency, else 1) (faultbench)",
    "min_pass_rate": "min_pass_rate(rate): tolerate failing runs as long as at least this "
    "fraction (0..1) of them pass; the gate decides the exit status (faultbench)",
    "checks": "checks(**keys): grade every run on these checks besides the world file's own: "
    "expect_state=, nothing_else_changes=, policies=, milestones= (docs/CHECKS.md) (faultbench)",
    "min_mean_score": "min_mean_score(score): the mean milestone score over the runs (0..1) "
    "must reach this too; the summary shows it with its 95% t-interval (docs/CHECKS.md) "
    "(faultbench)",
    "budget": "budget(cost_usd=, tokens=, model_calls=, tool_calls=, virtual_seconds=, "
    "prices=None, per='run'): fail a run that uses more than this (its model calls and tokens "
    "as the framework reports them, cost from the price table); per='group': fail the gate "
    "of a group whose runs together use more (faultbench)",
    "compare": "compare(a, b, margin=None): the test is parametrized over agents a and b; "
    "pair their runs (same faults) and report both pass / only a / only b / both fail, the "
    "difference with its 95% interval and the exact McNemar p; with margin, fail the session "
    "unless b is shown not worse than a by more than margin (faultbench)",
    "seed": "seed(n): the world seed (default: the world file's); each run derives its own "
    "from (seed, run index) (faultbench)",
    "principal": "principal(name): in a world with auth:, the principal the run's MCP servers "
    "(mcp_server, mcp_command) act as; without it their calls carry no token (faultbench)",
}

#: a mark this close to a marker's name (difflib's ratio) is taken for a typo of it: stricter
#: than a hint's 0.6, because it is an error (`order` is not a typo of `world`)
NEAR_MISS = 0.8


def near_miss(name: str, registered: set[str]) -> str | None:
    """The faultbench marker an unregistered mark `name` is a typo of (`run` -> `runs`,
    `min_passrate` -> `min_pass_rate`), or None. pytest only warns of an unknown mark (unless
    `--strict-markers`), and a mistyped `runs` or `min_pass_rate` silently drops the gate."""
    if name in MARKERS or name in registered:
        return None
    match = difflib.get_close_matches(name, list(MARKERS), n=1, cutoff=NEAR_MISS)
    return match[0] if match else None


def registered_markers(lines: list[str]) -> set[str]:
    """The names of the `markers` ini lines (`"slow: long tests"` -> `slow`)."""
    return {line.split(":", 1)[0].split("(", 1)[0].strip() for line in lines}


#: the parameter name the runs of a test are parametrized on (also a fixture)
RUN_PARAM = "faultbench_run"


class FileFaults:
    """`@pytest.mark.faults()` with no argument: the world file's own block."""

    def __repr__(self) -> str:
        return "<the world file's faults: block>"


FILE_FAULTS = FileFaults()


@functools.lru_cache(maxsize=1024)
def _resolved(here: Path, path: str) -> Path:
    """A marker's path relative to its test file, made absolute: once per process for each
    (test folder, path), not once per run (a `resolve()` reads the file system)."""
    return (here / path).resolve()


@dataclass(frozen=True)
class Plan:
    """What the plugin's markers on one test ask for."""

    #: the world file, absolute; None for a test marked only with `runs`
    world: Path | None
    #: None: no faults marker (fault-free); FILE_FAULTS; a dict block; or a Path
    faults: Any
    runs: int
    min_pass_rate: float | None
    seed: int | None
    #: `runs(n, concurrency=k)`: runs of an async test at once (None: the command line's)
    concurrency: int | None = None

    @classmethod
    def of(cls, node: Any) -> Plan | None:
        """The plan of a test (a pytest node with markers), or None when it carries neither
        `world` nor `runs`: then the plugin leaves it alone. Raises ValueError on a marker
        used wrongly."""
        world_mark = node.get_closest_marker("world")
        runs_mark = node.get_closest_marker("runs")
        if world_mark is None and runs_mark is None:
            return None
        here = node.path.parent
        world = None
        if world_mark is not None:
            path = _one_arg(world_mark, "path")
            if not isinstance(path, str | os.PathLike):
                raise ValueError(
                    'Expected @pytest.mark.world("path/to/world.yaml") (relative to the test '
                    f"file). Instead, received: {path!r}"
                )
            world = _resolved(here, os.fspath(path))
        faults: Any = None
        faults_mark = node.get_closest_marker("faults")
        if faults_mark is not None:
            arg = _one_arg(faults_mark, "rules", optional=True)
            if arg is None:
                faults = FILE_FAULTS
            elif isinstance(arg, dict):
                faults = arg
            elif isinstance(arg, str | os.PathLike):
                faults = _resolved(here, os.fspath(arg))
            else:
                raise ValueError(
                    "Expected @pytest.mark.faults() (the world file's block), "
                    '@pytest.mark.faults({"payments.issue_refund": {...}}) or '
                    f'@pytest.mark.faults("other_world.yaml"). Instead, received: {arg!r}'
                )
        runs = 1
        concurrency = None
        if runs_mark is not None:
            concurrency = _concurrency(runs_mark)
            runs = _one_arg(runs_mark, "n")
            if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
                raise ValueError(
                    f"Expected @pytest.mark.runs(n) with n >= 1. Instead, received: {runs!r}"
                )
        rate = None
        rate_mark = node.get_closest_marker("min_pass_rate")
        if rate_mark is not None:
            rate = _one_arg(rate_mark, "rate")
            if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1:
                raise ValueError(
                    "Expected @pytest.mark.min_pass_rate(rate) with 0 <= rate <= 1 (0.95 for "
                    f"95%). Instead, received: {rate!r}"
                )
            rate = float(rate)
        seed = None
        seed_mark = node.get_closest_marker("seed")
        if seed_mark is not None:
            seed = _one_arg(seed_mark, "n")
            if isinstance(seed, bool) or not isinstance(seed, int):
                raise ValueError(
                    f"Expected @pytest.mark.seed(n) with an integer n. Instead, received: {seed!r}"
                )
        return cls(
            world=world,
            faults=faults,
            runs=runs,
            min_pass_rate=rate,
            seed=seed,
            concurrency=concurrency,
        )


def _concurrency(mark: Any) -> int | None:
    """`runs(n, concurrency=k)`'s k (None without it); the mark is left with `n` alone."""
    if "concurrency" not in mark.kwargs:
        return None
    value = mark.kwargs["concurrency"]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            "Expected @pytest.mark.runs(n, concurrency=k) with an integer k >= 1 (the runs of "
            f"an async test at once). Instead, received: concurrency={value!r}"
        )
    return value


def _one_arg(mark: Any, name: str, *, optional: bool = False) -> Any:
    args, kwargs = list(mark.args), dict(mark.kwargs)
    if mark.name == "runs":
        kwargs.pop("concurrency", None)  # checked by _concurrency
    if name in kwargs:
        args.append(kwargs.pop(name))
    if kwargs or len(args) > 1 or (not args and not optional):
        shown = ", ".join([*map(repr, mark.args), *(f"{k}={v!r}" for k, v in mark.kwargs.items())])
        raise ValueError(
            f"Expected @pytest.mark.{mark.name}({name}{'=None' if optional else ''}). "
            f"Instead, received: @pytest.mark.{mark.name}({shown})"
        )
    return args[0] if args else None


@dataclass(frozen=True)
class RunInfo:
    """The `faultbench_run` fixture: which run this is.

    `index` is the run index (0-based; the world's fault draws), `total` the number of runs of
    the test, `world_seed` the world's seed (None for a test without a world marker) and
    `seed` an integer derived from (world seed, index) for the code under test's own
    randomness.
    """

    index: int
    total: int
    seed: int
    world_seed: int | None


def derive_seed(seed: int, index: int) -> int:
    """A run's seed: a 63-bit integer from (seed, run index), the same on every machine."""
    digest = hashlib.blake2b(f"faultbench-run:{seed}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def run_id(index: int) -> str:
    return f"run{index}"


def group_of(nodeid: str, index: int) -> str:
    """The group a run belongs to: its node id without the run's own id, so
    `t.py::test_x[run4]` -> `t.py::test_x` and `t.py::test_x[case-a-run4]` ->
    `t.py::test_x[case-a]` (runs are parametrized last, so their id comes last)."""
    token = run_id(index) + "]"
    if nodeid.endswith("[" + token):
        return nodeid[: -len(token) - 1]
    if nodeid.endswith("-" + token):
        return nodeid[: -len(token) - 1] + "]"
    return nodeid  # ids pytest made unique in its own way: a group of its own
