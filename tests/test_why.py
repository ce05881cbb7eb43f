"""The "Why is it fooled?" panel's numbers (banana_space/compare/why.py) are pyiqa's: α and σ² of each
frame's MSCN coefficients equal BRISQUE's first two features from pyiqa's own
`natural_scene_statistics`, on the frames of real chains; the sentence follows the numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import EXAMPLES
from PIL import Image
from pyiqa.archs.brisque_arch import natural_scene_statistics
from pyiqa.utils.color_util import to_y_channel

from banana_space.backends.simulate import SimulateBackend
from banana_space.scores.catalog import to_tensor
from banana_space.compare.why import (
    GAUSSIAN_ALPHA,
    bin_centres,
    ggd_density,
    read_frame,
    why_sentence,
)


def chain(profile: str, steps: int) -> list[Image.Image]:
    """Frame 0 (a crop of the default example) and its simulated copies."""
    with Image.open(EXAMPLES / "photo-moss.png") as image:
        frames = [image.convert("RGB").crop((0, 0, 320, 240))]
    backend = SimulateBackend(profile=profile)
    for step in range(1, steps + 1):
        frames.append(backend.edit(frames[-1], "replica", seed=3, step=step).image)
    return frames


def pyiqa_features(image: Image.Image) -> np.ndarray:
    """BRISQUE's first-scale features as pyiqa's `brisque` computes them (version 'original':
    YIQ luma x 255, then `natural_scene_statistics` with its 7 x 7, σ 7/6 window)."""
    luma = to_y_channel(to_tensor(image), 255.0)
    return natural_scene_statistics(luma, 7, 7.0 / 6)[0].numpy()


@pytest.mark.parametrize("profile", ["nano-banana-pro", "white-noise"])
def test_alpha_and_variance_per_step_are_brisques_first_features(profile: str) -> None:
    frames = chain(profile, 4)
    ours = [read_frame(frame) for frame in frames]
    theirs = [pyiqa_features(frame) for frame in frames]
    assert [r.alpha for r in ours] == [float(f[0]) for f in theirs]
    assert [r.variance for r in ours] == pytest.approx([float(f[1]) for f in theirs],
                                                       rel=1e-6)  # σ, squared once more
    assert len({r.alpha for r in ours}) > 1  # the chain moves α: a real comparison


def test_the_histogram_is_a_density_and_the_fit_describes_it() -> None:
    reading = read_frame(chain("white-noise", 1)[1])
    width = bin_centres()[1] - bin_centres()[0]
    assert sum(reading.density) * width == pytest.approx(1, abs=0.02)  # ±3 holds nearly all
    fitted = ggd_density(bin_centres(), reading.alpha, reading.variance)
    assert fitted.sum() * width == pytest.approx(1, abs=0.03)
    # the fitted curve lies near the histogram: the fit is of these coefficients
    assert np.abs(fitted - np.array(reading.density)).sum() * width < 0.2


def test_a_gaussian_of_shape_two_is_the_normal_density() -> None:
    x = np.linspace(-2, 2, 9)
    normal = np.exp(-x**2 / 2) / math.sqrt(2 * math.pi)
    assert ggd_density(x, GAUSSIAN_ALPHA, 1.0) == pytest.approx(normal)


def test_the_sentence_says_what_the_numbers_say() -> None:
    towards = why_sentence([1.2, 1.4, 1.6, 1.9], 3)
    assert "towards" in towards and "1.40 at step 1" in towards and "1.90 at step 3" in towards
    assert "more natural" in towards
    away = why_sentence([2.0, 1.9, 1.5], 2)
    assert "away from" in away and "less natural" in away
    still = why_sentence([1.5, 1.5, 1.52], 2)
    assert "barely moved" in still
    overshoot = why_sentence([1.0, 1.8, 2.5], 2)  # past 2, further from it than step 1 was
    assert "away from" in overshoot
