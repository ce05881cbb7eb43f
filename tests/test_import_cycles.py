"""No two engine modules import each other, directly or in a loop (issue 26): read statically
from every `import` in `banana_space/`, function-level (lazy) imports included, since a lazy
import that closes a circle still ties the two modules' meaning together."""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parent.parent / "banana_space"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ENGINE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, name: str, modules: set[str]) -> set[str]:
    """The engine modules `path` (module `name`) imports anywhere in its body."""
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
    paths = {module_name(p): p for p in ENGINE.rglob("*.py")}
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
    assert "banana_space.frames" in graph["banana_space.sources"]  # from .frames import …
    assert "banana_space.hub" in graph["banana_space.sources"]  # imported inside a function
    assert "banana_space.backends.gemini" in graph["banana_space.backends"]  # from . import …


def test_no_engine_modules_import_each_other() -> None:
    assert cycles(import_graph()) == []
