"""A run's chain as one animation to share: made with the zip when a run ends, every frame in
step order with its step number burned in, never inside the (lossless) zip, within 5 MB however
long or noisy the chain, and offered on the page beside the zip and shown beside the share link."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
from PIL import Image
from visitors import small

from banana_space.chain.runs import RunSpec, start_run
from banana_space.events import Started
from banana_space.store import animation
from banana_space.store.run import Run
from banana_space.view import RunView


def _frames(path: Path) -> list[np.ndarray]:
    with Image.open(path) as played:
        assert played.format == "WEBP" and played.info.get("loop") == 0
        frames = []
        for index in range(played.n_frames):
            played.seek(index)
            frames.append(np.asarray(played.convert("RGB"), dtype=np.int16))
    return frames


def test_a_finished_run_has_its_animation_beside_the_zip(photo, tmp_path) -> None:
    image = photo.resize((300, 200))
    events = list(start_run(RunSpec(image, 3, metrics=["entropy"]), tmp_path))
    run = Run(next(e.run_dir for e in events if isinstance(e, Started)))
    assert run.animation_path.name == f"banana-{run.id}.webp"
    frames = _frames(run.animation_path)
    assert len(frames) == 4 and frames[0].shape == (200, 300, 3)  # small frames: not enlarged
    for step, shown in enumerate(frames):
        with Image.open(run.frame_path(step)) as made:
            made_pixels = np.asarray(made.convert("RGB"), dtype=np.int16)
        # The picture is the frame (lossy WebP: close, not equal) away from the corner ...
        assert np.abs(shown[:120] - made_pixels[:120]).mean() < 6
        # ... and its lower left corner names the step: white text on a dark box.
        corner, plain = shown[-20:, :60], made_pixels[-20:, :60]
        assert np.abs(corner - plain).mean() > 20 and (corner.min(axis=2) > 200).any()
    with zipfile.ZipFile(run.zip_path) as archive:  # the zip keeps the lossless frames only
        assert not any(name.endswith(".webp") for name in archive.namelist())
    screen = RunView.from_saved(run.load()).screen()
    assert screen.animation_path == str(run.animation_path) and screen.zip_path


def _saved_run(folder: Path, frames: list[Image.Image]) -> Run:
    """A completed run directory holding `frames` and an entropy score for each."""
    (folder / "frames").mkdir(parents=True)
    column = {"name": "entropy", "role": "metric", "lower_better": False}
    (folder / "run.json").write_text(json.dumps({"status": "completed", "steps": len(frames) - 1,
                                                 "columns": [column]}))
    (folder / "scores.csv").write_text("step,metric,score,delta\n" + "".join(
        f"{step},entropy,7.0,0.0\n" for step in range(len(frames))))
    for step, frame in enumerate(frames):
        frame.save(folder / "frames" / f"step_{step:03d}.png", compress_level=0)
    return Run(folder)


def test_a_long_noisy_chain_stays_within_the_limit(tmp_path) -> None:
    """40 frames of noise (what compresses worst), each 700 px: at full size they come to
    about twice the limit, so the animation is made again smaller."""
    rng = np.random.default_rng(0)
    run = _saved_run(tmp_path / "noisy", [Image.fromarray(
        rng.integers(0, 256, (700, 700, 3), dtype=np.uint8)) for _ in range(40)])
    written = animation.write_animation(run.load())
    assert written is not None and written.stat().st_size <= animation.LIMIT_BYTES
    frames = _frames(written)
    assert len(frames) == 40 and max(frames[0].shape[:2]) < 700
    assert not list(run.path.glob(".*.tmp"))  # no temporary left behind


def test_a_run_of_one_frame_has_no_animation(photo, tmp_path) -> None:
    run = _saved_run(tmp_path / "one", [small(photo)])
    assert animation.write_animation(run.load()) is None
    assert not run.animation_path.exists()
