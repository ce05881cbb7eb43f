"""A run directory: the one on-disk format that the CLI, the app and the zip share.

    DIR/frames/step_000.png …   every frame, lossless
    DIR/.thumbs/.step_000.png … each frame at most 256 px, for the app's strip: dot-files,
                                like every cache here, so never zipped or replayed
    DIR/scores.csv              step,metric,score,delta,delta_since_input (long format;
                                fidelity and judges too; delta from step 1, the paper's base)
    DIR/verdict.csv             metric,delta_5,delta_10,delta_20,detects,detects_robust,
                                undecided_because,delta_since_input,worse_than_input,
                                spearman_vs_psnr,spearman_from_first
    DIR/steps.csv               per step: seconds, calls, cost, what the model said
    DIR/run.json                settings, versions, status, timings; never a secret
    DIR/banana-<run id>.zip     all of the above plus README.txt and plot.html, for download
    DIR/.writer.lock            held (flock) by the one process and thread writing the run

Every file is written whole to a uniquely named temporary file and renamed into place, so a run
killed at any instant leaves only complete frames and CSVs without torn lines. A stopped or
failed run leaves the same files for the frames it made. A run has one writer at a time: a
second one (a resume of a run still being written, here or in another process) gets `RunBusy`.
"""

from __future__ import annotations

import csv
import fcntl
import html
import json
import math
import os
import platform
import secrets
import time
import weakref
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from .analysis import FLOOR_RULE, PAPER_TEST, VERDICT_FIELDS, History
from .common import ScoreInfo, csv_bytes, png_bytes, temporary_name, write_atomic
from .events import Event, Finished, FrameJudged, FrameMade, FrameScored, Notice, Started

FORMAT_VERSION = 1
LOCK_NAME = ".writer.lock"
MAX_NOTICES = 200  # run.json keeps the latest ones
THUMB_SIDE = 256  # the strip shows 88 px (176 on a dense screen), not 1.6 MB frames


def frame_name(step: int) -> str:
    return f"step_{step:03d}.png"


def thumb_path(run: Path, step: int) -> Path:
    return Path(run) / ".thumbs" / f".{frame_name(step)}"


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def zip_path(run: Path) -> Path:
    """The run's download, named after it (several downloads must not all be one name)."""
    return Path(run) / f"banana-{Path(run).name}.zip"


class RunBusy(RuntimeError):
    """The run is being written by another run or resume (in this process or another)."""


def lock_writer(run: Path) -> int:
    """Take the run's writer lock (a descriptor; closing it releases the lock), or `RunBusy`.
    flock conflicts between two opens of the file even in one process, so it guards threads
    and processes alike."""
    descriptor = os.open(Path(run) / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise RunBusy(f"run {Path(run).name} is being written right now (a run or a resume "
                      "is in progress): open it to watch, or resume it once it has ended"
                      ) from None
    return descriptor


def live_status(run: Path, status: str) -> str:
    """What a run is doing now, given the status its run.json records: "running" while its
    writer holds the lock, "interrupted" where the record says running but the writer has gone
    (killed with -9, or its process ended mid-run), else the recorded status."""
    try:
        os.close(lock_writer(run))
    except RunBusy:
        return "running"
    except FileNotFoundError:
        return status
    return "interrupted" if status == "running" else status


def _thumbnail(image: Image.Image) -> Image.Image:
    small = image.copy()
    small.thumbnail((THUMB_SIDE, THUMB_SIDE))
    return small


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for package in ("torch", "pyiqa", "pillow", "google-genai", "diffusers", "transformers"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            continue
    return found


def add_judged(history: History, event: FrameJudged) -> None:
    """A frame's judge scores into `history`, its other scores kept."""
    kept = {name: series[event.step] for name, series in history.scores.items()
            if event.step < len(series)}
    history.add(event.step, {**kept, **event.scores})


class RunDir:
    """Writes a run's events to its directory as they happen, holding its writer lock until
    `close()` (or until it is garbage-collected: a run nobody iterates must not stay locked)."""

    def __init__(self, path: Path, lock: int) -> None:
        self.path = Path(path)
        self.frames = self.path / "frames"
        self.history = History([])
        self.steps: dict[int, list[Any]] = {}
        self.meta: dict[str, Any] = {}
        self._started = time.time()
        self._unlock = weakref.finalize(self, os.close, lock)

    @classmethod
    def create(cls, root: Path, run_id: str | None = None) -> RunDir:
        path = Path(root) / (run_id or new_run_id())
        if (path / "frames").exists():
            raise FileExistsError(f"{path} already holds a run: choose another directory, "
                                  "or resume that one")
        (path / "frames").mkdir(parents=True)
        return cls(path, lock_writer(path))

    @classmethod
    def reopen(cls, saved: SavedRun, lock: int) -> RunDir:
        """Continue writing a saved run after its last complete step; `lock` is its writer
        lock, taken before `saved` was read."""
        run = cls(saved.path, lock)
        run.meta = dict(saved.meta)
        run.history, run.steps = saved.history, dict(saved.steps)
        return run

    def close(self) -> None:
        """Release the writer lock."""
        self._unlock()

    def record(self, event: Event) -> None:
        if isinstance(event, Started):
            self._start(event)
        elif isinstance(event, FrameMade):
            self._frame(event.step, event.image)
        elif isinstance(event, FrameScored):
            self._scores(event)
        elif isinstance(event, FrameJudged):
            self._judged(event)
        elif isinstance(event, Notice):
            notices = self.meta.setdefault("notices", [])
            notices.append(asdict(event))
            del notices[:-MAX_NOTICES]
        elif isinstance(event, Finished):
            self.meta.update(status=event.status, reason=event.reason,
                             last_step=event.last_step, totals=event.totals)
            self._write_meta()

    def _start(self, event: Started) -> None:
        if not self.history.infos:  # a resumed run keeps the history it loaded
            self.history = History(event.infos)
        self.meta.update(
            format=FORMAT_VERSION, status="running", reason="", last_step=event.first_step - 1,
            steps=event.steps, settings=event.settings, unavailable=event.unavailable,
            columns=[asdict(info) for info in event.infos], versions=versions(),
            started_at=self.meta.get("started_at", _now()))
        self._write_meta()

    def _frame(self, step: int, image: Image.Image) -> None:
        """The frame, as soon as it is made (its thumbnail first: the strip links both). A
        frame without scores yet is not part of the run until they come (`load_run`)."""
        thumb = thumb_path(self.path, step)
        thumb.parent.mkdir(exist_ok=True)
        write_atomic(thumb, png_bytes(_thumbnail(image)))
        write_atomic(self.frames / frame_name(step), png_bytes(image))

    def _scores(self, event: FrameScored) -> None:
        self.history.add(event.step, event.scores)
        self.steps[event.step] = [event.step, event.seconds_generate, event.seconds_score,
                                  event.calls, event.cost_usd, event.text, event.judge_text]
        self._write_tables()
        self.meta["last_step"] = event.step
        self._write_meta()

    def _judged(self, event: FrameJudged) -> None:
        add_judged(self.history, event)
        if event.step in self.steps:  # its FrameScored came first
            self.steps[event.step][6] = event.judge_text
        self._write_tables()

    def write_scores(self) -> None:
        """scores.csv and verdict.csv from the scores so far (the verdict's arithmetic is
        `analysis.History`'s)."""
        rows = []
        for name, series in self.history.scores.items():
            deltas, since = self.history.deltas(name), self.history.since_input(name)
            rows += [[step, name, score, deltas[step], since[step]]
                     for step, score in enumerate(series)]
        rows.sort(key=lambda row: row[0])  # by step, metrics in column order within a step
        write_atomic(self.path / "scores.csv", csv_bytes(
            ["step", "metric", "score", "delta", "delta_since_input"], rows))
        write_atomic(self.path / "verdict.csv", csv_bytes(
            list(VERDICT_FIELDS), [r.record() for r in self.history.verdict()]))

    def _write_tables(self) -> None:
        self.write_scores()
        write_atomic(self.path / "steps.csv", csv_bytes(
            ["step", "seconds_generate", "seconds_score", "calls", "cost_usd", "model_text",
             "judge_text"], [self.steps[s] for s in sorted(self.steps)]))

    def _write_meta(self) -> None:
        self.meta["updated_at"] = _now()
        self.meta["seconds_total"] = round(time.time() - self._started, 3)
        write_atomic(self.path / "run.json", json.dumps(self.meta, indent=2).encode())


def rewrite_verdict(run: Path) -> None:
    """A saved run's scores.csv and verdict.csv written again from its scores, after the
    verdict's arithmetic changed; its frames, steps.csv and run.json stay as they are.

    Raises:
        RunBusy: the run is being written right now.
    """
    lock = lock_writer(run)
    writer = RunDir.reopen(load_run(run), lock)
    try:
        writer.write_scores()
    finally:
        writer.close()


ZIP_README = """Banana Space run {run_id}
{status} after step {last_step} of {steps} ({backend}, seed {seed}).

Banana100 (arXiv 2604.03400): an image editor is asked again and again for an exact replica of
its own previous output. This archive holds one such chain and its scores.

frames/step_000.png ...  every frame, lossless; step 0 is the input, step 1 the first copy
scores.csv               step,metric,score,delta,delta_since_input: every score of every
                         frame (long format), the fidelity references (psnr, ssim against
                         step 0) and judges too
verdict.csv              metric,delta_5,delta_10,delta_20,detects,detects_robust,
                         undecided_because,delta_since_input,worse_than_input,
                         spearman_vs_psnr,spearman_from_first
steps.csv                per step: seconds generating and scoring, calls, cost (USD), and what
                         the model said
run.json                 settings (prompt, seed, generator, options), versions, status,
                         timings, notices; never an API key
plot.html                every score's change since the input per step; opens in any
                         browser, offline (plotly's JavaScript is inside)
README.txt               this file

delta is the paper's: delta_i = score_i - score_1, from step 1, the first copy (Banana100's
chains are steps 1..100; the input is not among them), with the sign flipped for metrics
where lower is better, so a NEGATIVE delta always means WORSE (empty at step 0). A metric
"detects" the degradation by {paper_test}; shorter runs use the checkpoints that exist, else
the last step after step 1; "undecided" where it cannot be asked, and undecided_because says
why (no step 1, or a missing score). The fidelity
references (psnr, ssim) are scored against the input and their delta is from step 1 too.
detects_robust (ours) asks the same at every checkpoint: {floor_rule};
"undecided" where the score has no floor (PSNR and SSIM, judges).

delta_since_input (ours) is the same orientation from step 0, the input (in scores.csv, for
psnr and ssim, from the top of their range, 40 dB and 1: frame 0 against itself is "identical",
which pyiqa writes as 80 dB); verdict.csv gives it at the last step, and worse_than_input says
whether every checkpoint is worse than the input (neither for psnr and ssim, which are
themselves measured against the input). They can disagree with "detects": a smooth start that
one dose of static makes look "natural" scores better at step 1 than the input, then worse with
every copy. spearman_vs_psnr ranks a metric's change since the input against psnr's across
steps; spearman_from_first does so over steps 1..N only.
"""


def write_zip(run: Path) -> Path:
    """The run's download: its frames, CSVs and run.json, plus README.txt and plot.html. Built
    from the files on disk (so a killed run zips the same way), written straight to a
    temporary file (never held in memory) and renamed into place."""
    from plotly.io import to_html

    from .plots import DELTA_TITLE, delta_figure

    saved = load_run(run)
    settings = saved.meta.get("settings", {})
    readme = ZIP_README.format(
        run_id=saved.path.name, status=str(saved.meta.get("status", "stopped")).capitalize(),
        last_step=saved.last_step, steps=saved.meta.get("steps", "?"),
        backend=settings.get("backend", "?"), seed=settings.get("seed", "?"),
        paper_test=PAPER_TEST, floor_rule=FLOOR_RULE)
    title = f"Banana Space run {saved.path.name}"
    plot = to_html(delta_figure(saved.history, title=f"{title}: {DELTA_TITLE}"),
                   include_plotlyjs=True, full_html=True).replace(
        "<head>", f"<head><title>{html.escape(title)}</title>", 1)
    target = zip_path(saved.path)
    temporary = temporary_name(target)
    with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
        folder = saved.path.name
        archive.writestr(f"{folder}/README.txt", readme)
        archive.writestr(f"{folder}/plot.html", plot)
        for file in sorted(saved.path.rglob("*")):
            relative = file.relative_to(saved.path)
            # A frame made after the last scored step (Stop drops the frame being scored) is
            # no part of the run; it stays on disk only while a page may still be showing it.
            unscored = relative.parts[0] == "frames" and file.name > frame_name(saved.last_step)
            if (file.is_file() and file != target and not unscored
                    and not any(part.startswith(".") for part in relative.parts)):
                # PNGs are compressed already: storing them costs no space and no CPU.
                archive.write(file, f"{folder}/{relative}", zipfile.ZIP_STORED
                              if file.suffix == ".png" else zipfile.ZIP_DEFLATED)
    os.replace(temporary, target)
    return target


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


@dataclass
class SavedRun:
    """A run directory read back: for reopening in the app and for `resume`."""

    path: Path
    meta: dict[str, Any]
    history: History  # complete steps only
    steps: dict[int, list[str]]  # steps.csv rows by step, complete steps only
    last_step: int  # the last step with both a complete frame and its scores

    def frame(self, step: int) -> Image.Image:
        with Image.open(self.path / "frames" / frame_name(step)) as image:
            return image.convert("RGB")

    def frame_paths(self) -> list[Path]:
        return [self.path / "frames" / frame_name(s) for s in range(self.last_step + 1)]


def has_frame(run: Path, step: int) -> bool:
    """The step's frame was made: its full frame is here, or its thumbnail alone (a bundled
    recording keeps full frames at a few steps only, to stay small: scripts/record_examples.py).
    A thumbnail is written before its frame, and scores after both, so a step with scores and
    only a thumbnail was never half-written."""
    return (Path(run) / "frames" / frame_name(step)).is_file() or thumb_path(run, step).is_file()


def never_made(history: History, step: int) -> bool:
    """A step inside a run with no score at all (and no frame): a chain sampled at some steps
    only (a real chain fetched at its checkpoints, `real_chains.py`) skipped it. A run that
    makes every step never has one: its scores are written after its frame."""
    return all(math.isnan(series[step]) for series in history.scores.values()
               if step < len(series))


def read_history(path: Path, meta: dict[str, Any]) -> History:
    """The scores in `path`/scores.csv, as columns of run.json (`meta`) describe them; a step
    or score missing from the file is NaN."""
    history = History([ScoreInfo.from_record(column) for column in meta.get("columns", [])])
    scores_file = path / "scores.csv"
    if scores_file.is_file():
        by_step: dict[int, dict[str, float]] = {}
        with scores_file.open(newline="") as handle:
            for row in csv.DictReader(handle):
                by_step.setdefault(int(row["step"]), {})[row["metric"]] = (
                    float(row["score"]) if row["score"] else math.nan)
        for step in sorted(by_step):
            history.add(step, by_step[step])
    return history


def load_run(path: Path) -> SavedRun:
    """A run directory as saved: its run.json, its scores (`History`) and its frames.

    Raises:
        FileNotFoundError: no run.json there.
    """
    path = Path(path)
    meta_file = path / "run.json"
    if not meta_file.is_file():
        raise FileNotFoundError(f"{path} is not a run directory (no run.json)")
    meta = json.loads(meta_file.read_text())
    history = read_history(path, meta)
    steps: dict[int, list[str]] = {}
    steps_file = path / "steps.csv"
    if steps_file.is_file():
        with steps_file.open(newline="") as handle:
            steps = {int(row[0]): row for row in list(csv.reader(handle))[1:]}
    last = -1
    while last + 1 <= history.last_step and (has_frame(path, last + 1)
                                              or never_made(history, last + 1)):
        last += 1
    # Only complete steps (frame and scores) are the run; a kill may leave one half-written.
    for series in history.scores.values():
        del series[last + 1:]
    return SavedRun(path, meta, history, {s: r for s, r in steps.items() if s <= last}, last)
