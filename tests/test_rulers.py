"""The chain-aware rulers on inputs whose answer is known (planted noise, lattice, cast), their
orientation, and their place in the metric registry and the CLI beside pyiqa's metrics."""

from __future__ import annotations

import json
import math
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from banana_space.cli import main as cli
from banana_space.scores.catalog import (
    PRESETS,
    check_metric_names,
    expand_metric_names,
    metric_info,
    no_reference_names,
)
from banana_space.scores.rulers import (
    RULERS,
    colour_cast,
    green_tint,
    lattice_excess,
    lattice_positive,
    lattice_probe,
    neutral_ab,
    noise_level,
    scale_index,
)
from banana_space.store.run import Run
from banana_space.verdict.analysis import INPUT, oriented_deltas

SIDE = 512
EXAMPLES = Path(__file__).parent.parent / "assets" / "examples"
RNG_SEED = 7


def smooth_image(side: int = SIDE) -> np.ndarray:
    """A smooth, noiseless RGB image: a diagonal ramp with a slow wave in each channel."""
    y, x = np.mgrid[0:side, 0:side] / side
    channels = [0.3 + 0.3 * x + 0.2 * y, 0.5 + 0.15 * np.sin(2 * np.pi * x),
                0.4 + 0.2 * np.cos(2 * np.pi * y)]
    return np.stack(channels, axis=-1)


def with_noise(image: np.ndarray, sigma_grey: float) -> np.ndarray:
    rng = np.random.default_rng(RNG_SEED)
    return image + rng.normal(0, sigma_grey / 255, size=image.shape)


def with_sine(image: np.ndarray, period_x: float, amplitude_grey: float) -> np.ndarray:
    """The same grey sine on every channel: a vertical-stripe ripple of `period_x` px."""
    x = np.arange(image.shape[1])
    return image + (amplitude_grey / 255 * np.sin(2 * np.pi * x / period_x))[None, :, None]


def photo_array(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"), dtype=np.float64) / 255


@pytest.mark.parametrize("sigma", [2.0, 5.0])
@pytest.mark.parametrize("base", ["flat", "smooth"])
def test_noise_level_reads_planted_white_noise_within_ten_percent(base, sigma) -> None:
    image = np.full((SIDE, SIDE, 3), 0.5) if base == "flat" else smooth_image()
    assert noise_level(image) < 0.1
    assert noise_level(with_noise(image, sigma)) == pytest.approx(sigma, rel=0.1)


def photo_start(name: str, side: int = 1024) -> np.ndarray:
    """A photographic start, Lanczos-downscaled to `side` px as the suite runs it."""
    with Image.open(EXAMPLES / name) as opened:
        image = opened.convert("RGB")
    image.thumbnail((side, side), Image.Resampling.LANCZOS)
    return np.asarray(image, dtype=np.float64) / 255


def with_square_lattice(image: np.ndarray, period: int, amplitude_grey: float) -> np.ndarray:
    """Two grey sines of `period` px, along x and along y: a square lattice."""
    rows, cols = np.mgrid[0:image.shape[0], 0:image.shape[1]]
    lattice = np.sin(2 * np.pi * cols / period) + np.sin(2 * np.pi * rows / period)
    return image + (amplitude_grey / 255 * lattice)[..., None]


PHOTOS = ["photo-moss.png", "photo-flower.png", "photo-nuthatch.png", "photo-facade.png",
          "chelsea.png", "coffee.png", "astronaut.png"]


@pytest.mark.parametrize("name", PHOTOS)
def test_the_lattice_probe_is_negative_on_clean_photos(name) -> None:
    """Mi-Ripple's photographs scored 1.39-1.89, under the positive threshold of 2.5."""
    clean = photo_start(name)
    assert 1.0 < lattice_probe(clean) < 2.5
    assert not lattice_positive(clean)


@pytest.mark.parametrize("base", ["photo-moss.png", "photo-flower.png", "smooth"])
def test_a_planted_5_px_lattice_is_positive(base) -> None:
    """A square lattice of 5 px and 2 grey levels a wave: faint at full size, gone in a
    thumbnail, and at least two components (four, with the spectrum's mirror) far above 2.5."""
    image = smooth_image() if base == "smooth" else photo_start(base)
    rippled = with_square_lattice(image, 5, 2.0)
    assert lattice_positive(rippled)
    assert lattice_probe(rippled) > lattice_probe(image) + 1.0
    assert len(lattice_excess(rippled)) >= 4


def test_white_noise_is_no_lattice() -> None:
    noisy = with_noise(smooth_image(), 3.0)
    assert not lattice_positive(noisy)
    assert lattice_probe(noisy) < 2.5


def test_the_lattice_probe_refuses_a_frame_with_no_bins_outside_its_radius() -> None:
    with pytest.raises(ValueError, match="at least 50 px"):
        lattice_probe(smooth_image(40))


def planted_blobs(image: np.ndarray, amplitude_grey: float) -> np.ndarray:
    """3-8 px blobs: white noise through Mi-Ripple's difference of Gaussians (sigma 1, 3 px),
    of RMS `amplitude_grey`, the same on every channel."""
    from scipy import ndimage

    noise = np.random.default_rng(RNG_SEED).normal(size=image.shape[:2])
    blobs = ndimage.gaussian_filter(noise, 1) - ndimage.gaussian_filter(noise, 3)
    return image + (amplitude_grey / 255 * blobs / blobs.std())[..., None]


def flat_sky(side: int = SIDE) -> np.ndarray:
    """A clear sky: a smooth blue gradient, no texture at all."""
    y = np.linspace(0, 1, side)[:, None].repeat(side, axis=1)
    return np.stack([0.35 + 0.2 * y, 0.55 + 0.2 * y, 0.9 + 0.05 * y], axis=-1)


@pytest.mark.parametrize("base", ["photo-flower.png", "photo-nuthatch.png", "sky"])
def test_planted_blobs_raise_the_scale_index(base) -> None:
    image = flat_sky() if base == "sky" else photo_start(base)
    """More blobs, more tiles; on a photo, its strong structure keeps some tiles out (the
    coarser band stands above the blobs there)."""
    clean = scale_index(image)
    assert clean < 1.0
    shares = [scale_index(planted_blobs(image, amount)) for amount in (2.0, 4.0, 8.0)]
    assert clean < shares[0] <= shares[1] <= shares[2] and shares[2] >= 15


def test_a_flat_sky_stays_at_zero() -> None:
    """No texture, no blob: 0 %, and so is a sky with half a grey level of float noise."""
    assert scale_index(flat_sky()) == 0.0
    assert scale_index(with_noise(flat_sky(), 0.5)) == 0.0


def test_the_scale_index_reads_a_frame_smaller_than_a_tile_as_one_tile() -> None:
    small = planted_blobs(flat_sky(96), 8.0)
    assert scale_index(small) == 100.0 and scale_index(flat_sky(96)) == 0.0


def grey_ramp_with_cast(a_star: float, b_star: float) -> np.ndarray:
    """Greys from L* 30 to 85, moved by (a*, b*) in CIELAB: a cast of known size and hue."""
    from skimage import color

    lightness = np.linspace(30, 85, SIDE // 2)[None, :].repeat(SIDE // 2, axis=0)
    lab = np.stack([lightness, np.full_like(lightness, a_star),
                    np.full_like(lightness, b_star)], axis=-1)
    return np.clip(color.lab2rgb(lab), 0, 1)


def test_colour_cast_reads_a_planted_cast_with_its_sign_and_size() -> None:
    assert colour_cast(grey_ramp_with_cast(0, 0)) == pytest.approx(0.0, abs=0.1)
    a_star, b_star = neutral_ab(grey_ramp_with_cast(-6.0, 3.0))  # green and a little yellow
    assert a_star == pytest.approx(-6.0, abs=0.3) and b_star == pytest.approx(3.0, abs=0.3)
    assert colour_cast(grey_ramp_with_cast(-6.0, 3.0)) == pytest.approx(math.hypot(6, 3),
                                                                        abs=0.3)
    assert green_tint(grey_ramp_with_cast(-6.0, 3.0)) == pytest.approx(6.0, abs=0.3)
    assert green_tint(grey_ramp_with_cast(6.0, 0.0)) == pytest.approx(-6.0, abs=0.3)


def test_a_frame_of_saturated_colour_has_no_cast_to_read() -> None:
    red = np.zeros((64, 64, 3))
    red[..., 0] = 1.0
    assert math.isnan(colour_cast(red)) and math.isnan(green_tint(red))


def _damaged(base: np.ndarray, name: str, amount: float) -> np.ndarray:
    """The artifact each ruler is aimed at, planted on a real photo at `amount` (0 = none)."""
    from skimage import color

    rng = np.random.default_rng(RNG_SEED)
    if name == "noise_level":
        return base + rng.normal(0, amount / 255, size=base.shape)
    if name == "scale_index":
        return planted_blobs(base, 2 * amount)
    if name == "lattice_probe":
        return with_square_lattice(base, 5, amount / 2)
    lab = color.rgb2lab(base)
    lab[..., 1] -= amount  # a green cast, the drift Banana100 saw
    return np.clip(color.lab2rgb(lab), 0, 1)


@pytest.mark.parametrize("name", list(RULERS))
def test_more_damage_means_a_worse_oriented_score(photo, name) -> None:
    """On a real photo; colour_cast on greys, since it is a distance from neutral (below);
    scale_index on a photographic start with both flat and textured regions (the cat's fur at
    451 px is coarser structure that the blobs stay under: no tile of it qualifies)."""
    base = np.asarray(photo, dtype=np.float64) / 255
    if name == "colour_cast":
        base = grey_ramp_with_cast(0, 0)
    if name == "scale_index":
        base = photo_start("photo-nuthatch.png")
    scores = [RULERS[name].measure(_damaged(base, name, amount)) for amount in (0, 2, 4, 8)]
    deltas = oriented_deltas(scores, RULERS[name].lower_better, base=INPUT)  # from no damage
    assert all(later < earlier for earlier, later in zip(deltas, deltas[1:], strict=False))


def test_a_green_drift_on_a_warm_photo_reads_as_less_cast_until_it_passes_neutral(photo):
    """colour_cast's known failure, and why green_tint exists: the cat photo's greys are warm
    (a* > 0), so a green drift first brings them nearer neutral."""
    base = np.asarray(photo, dtype=np.float64) / 255
    assert neutral_ab(base)[0] > 4
    drifts = [_damaged(base, "green_tint", amount) for amount in (0, 2, 4)]
    assert colour_cast(drifts[2]) < colour_cast(drifts[1]) < colour_cast(drifts[0])
    assert green_tint(drifts[0]) < green_tint(drifts[1]) < green_tint(drifts[2])


def test_rulers_sit_in_the_metric_registry_as_ours() -> None:
    assert PRESETS["Chain-aware rulers"] == tuple(RULERS)
    for name, ruler in RULERS.items():
        info = metric_info(name)
        assert (info.family, info.role, info.lower_better) == ("ours", "metric",
                                                               ruler.lower_better)
        assert info.meaning == ruler.meaning and name in no_reference_names()
    assert metric_info("brisque").family == "pyiqa"
    assert metric_info("brisque").score_range == (0.0, 150.0)  # pyiqa writes "~0, ~150"
    check_metric_names([*RULERS, "brisque"])
    with pytest.raises(ValueError, match="presets: classics"):
        check_metric_names(["rulerz"])


def test_expand_metric_names_reads_presets_keys_and_display_names() -> None:
    assert expand_metric_names("rulers,brisque, piqe") == [*RULERS, "brisque", "piqe"]
    assert expand_metric_names(["classics", "Chain-aware rulers", "niqe"]) == [
        *PRESETS["CPU classics (4)"], *RULERS]
    assert expand_metric_names("Rulers,,bogus") == [*RULERS, "bogus"]


def test_cli_run_and_score_with_the_rulers_preset(tmp_path, capsys) -> None:
    """`run --metrics rulers` writes family "ours" columns; `score FRAMES --metrics rulers`
    on the frames it made gives the same ruler scores (a ruler is a function of one frame)."""
    small = tmp_path / "small.png"
    with Image.open(Path(__file__).parent.parent / "assets" / "examples" / "chelsea.png") as im:
        im.convert("RGB").resize((160, 106)).save(small)
    out = tmp_path / "run"
    assert cli(["run", str(small), "--steps", "2", "--metrics", "rulers,piqe",
                "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "completed" in printed and "noise_level" in printed
    with zipfile.ZipFile(Run(out).zip_path) as archive:  # the zip carries what run.json says
        columns = json.loads(archive.read(f"{out.name}/run.json"))["columns"]
    assert {c["name"]: c["family"] for c in columns} == {
        "psnr": "pyiqa", "ssim": "pyiqa", "piqe": "pyiqa", **dict.fromkeys(RULERS, "ours")}
    assert {c["name"]: c["meaning"] for c in columns}["scale_index"] == \
        RULERS["scale_index"].meaning
    saved = Run(out).load()
    assert all(math.isfinite(v) for name in RULERS for v in saved.history.scores[name])
    assert cli(["score", str(out / "frames"), "--metrics", "rulers",
                "--out", str(tmp_path / "scored")]) == 0
    rescored = Run(tmp_path / "scored").load()
    for name in RULERS:
        assert rescored.history.scores[name] == pytest.approx(saved.history.scores[name])
