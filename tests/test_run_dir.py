"""A run's directory on a server many visitors share (issues 18 and 22): one writer at a time
(in this process or another), whole files however many threads rewrite one, a live run opens
as running and a killed writer's as interrupted, a run that is complete or gone is not resumed;
its zip is named after the run, explains itself and is streamed from disk; the runs kept are
bounded by number and bytes; bad settings are refused before anything is written. The engine,
then the real app over gradio_client and raw HTTP. Memory is bounded on a subprocess's peak
RSS, never timed. Each test failed before its fix."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from app_server import RUN_DIR, STATUS, ZIP, running_app
from conftest import REPO
from gradio_client import Client, handle_file
from PIL import Image
from raw_api import call, dependencies
from visitors import chain_args, client, noise, run_args, run_dirs, run_ids, small, wait_for

from banana_space.chain.runs import RunSpec, resume_run, start_run
from banana_space.events import FrameScored, Started
from banana_space.files import png_bytes, write_atomic
from banana_space.store.retention import prune_runs
from banana_space.store.run import Run, RunBusy


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> dict:
    runs = tmp_path_factory.mktemp("run-dir") / "runs"
    with running_app(runs, BANANA_KEEP_RUNS="3", BANANA_RUNS_PER_VISITOR="3") as url:
        yield {"url": url, "runs": runs}


def test_temporary_names_are_unique_per_write(tmp_path) -> None:
    """Eight threads rewriting one file (a thumbnail, run.json): once, they shared one
    temporary name per process and renamed each other's half-written file away."""
    target = tmp_path / "run.json"

    def rewrite(index: int) -> None:
        for round_ in range(100):
            write_atomic(target, f"{index}-{round_}".encode() * 1000)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(rewrite, range(8)))
    assert target.read_bytes()[:1].isdigit()
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary left behind


def test_a_run_being_written_cannot_be_resumed_in_this_process(photo, tmp_path) -> None:
    stop = threading.Event()
    events = start_run(RunSpec(small(photo), 40, metrics=["entropy"]), tmp_path, stop=stop)
    run_dir = next(e for e in events if isinstance(e, Started)).run_dir  # after "loading…"
    # Frame 0 scored: a stop from here on leaves a frame to resume from (Stop drops a frame
    # still being scored, and on a loaded machine frame 0 may still be).
    next(e for e in events if isinstance(e, FrameScored) and e.step == 0)
    with pytest.raises(RunBusy, match="being written"):
        resume_run(run_dir)
    assert prune_runs(tmp_path, keep=0) == []  # nor deleted
    stop.set()
    assert list(events)[-1].status == "stopped"
    resumed = list(resume_run(run_dir, stop=None))  # the writer has gone: resume is allowed
    assert resumed[-1].status == "completed"


def test_a_run_being_written_by_another_process_cannot_be_resumed(photo, tmp_path) -> None:
    run_dir = list(start_run(RunSpec(small(photo), 2, metrics=["entropy"]),
                             tmp_path))[0].run_dir
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from banana_space.store.run import Run;"
         f"Run({str(run_dir)!r}).lock(); print('locked', flush=True); time.sleep(120)"],
        cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunBusy):
            resume_run(run_dir)
        assert prune_runs(tmp_path, keep=0) == []
    finally:
        holder.kill()
        holder.wait()
    os.close(Run(run_dir).lock())  # released when its process ends


def test_the_zip_is_named_after_the_run_and_explains_itself(photo, tmp_path) -> None:
    events = list(start_run(RunSpec(small(photo), 3, metrics=["entropy"]), tmp_path))
    run_dir = next(e.run_dir for e in events if isinstance(e, Started))
    with zipfile.ZipFile(Run(run_dir).zip_path) as archive:
        names = set(archive.namelist())
        readme = archive.read(f"{run_dir.name}/README.txt").decode()
        plot = archive.read(f"{run_dir.name}/plot.html").decode()
    assert Run(run_dir).zip_path.name == f"banana-{run_dir.name}.zip"
    for name in ("frames/step_003.png", "scores.csv", "verdict.csv", "steps.csv", "run.json",
                 "README.txt", "plot.html"):
        assert f"{run_dir.name}/{name}" in names
        assert name.split("/")[0] in readme  # every file is explained
    assert "NEGATIVE delta always means WORSE" in readme
    assert not any("/." in n for n in names)  # no thumbnails, lock or temporaries
    with zipfile.ZipFile(Run(run_dir).zip_path) as archive:  # PNGs are not deflated again
        assert {info.compress_type for info in archive.infolist()
                if info.filename.endswith(".png")} == {zipfile.ZIP_STORED}
    # Self-contained: plotly's JavaScript inside, nothing fetched from the network.
    assert "<script src=" not in plot and len(plot) > 1_000_000 and "entropy" in plot


@pytest.mark.parametrize("size", [(1, 1), (7, 1), (1, 5), (203, 97)])
def test_a_runs_pngs_are_lossless(photo, size) -> None:
    """The run's own PNG writer (one filter, level 1: `png_bytes(fast=True)`) gives back
    every pixel of a photo, of noise and of a flat image, at odd sizes, as a file that
    Pillow checks chunk by chunk; images it does not write (another mode, metadata to keep)
    go to Pillow's, lossless too."""
    rng = np.random.default_rng(size[0])
    images = [photo.resize(size), Image.new("RGB", size, (12, 200, 7)),
              Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)),
              photo.resize(size).convert("RGBA"), photo.resize(size).convert("L")]
    from PIL import ImageCms

    tagged = photo.resize(size)
    tagged.info["icc_profile"] = ImageCms.ImageCmsProfile(
        ImageCms.createProfile("sRGB")).tobytes()
    for image in [*images, tagged]:
        data = png_bytes(image, fast=True)
        with Image.open(io.BytesIO(data)) as written:
            written.verify()
        with Image.open(io.BytesIO(data)) as written:
            assert written.mode == image.mode
            assert np.array_equal(np.asarray(written), np.asarray(image))
    assert png_bytes(images[0], fast=True) != png_bytes(images[0])  # the run's own writer
    with Image.open(io.BytesIO(png_bytes(tagged, fast=True))) as written:
        assert written.info.get("icc_profile") == tagged.info["icc_profile"]  # Pillow's keeps it


def test_zipping_a_large_run_streams_from_disk(tmp_path) -> None:
    """The zip of a run with 240 MB of frames is written without holding it in memory (it
    used to be built in a BytesIO: +1 GB of RSS for a 1 GB folder)."""
    run = tmp_path / "big"
    (run / "frames").mkdir(parents=True)
    column = {"name": "entropy", "role": "metric", "lower_better": False}
    (run / "run.json").write_text(json.dumps({"status": "completed", "steps": 3,
                                              "columns": [column]}))
    # Scored frames: the zip leaves out a frame made after the last scored step.
    (run / "scores.csv").write_text("step,metric,score,delta\n" + "".join(
        f"{step},entropy,7.0,0.0\n" for step in range(4)))
    side = 4472  # 60 MB of noise a frame, stored uncompressed: whole PNGs, as zipping checks
    for step in range(4):
        Image.frombytes("RGB", (side, side), os.urandom(side * side * 3)).save(
            run / "frames" / f"step_{step:03d}.png", compress_level=0)
    # The child's own high-water mark (VmHWM): getrusage's ru_maxrss starts from the parent's
    # at fork, so under a large pytest process it would hide any growth.
    script = ("import sys; from banana_space.store.rundir import write_zip;"
              "import plotly.io, banana_space.verdict.plots;"
              "hwm = lambda: int([l for l in open('/proc/self/status')"
              " if l.startswith('VmHWM:')][0].split()[1]);"
              "before = hwm(); write_zip(sys.argv[1]); after = hwm();"
              "print((after - before) // 1024)")
    grown_mb = int(subprocess.run([sys.executable, "-c", script, str(run)], cwd=REPO,
                                  check=True, capture_output=True, text=True).stdout)
    assert Run(run).zip_path.stat().st_size > 240_000_000
    assert grown_mb < 80, f"zipping took {grown_mb} MB more memory"


def fake_runs(root: Path, sizes: list[int]) -> list[Path]:
    runs = []
    for index, size in enumerate(sizes):
        run = root / f"run-{index}"
        run.mkdir()
        (run / "frame.bin").write_bytes(b"\0" * size)
        (run / "run.json").write_text("{}")
        stamp = time.time() - 100 + index  # run-0 is the oldest
        os.utime(run / "run.json", (stamp, stamp))
        runs.append(run)
    return runs


def test_retention_is_bounded_by_bytes_as_well_as_count(tmp_path) -> None:
    fake_runs(tmp_path, [5000, 5000, 5000, 5000, 5000])
    deleted = prune_runs(tmp_path, keep=10, keep_bytes=12_100)
    assert sorted(p.name for p in deleted) == ["run-0", "run-1", "run-2"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run-3", "run-4"]


@pytest.mark.app
def test_bad_settings_are_refused_before_anything_is_written(app, photo_path) -> None:
    client = Client(app["url"], verbose=False)
    before = run_dirs(app["runs"])
    for args, message in [(run_args(photo_path, 2, seed=-1), "seed"),
                          (run_args(photo_path, 2.5), "whole number"),
                          (run_args(photo_path, 2, prompt="x" * 50_000), "characters long")]:
        with pytest.raises(Exception, match=message):
            client.predict(*args, api_name="/run")
    for steps, seed, message in [(2.5, 0, "whole number"), (2, -1, "seed")]:
        with pytest.raises(Exception, match=message):
            client.predict(handle_file(str(photo_path)), steps, "simulate", "entropy", seed, "",
                           api_name="/run_chain")
    assert run_dirs(app["runs"]) == before


@pytest.mark.app
def test_a_second_writer_is_refused_and_a_live_run_opens_as_running(app, photo_path) -> None:
    """Its owner, from a second tab, hears that the run is being written (the API) or that a
    chain of theirs is running (the page's one-chain-per-visitor cap, which it meets first);
    anyone else hears it is not theirs (issue 42: ownership is checked first). Both can open
    it, as running."""
    owner, other = Client(app["url"], verbose=False), Client(app["url"], verbose=False)
    job = owner.submit(*run_args(photo_path, 60), api_name="/run")
    while not any(u[RUN_DIR] for u in job.outputs()):
        assert not job.done()
        time.sleep(0.1)
    run_id = next(u[RUN_DIR] for u in job.outputs() if u[RUN_DIR])
    for api_name, args in [("/resume_chain", (run_id, "")), ("/resume", (run_id, "", False))]:
        with pytest.raises(Exception, match="being written|already running for you"):
            owner.predict(*args, api_name=api_name)
        with pytest.raises(Exception, match="Only the visitor who started"):  # anyone else
            other.predict(*args, api_name=api_name)
    opened = other.predict(run_id, False, api_name="/open")
    assert "Running" in opened[STATUS] and "interrupted" not in opened[STATUS]
    assert not opened[ZIP]["visible"]
    assert json.loads(other.predict(run_id, api_name="/open_run"))["status"] == "running"
    owner.predict(api_name="/stop")
    assert "Stopped" in job.result(timeout=120)[STATUS]


@pytest.mark.app
def test_retention_keeps_a_visitors_share_and_spares_the_others(app, photo_path) -> None:
    """Five runs by one visitor (one browser) where 3 are kept, and 3 are its share: its own
    newest three stay, and the runs other visitors made earlier in this module (young, inside
    their share) are never evicted for its (issue 41)."""
    before = {path.parent.name for path in app["runs"].glob("*/run.json")}
    client = Client(app["url"], verbose=False)
    made = [client.predict(*run_args(photo_path, 1, seed=seed), api_name="/run")[RUN_DIR]
            for seed in range(5)]
    kept = {path.parent.name for path in app["runs"].glob("*/run.json")}
    assert kept - before == set(made[-3:])
    assert before <= kept


@pytest.mark.app
def test_resume_and_raw_on_a_deleted_run_say_so(app, photo_path) -> None:
    client = Client(app["url"], verbose=False)
    run_id = client.predict(*run_args(photo_path, 1), api_name="/run")[RUN_DIR]
    import shutil

    shutil.rmtree(app["runs"] / run_id)
    with pytest.raises(Exception, match="No run called"):
        client.predict(run_id, "", False, api_name="/resume")
    answer = call(app["url"], dependencies(app["url"])["redraw"], [run_id, True])
    assert not answer.success and "No run called" in answer.error


@pytest.mark.app
def test_many_visitors_opening_one_finished_run_all_see_it_finished(app, photo_path) -> None:
    client = Client(app["url"], verbose=False)
    run_id = client.predict(*run_args(photo_path, 1, seed=9), api_name="/run")[RUN_DIR]
    Run(app["runs"] / run_id).zip_path.unlink()  # the first opener zips it again

    def open_it(_: int) -> str:
        return Client(app["url"], verbose=False).predict(run_id, False, api_name="/open")[STATUS]

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(open_it, range(8)))
    assert all("Completed" in status for status in statuses), statuses
    assert Run(app["runs"] / run_id).zip_path.is_file()


@pytest.mark.app
def test_a_run_whose_writer_was_killed_reads_interrupted(app, photo_path) -> None:
    script = ("import sys; from pathlib import Path; from PIL import Image;"
              "from banana_space.chain.runs import RunSpec, start_run;"
              "events = start_run(RunSpec(Image.open(sys.argv[2]).convert('RGB').resize((96, 64)),"
              " 100, metrics=['entropy']), Path(sys.argv[1]));"
              "[print(getattr(e, 'step', ''), flush=True) for e in events]")
    before = run_ids(app["runs"])
    writer = subprocess.Popen([sys.executable, "-c", script, str(app["runs"]), str(photo_path)],
                              cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: run_ids(app["runs"]) - before, what="the writer's run")
        for _ in range(3):
            writer.stdout.readline()
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    run_id = (run_ids(app["runs"]) - before).pop()
    assert json.loads((app["runs"] / run_id / "run.json").read_text())["status"] == "running"
    opened = json.loads(client(app, "10.0.11.1").predict(run_id, api_name="/open_run"))
    assert opened["status"] == "interrupted"


@pytest.mark.app
def test_resume_chain_refuses_a_completed_run(app, tmp_path) -> None:
    image = noise(tmp_path / "r.png", 64, 48)
    run_id = json.loads(client(app, "10.0.9.1").predict(*chain_args(image, 1),
                                                        api_name="/run_chain"))["run"]
    meta = app["runs"] / run_id / "run.json"
    before = meta.read_bytes()
    with pytest.raises(Exception, match="complete"):
        client(app, "10.0.9.2").predict(run_id, "", "", api_name="/resume_chain")
    assert meta.read_bytes() == before
