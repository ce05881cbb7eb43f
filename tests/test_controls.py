"""The control and nuisance chains do exactly what their docstrings say (backends/controls.py):
the blur is the input's exact accumulated blur, never stalls and survives a resume; the
nuisances stay put; the nuisances that can raise a false alarm differ at every step, stay near
the input and move PSNR between steps 1 and 5; the JPEG chain compounds."""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import pytest
from conftest import EXAMPLES
from PIL import Image
from scipy import ndimage

from banana_space.backends import controls
from banana_space.backends.simulate import PROFILES, SimulateBackend, varying_nuisances
from banana_space.chain.spec import MAX_STEPS


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


def psnr_db(image: Image.Image, reference: Image.Image) -> float:
    mse = np.mean((pixels(image) - pixels(reference)) ** 2)
    return math.inf if mse == 0 else float(10 * np.log10(255**2 / mse))


def test_the_varying_nuisances_are_the_four_that_draw_afresh() -> None:
    assert varying_nuisances() == ["random-shift", "random-jpeg", "random-resample",
                                   "random-exposure"]
    assert all(PROFILES[name].repeats_a_frame for name in
               ("identical", "subpixel-shift", "resave", "mild-jpeg"))


@pytest.mark.parametrize("profile", ["random-shift", "random-jpeg", "random-resample",
                                     "random-exposure"])
def test_a_varying_nuisance_can_raise_a_false_alarm(profile, photo) -> None:
    """Its copies are not one frame repeated: PSNR's Δ5 from step 1 (the paper's test, on the
    fidelity the damage is measured by) is not 0, at the leaderboard's size and seed. Each copy
    stays near the input (no damage a person would name) and does not walk away from it."""
    start = photo.copy()
    start.thumbnail((1024, 1024), Image.Resampling.LANCZOS)
    frames = chain(start, profile, 5)
    fidelity = [psnr_db(frame, start) for frame in frames]
    assert math.isfinite(fidelity[1]) and fidelity[5] - fidelity[1] != 0
    assert min(fidelity[1:]) > 28  # dB: white noise's at step 10 is 30.5
    assert frames[1].tobytes() != frames[2].tobytes()


@pytest.mark.parametrize("profile", varying_nuisances())
def test_a_continuous_nuisance_gives_a_new_copy_at_every_step_and_the_same_for_a_seed(
        profile, photo) -> None:
    start = photo.resize((512, 340))  # a resampled size rounds to 1 px: two scales may share it
    frames = chain(start, profile, 8)
    assert len({frame.tobytes() for frame in frames}) == 9
    assert [f.tobytes() for f in frames] == [f.tobytes() for f in chain(start, profile, 8)]


def test_the_random_jpeg_is_one_pass_over_the_input_at_a_quality_of_90_to_98(small_photo) -> None:
    """Each copy is the input encoded with one of libjpeg's tables for a quality of 90-98 read
    as a real number; the whole qualities' tables are PIL's `quality=` tables, and the range
    ends at quality 98's and 90's."""
    tables = controls.jpeg_quality_tables(90, 98)
    for quality in (90, 93, 98):
        scale = 200 - 2 * quality
        pair = tuple(tuple(max(1, (b * scale + 50) // 100) for b in table)
                     for table in (controls.LUMINANCE_TABLE, controls.CHROMINANCE_TABLE))
        assert pair in tables
        assert jpeg_with(small_photo, pair).tobytes() == jpeg_of(small_photo, quality).tobytes()
    assert tables[0] == controls.jpeg_quality_tables(98, 98)[0]
    assert tables[-1] == controls.jpeg_quality_tables(90, 90)[-1]
    copies = {jpeg_with(small_photo, pair).tobytes() for pair in tables}
    assert all(frame.tobytes() in copies for frame in chain(small_photo, "random-jpeg", 6)[1:])


def test_no_two_random_jpeg_copies_are_encoded_alike_in_a_whole_run() -> None:
    for seed in range(5):
        drawn = [controls.random_jpeg_tables(seed, step) for step in range(1, MAX_STEPS + 1)]
        assert len(set(drawn)) == MAX_STEPS
    assert controls.random_jpeg_tables(0, 1) != controls.random_jpeg_tables(1, 1)


def test_no_two_random_jpeg_copies_are_equal(photo) -> None:
    """At the leaderboard's size and length (1024 px, 20 steps), no copy repeats another: with
    nine whole qualities, 20 steps had to repeat one (3 of 19 neighbours were equal)."""
    start = photo.copy()
    start.thumbnail((1024, 1024), Image.Resampling.LANCZOS)
    copies = [frame.tobytes() for frame in chain(start, "random-jpeg", 20)[1:]]
    assert len(set(copies)) == 20


def test_the_exposure_nuisance_is_a_gain_of_a_quarter_to_one_percent(small_photo) -> None:
    start = pixels(small_photo)
    bright = start > 100  # away from 0, where a gain moves nothing
    for frame in chain(small_photo, "random-exposure", 8)[1:]:
        gain = pixels(frame)[bright].sum() / start[bright].sum()
        assert 0.0025 - 0.001 < abs(gain - 1) < 0.01 + 0.001  # 8-bit rounding


def test_mild_jpeg_is_one_mild_pass_over_the_input(small_photo) -> None:
    frames = [pixels(f) for f in chain(small_photo, "mild-jpeg", 4)]
    assert all(np.array_equal(frames[1], later) for later in frames[2:])  # not compounded
    mse = np.mean((frames[1] - frames[0]) ** 2)
    assert 0 < mse and 10 * np.log10(255**2 / mse) > 38  # dB: a mild re-encode


def jpeg_of(image: Image.Image, quality: int, subsampling: str = "4:2:0") -> Image.Image:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality, subsampling=subsampling)
    return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")


def jpeg_with(image: Image.Image, tables: controls.Tables) -> Image.Image:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", qtables=[list(t) for t in tables], subsampling="4:2:0")
    return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")


def test_the_jpeg_chain_compounds_at_a_fixed_quality(small_photo) -> None:
    frames = chain(small_photo, "jpeg", 3)
    for step in (1, 2, 3):  # each step re-encodes the last copy, not the input
        assert frames[step].tobytes() == jpeg_of(frames[step - 1], 75).tobytes()
    assert frames[2].tobytes() != jpeg_of(small_photo, 75).tobytes()
    assert chain(small_photo, "jpeg", 1, strength=2.0)[1].tobytes() == \
        jpeg_of(small_photo, 50).tobytes()


def test_the_blur_control_is_caught_by_brisque_on_a_clean_start_at_full_size(
        tmp_path, weights_dir) -> None:
    """Through the CLI, as a person would run it: the peacock feathers (the clean start with
    fine texture to lose) at 1024 px; BRISQUE calls every checkpoint worse, beyond its floor."""
    from banana_space.cli import main as cli

    with Image.open(EXAMPLES / "clean-feathers.png") as opened:
        start = opened.convert("RGB")
    start.thumbnail((1024, 1024), Image.Resampling.LANCZOS)
    start.save(tmp_path / "feathers.png")
    out = tmp_path / "run"
    assert cli(["run", str(tmp_path / "feathers.png"), "--steps", "10", "--profile", "blur",
                "--metrics", "brisque", "--out", str(out)]) == 0
    with (out / "verdict.csv").open(newline="") as handle:
        brisque = next(row for row in csv.DictReader(handle) if row["metric"] == "brisque")
    assert (brisque["detects"], brisque["detects_robust"]) == ("yes", "yes")
