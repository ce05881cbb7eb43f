"""The bundled recorded chains (scripts/record_examples.py): they open, show every step (a
thumbnail where the full frame was dropped to keep the repository small until it is re-made,
and say so), zip, and keep assets/ lean."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest
from PIL import Image

from banana_space.chain.runs import RunSpec, start_run
from banana_space.events import Finished, FrameScored, Started
from banana_space.store.run import Run, frame_name
from banana_space.store.rundir import write_zip
from banana_space.view import RunView

REPO = Path(__file__).resolve().parent.parent
RECORDED = sorted(p for p in (REPO / "assets" / "recorded").iterdir() if p.is_dir())
PROFILE_OF_TAG = {"simulated": "nano-banana-pro", "blur": "blur"}


def test_the_recordings_are_the_ones_the_issue_asks_for() -> None:
    profiles = [Run(p).load().meta["settings"]["backend_settings"]["profile"] for p in RECORDED]
    assert profiles.count("nano-banana-pro") >= 2 and "blur" in profiles
    assert sum(f.stat().st_size for f in (REPO / "assets").rglob("*") if f.is_file()) < 40e6


@pytest.mark.parametrize("run", RECORDED, ids=lambda p: p.name)
def test_a_recording_opens_with_every_step(run: Path, tmp_path) -> None:
    copy = tmp_path / run.name
    shutil.copytree(run, copy)  # as app.open_recorded does
    saved = Run(copy).load()
    _, tag, steps = run.name.rsplit("-", 2)
    settings = saved.meta["settings"]
    assert settings["backend_settings"]["profile"] == PROFILE_OF_TAG[tag]
    assert saved.last_step == int(steps) >= 30 and max(settings["input_size"]) >= 1024
    assert saved.meta["status"] == "completed"
    with Image.open(copy / "frames" / frame_name(saved.last_step)) as last:
        # a full frame: the default profile crops or squeezes 1.5 % of an axis now and then
        assert max(last.size) >= 900

    screen = RunView.from_saved(saved).screen()
    assert len(screen.strip) == saved.last_step + 1
    assert all(Path(thumb).is_file() and Path(frame).is_file() for thumb, frame in screen.strip)
    dropped = [s for s in range(saved.last_step + 1)
               if not (copy / "frames" / frame_name(s)).is_file()]
    assert dropped and {0, 5, 10, 20, saved.last_step}.isdisjoint(dropped)
    assert screen.strip[dropped[0]][1] == str(Run(copy).thumb_path(dropped[0]))
    # The page says the dropped frames are re-made (remake.py; tests/test_remake.py).
    assert "re-made from its seed" in screen.status
    assert [row[0] for row in screen.verdict][:2] == ["psnr (reference)", "ssim (reference)"]

    with zipfile.ZipFile(write_zip(copy)) as archive:
        frames = [n for n in archive.namelist() if "/frames/" in n]
    assert len(frames) == saved.last_step + 1 - len(dropped)


def test_a_run_with_dropped_frames_keeps_its_steps(photo, tmp_path) -> None:
    events = list(start_run(RunSpec(photo.resize((64, 48)), 4, metrics=["entropy"]), tmp_path))
    run = next(e.run_dir for e in events if isinstance(e, Started))
    (run / "frames" / frame_name(2)).unlink()
    saved = Run(run).load()
    assert saved.last_step == 4 and len(saved.history.scores["entropy"]) == 5
    view = RunView.from_saved(saved)
    assert view.frame_path(2) == str(Run(run).thumb_path(2))
    assert view.frame_path(3) == str(run / "frames" / frame_name(3))
    # A step with neither its frame nor its thumbnail is not part of the run.
    (run / "frames" / frame_name(3)).unlink()
    Run(run).thumb_path(3).unlink()
    assert Run(run).load().last_step == 2
    assert isinstance(events[-1], Finished)
    assert sum(isinstance(e, FrameScored) for e in events) == 5
