"""docs/WORLDS.md: every world example loads (or fails, when marked `# invalid`), and the
error output it shows is what the loader prints. (tests/test_docs.py loads the examples of
every document; this file pins the ones specific to the world-file reference.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from faultbench.kernel import WorldFileError
from faultbench.kernel.lowlevel import load_spec

DOC = Path(__file__).resolve().parents[3] / "docs" / "WORLDS.md"
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.S | re.M)


def blocks(lang: str) -> list[str]:
    return [m.group(2) for m in FENCE.finditer(DOC.read_text()) if m.group(1) == lang]


def worlds() -> list[str]:
    return [b for b in blocks("yaml") if re.match(r"(#[^\n]*\n)*\s*(services|name):", b)]


def test_the_reference_has_valid_and_invalid_examples():
    examples = worlds()
    assert len([b for b in examples if b.startswith("# invalid")]) >= 2
    assert len([b for b in examples if not b.startswith("# invalid")]) >= 6


@pytest.mark.parametrize("body", worlds())
def test_world_examples(body):
    if body.startswith("# invalid"):
        with pytest.raises(WorldFileError):
            load_spec(DOC.parent / "world.yaml", text=body)
    else:
        load_spec(DOC.parent / "world.yaml", text=body)


def test_the_error_output_shown_is_what_the_loader_prints():
    invalid = next(b for b in worlds() if b.startswith("# invalid\n"))
    shown = blocks("text")[0]
    with pytest.raises(WorldFileError) as err:
        load_spec("world.yaml", text=invalid)
    assert str(err.value) + "\n" == shown
