"""docs/FAULTS.md: its world loads and every `faults:` example in it parses against that world."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from faultbench.kernel._faults._kinds import ERROR_KINDS
from faultbench.kernel._faults._plan import FaultPlan
from faultbench.kernel.lowlevel import load_spec, parse_faults

DOC = Path(__file__).resolve().parents[3] / "docs" / "FAULTS.md"
FENCE = re.compile(r"^```yaml[^\n]*\n(.*?)^```", re.S | re.M)


def yaml_blocks() -> list[tuple[int, str]]:
    text = DOC.read_text()
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in FENCE.finditer(text)]


def test_every_fault_example_parses_against_the_documented_world():
    blocks = yaml_blocks()
    world_line, world_text = blocks[0]
    assert world_text.startswith("name: shop")
    spec = load_spec(f"docs/FAULTS.md:{world_line}", text=world_text)
    examples = blocks[1:]
    assert len(examples) >= 18
    for line, body in examples:
        rules = parse_faults(body, spec, source=f"docs/FAULTS.md:{line}")
        assert rules, f"docs/FAULTS.md:{line}: no rules parsed"
        # and the plan accepts them for every tool
        plan = FaultPlan(rules, seed=1, run=0)
        for op in spec.operations.values():
            plan.rule_for(op)


def test_every_kind_has_a_one_line_example():
    bodies = [body for _, body in yaml_blocks()[1:]]
    one_liners = [yaml.safe_load(b) for b in bodies if b.count("\n") == 1]
    mentioned = set()
    for block in one_liners:
        for rule in block.values():
            mentioned.update((rule.get("errors") or {}).keys())
            mentioned.update(k for k in ("rate_limit", "not_found_if_newer_than") if k in rule)
            mentioned.update(v for v in (rule.get("script") or {}).values() if isinstance(v, str))
    assert set(ERROR_KINDS) <= mentioned
    assert {"rate_limit", "not_found_if_newer_than"} <= mentioned
