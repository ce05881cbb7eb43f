"""A run: one folder, the one on-disk format that the CLI, the app and the zip share, and the
one object (`Run`) that knows it. Nothing else spells a run's file names; everything asks a
`Run` where a frame, a thumbnail, the zip or run.json is.

    DIR/frames/step_000.png …   every frame, lossless
    DIR/.thumbs/.step_000.png … each frame at most 256 px, for the app's strip: dot-files,
                                like every cache here, so never zipped or replayed
    DIR/scores.csv              step,metric,score,delta,delta_since_input (long format;
                                fidelity and judges too; delta from step 1, the paper's base)
    DIR/verdict.csv             `columns.VERDICT_FIELDS`: metric, the paper's Δ at its
                                checkpoints, detects, detects_robust, checkpoints_used, …
    DIR/steps.csv               per step: seconds, calls, cost, what the model said
    DIR/run.json                settings, versions, status, timings; never a secret
    DIR/banana-<run id>.zip     all of the above plus README.txt and plot.html, for download
    DIR/.writer.lock            held (flock) by the one process and thread writing the run
    DIR/.owner                  who made the run (opaque keys, one a line), for shares
    DIR/remake.json             a bundled recording's pixel hashes, so that the frames it
                                dropped can be re-made and checked (`remake.py`)
    DIR/compare.json            in both runs of a comparison: the pair, its two settings
                                and any side that failed (`compare.py`)
    DIR/banana-compare-<id>.zip in a comparison's run A: both runs' zips and the comparison
                                (never inside A's own zip)
    DIR/votes.csv               the room's votes on pairs of frames, append-only: when, the
                                voter as a keyed hash, the two steps, the choice
                                (`banana_space.votes`); zipped and kept like the CSVs
    DIR/.votes.lock             held (flock) while a vote is appended or verdict.csv rewritten

Every file is written whole to a uniquely named temporary file and renamed into place, so a run
killed at any instant leaves only complete frames and CSVs without torn lines. A stopped or
failed run leaves the same files for the frames it made. A run has one writer at a time: a
second one (a resume of a run still being written, here or in another process) gets `RunBusy`.

A `Run` only looks: opening one never downloads it (`persist.restore`) nor re-makes a frame
(`remake.remake_frame`); a caller that wants either asks for it. Events are written by
`rundir.RunDir`.
"""

from __future__ import annotations

import csv
import fcntl
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from ..events import ScoreInfo
from ..files import csv_text, write_atomic
from ..markup import error_line
from ..verdict.history import History, StepRow
from ..votes.ledger import Ledger

META_NAME = "run.json"
FRAMES = "frames"
THUMBS = ".thumbs"
FRAME_GLOB = "step_*.png"
FRAME_STEP_JS = r"step_0*(\d+)\.png"  # a frame's step read from its file (or thumbnail) name
LOCK_NAME = ".writer.lock"
OWNER_NAME = ".owner"
MANIFEST_NAME = "remake.json"  # {"pixels_sha256": {"<step>": "<hex>", ...}}
COMPARE_NAME = "compare.json"  # {"a": run id, "b": run id or null, "sides": …, "failed": …}
VOTES_NAME = "votes.csv"
VOTES_LOCK_NAME = ".votes.lock"
THUMB_SIDE = 256  # the strip shows 88 px (176 on a dense screen), not 1.6 MB frames
# The files of a run directory, relative to it, that are kept on the hub and may be restored.
KEPT_FILE = re.compile(r"(run\.json|compare\.json|scores\.csv|verdict\.csv|steps\.csv|"
                       r"votes\.csv|frames/step_\d{3}\.png|\.thumbs/\.step_\d{3}\.png)")


def frame_name(step: int) -> str:
    return f"step_{step:03d}.png"


def frame_files(folder: Path) -> list[Path]:
    """The frames in `folder` (a run's frames/, or a folder of frames named as a run names
    them), unordered."""
    return list(Path(folder).glob(FRAME_GLOB))


def is_thumbnail(path: str | Path) -> bool:
    """Whether a frame's file is its thumbnail (a recording that kept only that)."""
    return Path(path).parent.name == THUMBS


class RunBusy(RuntimeError):
    """The run is being written by another run or resume (in this process or another)."""


class DamagedRun(ValueError):
    """A run's files cannot be read (a garbage run.json, a bad scores row, a field of the wrong
    type, a truncated frame): one line saying which file, never a traceback."""


# What reading a damaged file raises: json's and csv's errors, a number that is not one, a
# field that is missing or of another type.
DAMAGE = (ValueError, KeyError, TypeError, AttributeError, IndexError, csv.Error)
# run.json's fields that the code reads as given, and their types.
META_TYPES = {"steps": int, "status": str, "settings": dict, "columns": list}


class Run:
    """One run folder: where each of its files lies, and what can be read of it without
    writing (its saved state, its live status, its owner)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"

    @property
    def id(self) -> str:
        return self.path.name

    @property
    def meta_file(self) -> Path:
        return self.path / META_NAME

    @property
    def frames_dir(self) -> Path:
        return self.path / FRAMES

    @property
    def scores_file(self) -> Path:
        return self.path / "scores.csv"

    @property
    def verdict_file(self) -> Path:
        return self.path / "verdict.csv"

    @property
    def steps_file(self) -> Path:
        return self.path / "steps.csv"

    @property
    def manifest_file(self) -> Path:
        return self.path / MANIFEST_NAME

    @property
    def zip_path(self) -> Path:
        """The run's download, named after it (several downloads must not all be one name)."""
        return self.path / f"banana-{self.id}.zip"

    @property
    def animation_path(self) -> Path:
        """The chain as an animated WebP to share (`animation.write_animation`), beside the zip."""
        return self.path / f"banana-{self.id}.webp"

    @property
    def compare_file(self) -> Path:
        """The comparison this run is a side of, if any."""
        return self.path / COMPARE_NAME

    @property
    def votes_file(self) -> Path:
        """The room's votes on pairs of this run's frames (`banana_space.votes.ledger`)."""
        return self.path / VOTES_NAME

    @property
    def votes_lock(self) -> Path:
        """Held while a vote is appended, or verdict.csv written with the votes' row."""
        return self.path / VOTES_LOCK_NAME

    def ledger(self) -> Ledger:
        """The room's votes on this run (`banana_space.votes.ledger`)."""
        return Ledger(self.votes_file, self.votes_lock)

    @property
    def compare_zip_path(self) -> Path:
        """The comparison's download, in its run A."""
        return self.path / f"banana-compare-{self.id}.zip"

    def exists(self) -> bool:
        """Whether a run is here (its run.json)."""
        return self.meta_file.is_file()

    def frame_path(self, step: int) -> Path:
        """Where the full frame of `step` lies (or would)."""
        return self.frames_dir / frame_name(step)

    def thumb_path(self, step: int) -> Path:
        return self.path / THUMBS / f".{frame_name(step)}"

    def has_frame(self, step: int) -> bool:
        """The step's frame was made: its full frame is here, or its thumbnail alone (a
        bundled recording keeps full frames at a few steps only, to stay small:
        scripts/record_examples.py). A thumbnail is written before its frame, and scores after
        both, so a step with scores and only a thumbnail was never half-written."""
        return self.frame_path(step).is_file() or self.thumb_path(step).is_file()

    def shown_frame(self, step: int) -> Path:
        """The frame to show for a step: the full frame, or its thumbnail where a recording
        kept only that. Never re-made here (`remake.remake_frame` does that, when asked)."""
        full, thumb = self.frame_path(step), self.thumb_path(step)
        return thumb if not full.is_file() and thumb.is_file() else full

    def modified(self) -> float:
        """When run.json last changed; 0 for a run deleted meanwhile (the oldest)."""
        try:
            return self.meta_file.stat().st_mtime
        except FileNotFoundError:
            return 0.0

    def lock(self) -> int:
        """Take the run's writer lock (a descriptor; closing it releases the lock), or
        `RunBusy`. flock conflicts between two opens of the file even in one process, so it
        guards threads and processes alike."""
        descriptor = os.open(self.path / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            raise RunBusy(f"run {self.id} is being written right now (a run or a resume "
                          "is in progress): open it to watch, or resume it once it has ended"
                          ) from None
        return descriptor

    def live_status(self, status: str) -> str:
        """What the run is doing now, given the status its run.json records: "running" while
        its writer holds the lock, "interrupted" where the record says running but the writer
        has gone (killed with -9, or its process ended mid-run), else the recorded status."""
        try:
            os.close(self.lock())
        except RunBusy:
            return "running"
        except FileNotFoundError:
            return status
        return "interrupted" if status == "running" else status

    @property
    def made_by(self) -> str | None:
        """Whose share the run counts against (`retention.prune_runs`): the first key
        `mark_owner` recorded, or None (a recording, a restored run)."""
        owners = self._owner_lines()
        return owners[0] if owners else None

    @property
    def owners(self) -> frozenset[str]:
        """Every key that owns the run (a browser's and the token its caller gave, say)."""
        return frozenset(self._owner_lines())

    def _owner_lines(self) -> list[str]:
        try:
            return (self.path / OWNER_NAME).read_text().split()
        except (FileNotFoundError, UnicodeDecodeError):
            return []

    def mark_owner(self, *owners: str) -> None:
        """Record who made the run (opaque keys, never an address; the first is the one whose
        share it counts against): a dot-file, so never zipped or replayed."""
        write_atomic(self.path / OWNER_NAME, "\n".join(owners).encode())

    def load(self) -> SavedRun:
        """The run as saved: its run.json, its scores (`History`) and its frames.

        Raises:
            FileNotFoundError: no run.json there.
            DamagedRun: a file of it cannot be read (one line saying which).
        """
        if not self.exists():
            raise FileNotFoundError(f"{self.path} is not a run directory (no run.json)")
        reading = META_NAME
        try:
            meta = _checked_meta(json.loads(self.meta_file.read_text()))
            reading = self.scores_file.name
            history = read_history(self.scores_file, meta)
            reading = self.steps_file.name
            history.steps = self._steps()
        except DAMAGE as error:
            raise DamagedRun(f"run {self.id} is damaged: its {reading} cannot be read "
                             f"({error_line(error, 120)})") from None
        last = -1
        while last + 1 <= history.last_step and (self.has_frame(last + 1)
                                                  or never_made(history, last + 1)):
            last += 1
        # Only complete steps (frame and scores) are the run; a kill may leave one half-written.
        for series in history.scores.values():
            del series[last + 1:]
        history.steps = {s: r for s, r in history.steps.items() if s <= last}
        return SavedRun(self.path, meta, history, last)

    def _steps(self) -> dict[int, StepRow]:
        """steps.csv's rows by step (`history.StepRow`); none where it is not written yet."""
        if not self.steps_file.is_file():
            return {}
        with self.steps_file.open(newline="") as handle:
            rows = [[csv_text(cell) for cell in row] for row in list(csv.reader(handle))[1:]]
        return {int(row[0]): StepRow(int(row[0]), float(row[1] or 0), float(row[2] or 0),
                                     int(row[3] or 0), float(row[4]) if row[4] else None,
                                     *row[5:7]) for row in rows}


def _checked_meta(meta: Any) -> dict[str, Any]:
    """run.json as read, or `TypeError` naming the field that is not what the code reads."""
    if not isinstance(meta, dict):
        raise TypeError(f"it holds a {type(meta).__name__}, not an object")
    for name, kind in META_TYPES.items():
        if name in meta and (not isinstance(meta[name], kind) or isinstance(meta[name], bool)):
            raise TypeError(f"its {name} is a {type(meta[name]).__name__}, not a {kind.__name__}")
    return meta


def runs_in(root: Path) -> list[Run]:
    """The runs in a runs folder (each folder holding a run.json), in no particular order."""
    return [Run(meta.parent) for meta in Path(root).glob(f"*/{META_NAME}")]


def never_made(history: History, step: int) -> bool:
    """A step inside a run with no score at all (and no frame): a chain sampled at some steps
    only (a real chain fetched at its checkpoints, `real_chains.py`) skipped it. A run that
    makes every step never has one: its scores are written after its frame."""
    return all(math.isnan(series[step]) for series in history.scores.values()
               if step < len(series))


def read_history(scores_file: Path, meta: dict[str, Any]) -> History:
    """The scores in a scores.csv, as columns of run.json (`meta`) describe them; a step or
    score missing from the file is NaN."""
    history = History([ScoreInfo.from_record(column) for column in meta.get("columns", [])])
    if scores_file.is_file():
        by_step: dict[int, dict[str, float]] = {}
        with scores_file.open(newline="") as handle:
            for row in csv.DictReader(handle):
                by_step.setdefault(int(row["step"]), {})[row["metric"]] = (
                    float(row["score"]) if row["score"] else math.nan)
        for step in sorted(by_step):
            history.add(step, by_step[step])
    return history


ZIP_README = """Banana Space run {run_id}
{status} after step {last_step} of {steps} ({backend}, seed {seed}).

Banana100 (arXiv 2604.03400): an image editor is asked again and again for an exact replica of
its own previous output. This archive holds one such chain and its scores.

frames/step_000.png ...  every frame, lossless; step 0 is the input, step 1 the first copy
scores.csv               step,metric,score,delta,delta_since_input: every score of every
                         frame (long format), the fidelity references (psnr, ssim against
                         step 0) and judges too
verdict.csv              {verdict_fields}
steps.csv                per step: seconds generating and scoring, calls, cost (USD), and what
                         the model said
votes.csv                where people voted on pairs of frames: when, the voter as a keyed
                         hash, earlier, later, choice (which of the two looked better); the
                         people row of verdict.csv is read from it (absent: nobody voted)
run.json                 settings (prompt, seed, generator, options), versions, status,
                         timings, notices; never an API key
plot.html                every score's change since the input per step; opens in any
                         browser, offline (plotly's JavaScript is inside)
README.txt               this file

delta is the paper's: delta_i = score_i - score_1, from step 1, the first copy, with the sign
flipped for metrics where lower is better, so a NEGATIVE delta always means WORSE (empty at
step 0). A metric "detects" the degradation by {paper_test}; shorter runs use the checkpoints
that exist, else the last step after step 1, and checkpoints_used names the steps a verdict
was read at (this run: {used}); "undecided" where it cannot be asked, and undecided_because
says why (no step 1, or a missing score). The fidelity references (psnr, ssim) are scored against
the input and their delta is from step 1 too.
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


@dataclass
class SavedRun:
    """A run directory read back (`Run.load`): for reopening in the app and for `resume`."""

    path: Path
    meta: dict[str, Any]
    history: History  # complete steps only, their steps.csv rows in `history.steps`
    last_step: int  # the last step with both a complete frame and its scores

    @property
    def run(self) -> Run:
        return Run(self.path)

    @property
    def steps(self) -> dict[int, StepRow]:
        """steps.csv's rows by step, complete steps only."""
        return self.history.steps

    def frame(self, step: int) -> Image.Image:
        with Image.open(self.run.frame_path(step)) as image:
            return image.convert("RGB")
