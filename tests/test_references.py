"""Nothing in src/, tests/, docs/, README.md or pyproject.toml cites a file the repository does
not hold: a document (`*.md`), a module by its private name (`_kinds.py`) or by a path
(`kernel/_calls/_loops.py`, `tests/serve/test_seam.py`). A clone must be able to follow every
reference, and a module renamed or split takes its old name out of every docstring.

Examples that stand for the reader's own files (`tests/test_refund.py` in a tutorial) are
listed in `THEIRS`; a file a test writes is not cited by a path into the repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).parents[1]

#: the reader's files in examples and tutorials (never ours)
THEIRS = {
    "tests/test_refund.py",
    "tests/test_agent.py",
    "tests/test_stdio.py",
    "tests/test_mistakes.py",
    "tests/test_repeat.py",
    "tests/t.py",
    "worlds/stripe_handlers.py",
    "worlds/time_handlers.py",
    "summary.md",  # $GITHUB_STEP_SUMMARY's file, in a test of what is written there
}
#: a file name or path ending in .py or .md, not inside a longer word or path
REF = re.compile(r"(?<![\w./-])((?:\.\./|[\w.-]+/)*[\w.-]*\w\.(?:py|md))(?![\w/])")


def held() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [f for f in out.splitlines() if (ROOT / f).exists()]


def scanned(files: list[str]) -> list[str]:
    return [
        f
        for f in files
        if (f.startswith(("src/", "tests/", "docs/")) or f in ("README.md", "pyproject.toml"))
        and f.endswith((".py", ".md", ".toml", ".html"))
    ]


class Held:
    """The repository's files, by path, by name and by the folders on their paths."""

    def __init__(self, files: list[str]):
        self.files = files
        self.names = {PurePosixPath(f).name for f in files}
        self.folders = {part for f in files for part in PurePosixPath(f).parts[:-1]}
        self.suffixes = {
            "/".join(f.split("/")[i:]) for f in files for i in range(len(f.split("/")))
        }


def missing(text: str, where: str, repo: Held) -> list[str]:
    out = []
    for ref in REF.findall(text):
        parts = ref.split("/")
        if ref in THEIRS:
            continue
        # a module is cited by its private name or by a path from a folder of ours; a bare
        # `name.py` without either is an example's file (a test writes `test_shop.py`)
        if ref.endswith(".py") and not (
            parts[-1].startswith("_") or (len(parts) > 1 and parts[0] in repo.folders | {".."})
        ):
            continue
        if ref.startswith("../"):
            found = (ROOT / PurePosixPath(where).parent / ref).resolve().exists()
        elif "/" in ref:
            found = ref in repo.suffixes
        else:
            found = ref in repo.names
        if not found:
            out.append(ref)
    return out


REPO = Held(held())


def test_no_reference_to_a_missing_file():
    broken = []
    for f in scanned(REPO.files):
        if f == "tests/test_references.py":  # its examples below cite missing files
            continue
        for n, line in enumerate((ROOT / f).read_text("utf-8").splitlines(), 1):
            broken += [f"{f}:{n}: {ref}" for ref in missing(line, f, REPO)]
    assert broken == []


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("the API of DESIGN.md", ["DESIGN.md"]),
        ("see STYLE.md, 17", ["STYLE.md"]),
        ("the registry (`_faultkinds.py`)", ["_faultkinds.py"]),
        ("`kernel/_loops.py` installs", ["kernel/_loops.py"]),
        ("`kernel/_calls/_loops.py` installs", []),
        ("docs/FAULTS.md and [the map](ARCHITECTURE.md)", []),
        ("`tests/serve/test_seam.py`", []),
        ("`tests/serve/test_nowhere.py`", ["tests/serve/test_nowhere.py"]),
        ("write test_shop.py in tmp_path", []),
        ("[security](../SECURITY.md)", []),
    ],
)
def test_what_counts_as_a_reference(text, found):
    assert missing(text, "docs/CLI.md", REPO) == found
