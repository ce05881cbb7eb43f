"""A run's download: one zip of its frames, CSVs and run.json, with a README (`run.ZIP_README`,
spelled with the run's layout) and its plot page (not its animation, a lossy picture of the
frames the zip holds: it is downloaded beside it). Built from the files on disk, so a killed run
zips the same way; a frame that is not a whole PNG is never zipped.
"""

from __future__ import annotations

import os
import textwrap
import zipfile
from pathlib import Path

from PIL import Image

from ..files import temporary_name
from ..verdict.analysis import FLOOR_RULE, PAPER_TEST, checkpoints
from ..verdict.columns import VERDICT_FIELDS
from .run import FRAMES, ZIP_README, DamagedRun, SavedRun, frame_name


def write_run_zip(saved: SavedRun, plot_html: str) -> Path:
    """The run's download: its frames, CSVs and run.json, plus README.txt and `plot_html`
    (the plot layer's page, `plots.plot_page`), written straight to a temporary file (never
    held in memory) and renamed into place; a failed zip leaves no temporary file."""
    settings = saved.meta.get("settings", {})
    readme = ZIP_README.format(
        run_id=saved.path.name, status=str(saved.meta.get("status", "stopped")).capitalize(),
        last_step=saved.last_step, steps=saved.meta.get("steps", "?"),
        backend=settings.get("backend", "?"), seed=settings.get("seed", "?"),
        paper_test=PAPER_TEST, floor_rule=FLOOR_RULE, used=" ".join(
            str(step) for step in checkpoints(saved.last_step)) or "none yet",
        verdict_fields=textwrap.fill(", ".join(VERDICT_FIELDS), 70,
                                     subsequent_indent=" " * 25, break_on_hyphens=False))
    target = saved.run.zip_path
    temporary = temporary_name(target)
    try:
        _archive(saved, temporary, readme, plot_html)
        os.replace(temporary, target)
    except BaseException:  # a full disk, a frame gone: no half-written zip left behind
        temporary.unlink(missing_ok=True)
        raise
    return target


def _check_frame(saved: SavedRun, frame: Path) -> None:
    """A frame about to be zipped is a whole PNG (its chunks and their checksums read, nothing
    decoded), else `DamagedRun`: a download never carries a truncated frame."""
    try:
        with Image.open(frame, formats=["PNG"]) as image:
            image.verify()
    except (OSError, SyntaxError, ValueError):  # Pillow's words may quote the path
        raise DamagedRun(f"run {saved.path.name} is damaged: its frame {frame.name} is "
                         "truncated or not a PNG") from None


def _archive(saved: SavedRun, temporary: Path, readme: str, plot_html: str) -> None:
    run = saved.run
    with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
        folder = saved.path.name
        archive.writestr(f"{folder}/README.txt", readme)
        archive.writestr(f"{folder}/plot.html", plot_html)
        for file in sorted(saved.path.rglob("*")):
            relative = file.relative_to(saved.path)
            # A frame made after the last scored step (Stop drops the frame being scored) is no
            # part of the run; it stays on disk only while a page may still show it.
            unscored = relative.parts[0] == FRAMES and file.name > frame_name(saved.last_step)
            if (file.is_file() and file not in (run.zip_path, run.compare_zip_path,
                                                      run.animation_path)
                    and not unscored
                    and not any(part.startswith(".") for part in relative.parts)):
                if relative.parts[0] == FRAMES:
                    _check_frame(saved, file)
                # PNGs are compressed already: storing them costs no space and no CPU.
                archive.write(file, f"{folder}/{relative}", zipfile.ZIP_STORED
                              if file.suffix == ".png" else zipfile.ZIP_DEFLATED)
