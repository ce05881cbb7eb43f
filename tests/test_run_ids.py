"""A run id names a directory inside the runs folder, and nothing else (issue 13, item 1; issue
18, items 1 and 9): every refusal is a clear message quoting no server path. The endpoints that
take a run id are checked in tests/test_api_safety.py."""

from __future__ import annotations

import pytest

from banana_space.store.runids import BadRunId, run_path


def test_run_ids_name_directories_inside_the_runs_folder_only(tmp_path) -> None:
    root, outside = tmp_path / "runs", tmp_path / "outside"
    (root / "good").mkdir(parents=True)
    (root / "good" / "run.json").write_text("{}")
    outside.mkdir()
    (outside / "run.json").write_text("{}")
    (root / "out").symlink_to(outside, target_is_directory=True)
    (root / "alias").symlink_to(root / "good", target_is_directory=True)
    assert run_path(root, "good") == root.resolve() / "good"
    assert run_path(root, "new-run", must_exist=False) == root.resolve() / "new-run"
    for hostile in [str(root / "good"), "/etc", "../outside", "good/../../outside", "out",
                    "alias", "missing", "x" * 100_000, "good\x00", ".", "..", ".previews", "",
                    None, 7]:
        with pytest.raises(BadRunId) as refused:
            run_path(root, hostile)
        assert str(tmp_path) not in str(refused.value) and "<" not in str(refused.value)
