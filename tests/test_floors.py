"""The noise floors shipped in banana_space/verdict/floors.csv (scripts/measure_floors.py, from the
nuisance chains on three clean starts) keep the robust verdict from firing where nothing a
person would call damage happened, on a start they were not measured on."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import EXAMPLES
from PIL import Image
from scipy import ndimage

from banana_space.scores.catalog import CPU_DEFAULTS, FIDELITY
from banana_space.scores.rulers import RULERS
from banana_space.verdict.analysis import detects_degradation, oriented_deltas
from banana_space.verdict.floors import floor_of, floors

# Starts the floors were not measured on: the last clean render, and a photo with greys (the
# feathers have too few near-neutral pixels for the colour rulers: no score, undecided).
HELD_OUT = {"clean-feathers.png": {"colour_cast": None, "green_tint": None},
            "astronaut.png": {}}
STEPS = (1, 5, 10, 20)  # the paper's base and checkpoints: the only steps a verdict reads


def test_every_cpu_score_has_a_floor_and_fidelity_has_none() -> None:
    for name in (*CPU_DEFAULTS, *RULERS):
        assert 0 < floor_of(name) < math.inf, name
    assert all(floor_of(name) is None for name in FIDELITY)
    assert floor_of("no-such-score") is None and set(floors()) == {*CPU_DEFAULTS, *RULERS}


@pytest.fixture(scope="module", params=list(HELD_OUT))
def start(request) -> tuple[np.ndarray, dict[str, None]]:
    """A held-out start at most 1024 px (the size the floors were made at), and the rulers
    that cannot score it."""
    with Image.open(EXAMPLES / request.param) as image:
        small = image.convert("RGB")
    small.thumbnail((1024, 1024), Image.Resampling.LANCZOS)
    return np.asarray(small, dtype=np.float64) / 255, HELD_OUT[request.param]


def verdicts(frames: dict[int, np.ndarray]) -> dict[str, tuple[bool | None, bool | None]]:
    """Each ruler's (paper's, robust) verdict on a chain given by its frames at 0 and STEPS:
    its Δ from step 1, the paper's base."""
    found = {}
    for name, ruler in RULERS.items():
        scores = [math.nan] * (max(STEPS) + 1)
        for step, frame in frames.items():
            scores[step] = ruler.measure(frame)
        deltas = oriented_deltas(scores, ruler.lower_better)
        found[name] = (detects_degradation(deltas), detects_degradation(deltas, floor_of(name)))
    return found


def test_float_noise_is_never_a_robust_detection(start) -> None:
    pixels, unscored = start
    rng = np.random.default_rng(0)
    frames = {0: pixels, **{s: pixels + rng.normal(0, 1e-9, pixels.shape) for s in STEPS}}
    assert {name: robust for name, (_, robust) in verdicts(frames).items()} == \
        {**dict.fromkeys(RULERS, False), **unscored}


def test_a_half_pixel_shift_chain_is_never_a_robust_detection(start) -> None:
    """As the subpixel-shift profile: ±0.5 px, alternating, resampled from the input."""
    pixels, unscored = start

    def shifted(step: int) -> np.ndarray:
        offset = 0.5 if step % 2 else -0.5
        return ndimage.shift(pixels, (offset, offset, 0), order=3, mode="nearest")

    frames = {0: pixels, **{s: shifted(s) for s in STEPS}}
    assert {name: robust for name, (_, robust) in verdicts(frames).items()} == \
        {**dict.fromkeys(RULERS, False), **unscored}
