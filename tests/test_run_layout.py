"""A run's folder is spelled in one module (`banana_space/store/run.py`, issue 34: "a run is one
object"): no other module of the engine, the page or the Space's entry writes a run's file name
in its code (read statically, as tests/test_import_cycles.py reads imports; docstrings and
comments may describe the layout). And looking a run up only looks: it never brings a run in."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from banana_space.store.run import Run, frame_files, frame_name, is_thumbnail
from banana_space.store.runids import BadRunId, open_run

REPO = Path(__file__).resolve().parent.parent
SOURCES = [*(REPO / "banana_space").rglob("*.py"), *(REPO / "page").rglob("*.py"),
           REPO / "app.py"]
THE_RUN = REPO / "banana_space" / "store" / "run.py"
# Pieces of a run's file names: run.json, frames' and thumbnails' names, the dot-files, the
# recording's manifest. "step_seed" (a backend's fact) is a word, not a file.
SPELLINGS = ("run.json", "step_0", "step_*", "step_{", ".thumbs", ".owner", ".writer.lock",
             "remake.json", "frames/")


def spelled(source: str) -> list[str]:
    """The string constants in `source`'s code (f-strings' literal parts too, docstrings left
    out) that spell a piece of a run's file names."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings
            and any(piece in node.value for piece in SPELLINGS)]


def test_the_finder_sees_a_spelled_name_in_code_but_not_in_a_docstring() -> None:
    assert spelled('"""Reads run.json."""\nMETA = "run.json"\n') == ["run.json"]
    assert spelled('def f(run, step):\n    return run / f".thumbs/x{step}"\n') == [".thumbs/x"]
    assert spelled('def f(run):\n    """Its frames/step_000.png."""\n    return run\n') == []


def test_only_the_run_module_spells_a_runs_file_names() -> None:
    found = {str(path.relative_to(REPO)): hits for path in SOURCES if path != THE_RUN
             for hits in [spelled(path.read_text())] if hits}
    assert not found, f"ask banana_space.store.run.Run for these instead: {found}"
    assert spelled(THE_RUN.read_text())  # the layout is spelled, there


def test_a_run_finds_its_files(tmp_path: Path) -> None:
    run = Run(tmp_path / "a-run")
    assert run.frame_path(7).name == frame_name(7) and run.frame_path(7).parent == run.frames_dir
    assert is_thumbnail(run.thumb_path(7)) and not is_thumbnail(run.frame_path(7))
    assert not run.exists() and not run.has_frame(0)
    run.frames_dir.mkdir(parents=True)
    run.thumb_path(0).parent.mkdir()
    run.thumb_path(0).write_bytes(b"a thumbnail")
    assert run.has_frame(0) and run.shown_frame(0) == run.thumb_path(0)
    run.frame_path(0).write_bytes(b"a frame")
    assert run.shown_frame(0) == run.frame_path(0)
    assert frame_files(run.frames_dir) == [run.frame_path(0)]
    assert run.made_by is None
    run.mark_owner("someone")
    assert run.made_by == "someone" and run.owners == {"someone"}
    run.mark_owner("a-browser", "its-token")  # the first is the share's; each owns it
    assert run.made_by == "a-browser" and run.owners == {"a-browser", "its-token"}


def test_opening_a_run_by_its_id_never_brings_one_in(tmp_path: Path) -> None:
    """A bundled recording's id names no run of an empty runs folder until someone asks for it
    to be brought in (`persist.restore`); opening it only looks."""
    recording = next(p.name for p in (REPO / "assets" / "recorded").iterdir() if p.is_dir())
    with pytest.raises(BadRunId, match="No run called"):
        open_run(tmp_path, recording)
    assert list(tmp_path.iterdir()) == []
