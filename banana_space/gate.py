"""The quality gate for editing agents: has an image degraded since the original?

An agent that edits an image again and again (Banana100, arXiv 2604.03400: the copy of a copy
collapses within tens of steps) calls this after each step and stops before the collapse. It
scores the original and each edit with our rulers (noise, grain, lattice, colour cast, green
tint: cheap measures aimed at what repeated editing adds) and fidelity to the original (PSNR;
pyiqa's SSIM costs 1.9 s per 1024² frame on one core, four times the gate's budget). An edit
is degraded when any measure is worse than the original's by more than its noise floor since
the input (`floors.floor_since_input`: how far it moves from the input on chains with no damage
a person would name; one edit against its original is a change since the input, not the paper's
Δ from the first copy); a measure with
no measured floor is reported but does not vote. Where to look is the magnifier's crop: the
window where the original and the last edit differ most.

An agent checks each edit as it makes it, sending the same original every time: the original's
measures are kept (by the SHA-256 of its pixels, `ORIGINALS`), so a call after the first scores
only the edit.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
import zipfile
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from .analysis import INPUT, oriented_deltas
from .budget import BUDGET, scoring_bytes
from .catalog import metric_info, to_tensor
from .floors import floor_since_input
from .frames import ANIMATION_SUFFIXES, frames_in_animation, frames_in_zip
from .images import BadImage, load_image
from .magnifier import largest_difference_box
from .pool import POOL, MetricPool
from .rulers import RULERS, measure_all
from .scoring import at_input_size

FIDELITY_MEASURE = "psnr"
GATE_MEASURES = (FIDELITY_MEASURE, *RULERS)
MAX_EDITS = 100


class OriginalScores:
    """The measures of the last `kept` originals, by the SHA-256 of their size and pixels (a
    few floats each). The measures are pure functions of the pixels, so a kept one is exactly
    what scoring again would give; one with a failed (NaN) measure is not kept."""

    def __init__(self, kept: int = 64) -> None:
        self.kept = kept
        self._scores: OrderedDict[str, dict[str, float]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(image: Image.Image) -> str:
        return hashlib.sha256(f"{image.mode} {image.size}".encode() + image.tobytes()).hexdigest()

    def get(self, key: str) -> dict[str, float] | None:
        with self._lock:
            if key not in self._scores:
                return None
            self._scores.move_to_end(key)
            return dict(self._scores[key])

    def keep(self, key: str, scores: dict[str, float]) -> None:
        if any(math.isnan(value) for value in scores.values()):
            return
        with self._lock:
            self._scores[key] = dict(scores)
            while len(self._scores) > self.kept:
                self._scores.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._scores.clear()


ORIGINALS = OriginalScores()


def _measure(pool: MetricPool, image: Image.Image, original: Image.Image,
             reference: Any) -> dict[str, float]:
    """The gate's measures of one image, within the memory budget that every scoring in this
    process shares: the rulers on its pixels (pure functions, called directly: no tensor round
    trip, what two rulers share computed once), PSNR against `reference` (the original as a
    tensor, made once). A failing measure is NaN."""
    needed = scoring_bytes(GATE_MEASURES, max(image.width * image.height,
                                              original.width * original.height))
    if not BUDGET.fits(needed):
        raise ValueError(f"a {image.width} x {image.height} image is too large for this "
                         "server's scoring budget (BANANA_MEMORY_GB)")
    with BUDGET.request(needed):
        pixels = np.asarray(image, dtype=np.float32) / 255.0
        scores = measure_all(pixels)
        fidelity = (to_tensor(at_input_size(image, original)), reference)
        scores[FIDELITY_MEASURE] = _safely(pool.score, FIDELITY_MEASURE, *fidelity)
    return scores


def _safely(measure: Any, *args: Any) -> float:
    try:
        return float(measure(*args))
    except Exception:  # one missing measure, never a failed check
        return math.nan


def _verdict(scores: dict[str, float], start: dict[str, float]) -> dict[str, Any]:
    """One edit against the original: each measure's oriented Δ, its floor, and how many
    floors worse it is; `worse` names the measures past their floor."""
    measures, worse = {}, []
    for name in GATE_MEASURES:
        delta = oriented_deltas([start[name], scores[name]], metric_info(name).lower_better,
                                base=INPUT)[1]
        floor = floor_since_input(name)
        past = floor is not None and math.isfinite(delta) and delta < -floor
        measures[name] = {
            "delta": _round(delta), "floor": _round(floor),
            "floors_worse": _round(-delta / floor) if floor and math.isfinite(delta) else None}
        if past:
            worse.append(name)
    return {"degraded": bool(worse), "worse": worse, "measures": measures}


def check_degradation(original: Image.Image, edited: Sequence[Image.Image], *,
                      pool: MetricPool = POOL) -> dict[str, Any]:
    """Has each edit degraded the image since the original?

    Args:
        original: the image before any edit.
        edited: one edit, or a chain of them in order (each compared with the original).
        pool: the metric pool (the process's own by default).
    Returns:
        A JSON-able dict: `degraded` (the last edit's answer), `worse` (which measures say so),
        `first_degraded` (the first edit that was, 1-based, or None), `look_at` (the crop box
        left, top, right, bottom in the original's pixels where the last edit differs most),
        `edits` (per edit: degraded, worse, and per measure its oriented Δ, floor and how many
        floors worse), `seconds`.
    """
    if not edited or len(edited) > MAX_EDITS:
        raise ValueError(f"give 1 to {MAX_EDITS} edited images, got {len(edited)}")
    began = time.perf_counter()
    original, edited = original.convert("RGB"), [image.convert("RGB") for image in edited]
    reference = to_tensor(original)
    key = ORIGINALS.key(original)
    start = ORIGINALS.get(key)
    if start is None:
        start = _measure(pool, original, original, reference)
        ORIGINALS.keep(key, start)
    edits = [{"edit": index, **_verdict(_measure(pool, image, original, reference), start)}
             for index, image in enumerate(edited, 1)]
    last = edits[-1]
    first = next((edit["edit"] for edit in edits if edit["degraded"]), None)
    return {"degraded": last["degraded"], "worse": last["worse"], "first_degraded": first,
            "look_at": list(largest_difference_box(original, edited[-1])),
            "edits": edits,
            "rule": "degraded: a measure's oriented delta (negative = worse) is below minus "
                    "its noise floor",
            "seconds": round(time.perf_counter() - began, 3)}


def edits_in(path: str | Path) -> list[Image.Image]:
    """The edits in one file: a single image, or a zip / animated GIF / WebP of several in
    order (each checked as every upload is). Raises `BadImage` with the reason."""
    path = Path(path)
    if zipfile.is_zipfile(path):
        frames = frames_in_zip(path)
    elif path.suffix.lower() in ANIMATION_SUFFIXES:
        frames = frames_in_animation(path)
    else:
        return [load_image(path).image]
    if len(frames) > MAX_EDITS:
        raise BadImage(f"{path.name} holds {len(frames)} images; at most {MAX_EDITS} are checked")
    return [frames.frame(index).image for index in range(len(frames))]


def _round(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, 4)
