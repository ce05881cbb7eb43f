"""A bundled recording's dropped full frames are re-made from its own settings and checked
against the recorded pixel hashes; one that comes out different is never written (the page
then shows the thumbnail and says so)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO
from PIL import Image

from banana_space.chain import remake
from banana_space.store.run import Run, frame_name
from banana_space.view import RunView

RECORDED = REPO / "assets" / "recorded"


def a_recording(tmp_path: Path) -> Path:
    """The first bundled recording that drops frames, copied (the original is never written)."""
    source = next(p for p in sorted(RECORDED.iterdir())
                  if not (p / "frames" / frame_name(1)).exists())
    return Path(shutil.copytree(source, tmp_path / source.name))


def test_every_recording_can_re_make_its_dropped_frames() -> None:
    for run in sorted(p for p in RECORDED.iterdir() if p.is_dir()):
        hashes = json.loads(Run(run).manifest_file.read_text())["pixels_sha256"]
        assert sorted(map(int, hashes)) == list(range(Run(run).load().last_step + 1)), run.name


def test_a_dropped_frame_is_re_made_full_size_and_identical(tmp_path: Path) -> None:
    run = a_recording(tmp_path)
    hashes = json.loads(Run(run).manifest_file.read_text())["pixels_sha256"]
    made = remake.remake_frame(run, 2)
    assert made == run / "frames" / frame_name(2)
    with Image.open(made) as frame, Image.open(run / "frames" / frame_name(0)) as first:
        assert frame.width == first.width  # the full frame, not the 256 px thumbnail
        assert remake.pixel_hash(frame) == hashes["2"]
    assert (run / "frames" / frame_name(1)).is_file()  # made on the way, checked too
    assert run.resolve() not in remake.FAILED


@pytest.mark.parametrize("name", sorted(p.name for p in RECORDED.iterdir() if p.is_dir()))
def test_every_recording_re_makes_its_dropped_frames_asked_for_one_at_a_time(
        name: str, tmp_path: Path) -> None:
    """As the page asks for them: step 1, then step 2 from the re-made step 1, then the first
    step after a later kept frame. The blur control makes every frame from its input, so these
    came out different when its generator was handed the kept frame instead. Every frame of
    every recording, under several BLAS kernels and numpy dispatch settings, is
    scripts/check_remakes.py's (docs/recordings.md)."""
    run = Path(shutil.copytree(RECORDED / name, tmp_path / name))
    kept = [s for s in range(2, Run(run).load().last_step) if Run(run).frame_path(s).is_file()]
    for step in (1, 2, kept[-1] + 1):
        assert remake.remake_frame(run, step) is not None, remake.FAILED.get(run.resolve())


def test_a_frame_that_comes_out_different_is_never_written(tmp_path: Path) -> None:
    run = a_recording(tmp_path)
    manifest = json.loads(Run(run).manifest_file.read_text())
    manifest["pixels_sha256"]["2"] = "0" * 64  # as if another generator version made it
    Run(run).manifest_file.write_text(json.dumps(manifest))
    assert remake.remake_frame(run, 3) is None
    assert (run / "frames" / frame_name(1)).is_file()
    assert not (run / "frames" / frame_name(2)).exists()
    assert "step 2 came out different" in remake.FAILED[run.resolve()]
    notices = RunView.from_saved(Run(run).load()).notices
    assert any(level == "warning" and "thumbnails, labelled so" in text and "step 2 came out"
               in text for level, text in notices), notices


def test_a_generator_this_version_lacks_is_said_plainly(tmp_path: Path) -> None:
    run = a_recording(tmp_path)
    meta = json.loads((run / "run.json").read_text())
    meta["settings"]["backend_options"]["profile"] = "a-profile-that-was-renamed"
    (run / "run.json").write_text(json.dumps(meta))
    assert remake.remake_frame(run, 1) is None
    assert "cannot be made here" in remake.FAILED[run.resolve()]
