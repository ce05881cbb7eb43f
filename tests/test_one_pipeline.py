"""One pipeline, one fold, read statically from the product's code (`banana_space/`, `page/`,
`app.py`): a run's events are made in the loop only, a scorer is made in one place only, and
a scored frame's event is read only by the loop, the one fold (`History.apply`) and the
command line's printer. So a new source of frames or a new reader cannot grow a loop or a fold
of its own unnoticed."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PRODUCT = sorted([*(REPO / "banana_space").rglob("*.py"), *(REPO / "page").rglob("*.py"),
                  REPO / "app.py"])


def constructing(name: str) -> set[str]:
    """The product modules that call `name(...)`."""
    return {str(path.relative_to(REPO)) for path in PRODUCT
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == name}


def asking_for(name: str) -> set[str]:
    """The product modules that ask `isinstance(..., name)` (alone or in a tuple)."""
    found = set()
    for path in PRODUCT:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance":
                kinds = node.args[1]
                names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
                if any(getattr(kind, "id", "") == name for kind in names):
                    found.add(str(path.relative_to(REPO)))
    return found


def test_a_runs_events_are_made_in_the_loop_only() -> None:
    for event in ("Started", "FrameMade", "FrameScored", "FrameJudged"):
        assert constructing(event) == {"banana_space/chain/loop.py"}, event


def test_a_scorer_is_made_in_one_place() -> None:
    assert constructing("Scorer") == {"banana_space/chain/runs.py"}


def test_a_scored_frame_is_read_by_the_loop_the_fold_and_one_printer() -> None:
    assert asking_for("FrameScored") == {"banana_space/chain/loop.py",
                                          "banana_space/verdict/history.py",
                                          "banana_space/cli.py"}


def test_the_check_sees_a_tuple_and_a_call() -> None:
    tree = "isinstance(event, (Notice, FrameScored))"
    found = [node for node in ast.walk(ast.parse(tree)) if isinstance(node, ast.Call)]
    assert getattr(found[0].args[1].elts[1], "id", "") == "FrameScored"


def test_the_chain_wing_never_reads_the_table() -> None:
    for path in (REPO / "banana_space" / "chain").rglob("*.py"):
        assert "table" not in {part for node in ast.walk(ast.parse(path.read_text()))
                               if isinstance(node, ast.ImportFrom) and node.module
                               for part in node.module.split(".")}, path.name
