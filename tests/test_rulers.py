"""The chain-aware rulers on inputs whose answer is known (planted noise, lattice, cast), their
orientation, and their place in the metric registry and the CLI beside pyiqa's metrics."""

from __future__ import annotations

import io
import json
import math
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from banana_space.analysis import INPUT, oriented_deltas
from banana_space.catalog import (
    PRESETS,
    check_metric_names,
    expand_metric_names,
    metric_info,
    no_reference_names,
)
from banana_space.cli import main as cli
from banana_space.rulers import (
    RULERS,
    colour_cast,
    grain,
    green_tint,
    lattice,
    lattice_peaks,
    neutral_ab,
    noise_level,
)
from banana_space.rundir import load_run, zip_path

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


@pytest.mark.parametrize(("period", "read"), [(4.0, 1.0), (5.0, 1.0), (20.0, 0.0)])
def test_grain_reads_the_rms_of_a_ripple_in_its_band_and_not_outside(period, read) -> None:
    """A sine of amplitude 4 grey levels at 4-5 px (the band's peak) reads its RMS, 4 / sqrt(2);
    at 20 px (the scale of a photo's own shading) it barely registers."""
    rms = 4.0 / math.sqrt(2)
    assert grain(smooth_image()) < 0.05
    assert grain(with_sine(smooth_image(), period, 4.0)) == pytest.approx(read * rms, abs=0.2 * rms)


@pytest.mark.parametrize(("base", "period"), [("photo", 3.0), ("photo", 4.0), ("photo", 6.0),
                                              ("photo", 8.0), ("smooth", 16.0), ("smooth", 24.0)])
def test_lattice_finds_a_planted_ripple_at_its_period_and_amplitude(photo, base, period) -> None:
    """A sine of amplitude A = 4 grey levels: the strongest peak sits at its period, and the
    ruler reads its RMS, A / sqrt(2). Periods up to 8 px (a generator's 8 px latent grid and its
    harmonics) on a real photo; longer ones on a smooth image, since a photo's own shading is
    strong there (README: where the rulers fail)."""
    image = np.asarray(photo, dtype=np.float64) / 255 if base == "photo" else smooth_image()
    amplitude = 4.0
    rippled = with_sine(image, period, amplitude)
    strongest = lattice_peaks(rippled)[0]
    assert strongest.period_x == pytest.approx(period, rel=0.03)
    assert strongest.period_y > image.shape[0]  # constant along y
    assert lattice(rippled) == pytest.approx(amplitude / math.sqrt(2), rel=0.2)


@pytest.mark.parametrize("name", ["chelsea.png", "coffee.png", "astronaut.png"])
def test_lattice_is_zero_on_clean_photos_and_noise(name) -> None:
    clean = photo_array(Path(__file__).parent.parent / "assets" / "examples" / name)
    assert lattice(clean) == pytest.approx(0.0, abs=0.05)
    assert lattice_peaks(clean) == []
    assert lattice(with_noise(smooth_image(), 3.0)) == pytest.approx(0.0, abs=0.05)


def jpeg_pass(image: np.ndarray, quality: int) -> np.ndarray:
    """One JPEG round trip with PIL (4:2:0), as the `jpeg` profile makes each copy."""
    buffer = io.BytesIO()
    Image.fromarray(np.clip(np.rint(image * 255), 0, 255).astype(np.uint8)).save(
        buffer, format="JPEG", quality=quality, subsampling="4:2:0")
    with Image.open(buffer) as decoded:
        return np.asarray(decoded.convert("RGB"), dtype=np.float64) / 255


@pytest.mark.parametrize("quality", [75, 50])
def test_lattice_finds_jpegs_8_px_block_grid_on_a_smooth_frame(quality) -> None:
    """JPEG codes 8 x 8 blocks apart, so a smooth frame (the clean dunes) comes back with steps
    every 8 px: a periodic pattern of period 8 and its harmonics (4, 8/3, 2 px), along x or y."""
    clean = photo_array(EXAMPLES / "clean-dunes.png")[256:256 + SIDE, 256:256 + SIDE]
    blocky = jpeg_pass(clean, quality)

    def on_block_grid(peak) -> bool:
        period = min(peak.period_x, peak.period_y)
        return any(abs(period - 8 / k) < 0.05 * 8 / k for k in (1, 2, 3, 4))

    assert not any(on_block_grid(p) for p in lattice_peaks(clean))
    assert on_block_grid(lattice_peaks(blocky)[0])
    assert sum(on_block_grid(p) for p in lattice_peaks(blocky)) >= 2
    assert lattice(blocky) > 5 * lattice(clean) + 0.05


def test_lattice_misses_jpegs_grid_under_a_photos_own_texture(photo) -> None:
    """Where the rulers fail (README): on a textured photo the block edges are weaker than the
    photo's own spectrum around them, so no bin stands ten times above its neighbours."""
    blocky = jpeg_pass(np.asarray(photo, dtype=np.float64) / 255, 50)
    assert lattice_peaks(blocky) == []


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
    from scipy import ndimage
    from skimage import color

    rng = np.random.default_rng(RNG_SEED)
    if name == "noise_level":
        return base + rng.normal(0, amount / 255, size=base.shape)
    if name == "grain":
        blotches = ndimage.gaussian_filter(rng.normal(size=base.shape[:2]), 1.5)
        return base + (amount / 255 * blotches / blotches.std())[..., None]
    if name == "lattice":
        return with_sine(base, 4.0, amount)  # the 8 px latent grid's first harmonic
    lab = color.rgb2lab(base)
    lab[..., 1] -= amount  # a green cast, the drift Banana100 saw
    return np.clip(color.lab2rgb(lab), 0, 1)


@pytest.mark.parametrize("name", list(RULERS))
def test_more_damage_means_a_worse_oriented_score(photo, name) -> None:
    """On a real photo; colour_cast on greys, since it is a distance from neutral (below)."""
    base = np.asarray(photo, dtype=np.float64) / 255
    if name == "colour_cast":
        base = grey_ramp_with_cast(0, 0)
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
    with zipfile.ZipFile(zip_path(out)) as archive:  # the zip carries what run.json says
        columns = json.loads(archive.read(f"{out.name}/run.json"))["columns"]
    assert {c["name"]: c["family"] for c in columns} == {
        "psnr": "pyiqa", "ssim": "pyiqa", "piqe": "pyiqa", **dict.fromkeys(RULERS, "ours")}
    assert {c["name"]: c["meaning"] for c in columns}["grain"] == RULERS["grain"].meaning
    saved = load_run(out)
    assert all(math.isfinite(v) for name in RULERS for v in saved.history.scores[name])
    assert cli(["score", str(out / "frames"), "--metrics", "rulers",
                "--out", str(tmp_path / "scored")]) == 0
    rescored = load_run(tmp_path / "scored")
    for name in RULERS:
        assert rescored.history.scores[name] == pytest.approx(saved.history.scores[name])
