"""docs/CLI.md stays true: its console examples print what it shows, and it documents every
flag of every command."""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ..serve.serve_helpers import ServeProcess

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "CLI.md").read_text()
COMMANDS = ("check", "show", "tools", "serve", "replay", "diff", "report", "shrink")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "faultbench.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=60,
    )


def console_examples() -> list[tuple[str, list[str]]]:
    """(command line, the output lines shown under it up to `...`) for runnable examples."""
    found = []
    for block in re.findall(r"^```console\n(.*?)^```", DOC, re.S | re.M):
        lines = block.splitlines()
        for i, line in enumerate(lines):
            cmd = line.removeprefix("$ ").split("#")[0].strip()
            if not line.startswith("$ faultbench ") or cmd.split()[1] not in (
                "check",
                "show",
                "tools",
            ):
                continue
            if "WORLD" in cmd:
                continue  # the synopsis
            shown = []
            for out in lines[i + 1 :]:
                if out.startswith("$ ") or out == "...":
                    break
                shown.append(out)
            found.append((cmd, shown))
    return found


@pytest.mark.parametrize(("cmd", "shown"), console_examples(), ids=lambda v: str(v)[:60])
def test_console_example_prints_what_the_doc_shows(cmd, shown):
    proc = run(*shlex.split(cmd)[1:])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[: len(shown)] == shown


def help_flags(command: str) -> set[str]:
    """Every option of `faultbench COMMAND --help`, short and long (`-t`, `--table`)."""
    options = run(command, "--help").stdout.split("options:", 1)[1]
    flags = set()
    for line in options.splitlines():
        head = re.match(r"^\s+(-[^ ].*?)(?:  |$)", line)
        if head:
            flags |= set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", head.group(1)))
    return flags - {"-h", "--help"}


def doc_section(command: str) -> str:
    return DOC.split(f"## `faultbench {command}", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_flag_is_documented(command):
    flags = help_flags(command)
    missing = sorted(f for f in flags if f.startswith("--") and f"`{f}" not in doc_section(command))
    assert not missing, f"docs/CLI.md does not document {command} {missing}"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_documented_flag_exists(command):
    """The flag tables name no option the command does not take (short forms included)."""
    rows = [line for line in doc_section(command).splitlines() if line.startswith("| `-")]
    documented = {
        flag for row in rows for flag in re.findall(r"`(--?[a-zA-Z][\w-]*)", row.split(" | ", 1)[0])
    }
    unknown = sorted(documented - help_flags(command))
    assert not unknown, f"docs/CLI.md documents {command} {unknown}, which --help does not list"


def serve_example(args: str) -> str:
    """The line docs/CLI.md shows under `$ faultbench serve examples/... ARGS`."""
    block = re.search(
        rf"^\$ faultbench serve examples/shop/worlds/shop\.yaml {re.escape(args)}\n(.*)$",
        DOC,
        re.M,
    )
    assert block, f"docs/CLI.md has no serve example with {args!r}"
    return block.group(1)


def test_serve_example_prints_the_url_line_the_doc_shows():
    server = ServeProcess(str(ROOT / "examples/shop/worlds/shop.yaml"), "--http", "--port", "0")
    try:
        port = re.search(r":(\d+)/mcp", server.url).group(1)
        shown = re.sub(r"127\.0\.0\.1:\d+", f"127.0.0.1:{port}", serve_example("--http --port 0"))
        assert server.stderr_lines[0].rstrip("\n") == shown
    finally:
        server.kill()


def test_serve_example_of_a_port_in_use_is_what_it_prints():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run("serve", "examples/shop/worlds/shop.yaml", "--http", "--port", str(port))
    assert proc.returncode == 1
    shown = serve_example("--http --port 8000").replace(":8000:", f":{port}:")
    assert proc.stderr == shown + "\n"
