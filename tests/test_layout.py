"""The layout's promises that import-linter does not check: no import circle anywhere in
`src/` (TYPE_CHECKING and function-level imports included), and folders of a readable size.
docs/ARCHITECTURE.md draws the stages these tests keep apart."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "faultbench"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def import_graph() -> dict[str, set[str]]:
    """module -> the faultbench modules it imports, wherever the import statement stands."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        here = name.split(".") if is_package else name.split(".")[:-1]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
                edges.update(t for t in targets if t in modules)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[: len(here) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    # `from pkg import mod` imports the module; `from mod import name` the module
                    sub = f"{target}.{alias.name}"
                    if sub in modules:
                        edges.add(sub)
                    elif target in modules:
                        edges.add(target)
        edges.discard(name)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of `graph` (as a path that returns to its start), or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(graph, WHITE)
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = GREY
        stack.append(node)
        for nxt in sorted(graph[node]):
            if colour[nxt] == GREY:
                return [*stack[stack.index(nxt) :], nxt]
            if colour[nxt] == WHITE and (found := visit(nxt)):
                return found
        stack.pop()
        colour[node] = BLACK
        return None

    for node in sorted(graph):
        if colour[node] == WHITE and (found := visit(node)):
            return found
    return None


def test_the_graph_sees_every_kind_of_import():
    graph = import_graph()
    # relative, function-level (lazy) and TYPE_CHECKING imports are all edges
    assert "faultbench.kernel._calls" in graph["faultbench.kernel._world._world"]
    fixtures = "faultbench.testing._plugin._hooks._fixtures"
    assert "faultbench.serve" in graph[fixtures]  # imported inside the fixtures
    assert "faultbench.kernel._store._book" in graph["faultbench.kernel._store._tables"]


def test_find_cycle_finds_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_src_has_no_import_circle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


KERNEL = "faultbench.kernel."
STAGES = sorted(p.name for p in (PACKAGE / "kernel").iterdir() if (p / "__init__.py").exists())


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and module.startswith(KERNEL) and parts[2] in STAGES else None


def test_stages_are_entered_through_their_face():
    # a module inside a kernel stage is the stage's own business: every other module (another
    # stage, the kernel's two doors, a shell) imports the stage package, whose `__all__` is the
    # stage's face
    graph = import_graph()
    reaching_in = sorted(
        f"{source} -> {target}"
        for source, targets in graph.items()
        for target in targets
        if (stage := _stage(target)) and target != f"{KERNEL}{stage}" and _stage(source) != stage
    )
    assert reaching_in == []


def test_every_stage_face_names_what_it_exports():
    import importlib

    for stage in STAGES:
        face = importlib.import_module(f"{KERNEL}{stage}")
        exported = getattr(face, "__all__", None)
        assert exported, f"{stage}/__init__.py has no __all__"
        missing = [name for name in exported if not hasattr(face, name)]
        assert missing == [], f"{stage}/__init__.py lists {missing} but does not provide them"


def test_no_folder_is_a_pile():
    # a folder of more than a dozen modules is a stage waiting to be split
    # (docs/ARCHITECTURE.md, "Where does a change go")
    for folder in sorted({p.parent for p in PACKAGE.rglob("*.py")}):
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        assert len(modules) <= 13, f"{folder.relative_to(SRC)} holds {len(modules)} modules"


def test_long_modules_explain_themselves():
    # over 500 lines, a module is read by its banner sections (`# ---` lines with a title)
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text().splitlines()
        if len(lines) > 500:
            banners = [i for i, line in enumerate(lines) if line.startswith("# ----")]
            assert len(banners) >= 4, f"{path.relative_to(SRC)}: {len(lines)} lines, no banners"


def test_the_module_map_names_every_module():
    # docs/ARCHITECTURE.md's module map is how a newcomer finds a room: it must list them all
    text = (SRC.parent / "docs" / "ARCHITECTURE.md").read_text()
    missing = [
        str(p.relative_to(PACKAGE))
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.name != "__init__.py" and p.name not in text
    ]
    assert missing == [], f"docs/ARCHITECTURE.md does not mention {missing}"
