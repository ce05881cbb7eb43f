"""App tests: the real app in a subprocess on a local port, driven with gradio_client. The
run endpoint streams; every update is checked, in order."""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import pytest
from app_server import (
    FRAME,
    PLOT,
    RUN_DIR,
    STATUS,
    STRIP,
    TABLE,
    ZIP,
    run_inputs,
    running_app,
    strip_frames,
)
from conftest import REPO
from gradio_client import Client, handle_file
from raw_api import call, dependencies
from visitors import wait_for

from banana_space.backends.simulate import DEFAULT_PROFILE
from banana_space.store.run import Run
from banana_space.verdict.columns import VERDICT_COLUMN
from page.run_tab.outputs import PageOutputs
from page.run_tab.recordings import prepared_folder

pytestmark = pytest.mark.app



@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("app") / "runs"


@pytest.fixture(scope="module")
def app_url(runs_dir) -> str:
    # As on a Space: the proxy's X-Forwarded-For names each visitor (guard.py caps chains per
    # address, so eight visitors need eight addresses).
    with running_app(runs_dir, BANANA_TRUST_PROXY="1") as url:
        yield url


def psnr_points(update: list) -> int:
    """How many steps the fidelity (PSNR) curve has reached in this update's plot."""
    figure = json.loads(update[PLOT]["plot"])
    psnr = next((t for t in figure["data"] if t["name"].startswith("psnr")), None)
    if psnr is None:  # the metrics are still loading: no curve yet
        return 0
    return sum(y is not None for y in psnr["y"])


def run_args(image: Path, steps: int, seed: int = 0, backend: str = "simulate",
             profile: str = DEFAULT_PROFILE) -> list:
    return run_inputs(handle_file(str(image)), steps, seed=seed, backend=backend,
                      profile=profile)


def test_frames_stream_in_one_by_one_with_plot_and_table(app_url, runs_dir, photo_path) -> None:
    client = Client(app_url, verbose=False)
    steps = 5
    job = client.submit(*run_args(photo_path, steps), api_name="/run")
    job.result(timeout=300)
    updates = job.outputs()
    strip_sizes = [len(strip_frames(u)) for u in updates]
    # Frames arrive one at a time: the strip starts empty and grows by exactly one to N+1.
    grown = [b - a for a, b in zip(strip_sizes, strip_sizes[1:], strict=False) if b != a]
    assert strip_sizes[0] == 0 and grown == [1] * (steps + 1)
    # Each frame shows as soon as it is made (a copy may come while the frame before is still
    # scored), then its scores join the curves: never a score before its frame.
    seen = [(len(strip_frames(u)), psnr_points(u)) for u in updates]
    assert seen[0] == (0, 0) and seen[-1] == (steps + 1, steps + 1)
    assert all(points <= frames for frames, points in seen)
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(seen, seen[1:], strict=False))
    assert len({points for _, points in seen}) == steps + 2  # each frame's scores in turn
    with_frames = [u for u in updates if u[STRIP]]
    for update in with_frames:
        assert update[PLOT] is not None and update[FRAME]
        # The strip links each step's frame, in order, and each is on disk.
        linked = strip_frames(update)
        assert [p.name for p in linked] == [f"step_{s:03d}.png" for s in range(len(linked))]
        assert all(p.is_file() for p in linked)
        metrics_in_table = {row[0] for row in update[TABLE]["data"]}
        assert {"brisque", "niqe", "piqe", "entropy", "psnr (reference)"} <= metrics_in_table
    final = updates[-1]
    assert "Completed" in final[STATUS]
    # The lossless zip, and beside it the chain as an animation to share.
    assert final[ZIP]["visible"] and [Path(f).suffix for f in final[ZIP]["value"]] == [
        ".zip", ".webp"]
    assert updates[0][ZIP]["visible"] is False  # no download offered before the run ends

    # The run directory holds what the UI showed; the page knows it only by its id.
    run_dir = runs_dir / final[RUN_DIR]
    assert len(list((run_dir / "frames").glob("step_*.png"))) == steps + 1
    with (run_dir / "verdict.csv").open(newline="") as handle:
        on_disk = {row["metric"]: row["detects"] for row in csv.DictReader(handle)}
    # 5 steps, finished: the verdicts are final, and those decided say they were read at
    # step 5 only (the paper's steps 10 and 20 are beyond the run), never "so far".
    shown = {row[0].replace(" (reference)", ""): row[VERDICT_COLUMN]
             for row in final[TABLE]["data"]}
    assert not any("so far" in word for word in shown.values()), shown
    assert all(word.endswith("(at step 5 only)") for m, word in shown.items()
               if on_disk[m] != "undecided"), shown
    words = {"yes": "✅ detects", "no": "❌ fooled", "undecided": "… undecided"}
    assert set(on_disk) == set(shown)  # an undecided verdict says why after its word
    assert all(shown[m].startswith(words[v]) for m, v in on_disk.items()), (on_disk, shown)
    # The line above the frames is made from those verdicts: the paper's test, from step 1.
    detected = sorted(m for m in ("brisque", "niqe", "piqe", "entropy") if on_disk[m] == "yes")
    summary = final[PageOutputs._fields.index("summary")]
    assert f"{len(detected)} of 4 standard metrics (pyiqa's, the kind the paper tests) " \
        "detect" in summary, summary
    assert f"on this one chain {len(detected)} of 4 standard metrics notice" in summary
    assert "so far" not in summary and "steps 5, 10 and 20" not in summary


def test_bad_upload_gets_a_clear_message(app_url, tmp_path) -> None:
    fake = tmp_path / "photo.png"
    fake.write_text("this is text, not a PNG")
    client = Client(app_url, verbose=False)
    with pytest.raises(Exception, match="not an image"):
        client.predict(*run_args(fake, 2), api_name="/run")


def test_reopen_a_past_run(app_url, photo_path) -> None:
    client = Client(app_url, verbose=False)
    final = client.predict(*run_args(photo_path, 1, seed=3), api_name="/run")
    run_id = final[RUN_DIR]
    reopened = client.predict(run_id, False, api_name="/open")
    assert reopened[RUN_DIR] == final[RUN_DIR]
    assert len(strip_frames(reopened)) == 2 and "Completed" in reopened[STATUS]


def test_the_profile_picker_reaches_the_run(app_url, runs_dir, photo_path) -> None:
    client = Client(app_url, verbose=False)
    final = client.predict(*run_args(photo_path, 1, profile="lattice-ripple"), api_name="/run")
    meta = json.loads((runs_dir / final[RUN_DIR] / "run.json").read_text())
    assert meta["settings"]["backend_settings"]["profile"] == "lattice-ripple"


def _png(image, path: Path) -> Path:
    image.save(path)
    return path


def test_failure_mid_run_keeps_earlier_frames_on_screen_and_on_disk(app_url, runs_dir, photo,
                                                                    tmp_path) -> None:
    """A recorded chain whose frame 3 is damaged: the run fails at step 3 and keeps 0-2."""
    import io
    import zipfile

    frames = [photo.resize((96, 64)).rotate(i) for i in range(5)]
    archive = tmp_path / "chain.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for i, frame in enumerate(frames):
            data = io.BytesIO()
            frame.save(data, format="PNG")
            zipped.writestr(f"{i}.png", data.getvalue()[:200] if i == 3 else data.getvalue())
    client = Client(app_url, verbose=False)
    final = client.predict(*run_args(archive, 10, backend="replay"), api_name="/run")
    assert "Failed" in final[STATUS] and "step 3" in final[STATUS]
    assert len(strip_frames(final)) == 3
    run_dir = runs_dir / final[RUN_DIR]
    assert sorted(p.name for p in (run_dir / "frames").iterdir()) == [
        "step_000.png", "step_001.png", "step_002.png"]
    with zipfile.ZipFile(final[ZIP]["value"][0]) as downloaded:
        assert sum("/frames/" in n for n in downloaded.namelist()) == 3


def test_stop_button_ends_the_run_and_keeps_frames(app_url, runs_dir, photo_path) -> None:
    client = Client(app_url, verbose=False)
    job = client.submit(*run_args(photo_path, 60), api_name="/run")
    deadline = time.monotonic() + 120
    while not any(len(strip_frames(u)) >= 2 for u in job.outputs()):
        assert time.monotonic() < deadline and not job.done()
        time.sleep(0.2)
    assert "Stopping" in client.predict(api_name="/stop")
    final = job.result(timeout=60)
    assert "Stopped" in final[STATUS]
    made = len(strip_frames(final))
    assert 2 <= made < 61
    # The run holds exactly the frames shown (a frame made after the click is dropped: it may
    # stay on disk for a page still showing it, but it is no frame of the run's, nor zipped).
    assert Run(runs_dir / final[RUN_DIR]).load().last_step + 1 == made


def test_eight_visitors_at_once_each_get_only_their_own_run(app_url, runs_dir, tmp_path) -> None:
    """8 concurrent clients, different images and seeds, 10 steps each."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    from PIL import Image

    def visit(index: int) -> tuple[int, list]:
        rng = np.random.default_rng(index)
        image = Image.fromarray(rng.integers(0, 255, (48, 64, 3), dtype=np.uint8))
        path = _png(image, tmp_path / f"visitor-{index}.png")
        client = Client(app_url, verbose=False, headers={"X-Forwarded-For": f"10.0.8.{index}"})
        job = client.submit(*run_args(path, 10, seed=index), api_name="/run")
        job.result(timeout=600)
        return index, job.outputs()

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = dict(pool.map(visit, range(8)))
    run_dirs = {index: runs_dir / outputs[-1][RUN_DIR] for index, outputs in results.items()}
    assert len(set(run_dirs.values())) == 8
    for index, outputs in results.items():
        run_dir, final = run_dirs[index], outputs[-1]
        assert "Completed" in final[STATUS]
        # Every streamed update showed this visitor's run and no other.
        for update in outputs:
            if update[RUN_DIR]:
                assert runs_dir / update[RUN_DIR] == run_dir
            assert {frame.parent.parent for frame in strip_frames(update)} <= {run_dir}
        # Frame 0 on disk is exactly what this visitor uploaded.
        with Image.open(tmp_path / f"visitor-{index}.png") as sent, \
                Image.open(run_dir / "frames" / "step_000.png") as first:
            assert np.array_equal(np.asarray(sent), np.asarray(first))
        assert len(list((run_dir / "frames").glob("*.png"))) == 11
        with (run_dir / "scores.csv").open(newline="") as handle:
            scores = {(r["step"], r["metric"]): r["score"] for r in csv.DictReader(handle)}
        assert len(scores) == 11 * 6
        assert (run_dir / f"banana-{run_dir.name}.zip").is_file()
    # Different seeds and images: no two runs scored the same.
    finals = {tuple(map(tuple, results[i][-1][TABLE]["data"])) for i in results}
    assert len(finals) == 8


def test_the_recordings_are_ready_before_anyone_opens_one(app_url, runs_dir) -> None:
    """The app prepares its bundled recordings' downloads from start-up (zipped, animated, in
    a folder of their own, never the runs folder's), so that a click on one copies them in
    instead of making them."""
    prepared = prepared_folder(runs_dir.resolve())
    names = sorted(p.name for p in (REPO / "assets" / "recorded").iterdir() if p.is_dir())
    for name in names:
        ready = Run(prepared / name)
        wait_for(lambda ready=ready: ready.zip_path.is_file() and ready.animation_path.is_file(),
                 what=f"{name}'s zip and animation")
    assert not any((runs_dir / name).exists() for name in names)  # nobody opened one yet
    opened = call(app_url, dependencies(app_url)["open_recorded"], [names[0], False])
    assert opened.success, opened.error
    copy, ready = Run(runs_dir / names[0]), Run(prepared / names[0])
    assert copy.zip_path.read_bytes() == ready.zip_path.read_bytes()
    assert copy.animation_path.read_bytes() == ready.animation_path.read_bytes()
