"""Engine tests on real parts: real pyiqa metrics (weights seeded offline), the offline backends,
real run directories, the CLI."""

from __future__ import annotations

import csv
import json
import math
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from banana_space.backends.simulate import SimulateBackend
from banana_space.chain.runs import RunSpec, start_run
from banana_space.cli import main as cli
from banana_space.events import Finished, FrameMade, FrameScored, Notice, Started
from banana_space.scores.catalog import CPU_DEFAULTS
from banana_space.store.run import Run

CPU_METRICS = list(CPU_DEFAULTS)


def run_all(spec: RunSpec, root: Path) -> list:
    return list(start_run(spec, root))


def first_started(events: list) -> Started:
    """The run's `Started` (after the notices of metrics being loaded, if any were)."""
    return next(e for e in events if isinstance(e, Started))


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_five_step_simulate_chain_on_a_real_photo(photo, tmp_path, weights_dir) -> None:
    events = run_all(RunSpec(photo, 5, seed=7, metrics=CPU_METRICS), tmp_path)
    started, frames = first_started(events), [e for e in events if isinstance(e, FrameScored)]
    assert isinstance(started, Started) and started.unavailable == {}
    assert [f.step for f in frames] == [0, 1, 2, 3, 4, 5]
    assert isinstance(events[-1], Finished) and events[-1].status == "completed"

    run = started.run_dir
    assert sorted(p.name for p in (run / "frames").iterdir()) == [
        f"step_{i:03d}.png" for i in range(6)]
    rows = read_csv(run / "scores.csv")
    assert list(rows[0]) == ["step", "metric", "score", "delta", "delta_since_input"]
    assert {r["metric"] for r in rows} == {*CPU_METRICS, "psnr", "ssim"}
    assert len(rows) == 6 * 6
    # The paper's Δ is from step 1 (none at the input); the change since the input from step 0.
    assert all(r["delta"] == "" and float(r["delta_since_input"]) == 0
               for r in rows if r["step"] == "0")
    assert all(float(r["delta"]) == 0 for r in rows if r["step"] == "1")
    for row in rows:  # every score is a finite number, as pyiqa computed it
        assert math.isfinite(float(row["score"]))
    assert [f.scores["brisque"] for f in frames] == [
        pytest.approx(float(r["score"])) for r in rows if r["metric"] == "brisque"]

    psnr = [f.scores["psnr"] for f in frames]
    assert psnr[0] > 60 and all(a > b for a, b in zip(psnr[1:], psnr[2:], strict=False))
    verdict = {r["metric"]: r for r in read_csv(run / "verdict.csv")}
    assert list(next(iter(verdict.values()))) == [
        "metric", "delta_5", "delta_10", "delta_20", "detects", "detects_robust",
        "checkpoints_used", "undecided_because", "delta_since_input", "worse_than_input",
        "spearman_vs_psnr", "spearman_from_first"]
    assert verdict["psnr"]["detects"] == "yes" and verdict["ssim"]["detects"] == "yes"
    # Fidelity has no noise floor (floors.csv): its robust verdict is undecided; a metric's is
    # decided, since every CPU classic has one.
    assert verdict["psnr"]["detects_robust"] == "undecided"
    assert {verdict[m]["detects_robust"] for m in CPU_METRICS} <= {"yes", "no"}
    assert float(verdict["psnr"]["delta_5"]) < 0
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "completed" and meta["last_step"] == 5
    assert meta["settings"]["backend_settings"] == {"strength": 1.0, "profile": "nano-banana-pro"}
    assert "pyiqa" in meta["versions"]
    with zipfile.ZipFile(Run(run).zip_path) as archive:
        names = archive.namelist()
        readme = archive.read(f"{run.name}/README.txt").decode()
    assert f"{run.name}/frames/step_005.png" in names and f"{run.name}/verdict.csv" in names
    assert "detects_robust" in readme and "noise floor" in readme
    assert "delta_i = score_i - score_1, from step 1" in readme


def test_each_frame_is_on_disk_and_shown_before_its_scores(photo, tmp_path) -> None:
    """A frame is written and handed on as soon as it is made; its scores follow (the update
    that shows them need not wait for the frame's PNG), frame by frame in order."""
    seen = []
    for event in start_run(RunSpec(photo.resize((96, 64)), 3, metrics=["entropy"]), tmp_path):
        if isinstance(event, FrameMade):
            run = first_started(seen).run_dir  # after the metrics' loading notices
            scores = run / "scores.csv"
            scored = {r["step"] for r in read_csv(scores)} if scores.is_file() else set()
            assert (run / "frames" / f"step_{event.step:03d}.png").is_file()
            assert str(event.step) not in scored
        seen.append(event)
    kinds = [(type(e).__name__, e.step) for e in seen if isinstance(e, (FrameMade, FrameScored))]
    for kind in ("FrameMade", "FrameScored"):
        assert [step for name, step in kinds if name == kind] == [0, 1, 2, 3]
    assert all(kinds.index(("FrameMade", s)) < kinds.index(("FrameScored", s)) for s in range(4))
    assert kinds[0] == ("FrameMade", 0)  # the input, at once


def test_a_copy_is_shown_while_the_frame_before_is_still_scored(photo, tmp_path) -> None:
    """Each frame is shown as soon as it exists: every metric holds the input's scoring until
    the caller has seen the first copy, which therefore came before the input's scores."""
    import threading

    from banana_space.scores.catalog import build_metric
    from banana_space.scores.pool import MetricPool

    copy_seen, waited = threading.Event(), []

    def build(name: str, device: str):
        metric, calls = build_metric(name, device), []

        def held(*args):
            calls.append(args)
            if len(calls) == 1:  # the input
                waited.append(copy_seen.wait(60))
            return metric(*args)
        return held

    pool = MetricPool(device="cpu", build=build, load_seconds=120)
    kinds = []
    for event in start_run(RunSpec(photo.resize((96, 64)), 2, metrics=["entropy"]), tmp_path,
                           pool=pool):
        if isinstance(event, (FrameMade, FrameScored)):
            kinds.append((type(event).__name__, event.step))
        if kinds[-1:] == [("FrameMade", 1)]:
            copy_seen.set()
    assert waited and all(waited), "the first copy was not shown while the input was scored"
    assert kinds.index(("FrameMade", 1)) < kinds.index(("FrameScored", 0))


def test_same_seed_same_frames_and_another_seed_differs(photo) -> None:
    backend = SimulateBackend(strength=1.0)
    a = backend.edit(photo, "copy", seed=3, step=1).image
    b = backend.edit(photo, "copy", seed=3, step=1).image
    c = backend.edit(photo, "copy", seed=4, step=1).image
    assert a.tobytes() == b.tobytes()
    assert a.tobytes() != c.tobytes()
    assert a.size == photo.size and a.mode == "RGB"


def test_whole_runs_are_reproducible(photo, tmp_path) -> None:
    small = photo.resize((96, 64))
    for name in ("a", "b", "c"):
        run_all(RunSpec(small, 3, seed=1 if name != "c" else 2, metrics=["entropy"]),
                tmp_path / name)
    frames = {n: [p.read_bytes() for p in sorted((tmp_path / n).glob("*/frames/*.png"))]
              for n in "abc"}
    assert frames["a"] == frames["b"]
    assert frames["a"][1:] != frames["c"][1:]


def test_strength_zero_is_a_perfect_copy(photo) -> None:
    assert SimulateBackend(0).edit(photo, "", seed=0, step=1).image.tobytes() == photo.tobytes()


def test_unavailable_metric_is_reported_and_the_run_goes_on(photo, tmp_path) -> None:
    events = run_all(RunSpec(photo.resize((64, 64)), 1, metrics=["musiq", "entropy"]), tmp_path)
    started = first_started(events)
    assert started.unavailable["musiq"] == "weights not reachable (offline?)"
    assert Notice("musiq is unavailable: weights not reachable (offline?)") in events
    assert events[-1].status == "completed"
    assert "musiq" not in [i.name for i in started.infos]


def test_bad_settings_list_what_is_valid(photo, tmp_path) -> None:
    with pytest.raises(ValueError, match="between 1 and 100"):
        start_run(RunSpec(photo, 0), tmp_path)
    with pytest.raises(ValueError, match="valid backends: simulate, replay"):
        start_run(RunSpec(photo, 2, backend="photocopier"), tmp_path)
    with pytest.raises(ValueError, match="valid no-reference metrics: .*brisque"):
        start_run(RunSpec(photo, 2, metrics=["brisk"]), tmp_path)
    assert not any(tmp_path.iterdir())  # nothing written for a refused run


def _frames(count: int, size: tuple[int, int] = (48, 32)) -> list[Image.Image]:
    """Copies of one picture, each with noise of its own: a chain (unrelated pictures are
    refused, `chain_layout.not_copies`), every frame's bytes its own."""
    rng = np.random.default_rng(0)
    base = rng.integers(0, 255, (size[1], size[0], 3)).astype(float)
    return [Image.fromarray(np.clip(base + rng.normal(0, 4, base.shape), 0, 255).astype(np.uint8))
            for _ in range(count)]


def _replayed(source: Path, root: Path) -> list[FrameScored]:
    events = run_all(RunSpec(None, 100, "replay", {"source": str(source)},
                             metrics=["entropy"]), root)
    assert events[-1].status == "completed"
    return [e for e in events if isinstance(e, FrameScored)]


def test_replay_folder_sorts_naturally_and_skips_non_images(tmp_path) -> None:
    folder = tmp_path / "chain"
    folder.mkdir()
    frames = _frames(11)
    for i, frame in enumerate(frames):
        frame.save(folder / f"{i}.png")
    (folder / "notes.txt").write_text("not a frame")
    scored = _replayed(folder, tmp_path / "runs")
    assert [f.step for f in scored] == list(range(11))
    assert [f.image.tobytes() for f in scored] == [f.tobytes() for f in frames]  # 2 before 10


def test_replay_zip_and_gif(tmp_path) -> None:
    frames = _frames(4)
    archive = tmp_path / "chain.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for i, frame in enumerate(frames):
            data = tmp_path / f"f{i}.png"
            frame.save(data)
            zipped.write(data, f"run/step_{i}.png")
    assert [f.image.tobytes() for f in _replayed(archive, tmp_path / "z")] == [
        f.tobytes() for f in frames]
    gif = tmp_path / "chain.gif"
    grey = [Image.new("RGB", (32, 32), (v, v, v)) for v in (100, 110, 120)]  # copies, 28 dB apart
    grey[0].save(gif, save_all=True, append_images=grey[1:], duration=100, loop=0)
    scored = _replayed(gif, tmp_path / "g")
    assert [f.image.getpixel((5, 5))[0] for f in scored] == [100, 110, 120]


def test_cli_run_then_score_the_frames_it_made(photo_path, tmp_path, capsys) -> None:
    out = tmp_path / "run"
    code = cli(["run", str(photo_path), "--steps", "2", "--metrics", "piqe,entropy",
                "--out", str(out), "--seed", "5", "--strength", "2"])
    assert code == 0
    assert "completed" in capsys.readouterr().out
    saved = Run(out).load()
    assert saved.last_step == 2 and saved.meta["settings"]["backend_options"] == {"strength": 2.0}
    assert cli(["score", str(out / "frames"), "--metrics", "piqe,entropy",
                "--out", str(tmp_path / "scored")]) == 0
    rescored = Run(tmp_path / "scored").load()
    assert rescored.history.scores["piqe"] == pytest.approx(saved.history.scores["piqe"])


def test_cli_refuses_bad_input_with_a_message(tmp_path, capsys) -> None:
    not_an_image = tmp_path / "cat.png"
    not_an_image.write_text("hello")
    assert cli(["run", str(not_an_image), "--out", str(tmp_path / "x")]) == 2
    assert "not an image" in capsys.readouterr().err
    assert cli(["run", str(not_an_image), "--steps", "10000", "--out", str(tmp_path / "y")]) == 2
