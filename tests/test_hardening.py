"""What one anonymous visitor could do to everyone else (issue 18, items 1, 4, 6, 7, 8 and 9):
each test failed before its fix. Engine tests first, then the real app over gradio_client
and raw HTTP. Memory is bounded on a subprocess's peak RSS, never timed."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest
from app_server import RUN_DIR, STATUS, ZIP, run_inputs, running_app
from conftest import REPO
from gradio_client import Client, handle_file
from PIL import Image
from raw_api import call, dependencies

from banana_space.common import write_atomic
from banana_space.events import Finished, FrameScored, Started
from banana_space.markup import escape_markdown
from banana_space.run import Run, RunBusy
from banana_space.runids import BadRunId, run_path
from banana_space.runs import RunSpec, prune_runs, resume_run, start_run
from banana_space.view import RunView


def small(photo: Image.Image) -> Image.Image:
    return photo.resize((96, 64))


# --- run ids (issue 13, item 1; issue 18, items 1 and 9) ------------------------------------

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


# --- item 4: one writer per run -------------------------------------------------------------

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
        [sys.executable, "-c", "import sys, time; from banana_space.run import Run;"
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


# --- item 6: markup --------------------------------------------------------------------------

def test_markup_a_visitor_controls_is_shown_as_text() -> None:
    hostile = ('<a href=http://x style=font-size:40px>Session expired</a>'
               '<img src=http://host/x.png> [click](http://evil) ![i](http://evil/i.png)')
    view = RunView(run_dir=Path("runs/20260101-000000-abcdef"))
    view.ended = Finished("failed", 2, f"failed at step 3: frame {hostile}.png: damaged")
    view.notices.append(("warning", f"skipped {hostile}.txt"))
    view.texts[1] = hostile
    for text in (view.status(), view.model_text(), escape_markdown(hostile)):
        assert "<a" not in text and "<img" not in text
        assert "](http" not in text and "[click]" not in text  # no link but the run's own


# --- item 8: the zip ------------------------------------------------------------------------

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
    # Self-contained: plotly's JavaScript inside, nothing fetched from the network.
    assert "<script src=" not in plot and len(plot) > 1_000_000 and "entropy" in plot


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
    for step in range(4):
        (run / "frames" / f"step_{step:03d}.png").write_bytes(os.urandom(60_000_000))
    # The child's own high-water mark (VmHWM): getrusage's ru_maxrss starts from the parent's
    # at fork, so under a large pytest process it would hide any growth.
    script = ("import sys; from banana_space.rundir import write_zip;"
              "import plotly.io, banana_space.plots;"
              "hwm = lambda: int([l for l in open('/proc/self/status')"
              " if l.startswith('VmHWM:')][0].split()[1]);"
              "before = hwm(); write_zip(sys.argv[1]); after = hwm();"
              "print((after - before) // 1024)")
    grown_mb = int(subprocess.run([sys.executable, "-c", script, str(run)], cwd=REPO,
                                  check=True, capture_output=True, text=True).stdout)
    assert Run(run).zip_path.stat().st_size > 240_000_000
    assert grown_mb < 80, f"zipping took {grown_mb} MB more memory"


# --- item 8: retention by count and bytes ---------------------------------------------------

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


# --- the app ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def app(tmp_path_factory) -> dict:
    runs = tmp_path_factory.mktemp("hardening") / "runs"
    with running_app(runs, BANANA_KEEP_RUNS="3", BANANA_RUNS_PER_VISITOR="3") as url:
        yield {"url": url, "runs": runs}


def run_args(image: Path, steps: float, seed: float = 0, prompt: str = "Produce an exact "
             "replica of the provided image, with no alterations.", backend: str = "simulate"
             ) -> list:
    return run_inputs(handle_file(str(image)), steps, seed=seed, prompt=prompt,
                      backend=backend, metrics=["entropy"])


def run_dirs(runs: Path) -> set[str]:
    return {p.name for p in runs.iterdir() if not p.name.startswith(".")} if runs.exists() \
        else set()


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
def test_errors_quote_no_server_path(app, tmp_path) -> None:
    notes = tmp_path / "notes.png"
    notes.write_text("not an image")
    recording = tmp_path / "frames.zip"
    recording.write_text("not a recording")
    client = Client(app["url"], verbose=False)
    for path, backend in [(notes, "simulate"), (recording, "replay")]:
        with pytest.raises(Exception) as refused:
            client.predict(*run_args(path, 2, backend=backend), api_name="/run")
        assert path.name in str(refused.value) and "/tmp/" not in str(refused.value)


@pytest.mark.app
def test_one_chain_per_visitor_and_stop_before_frame_0(app, photo_path) -> None:
    client = Client(app["url"], verbose=False)
    job = client.submit(*run_args(photo_path, 60), api_name="/run")
    while job.status().code.name not in ("PROCESSING", "ITERATING"):
        assert not job.done()
        time.sleep(0.05)
    # Stop at once: before the first frame has been shown (the metrics may still be loading).
    assert "Stopping" in client.predict(api_name="/stop")
    with pytest.raises(Exception, match="already running"):
        client.predict(*run_args(photo_path, 2), api_name="/run")
    final = job.result(timeout=120)
    assert "Stopped" in final[STATUS]
    made = len(list((app["runs"] / final[RUN_DIR] / "frames").glob("*.png")))
    assert made < 10
    # Stop with nothing running leaves the finished run's status alone.
    index = dependencies(app["url"])["stop"]
    answer = call(app["url"], index, [""], session=client.session_hash)
    assert answer.success and not isinstance(answer.data[0], str)


@pytest.mark.app
def test_a_second_writer_is_refused_and_a_live_run_opens_as_running(app, photo_path) -> None:
    owner, other = Client(app["url"], verbose=False), Client(app["url"], verbose=False)
    job = owner.submit(*run_args(photo_path, 60), api_name="/run")
    while not any(u[RUN_DIR] for u in job.outputs()):
        assert not job.done()
        time.sleep(0.1)
    run_id = next(u[RUN_DIR] for u in job.outputs() if u[RUN_DIR])
    with pytest.raises(Exception, match="being written"):
        other.predict(run_id, "", api_name="/resume_chain")
    with pytest.raises(Exception, match="being written"):
        other.predict(run_id, "", False, api_name="/resume")
    opened = other.predict(run_id, False, api_name="/open")
    assert "Running" in opened[STATUS] and "interrupted" not in opened[STATUS]
    assert not opened[ZIP]["visible"]
    assert json.loads(other.predict(run_id, api_name="/open_run"))["status"] == "running"
    owner.predict(api_name="/stop")
    assert "Stopped" in job.result(timeout=120)[STATUS]


@pytest.mark.app
def test_retention_keeps_exactly_keep_runs(app, photo_path) -> None:
    client = Client(app["url"], verbose=False)
    for seed in range(5):
        client.predict(*run_args(photo_path, 1, seed=seed), api_name="/run")
    assert len([p for p in app["runs"].glob("*/run.json")]) == 3


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
def test_a_failure_reason_from_member_names_is_escaped(app, photo, tmp_path) -> None:
    archive = tmp_path / "chain.zip"
    hostile = "<img src=http:__host_x.png>[click](http:__evil)"
    with zipfile.ZipFile(archive, "w") as zipped:
        for index in range(4):
            data = io.BytesIO()
            small(photo).rotate(index).save(data, format="PNG")
            payload = data.getvalue()[:200] if index == 2 else data.getvalue()
            zipped.writestr(f"{index}{hostile if index == 2 else ''}.png", payload)
    client = Client(app["url"], verbose=False)
    final = client.predict(*run_args(archive, 10, backend="replay"), api_name="/run")
    assert "Failed" in final[STATUS] and "step 2" in final[STATUS]
    assert "<img" not in final[STATUS] and "](http" not in final[STATUS]


@pytest.mark.app
def test_concurrent_previews_of_one_image_are_whole(app, tmp_path) -> None:
    """Eight visitors preview one large photo at once; each gets a complete image (gradio
    once rewrote one shared cache file in place while serving it to the others)."""
    rng = np.random.default_rng(0)
    big = tmp_path / "big.png"
    Image.fromarray(rng.integers(0, 255, (2000, 3000, 3), dtype=np.uint8)).save(big)
    url, index = app["url"], dependencies(app["url"])["preview"]
    with httpx.Client(timeout=60) as http:
        with big.open("rb") as handle:
            path = http.post(f"{url}gradio_api/upload", files={"files": handle}).json()[0]
    file_data = {"path": path, "meta": {"_type": "gradio.FileData"}, "orig_name": "big.png"}

    def look(_: int) -> tuple[int, int]:
        answer = call(url, index, [file_data])
        assert answer.success, answer.error
        shown = answer.data[0].get("value", answer.data[0])  # an update of the hidden preview
        with httpx.Client(timeout=60) as http:
            got = http.get(shown["url"])
        return int(got.headers["content-length"]), len(got.content)

    with ThreadPoolExecutor(max_workers=8) as pool:
        sizes = list(pool.map(look, range(8)))
    assert all(declared == received for declared, received in sizes), sizes
    assert "from 3000 x 2000" in call(url, index, [file_data]).data[1]


@pytest.fixture(scope="module")
def short_lived_uploads(tmp_path_factory) -> str:
    runs = tmp_path_factory.mktemp("uploads") / "runs"
    with running_app(runs, BANANA_UPLOADS_KEEP_S="2") as url:
        yield url


@pytest.mark.app
def test_uploads_are_deleted_and_oversized_ones_refused(short_lived_uploads, photo_path,
                                                        tmp_path) -> None:
    url = short_lived_uploads
    with httpx.Client(timeout=60) as http:
        with photo_path.open("rb") as handle:
            stored = Path(http.post(f"{url}gradio_api/upload",
                                    files={"files": handle}).json()[0])
        assert stored.is_file()
        huge = tmp_path / "huge.png"
        with huge.open("wb") as sink:
            sink.truncate(101 * 1024 * 1024)
        with huge.open("rb") as handle:
            answer = http.post(f"{url}gradio_api/upload", files={"files": handle})
        assert answer.status_code == 413
    deadline = time.monotonic() + 60
    while stored.exists():
        assert time.monotonic() < deadline, "the upload was kept"
        time.sleep(0.5)


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
