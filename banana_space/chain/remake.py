"""Full frames for a bundled recording, re-made from its seed instead of stored.

A noisy 1024 px frame is ~1.5 MB even losslessly, so a recording keeps only a few full frames
(and a thumbnail and the scores of every step). Its other frames are re-made on this machine
by the same generator from the recording's settings in run.json (backend, options, prompt,
seed): an offline, seeded generator gives the same frame bit for bit on any x86 CPU
(backends/portable.py; scripts/check_remakes.py proves it, docs/recordings.md).
Each re-made frame is checked against the SHA-256 of the recorded frame's pixels (the run's
manifest, `Run.manifest_file`, written when the recording was made); a frame that differs is
not written, and the page shows the step's thumbnail and says so. A frame is re-made from the
nearest earlier full frame, so one that differs spoils only the steps up to the next kept
frame, by a generator that has first been shown the recording's input (`anchor_on`): a
recording is made in one go, and a profile that makes every frame from its run's first frame
(the blur control) must be given that frame, not the kept one it continues from. Re-making is
always asked for (`remake_frame`, `remake_all`); looking a frame up (`Run.shown_frame`) never
re-makes it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from pathlib import Path

from PIL import Image

from ..backends import create_backend
from ..files import png_bytes, write_atomic
from ..store.run import Run
from .producers import make_step

_LOCKS: dict[Path, threading.Lock] = {}  # one re-maker per run directory at a time
_LOCKS_GUARD = threading.Lock()
FAILED: dict[Path, str] = {}  # run directory -> why a frame could not be re-made


def pixel_hash(image: Image.Image) -> str:
    """SHA-256 of an image's mode, size and pixels: not of its PNG bytes, which depend on the
    encoder's version and settings."""
    image = image.convert("RGB")
    digest = hashlib.sha256(f"{image.mode} {image.width}x{image.height}\n".encode())
    digest.update(image.tobytes())
    return digest.hexdigest()


def write_manifest(run: Path, hashes: Mapping[int, str]) -> None:
    """Record the pixel hash of every step's frame, so they can be re-made and checked."""
    write_atomic(Run(run).manifest_file, json.dumps(
        {"pixels_sha256": {str(step): hashes[step] for step in sorted(hashes)}},
        indent=1).encode())


def remakeable(run: Path) -> bool:
    return Run(run).manifest_file.is_file()


def remake_frame(run: Path, step: int) -> Path | None:
    """The full frame of `step`, re-made first if the recording dropped it; None when it
    cannot be re-made exactly (`FAILED` says why) or the run keeps no manifest."""
    run = Path(run)
    target = Run(run).frame_path(step)
    if target.is_file():
        return target
    if not remakeable(run):
        return None
    with _lock(run):
        if not target.is_file():
            _remake_up_to(run, step)
    return target if target.is_file() else None


def remake_all(run: Path) -> None:
    """Every dropped frame of a recording, re-made (the app does this in the background)."""
    if remakeable(run):
        for step in range(Run(run).load().last_step + 1):
            remake_frame(run, step)


def _lock(run: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(run.resolve(), threading.Lock())


def _remake_up_to(run: Path, step: int) -> None:
    """Re-make the frames from the nearest earlier full frame up to `step`, each checked."""
    saved = Run(run).load()
    settings = saved.meta.get("settings", {})
    hashes = json.loads(saved.run.manifest_file.read_text())["pixels_sha256"]
    start = max(s for s in range(step + 1) if saved.run.frame_path(s).is_file())
    try:
        backend = create_backend(settings["backend"], **settings.get("backend_options", {}))
    except (KeyError, ValueError) as error:  # e.g. a profile this version no longer has
        FAILED[run.resolve()] = f"its generator cannot be made here ({error})"
        return
    if hasattr(backend, "anchor_on"):  # the frame its run began with: a recording's input
        backend.anchor_on(saved.frame(0), 0)
    image = saved.frame(start)
    for current in range(start + 1, step + 1):
        image = make_step(backend, image, settings.get("prompt", ""), settings.get("seed", 0),
                          current).image
        if pixel_hash(image) != hashes.get(str(current)):
            FAILED[run.resolve()] = (f"step {current} came out different from the recorded "
                                     "frame (another version of its generator?)")
            return
        write_atomic(saved.run.frame_path(current), png_bytes(image, fast=True))
