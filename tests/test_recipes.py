"""The maps stay true: every file a README recipe names exists, the README's map names every
engine module (a backend's or a judge's plug-in file is named by its wing's table), and the
page's `__init__` names every module and folder of `page/`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
# A path in backticks: folders and a file with its suffix ("banana_space/scores/rulers.py").
PATH = re.compile(r"`((?:[\w.-]+/)+[\w.-]+\.\w+|[\w.-]+\.(?:py|md|csv))`")


def section(heading: str) -> str:
    """The README's text under `heading`, up to the next heading of its level."""
    start = README.index(f"\n## {heading}")
    end = README.find("\n## ", start + 1)
    return README[start:end if end > 0 else None]


def recipes() -> dict[str, list[str]]:
    """Each recipe (a bullet of "Recipes") -> the files it names."""
    found = {}
    for bullet in re.split(r"\n- \*\*", section("Recipes"))[1:]:
        bullet = bullet.split("\n\n", 1)[0]  # the list ends at the first blank line
        name = bullet.split("**", 1)[0]
        found[name] = PATH.findall(bullet)
    return found


def test_every_recipe_names_files_that_exist() -> None:
    found = recipes()
    assert {"A metric.", "A generator.", "A judge.", "A tab.", "A verdict column.",
            "A leaderboard column."} <= set(found)
    for name, files in found.items():
        assert files, f"the recipe {name!r} names no file"
        missing = [file for file in files if not (REPO / file).exists()]
        assert not missing, f"the recipe {name!r} names files that are gone: {missing}"


def test_the_recipe_check_fails_on_a_file_that_is_gone() -> None:
    assert PATH.findall("one row in `banana_space/scores/gone.py`") == [
        "banana_space/scores/gone.py"]
    assert not (REPO / "banana_space/scores/gone.py").exists()


def test_the_readme_map_names_every_engine_module() -> None:
    """Every module of the engine is in the map (by name, under its wing's line); the plug-in
    files of `backends/` and `judges/` are named by their wing's own table."""
    words = {word.removesuffix(".py")
             for word in re.findall(r"[\w.]+", section("Where things live"))}
    plugins = {wing: registered(wing) for wing in ("backends", "judges")}
    missing = []
    for path in sorted((REPO / "banana_space").rglob("*.py")):
        wing = path.parent.name
        if path.name == "__init__.py" or path.stem in plugins.get(wing, set()):
            continue
        if path.stem not in words:
            missing.append(str(path.relative_to(REPO)))
    assert not missing, f"the README's map leaves out {missing}"


def registered(wing: str) -> set[str]:
    """The plug-in modules a registry wing's face lists in its table (`_MODULES`)."""
    tree = ast.parse((REPO / "banana_space" / wing / "__init__.py").read_text())
    tables = [node.value for node in ast.walk(tree)
              if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_MODULES"
              or isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_MODULES"]
    return {name.id for table in tables if table is not None
            for name in ast.walk(table) if isinstance(name, ast.Name)}


def test_the_page_face_names_every_module_and_folder() -> None:
    named = set(re.findall(r"[\w.]+", ast.get_docstring(ast.parse(
        (REPO / "page" / "__init__.py").read_text())) or ""))
    rooms = {p.stem for p in (REPO / "page").glob("*.py") if p.name != "__init__.py"}
    folders = {p.name for p in (REPO / "page").iterdir()
               if p.is_dir() and (p / "__init__.py").is_file()}
    assert not (rooms | folders) - {name.removesuffix(".py") for name in named}


def test_every_wing_face_is_a_map() -> None:
    """A wing's `__init__` is at most 50 lines: a map, or a registry table of plug-ins."""
    for init in [*(REPO / "banana_space").glob("*/__init__.py"),
                 *(REPO / "page").glob("*/__init__.py"), REPO / "page" / "__init__.py"]:
        lines = len(init.read_text().splitlines())
        assert lines <= 50, f"{init.relative_to(REPO)} is {lines} lines"
