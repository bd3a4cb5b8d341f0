"""`pytest --faultbench-shrink` on the fault kinds of issue 21 (pages, a timeout under
idempotency keys, auth, the event feed, conflicts): for each family, the shrunk plan pins the
one fault that failed the run, and the command it prints reproduces the failure. The agents
are tests/testing/kinds/suite.py; the probes are pytest processes, as for every kind."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

KINDS = Path(__file__).parent / "kinds"
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"

#: test -> the operation and kind of the fault its shrunk plan must pin
PINNED = {
    "test_pages": ("list_charges", "truncated_page"),
    "test_idempotency": ("add_note", "timeout"),
    "test_token_expired": ("get_ticket", "token_expired"),
    "test_revoked": ("get_ticket", "revoked"),
    "test_feed": ("list_events", "duplicate_delivery"),
    "test_conflict": ("update_ticket", "conflict"),
}


@pytest.fixture(scope="module")
def shrunk(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("kinds")
    (folder / "world.yaml").write_text((KINDS / "world.yaml").read_text())
    (folder / "test_kinds.py").write_text((KINDS / "suite.py").read_text())
    (folder / "pytest.ini").write_text(INI)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--faultbench-shrink"],
        cwd=folder, capture_output=True, text=True, timeout=900, check=False,
        env={**os.environ, "FAULTBENCH_PYTEST": "pytest"},  # reproduce lines: `pytest ...`
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr  # every gate fails
    return folder, proc.stdout


@pytest.mark.parametrize("test", PINNED)
def test_the_shrunk_plan_pins_the_failing_fault(shrunk, test):
    _folder, out = shrunk
    op, kind = PINNED[test]
    head = re.search(rf"^test_kinds\.py::{test}\[run(\d+)\]: fails with only: (.*)$", out, re.M)
    assert head, out
    got = head.group(2)
    pin = re.fullmatch(rf"{op}#(\d+) {kind} \(of \d+ faults?\)", got)
    assert pin, got
    k = int(pin.group(1))
    # The same pin is the original run's fault: its log had `kind` at call k of `op`.
    gate = out.index(f"test_kinds.py::{test}: ")  # its summary, above the shrunk section
    tolerated = re.compile(rf"^    run{head.group(1)} \(tolerated\): (.*)$", re.M).search(out, gate)
    assert tolerated, out
    assert [c for c in tolerated.group(1).split(" → ") if c.startswith(op)][k - 1] == (
        f"{op}!{kind}"
    )
    lines = out[head.end() :].splitlines()
    reproduce = lines[2].strip()
    args = shlex.split(reproduce.removeprefix("Reproduce: pytest "))
    assert json.loads(args[-1]) == {f"desk.{op}": {"script": {str(k): kind}}}


def test_the_printed_command_reproduces_the_failure(shrunk, pytester: pytest.Pytester):
    folder, out = shrunk
    reproduce = re.search(
        r'Reproduce: pytest ("test_kinds\.py::test_pages\[run\d+\]".*)$', out, re.M
    )
    assert reproduce, out
    pytester.makefile(".yaml", world=(folder / "world.yaml").read_text())
    pytester.makepyfile(test_kinds=(folder / "test_kinds.py").read_text())
    pytester.makeini(INI)
    rerun = pytester.runpytest("-p", "no:cacheprovider", *shlex.split(reproduce.group(1)))
    rerun.stdout.fnmatch_lines(["*1 tolerated*"])
    assert "list_charges!truncated_page" in rerun.stdout.str()


def test_a_page_kind_in_a_faults_marker_on_a_list_without_pages(pytester: pytest.Pytester):
    pytester.makefile(".yaml", world=(KINDS / "world.yaml").read_text())
    pytester.makeini(INI)
    pytester.makepyfile(
        test_marker="""
import pytest

@pytest.mark.world("world.yaml")
@pytest.mark.faults({"desk.list_notes": {"errors": {"truncated_page": 0.1}}})
def test_notes(world):
    pass
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["*truncated_page cannot happen to desk.list_notes, a list without `page:`*"]
    )
    assert "give list_notes pages (`page: {style: cursor}`" in result.stdout.str()
