"""The exact equivalents (banana_space/scores/equivalents.py) give pyiqa's own scores.

Every case compares the engine's metric object with a fresh `pyiqa.create_metric` of the same
name, on real photos, frames damaged as a chain damages them (noise, blur, the offline
simulator's step), random images, flat ones, odd sizes and tiny ones. Sizes stay at or below
1024² so that pyiqa's own entropy (2 GB of one-hot at 1024²) fits a CI machine.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import EXAMPLES
from PIL import Image, ImageFilter
from pyiqa.matlab_utils import exact_padding_2d, fspecial

from banana_space.scores import equivalents, nss, planes
from banana_space.scores.catalog import build_metric, to_tensor

RELATIVE = 1e-6
# ssim's filters go through float64 spectra: a score moves by ~1e-13 of itself (see below)
SSIM_RELATIVE = 1e-10


def photo(name: str, size: tuple[int, int] | None = None) -> Image.Image:
    with Image.open(EXAMPLES / name) as image:
        rgb = image.convert("RGB")
    return rgb.resize(size, Image.Resampling.BICUBIC) if size else rgb


def noise(width: int, height: int, seed: int) -> Image.Image:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    return Image.fromarray(pixels)


def damaged(image: Image.Image, seed: int) -> Image.Image:
    """The reference for ssim: the frame with planted noise (a chain's typical damage)."""
    pixels = np.asarray(image, dtype=np.int16)
    grain = np.random.default_rng(seed).integers(-20, 21, pixels.shape)
    return Image.fromarray(np.clip(pixels + grain, 0, 255).astype(np.uint8))


def gaussian_noise(image: Image.Image, sigma: float, seed: int) -> Image.Image:
    pixels = np.asarray(image, dtype=np.float64)
    pixels = pixels + np.random.default_rng(seed).normal(0, sigma, pixels.shape)
    return Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8))


def simulated_step(image: Image.Image) -> Image.Image:
    from banana_space.backends.simulate import SimulateBackend

    return SimulateBackend().edit(image, "", seed=0, step=3).image


CASES = {
    "photo chelsea 451x300": lambda: photo("chelsea.png"),
    "chelsea with gaussian noise": lambda: gaussian_noise(photo("chelsea.png"), 12, 8),
    "chelsea blurred": lambda: photo("chelsea.png").filter(ImageFilter.GaussianBlur(2.5)),
    "chelsea, a simulated step": lambda: simulated_step(photo("chelsea.png")),
    # flat colour fields, hard edges, black: where rounding decides a sign
    "illustration crop odd 517x389": lambda: photo("clean-illustration.png").crop(
        (300, 200, 817, 589)),
    "dunes crop odd 611x293": lambda: photo("clean-dunes.png").crop((0, 0, 611, 293)),
    "photo coffee": lambda: photo("coffee.png"),
    "photo rocket (jpeg)": lambda: photo("rocket.jpg"),
    "photo astronaut 1024x1024": lambda: photo("astronaut.png", (1024, 1024)),
    "random 640x480": lambda: noise(640, 480, 1),
    "random odd 1023x517": lambda: noise(1023, 517, 2),
    "photo odd 517x1023": lambda: photo("astronaut.png", (517, 1023)),
    "flat grey 300x200": lambda: Image.new("RGB", (300, 200), (128, 128, 128)),
    "tiny 11x11": lambda: noise(11, 11, 3),
    "tiny 12x40": lambda: noise(12, 40, 4),
    "tiny 9x9": lambda: noise(9, 9, 5),
    "one niqe block 96x96": lambda: photo("coffee.png", (96, 96)),
    "under one niqe block 95x200": lambda: photo("coffee.png", (95, 200)),
    "black with a grey square 200x150": lambda: black_with_square(200, 150),
}


def black_with_square(width: int, height: int) -> Image.Image:
    image = Image.new("RGB", (width, height))
    image.paste((90, 140, 200), (40, 30, 120, 110))
    return image


@pytest.fixture(scope="module")
def metrics() -> dict[str, tuple[object, object]]:
    import pyiqa

    return {name: (build_metric(name, "cpu"), pyiqa.create_metric(name, device="cpu"))
            for name in equivalents.EQUIVALENTS}


def outcome(metric, *args: torch.Tensor) -> float | type:
    """The score, or the type of error pyiqa's way raises on this input (e.g. 9x9 for ssim)."""
    try:
        with torch.inference_mode():
            return float(metric(*args))
    except (RuntimeError, ValueError, AssertionError) as error:
        return type(error)


def test_the_engine_builds_the_equivalents(metrics) -> None:
    assert type(metrics["entropy"][0].net) is equivalents.CountedEntropy
    assert type(metrics["ssim"][0].net) is equivalents.TiledSSIM
    assert type(metrics["niqe"][0].net) is nss.FilteredNIQE
    assert type(metrics["brisque"][0].net) is nss.FittedBRISQUE
    assert type(metrics["piqe"][0].net) is nss.BandedPIQE
    assert type(metrics["ssim"][1].net) is not equivalents.TiledSSIM
    assert type(metrics["niqe"][1].net) is not nss.FilteredNIQE
    assert type(metrics["brisque"][1].net) is not nss.FittedBRISQUE
    assert type(metrics["piqe"][1].net) is not nss.BandedPIQE


@pytest.mark.parametrize("size", [(7, 7), (11, 11), (1, 9), (12, 40), (300, 451)])
@pytest.mark.parametrize("window", [(7, 7 / 6), (11, 1.5)])
def test_scipy_filters_as_torch_convolves_bit_for_bit(size, window) -> None:
    """The float64 Gaussian filter of NIQE (7 x 7, replicate padding) and SSIM (11 x 11, valid),
    by scipy, equals F.conv2d's to the last bit, with bands smaller than the frame."""
    image = to_tensor(photo("chelsea.png").crop((0, 0, size[1], size[0])))[:, :1] * 255
    image = torch.cat([image.round(), (image * 1.7).round() ** 2]).to(torch.float64)
    kernel = fspecial(*window, 1).to(image)
    padded = exact_padding_2d(image, window[0], mode="replicate")
    assert torch.equal(planes.correlate_valid(padded, kernel), F.conv2d(padded, kernel))


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("name", sorted(equivalents.EQUIVALENTS))
def test_equivalent_scores_are_pyiqas(metrics, name: str, case: str) -> None:
    image = CASES[case]()
    args = (to_tensor(image),)
    if name == "ssim":
        args += (to_tensor(damaged(image, 7)),)
    ours, theirs = (outcome(metric, *args) for metric in metrics[name])
    if isinstance(theirs, type):
        assert ours is theirs
    else:
        relative = SSIM_RELATIVE if name == "ssim" else RELATIVE
        assert ours == pytest.approx(theirs, rel=relative, abs=1e-12, nan_ok=True)


@pytest.mark.parametrize("size", [(1, 9), (7, 7), (12, 40), (300, 451), (1280, 97)])
@pytest.mark.parametrize("padding", ["same", "replicate"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("band_rows", [None, 5])
def test_banded_mscn_is_pyiqas_bit_for_bit(size, padding, dtype, band_rows, monkeypatch) -> None:
    """The MSCN coefficients band by band (float32: pyiqa's own convolution on each band;
    float64: scipy's correlate) equal pyiqa's whole-frame `normalize_img_with_gauss`, with the
    default bands and with bands of 5 rows (many edges, a ragged last one)."""
    from pyiqa.archs.func_util import normalize_img_with_gauss

    if band_rows:
        monkeypatch.setattr(planes, "BAND_ROWS", {torch.float32: band_rows,
                                                  torch.float64: band_rows})
    luma = to_tensor(photo("astronaut.png", (size[1], size[0])))[:, :1] * 255
    image = luma.round().to(dtype)  # what brisque, niqe and piqe filter: a rounded luma
    assert torch.equal(planes.normalize_with_gauss(image, padding=padding),
                       normalize_img_with_gauss(image, padding=padding))


@pytest.mark.parametrize("size", [(11, 11), (12, 40), (300, 451), (522, 600)])
def test_ssim_filters_by_fft_are_the_convolution_to_float64_rounding(size) -> None:
    """The five SSIM filters through the spectra against F.conv2d: the largest difference is
    float64 rounding of the largest value (a squared 8-bit frame: up to 65025)."""
    luma = to_tensor(photo("coffee.png").crop((0, 0, size[1], size[0])))[:, :1] * 255
    x, y = luma.round().to(torch.float64), (luma * 0.9 + 7).round().to(torch.float64)
    planes = torch.stack([x, y, x * x, y * y, x * y])
    window = fspecial(11, 1.5, 1).to(x)
    expected = torch.stack([F.conv2d(plane, window) for plane in planes])
    difference = (equivalents._filtered(planes) - expected).abs().max()
    assert difference <= 1e-13 * expected.abs().max()


@pytest.mark.parametrize("size", [(299, 197), (299, 100), (400, 300)])
@pytest.mark.parametrize("name", ["brisque", "niqe", "piqe"])
def test_bands_cover_every_row_and_block_once(metrics, monkeypatch, name: str, size) -> None:
    """Filter bands of 5 rows, and NIQE's blocks fitted one column of blocks at a time (pyiqa
    orders them column by column, and lays them out contiguously unless the frame is one
    block tall: a block out of place, or summed in a strided layout, moves a feature by a
    rounding)."""
    monkeypatch.setattr(planes, "BAND_ROWS", {torch.float32: 5, torch.float64: 5})
    monkeypatch.setattr(nss, "BLOCK_COLUMNS", 1)
    image = to_tensor(photo("chelsea.png", size))
    ours, theirs = (outcome(metric, image) for metric in metrics[name])
    assert ours == theirs


@pytest.mark.parametrize("size", [(2016, 2016), (1023, 517), (5, 9), (96, 97)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_half_size_is_pyiqas_imresize_bit_for_bit(size, dtype) -> None:
    from pyiqa.matlab_utils import imresize

    image = to_tensor(photo("coffee.png", size[::-1]))[:, :1].to(dtype) * 255
    assert torch.equal(nss.half_size(image), imresize(image, scale=0.5, antialiasing=True))


def test_nearest_index_is_the_full_scans_argmin() -> None:
    """Inside, between, outside the tables, on an entry, on a midpoint, NaN and infinities."""
    for dtype in (torch.float32, torch.float64):
        _, aggd, ggd = nss._shape_tables(dtype, torch.device("cpu"))
        for table in (aggd, ggd):
            values = torch.cat([
                torch.linspace(float(table.min()) - 0.1, float(table.max()) + 1, 5001),
                table[[0, 7, 4000, -1]], (table[100:110] + table[101:111]) / 2,
                torch.tensor([float("nan"), float("inf"), -float("inf")]),
            ]).to(dtype).reshape(-1, 1)
            expected = (values - table).abs().argmin(dim=-1)
            assert torch.equal(nss.nearest_index(table, values), expected)


def test_the_shared_luma_is_pyiqas_and_follows_the_frame() -> None:
    from pyiqa.utils.color_util import to_y_channel

    frame = to_tensor(photo("chelsea.png"))
    first = planes.luma_255(frame)
    assert torch.equal(first, to_y_channel(frame, 255, "yiq"))
    assert torch.equal(planes.luma_1(frame), to_y_channel(frame, 1, "yiq"))
    assert planes.luma_255(frame) is first  # made once per frame
    frame.mul_(0.5)  # changed in place: made again
    assert torch.equal(planes.luma_255(frame), to_y_channel(frame, 255, "yiq"))
    assert torch.equal(planes.luma_1(frame), to_y_channel(frame, 1, "yiq"))
    key = id(frame)
    del frame
    assert key not in planes._PLANES  # forgotten with its frame


def test_ssim_strips_cover_every_row_once(metrics, monkeypatch) -> None:
    """With strips far smaller than the frame (many edges, a ragged last one), the stitched
    map is still pyiqa's map: a missing or doubled strip would change the mean."""
    monkeypatch.setattr(equivalents, "SSIM_STRIP_ROWS", 7)
    image = photo("chelsea.png", (131, 97))
    reference = damaged(image, 3)
    ours, theirs = (outcome(metric, to_tensor(image), to_tensor(reference))
                    for metric in metrics["ssim"])
    assert ours == pytest.approx(theirs, rel=SSIM_RELATIVE)


def test_ssim_of_a_frame_with_itself_is_one(metrics) -> None:
    image = to_tensor(photo("coffee.png"))
    assert outcome(metrics["ssim"][0], image, image) == pytest.approx(1.0, rel=1e-12)


def test_ssim_keeps_the_references_filters_while_it_lives_unchanged(metrics) -> None:
    """Frames compared with one reference tensor (a run's input, which the scorer keeps)
    reuse its filters, and get pyiqa's score each; a reference changed in place is filtered
    again."""
    ours, theirs = metrics["ssim"]
    reference = to_tensor(photo("coffee.png"))
    for seed in (1, 2):
        frame = to_tensor(damaged(photo("coffee.png"), seed))
        assert outcome(ours, frame, reference) == pytest.approx(
            outcome(theirs, frame, reference), rel=SSIM_RELATIVE)
    assert any(name.startswith("ssim filters") for name in planes._PLANES[id(reference)][2])
    reference.mul_(0.9)
    assert outcome(ours, frame, reference) == pytest.approx(
        outcome(theirs, frame, reference), rel=SSIM_RELATIVE)
