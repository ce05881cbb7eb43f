"""Writing a run as it happens: its events into its folder (`RunDir`), and its zip.

Where each file lies is the run's own (`banana_space.store.run`, which describes the layout); this
module writes them: a frame and its thumbnail as soon as it is made, the CSVs and run.json after
each score, and at the end the zip, whose plot.html the plot layer builds (`plots.plot_page`).
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import time
import weakref
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from PIL import Image

from ..events import Event, Finished, FrameMade, Notice, Started
from ..files import csv_bytes, png_bytes, write_atomic
from ..verdict.columns import VERDICT_FIELDS, file_cells
from ..verdict.history import STEP_FIELDS, History
from ..verdict.plots import plot_page
from ..votes.plot import people_traces
from ..votes.tally import people_row
from .archive import write_run_zip
from .run import THUMB_SIDE, Run, SavedRun

FORMAT_VERSION = 1
MAX_NOTICES = 200  # run.json keeps the latest ones


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


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


class RunDir:
    """Writes a run's events to its directory as they happen, holding its writer's lock until
    `close()` (or until it is garbage-collected: a run nobody iterates must not stay locked)."""

    def __init__(self, path: Path, lock: int) -> None:
        self.path = Path(path)
        self.run = Run(path)
        self.history = History([])  # the run's scores and steps' records so far (its fold)
        self.meta: dict[str, Any] = {}
        self._started = time.time()
        self._unlock = weakref.finalize(self, os.close, lock)

    @classmethod
    def create(cls, root: Path, run_id: str | None = None,
               owners: Sequence[str] = ()) -> RunDir:
        """A new run's folder, its writer lock held and its `owners` recorded (opaque keys,
        the first whose share it counts against: `Run.mark_owner`) before anything else is
        written; none: nobody's to resume."""
        run = Run(Path(root) / (run_id or new_run_id()))
        if run.frames_dir.exists():
            raise FileExistsError(f"{run.path} already holds a run: choose another directory, "
                                  "or resume that one")
        run.frames_dir.mkdir(parents=True)
        made = cls(run.path, run.lock())
        if owners:
            run.mark_owner(*owners)
        return made

    @classmethod
    def reopen(cls, saved: SavedRun, lock: int) -> RunDir:
        """Continue writing a saved run after its last complete step; `lock` is its writer
        lock, taken before `saved` was read."""
        run = cls(saved.path, lock)
        run.meta = dict(saved.meta)
        run.history = saved.history
        return run

    def close(self) -> None:
        """Release the writer's lock."""
        self._unlock()

    def record(self, event: Event) -> None:
        """Fold `event` into the run's history and write what it changed: run.json on the start
        and the end, a frame as soon as it is made, the CSVs (and the last complete step) once
        its scores change."""
        if self.history.apply(event):
            self.meta["last_step"] = max(self.history.steps)  # the newest scored step
            self._write_tables()
            self._write_meta()
        if isinstance(event, Started):
            self._start(event)
        elif isinstance(event, FrameMade):
            self._frame(event.step, event.image)
        elif isinstance(event, Notice):
            notices = self.meta.setdefault("notices", [])
            notices.append(asdict(event))
            del notices[:-MAX_NOTICES]
        elif isinstance(event, Finished):
            self.meta.update(status=event.status, reason=event.reason,
                             last_step=event.last_step, totals=event.totals)
            self._write_meta()

    def _start(self, event: Started) -> None:
        self.meta.update(
            format=FORMAT_VERSION, status="running", reason="", last_step=event.first_step - 1,
            steps=event.steps, settings=event.settings, unavailable=event.unavailable,
            columns=[asdict(info) for info in event.infos], versions=versions(),
            started_at=self.meta.get("started_at", _now()))
        self._write_meta()

    def _frame(self, step: int, image: Image.Image) -> None:
        """The frame, as soon as it is made (its thumbnail first: the strip links both). A
        frame without scores yet is not part of the run until they come (`Run.load`)."""
        thumb = self.run.thumb_path(step)
        thumb.parent.mkdir(exist_ok=True)
        write_atomic(thumb, png_bytes(_thumbnail(image), fast=True))
        write_atomic(self.run.frame_path(step), png_bytes(image, fast=True))

    def write_scores(self) -> None:
        """scores.csv and verdict.csv from the scores so far (the verdict's arithmetic is
        `history.History`'s) and the room's votes (the people row, `votes.tally`)."""
        rows = []
        for name, series in self.history.scores.items():
            deltas, since = self.history.deltas(name), self.history.since_input(name)
            rows += [[step, name, score, deltas[step], since[step]]
                     for step, score in enumerate(series)]
        rows.sort(key=lambda row: row[0])  # by step, metrics in column order within a step
        write_atomic(self.run.scores_file, csv_bytes(
            ["step", "metric", "score", "delta", "delta_since_input"], rows))
        ledger = self.run.ledger()
        with ledger.locked():  # a vote cast meanwhile rewrites the people row after this
            rows = ledger.with_people(self.history.verdict(), self.history.last_step)
            write_atomic(self.run.verdict_file, csv_bytes(
                list(VERDICT_FIELDS), [file_cells(r) for r in rows]))

    def _write_tables(self) -> None:
        self.write_scores()
        steps = self.history.steps
        write_atomic(self.run.steps_file, csv_bytes(
            STEP_FIELDS, [list(steps[s]) for s in sorted(steps)]))

    def _write_meta(self) -> None:
        self.meta["updated_at"] = _now()
        self.meta["seconds_total"] = round(time.time() - self._started, 3)
        write_atomic(self.run.meta_file, json.dumps(self.meta, indent=2).encode())



def rewrite_verdict(run: Path) -> None:
    """A saved run's scores.csv and verdict.csv written again from its scores, after the
    verdict's arithmetic changed; its frames, steps.csv and run.json stay as they are.

    Raises:
        RunBusy: the run is being written right now.
    """
    run_folder = Run(run)
    lock = run_folder.lock()
    writer = RunDir.reopen(run_folder.load(), lock)
    try:
        writer.write_scores()
    finally:
        writer.close()


def write_zip(run: Path) -> Path:
    """The run's download (`archive.write_run_zip`), its plot.html built by the plot layer."""
    saved = Run(run).load()
    pairs = saved.run.ledger().pairs()
    people = people_traces(pairs, people_row(pairs, saved.last_step))  # the room's line
    return write_run_zip(saved, plot_page(saved.history, f"Banana Space run {saved.path.name}",
                                          also=people))


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
