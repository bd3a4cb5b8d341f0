"""Every example in README.md and docs/*.md runs here.

- ```yaml blocks that start with `services:` or `name:` are world files: they must load
  (a block whose first line is `# invalid` must fail to load instead).
- ```python blocks run in order, one namespace per document, from the repository root.
  A block fenced ```python mcp1 is for a framework that needs mcp 1.x (docs/INTEGRATIONS.md):
  it runs in the mcp 1.x environment (.ci/run), where the other blocks do not.
  A block fenced ```python ray needs Ray (docs/ENVIRONMENTS.md): without it installed, that
  block is left out and the test says so as a skip, after the document's other blocks ran.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

import pytest

from faultbench import WorldFileError
from faultbench.kernel.lowlevel import load_spec
from faultbench.serve import MCP_VERSION

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.S | re.M)
MCP1 = MCP_VERSION.startswith("1.")


def blocks(path: Path, lang: str) -> list[tuple[int, str]]:
    """The document's blocks of `lang`; for python, those of this environment only."""
    return [(line, body) for line, body, _ in tagged(path, lang)]


def tagged(path: Path, lang: str) -> list[tuple[int, str, list[str]]]:
    """`blocks`, each with the words after its fence's language (`ray`, `mcp1`)."""
    text = path.read_text()
    return [
        (text.count("\n", 0, m.start()) + 1, m.group(3), m.group(2).split())
        for m in FENCE.finditer(text)
        if m.group(1) == lang and (lang != "python" or ("mcp1" in m.group(2).split()) == MCP1)
    ]


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("doc", DOCS, ids=_id)
def test_world_examples_load(doc: Path):
    for line, body in blocks(doc, "yaml"):
        if not re.match(r"(#[^\n]*\n)*\s*(services|name):", body):
            continue
        where = f"{_id(doc)}:{line}"
        if body.startswith("# invalid"):
            with pytest.raises(WorldFileError):
                load_spec(where, text=body)
        else:
            load_spec(where, text=body)


@pytest.mark.parametrize("doc", [d for d in DOCS if blocks(d, "python")], ids=_id)
def test_python_examples_run(doc: Path, capsys):
    import importlib.util

    namespace: dict = {"__name__": "__doc_example__"}
    left_out = []
    with contextlib.chdir(ROOT):
        for line, body, tags in tagged(doc, "python"):
            if "ray" in tags and importlib.util.find_spec("ray") is None:
                left_out.append(f"{_id(doc)}:{line}")
                continue
            code = compile(body, f"{_id(doc)}:{line}", "exec")
            exec(code, namespace)
    capsys.readouterr()
    if left_out:
        pytest.skip(f"Ray is not installed: its examples not run ({', '.join(left_out)})")


def test_readme_links_every_doc():
    readme = (ROOT / "README.md").read_text()
    docs = [f"docs/{p.name}" for p in sorted((ROOT / "docs").glob("*.md"))]
    linked = set(re.findall(r"\]\(([^)#]+)\)", readme))
    assert [d for d in [*docs, "SECURITY.md", "CHANGELOG.md"] if d not in linked] == []


def test_readme_names_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Two commands\n", 1)[1].split("\n## ", 1)[0]
    first_block = section.split("```console\n", 1)[1].split("```", 1)[0]
    assert first_block.splitlines() == ["$ uv run pytest", "$ uv run pytest examples/shop"]
    assert readme.index("## Before you start") < readme.index("## Two commands")
    assert "$ uv run faultbench check examples/shop/worlds/shop.yaml" in readme
    assert os.path.exists(ROOT / "examples/shop/worlds/shop.yaml")


@pytest.mark.skipif(MCP1, reason="the README's examples run in the main environment (mcp 2.x)")
def test_readme_example_shows_double_refunds(capsys):
    """The README claims blind retries double-refund some runs; hold it to that."""
    namespace: dict = {"__name__": "__doc_example__"}
    with contextlib.chdir(ROOT):
        for line, body in blocks(ROOT / "README.md", "python"):
            exec(compile(body, f"README.md:{line}", "exec"), namespace)
    out = capsys.readouterr().out
    assert 0 < namespace["passed"] < 20
    assert "get_order → issue_refund!timeout → issue_refund" in out
    assert f"{namespace['passed']}/20 runs refunded exactly once" in out
