"""The `faultbench` command line. Each subcommand lives in `faultbench.commands.<name>` and
exposes `HELP`, `add_arguments(parser)` and `run(args) -> int`; modules are imported only
when their command runs, so `faultbench check` never pays for mcp or trio."""

from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType

COMMANDS = (
    "check",
    "show",
    "tools",
    "serve",
    "replay",
    "diff",
    "report",
    "shrink",
    "plan",
    "compare",
    "import",
)
#: commands whose module cannot have the command's name (`import` is a keyword)
_MODULES = {"import": "import_"}


def _load(name: str) -> ModuleType:
    return importlib.import_module(f"faultbench.commands.{_MODULES.get(name, name)}")


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="faultbench",
        description="Fake, stateful, deliberately broken worlds for tool-using AI agents.",
    )
    from faultbench import __version__

    parser.add_argument("--version", action="version", version=f"faultbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    # Only the chosen command's module is imported (the others get a stub parser for --help).
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name in COMMANDS:
        try:
            mod = _load(name) if name == chosen or chosen is None else None
        except ModuleNotFoundError as exc:
            if exc.name != f"faultbench.commands.{_MODULES.get(name, name)}":
                raise
            continue  # command not built yet
        p = sub.add_parser(name, help=getattr(mod, "HELP", None) if mod else None)
        if mod is not None:
            mod.add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv).parse_args(argv)
    # argparse requires a command, and the command it names is the one whose module was loaded.
    return int(_load(args.command).run(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
