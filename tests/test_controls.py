"""The control and nuisance chains do exactly what their docstrings say (backends/controls.py):
the blur is the input's exact accumulated blur, never stalls and survives a resume; the
nuisances stay put; the JPEG chain compounds."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image
from scipy import ndimage

from banana_space.backends import controls
from banana_space.backends.simulate import SimulateBackend


def chain(image: Image.Image, profile: str, steps: int, strength: float = 1.0,
          first_step: int = 1) -> list[Image.Image]:
    backend = SimulateBackend(strength, profile)
    frames = [image]
    for step in range(first_step, first_step + steps):
        frames.append(backend.edit(frames[-1], "", seed=0, step=step).image)
    return frames


def pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image, dtype=float)


@pytest.fixture()
def small_photo(photo) -> Image.Image:
    return photo.resize((128, 85))


def test_blur_is_the_inputs_exact_accumulated_blur(small_photo) -> None:
    frames = chain(small_photo, "blur", 12)
    start = pixels(small_photo).astype(np.float32)  # the backend's float pixels
    for step in (1, 4, 12):
        sigma = controls.BLUR_SIGMA * np.sqrt(step)
        expected = np.clip(np.rint(ndimage.gaussian_filter(start, (sigma, sigma, 0))), 0, 255)
        assert np.array_equal(pixels(frames[step]), expected)


def test_blur_changes_every_frame_and_lags_no_rounding(small_photo) -> None:
    frames = [pixels(f) for f in chain(small_photo, "blur", 30)]
    assert all(not np.array_equal(a, b) for a, b in zip(frames, frames[1:], strict=False))
    fed_back = frames[0]
    for _ in range(30):  # the same blur per step, fed back through 8 bits, lags behind
        fed_back = np.clip(np.rint(ndimage.gaussian_filter(fed_back, (0.8, 0.8, 0))), 0, 255)
    assert np.abs(frames[30] - frames[0]).mean() > np.abs(fed_back - frames[0]).mean()


def test_a_resumed_blur_composes_to_the_same_sigma(small_photo) -> None:
    whole = chain(small_photo, "blur", 10)
    resumed = chain(whole[5], "blur", 5, first_step=6)  # a new backend, handed frame 5
    difference = np.abs(pixels(resumed[-1]) - pixels(whole[10]))
    assert difference.max() <= 2 and difference.mean() < 0.3  # frame 5's rounding, carried


@pytest.mark.parametrize("profile", ["identical", "resave"])
def test_the_exact_nuisances_change_no_pixel(profile, small_photo) -> None:
    assert all(frame.tobytes() == small_photo.tobytes()
               for frame in chain(small_photo, profile, 4))


def test_the_shift_alternates_and_does_not_walk_away(small_photo) -> None:
    frames = [pixels(f) for f in chain(small_photo, "subpixel-shift", 6)]
    assert np.array_equal(frames[1], frames[3]) and np.array_equal(frames[1], frames[5])
    assert np.array_equal(frames[2], frames[4]) and not np.array_equal(frames[1], frames[2])
    # Half a pixel, not more: frame 1 lies between the input and the input moved by 1 px.
    one_px = ndimage.shift(frames[0], (1, 1, 0), order=3, mode="nearest")
    assert np.abs(frames[1] - frames[0]).mean() < np.abs(one_px - frames[0]).mean()


def test_mild_jpeg_is_one_mild_pass_over_the_input(small_photo) -> None:
    frames = [pixels(f) for f in chain(small_photo, "mild-jpeg", 4)]
    assert all(np.array_equal(frames[1], later) for later in frames[2:])  # not compounded
    mse = np.mean((frames[1] - frames[0]) ** 2)
    assert 0 < mse and 10 * np.log10(255**2 / mse) > 38  # dB: a mild re-encode


def jpeg_of(image: Image.Image, quality: int) -> Image.Image:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality, subsampling="4:2:0")
    return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")


def test_the_jpeg_chain_compounds_at_a_fixed_quality(small_photo) -> None:
    frames = chain(small_photo, "jpeg", 3)
    for step in (1, 2, 3):  # each step re-encodes the last copy, not the input
        assert frames[step].tobytes() == jpeg_of(frames[step - 1], 75).tobytes()
    assert frames[2].tobytes() != jpeg_of(small_photo, 75).tobytes()
    assert chain(small_photo, "jpeg", 1, strength=2.0)[1].tobytes() == \
        jpeg_of(small_photo, 50).tobytes()
