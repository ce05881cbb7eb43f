"""The operator's key that runs' owners are hashed with, when BANANA_OWNER_KEY is not set: drawn
once, kept private beside the runs, the same at the next start."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from page.door.operator_key import KEY_FILE, operator_key


def test_a_key_drawn_once_is_kept_private_beside_the_runs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    first = operator_key("", runs)
    assert operator_key("", runs) == first  # the next start reads it back
    kept = runs / KEY_FILE
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert bytes.fromhex(kept.read_text()) == first and len(first) == 32
    assert [p.name for p in runs.iterdir()] == [KEY_FILE]  # no temporary left behind
    assert operator_key("the-operators-secret", runs) == b"the-operators-secret"


def test_a_key_file_others_may_read_is_made_private(tmp_path: Path) -> None:
    first = operator_key("", tmp_path)
    (tmp_path / KEY_FILE).chmod(0o644)
    assert operator_key("", tmp_path) == first
    assert stat.S_IMODE((tmp_path / KEY_FILE).stat().st_mode) == 0o600


def test_a_damaged_key_file_is_left_alone_and_said_once(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    (tmp_path / KEY_FILE).write_text("not a key\n")
    assert len(operator_key("", tmp_path)) == 32
    assert (tmp_path / KEY_FILE).read_text() == "not a key\n"
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "does not hold a key" in said[0], said
