"""No two modules import each other, directly or in a loop, and no import runs up the layers
(issue 26): read statically from every `import` in the engine (`banana_space/`), the page
(`page/`, with the GPU seam `page/zerogpu.py`) and the Space's entry (`app.py`), function-level
(lazy) imports
included, since a lazy import that closes a circle still ties the two modules' meaning
together. The layers, lowest first: the engine, the page, the entry."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCES = [*(REPO / "banana_space").rglob("*.py"), *(REPO / "page").rglob("*.py"),
           REPO / "app.py"]
LAYERS = {"banana_space": 0, "page": 1, "app": 2}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, name: str, modules: set[str]) -> set[str]:
    """The project's modules `path` (module `name`) imports anywhere in its body."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:  # `from . import gpu` names a module; `from .x import y`
                child = f"{target}.{alias.name}"
                found |= {child} if child in modules else ({target} & modules)
    return found - {name}


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in SOURCES}
    return {name: imports_of(path, name, set(paths)) for name, path in paths.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_the_checker_sees_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_checker_reads_relative_and_lazy_imports() -> None:
    graph = import_graph()
    # from .frames import …
    assert "banana_space.sources.frames" in graph["banana_space.sources.dispatch"]
    # imported inside a function
    assert "banana_space.sources.hub" in graph["banana_space.sources.dispatch"]
    assert "banana_space.backends.gemini" in graph["banana_space.backends"]  # from . import …


def test_no_modules_import_each_other() -> None:
    assert cycles(import_graph()) == []


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    def layer(module: str) -> int:
        return LAYERS[module.split(".")[0]]

    return sorted((module, target) for module, targets in graph.items() for target in targets
                  if layer(target) > layer(module))


def test_no_import_runs_up_the_layers() -> None:
    graph = import_graph()
    assert "page.run_tab.tab" in graph["app"] and "banana_space.gpu" in graph["page.zerogpu"]
    assert upward_imports({"banana_space.x": {"page.y"}, "page.y": set()}) == [
        ("banana_space.x", "page.y")]
    assert upward_imports(graph) == []


def wing(module: str) -> str:
    """The wing a module stands in (`banana_space.scores`, `page.door`), or the module itself
    where it stands at the top of its package."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else module


def wing_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    wings: dict[str, set[str]] = {}
    for module, targets in graph.items():
        wings.setdefault(wing(module), set()).update(
            wing(target) for target in targets if wing(target) != wing(module))
    for targets in list(wings.values()):
        for target in targets:
            wings.setdefault(target, set())
    return wings


def test_no_two_wings_import_each_other() -> None:
    assert cycles(wing_graph({"p.a.x": {"p.b.y"}, "p.b.y": {"p.a.z"}, "p.a.z": set()})) == [
        ["p.a", "p.b"]]
    assert cycles(wing_graph(import_graph())) == []


def test_every_wing_names_its_rooms() -> None:
    """At most 15 modules at the top of the engine; each wing's `__init__` has an `__all__` and
    a docstring that names every module in the wing, so its map cannot go stale."""
    top = list((REPO / "banana_space").glob("*.py"))
    assert len(top) <= 15, sorted(p.name for p in top)
    for init in [p for package in ("banana_space", "page")
                 for p in (REPO / package).glob("*/__init__.py")]:
        tree = ast.parse(init.read_text())
        named = set(re.findall(r"\w+", ast.get_docstring(tree) or ""))
        rooms = {p.stem for p in init.parent.glob("*.py") if p.name != "__init__.py"}
        assert rooms <= named, f"{init.relative_to(REPO)} does not name {sorted(rooms - named)}"
        assert any(isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__"
                   for node in tree.body), f"{init.relative_to(REPO)} has no __all__"
