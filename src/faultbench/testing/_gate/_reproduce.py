"""The command that reproduces a run: the launcher the user ran pytest with, the run's node
id, and every option that shaped the run, quoted for a POSIX shell.

The launcher: `FAULTBENCH_PYTEST` when set (the words that start pytest: `poetry run pytest`,
`tox -e py --`), else `uv run pytest` under `uv run` (it sets `UV_RUN_RECURSION_DEPTH`),
`hatch run [ENV:]pytest` in a hatch environment (`HATCH_ENV_ACTIVE`), `python -m pytest` when
Python was started with `-m pytest`, else `pytest`. A bare `pytest` in another shell may be
another installation without faultbench (the project's lives in its virtual environment), so
the launcher matters as much as the node id.

The options: `--runs`, `--faultbench-faults`, `--faultbench-concurrency`, and the command
line's `-p` (plugins loaded or blocked), `-c` (the configuration file), `-o` (ini overrides)
and `--rootdir`: what decides which world, faults, plugins and event loop a run gets.
Options that only choose what is written where (`--junitxml`, `--faultbench-report`, `-n`...)
are left out.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

__all__ = ["launcher", "reproduce_command", "shaping_options"]

#: pytest's own options that shape a run, each taking one value
_WITH_VALUE = ("-p", "-c", "-o", "--override-ini", "--rootdir", "--config-file")
#: characters that need no quoting inside double quotes in a POSIX shell
_UNSAFE_IN_DOUBLE = set('$`"\\!')


def launcher() -> list[str]:
    """The words that start pytest the way the user started it."""
    given = os.environ.get("FAULTBENCH_PYTEST")
    if given:
        return shlex.split(given)
    hatch = os.environ.get("HATCH_ENV_ACTIVE")
    if hatch:
        return ["hatch", "run", "pytest" if hatch == "default" else f"{hatch}:pytest"]
    argv = list(getattr(sys, "orig_argv", ()))
    by_module = len(argv) >= 3 and argv[1:3] == ["-m", "pytest"]
    words = ["python", "-m", "pytest"] if by_module else ["pytest"]
    if os.environ.get("UV_RUN_RECURSION_DEPTH"):
        words = ["uv", "run", *words]
    return words


def shaping_options(config: pytest.Config) -> list[str]:
    """The options of this session that shaped its runs, as command-line words."""
    words: list[str] = []
    args = list(config.invocation_params.args)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _WITH_VALUE and i + 1 < len(args):
            words += [arg, args[i + 1]]
            i += 2
            continue
        if (
            arg.startswith(("-p", "-o")) and len(arg) > 2 and not arg.startswith("--")
        ) or arg.startswith(tuple(o + "=" for o in _WITH_VALUE if o.startswith("--"))):
            words.append(arg)
        i += 1
    runs = config.getoption("runs", None)
    if runs is not None:
        words += ["--runs", str(runs)]
    seed = config.getoption("faultbench_seed", None)
    if seed is not None:
        words += ["--faultbench-seed", str(seed)]
    faults = config.getoption("faultbench_faults", None)
    if faults is not None:
        words += ["--faultbench-faults", faults]
    concurrency = config.getoption("faultbench_concurrency", None)
    if concurrency is not None:
        words += ["--faultbench-concurrency", str(concurrency)]
    return words


def quote(word: str) -> str:
    """`word` for a POSIX shell: as it is when nothing in it is special, in double quotes
    when that suffices (a node id's brackets), else in single quotes."""
    if word and all(c.isalnum() or c in "@%+=:,./-_" for c in word):
        return word
    if not _UNSAFE_IN_DOUBLE & set(word):
        return f'"{word}"'
    return shlex.quote(word)


def reproduce_command(nodeid: str, options: Sequence[str], words: Sequence[str]) -> str:
    """`uv run pytest "tests/t.py::test_x[run5]" --runs 20`: the launcher `words`, the node
    id and `options`, quoted."""
    return " ".join(
        [*words, f'"{nodeid}"' if _plain(nodeid) else quote(nodeid)] + [quote(o) for o in options]
    )


def _plain(nodeid: str) -> bool:
    return not _UNSAFE_IN_DOUBLE & set(nodeid)
