"""A run directory: the one on-disk format that the CLI, the app and the zip share.

    DIR/frames/step_000.png …   every frame, lossless
    DIR/.thumbs/.step_000.png … each frame at most 256 px, for the app's strip: dot-files,
                                like every cache here, so never zipped or replayed
    DIR/scores.csv              step,metric,score,delta (long format; fidelity and judges too)
    DIR/verdict.csv             metric,delta_5,delta_10,delta_20,detects,spearman_vs_psnr
    DIR/steps.csv               per step: seconds, calls, cost, what the model said
    DIR/run.json                settings, versions, status, timings; never a secret

Every file is written whole to a temporary name and renamed into place, so a run killed at any
instant leaves only complete frames and CSVs without torn lines. A stopped or failed run leaves
the same files for the frames it made.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import platform
import secrets
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from .analysis import History
from .events import Event, Finished, FrameMade, FrameScored, Notice, Started
from .metrics import ScoreInfo

FORMAT_VERSION = 1
ZIP_NAME = "banana-run.zip"
MAX_NOTICES = 200  # run.json keeps the latest ones
THUMB_SIDE = 256  # the strip shows 88 px (176 on a dense screen), not 1.6 MB frames


def frame_name(step: int) -> str:
    return f"step_{step:03d}.png"


def thumb_path(run: Path, step: int) -> Path:
    return Path(run) / ".thumbs" / f".{frame_name(step)}"


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def write_atomic(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _thumbnail(image: Image.Image) -> Image.Image:
    small = image.copy()
    small.thumbnail((THUMB_SIDE, THUMB_SIDE))
    return small


def _csv_bytes(header: list[str], rows: list[list[Any]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([[_cell(v) for v in row] for row in rows])
    return buffer.getvalue().encode()


def _cell(value: Any) -> Any:
    if isinstance(value, float):  # repr round-trips exactly, so a resumed run adds up the same
        return "" if math.isnan(value) else repr(value)
    if value is None:
        return ""
    return value


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for package in ("torch", "pyiqa", "pillow", "google-genai", "diffusers", "transformers"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            continue
    return found


class RunDir:
    """Writes a run's events to its directory as they happen."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.frames = self.path / "frames"
        self.history = History([])
        self.steps: dict[int, list[Any]] = {}
        self.meta: dict[str, Any] = {}
        self._started = time.time()

    @classmethod
    def create(cls, root: Path, run_id: str | None = None) -> RunDir:
        run = cls(Path(root) / (run_id or new_run_id()))
        if run.frames.exists():
            raise FileExistsError(f"{run.path} already holds a run: choose another directory, "
                                  "or resume that one")
        run.frames.mkdir(parents=True)
        return run

    @classmethod
    def reopen(cls, saved: SavedRun) -> RunDir:
        """Continue writing a saved run after its last complete step."""
        run = cls(saved.path)
        run.meta = dict(saved.meta)
        run.history, run.steps = saved.history, dict(saved.steps)
        return run

    def record(self, event: Event) -> None:
        if isinstance(event, Started):
            self._start(event)
        elif isinstance(event, FrameMade):
            self._frame(event.step, event.image)
        elif isinstance(event, FrameScored):
            self._scores(event)
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
        write_atomic(thumb, _png(_thumbnail(image)))
        write_atomic(self.frames / frame_name(step), _png(image))

    def _scores(self, event: FrameScored) -> None:
        self.history.add(event.step, event.scores)
        self.steps[event.step] = [event.step, event.seconds_generate, event.seconds_score,
                                  event.calls, event.cost_usd, event.text, event.judge_text]
        self._write_tables()
        self.meta["last_step"] = event.step
        self._write_meta()

    def _write_tables(self) -> None:
        rows = []
        for name, series in self.history.scores.items():
            deltas = self.history.deltas(name)
            rows += [[step, name, score, deltas[step]] for step, score in enumerate(series)]
        rows.sort(key=lambda row: row[0])  # by step, metrics in column order within a step
        write_atomic(self.path / "scores.csv",
                     _csv_bytes(["step", "metric", "score", "delta"], rows))
        verdict = [[r.metric, r.delta_5, r.delta_10, r.delta_20, _detects(r.detects),
                    r.spearman_vs_psnr] for r in self.history.verdict()]
        write_atomic(self.path / "verdict.csv", _csv_bytes(
            ["metric", "delta_5", "delta_10", "delta_20", "detects", "spearman_vs_psnr"],
            verdict))
        write_atomic(self.path / "steps.csv", _csv_bytes(
            ["step", "seconds_generate", "seconds_score", "calls", "cost_usd", "model_text",
             "judge_text"], [self.steps[s] for s in sorted(self.steps)]))

    def _write_meta(self) -> None:
        self.meta["updated_at"] = _now()
        self.meta["seconds_total"] = round(time.time() - self._started, 3)
        write_atomic(self.path / "run.json", json.dumps(self.meta, indent=2).encode())

    def zip(self) -> Path:
        """Frames, CSVs and run.json in one file, written atomically beside them."""
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
            for file in sorted(self.path.rglob("*")):
                if file.is_file() and file.name != ZIP_NAME and not file.name.startswith("."):
                    archive.write(file, f"{self.path.name}/{file.relative_to(self.path)}")
        target = self.path / ZIP_NAME
        write_atomic(target, buffer.getvalue())
        return target


def _detects(value: bool | None) -> str:
    return {True: "yes", False: "no", None: "undecided"}[value]


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


def _score_info(column: dict[str, Any]) -> ScoreInfo:
    """A column of run.json (JSON has no tuples; older runs lack the newer fields)."""
    if column.get("score_range") is not None:
        column = {**column, "score_range": tuple(column["score_range"])}
    return ScoreInfo(**column)


def has_frame(run: Path, step: int) -> bool:
    """The step's frame was made: its full frame is here, or its thumbnail alone (a bundled
    recording keeps full frames at a few steps only, to stay small: scripts/record_examples.py).
    A thumbnail is written before its frame, and scores after both, so a step with scores and
    only a thumbnail was never half-written."""
    return (Path(run) / "frames" / frame_name(step)).is_file() or thumb_path(run, step).is_file()


def load_run(path: Path) -> SavedRun:
    path = Path(path)
    meta_file = path / "run.json"
    if not meta_file.is_file():
        raise FileNotFoundError(f"{path} is not a run directory (no run.json)")
    meta = json.loads(meta_file.read_text())
    history = History([_score_info(column) for column in meta.get("columns", [])])
    steps: dict[int, list[str]] = {}
    scores_file = path / "scores.csv"
    if scores_file.is_file():
        by_step: dict[int, dict[str, float]] = {}
        with scores_file.open(newline="") as handle:
            for row in csv.DictReader(handle):
                by_step.setdefault(int(row["step"]), {})[row["metric"]] = (
                    float(row["score"]) if row["score"] else math.nan)
        for step in sorted(by_step):
            history.add(step, by_step[step])
    steps_file = path / "steps.csv"
    if steps_file.is_file():
        with steps_file.open(newline="") as handle:
            steps = {int(row[0]): row for row in list(csv.reader(handle))[1:]}
    last = -1
    while last + 1 <= history.last_step and has_frame(path, last + 1):
        last += 1
    # Only complete steps (frame and scores) are the run; a kill may leave one half-written.
    for series in history.scores.values():
        del series[last + 1:]
    return SavedRun(path, meta, history, {s: r for s, r in steps.items() if s <= last}, last)
