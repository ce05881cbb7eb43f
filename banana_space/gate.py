"""The quality gate for editing agents: has an image degraded since the original?

An agent that edits an image again and again (Banana100, arXiv 2604.03400: the copy of a copy
collapses within tens of steps) calls this after each step and stops before the collapse. It
scores the original and each edit with our rulers (noise, Mi-Ripple's scale index and lattice
probe, colour cast, green tint: cheap measures aimed at what repeated editing adds) and
fidelity to the original (PSNR;
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

A call's edits are decoded one at a time as they are checked (`edits_in` gives `Edits`, never a
list of images), each decode and each scoring within the memory budget, so a call holds the
original and one edit whatever it sends; a call checks at most `MAX_EDITS` edits and
`MAX_PIXELS` pixels of them (`bench/gate_memory.py` measures both ways).
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from .budget import BUDGET, scoring_bytes
from .scores.catalog import metric_info, to_tensor
from .scores.pool import POOL, MetricPool
from .scores.rulers import RULERS, measure_all
from .scores.scoring import at_input_size
from .sources.frames import ANIMATION_SUFFIXES, frames_in_animation, frames_in_zip
from .sources.images import BadImage, load_image
from .verdict.analysis import FLOOR_RULE, INPUT, beyond_floor, oriented_deltas
from .verdict.floors import floor_since_input
from .verdict.magnifier import largest_difference_box

FIDELITY_MEASURE = "psnr"
GATE_MEASURES = (FIDELITY_MEASURE, *RULERS)
MAX_EDITS = 100
# The pixels of all edits in one call: 128 megapixels is 122 edits of 1024², 30 of 2048².
MAX_PIXELS = 128_000_000


@dataclass(frozen=True)
class Edits:
    """The edits in one file, decoded one at a time as they are iterated."""

    count: int
    read: Callable[[int], Image.Image]

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[Image.Image]:
        return (self.read(index) for index in range(self.count))


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

    def remember(self, key: str, scores: dict[str, float]) -> None:
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
        past = floor is not None and beyond_floor(delta, floor) is True
        measures[name] = {
            "delta": _round(delta), "floor": _round(floor),
            "floors_worse": _round(-delta / floor) if floor and math.isfinite(delta) else None}
        if past:
            worse.append(name)
    return {"degraded": bool(worse), "worse": worse, "measures": measures}


def check_degradation(original: Image.Image, edited: Sequence[Image.Image] | Edits, *,
                      pool: MetricPool = POOL) -> dict[str, Any]:
    """Has each edit degraded the image since the original?

    Args:
        original: the image before any edit.
        edited: one edit, or a chain of them in order (each compared with the original):
            images, or `Edits` (read one at a time: only the last is kept).
        pool: the metric pool (the process's own by default).
    Returns:
        A JSON-able dict: `degraded` (the last edit's answer), `worse` (which measures say so),
        `first_degraded` (the first edit that was, 1-based, or None), `look_at` (the crop box
        left, top, right, bottom in the original's pixels where the last edit differs most),
        `edits` (per edit: degraded, worse, and per measure its oriented Δ, floor and how many
        floors worse), `seconds`.

    Raises:
        ValueError: no edit, more than `MAX_EDITS`, or more than `MAX_PIXELS` in all (from
            the count and the original's size before anything is scored, else as soon as
            the edits read so far pass it).
    """
    if not len(edited) or len(edited) > MAX_EDITS:
        raise ValueError(f"give 1 to {MAX_EDITS} edited images, got {len(edited)}")
    _check_pixels(len(edited) * original.width * original.height, len(edited))
    began = time.perf_counter()
    original = original.convert("RGB")
    reference = to_tensor(original)
    key = ORIGINALS.key(original)
    start = ORIGINALS.get(key)
    if start is None:
        start = _measure(pool, original, original, reference)
        ORIGINALS.remember(key, start)
    edits, pixels, image = [], 0, original
    for index, read in enumerate(edited, 1):
        image = read.convert("RGB")  # the edit before it is dropped here
        pixels += image.width * image.height
        _check_pixels(pixels, index)
        edits.append({"edit": index,
                      **_verdict(_measure(pool, image, original, reference), start)})
    last = edits[-1]
    first = next((edit["edit"] for edit in edits if edit["degraded"]), None)
    return {"degraded": last["degraded"], "worse": last["worse"], "first_degraded": first,
            "look_at": list(largest_difference_box(original, image)),
            "edits": edits,
            "rule": f"degraded: a measure, since the original, is {FLOOR_RULE}",
            "seconds": round(time.perf_counter() - began, 3)}


def _check_pixels(pixels: int, edits: int) -> None:
    if pixels > MAX_PIXELS:
        raise ValueError(f"{edits} edit(s) come to {pixels / 1e6:,.0f} megapixels; one call "
                         f"checks at most {MAX_PIXELS / 1e6:,.0f}: send fewer or smaller edits "
                         "per call")


def edits_in(path: str | Path) -> Edits:
    """The edits in one file: a single image, or a zip / animated GIF / WebP of several in
    order (each checked as every upload is when it is read). Its count is checked here, from
    the zip's directory or the animation's headers; raises `BadImage` with the reason."""
    path = Path(path)
    if zipfile.is_zipfile(path):
        frames = frames_in_zip(path)
    elif path.suffix.lower() in ANIMATION_SUFFIXES:
        frames = frames_in_animation(path)
    else:
        return Edits(1, lambda index: load_image(path).image)
    if len(frames) > MAX_EDITS:
        raise BadImage(f"{path.name} holds {len(frames)} images; at most {MAX_EDITS} are checked")
    return Edits(len(frames), lambda index: frames.frame(index).image)


def _round(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, 4)
