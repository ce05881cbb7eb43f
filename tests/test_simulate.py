"""The simulate profiles: each is deterministic, scaled by strength, and does what its docstring
says it models (planted inputs whose answer is known; small images)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from banana_space.backends import artifacts, mi_ripple
from banana_space.backends.simulate import (
    DEFAULT_PROFILE,
    PROFILES,
    SimulateBackend,
    profiles_of_kind,
)
from banana_space.cli import main as cli


def grey(size: tuple[int, int] = (96, 96), level: int = 128) -> Image.Image:
    return Image.new("RGB", size, (level, level, level))


def chain(image: Image.Image, profile: str, steps: int, seed: int = 0,
          strength: float = 1.0) -> list[Image.Image]:
    backend = SimulateBackend(strength, profile)
    frames = [image]
    for step in range(1, steps + 1):
        frames.append(backend.edit(frames[-1], "", seed=seed, step=step).image)
    return frames


def mse(image: Image.Image, reference: Image.Image) -> float:
    """Against the input after the same resize the scorer does for fidelity."""
    resized = image.resize(reference.size, Image.Resampling.BICUBIC)
    return float(np.mean((np.asarray(resized, float) - np.asarray(reference, float)) ** 2))


@pytest.fixture()
def small_photo(photo) -> Image.Image:
    return photo.resize((128, 85))


DAMAGING = [name for name, p in PROFILES.items() if p.kind != "nuisance"]
# Profiles whose frames depend on the seed; the others are deterministic by what they model.
SEEDED = ["nano-banana-pro", "contour-wrinkles", "scattered-dots", "simplification",
          "granular", "white-noise", "random-shift", "random-jpeg", "random-resample",
          "random-exposure"]


def test_the_kinds_name_the_suites() -> None:
    assert profiles_of_kind("nuisance") == ["identical", "subpixel-shift", "resave", "mild-jpeg",
                                            "random-shift", "random-jpeg", "random-resample",
                                            "random-exposure"]
    assert profiles_of_kind("control") == ["white-noise", "blur"]
    assert {"jpeg", DEFAULT_PROFILE} <= set(profiles_of_kind("damage"))
    assert "soft-copy" not in PROFILES


@pytest.mark.parametrize("profile", DAMAGING)
def test_each_profile_is_deterministic_and_scaled_by_strength(profile, small_photo) -> None:
    a, b = chain(small_photo, profile, 3, seed=5), chain(small_photo, profile, 3, seed=5)
    assert [f.tobytes() for f in a] == [f.tobytes() for f in b]
    damage = [mse(chain(small_photo, profile, 3, seed=5, strength=s)[-1], small_photo)
              for s in (0.0, 0.5, 1.0, 2.0)]
    assert damage[0] == 0 and damage[1] < damage[2] < damage[3]


@pytest.mark.parametrize("profile", SEEDED)
def test_another_seed_gives_another_chain(profile, small_photo) -> None:
    assert chain(small_photo, profile, 2, seed=1)[-1].tobytes() != \
        chain(small_photo, profile, 2, seed=2)[-1].tobytes()


@pytest.mark.parametrize("profile", [p for p in PROFILES if p not in SEEDED])
def test_the_seedless_profiles_are_the_same_for_every_seed(profile, small_photo) -> None:
    """The lattice is anchored to the pixel grid, a codec and a blur are deterministic, a
    nuisance is the same nuisance: the seed cannot change them."""
    assert chain(small_photo, profile, 2, seed=1)[-1].tobytes() == \
        chain(small_photo, profile, 2, seed=2)[-1].tobytes()


def test_unknown_profile_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="valid profiles: nano-banana-pro, contour-wrinkles"):
        SimulateBackend(profile="photocopier")
    assert SimulateBackend().settings() == {"strength": 1.0, "profile": DEFAULT_PROFILE}


def green_excess(image: Image.Image) -> float:
    r, g, b = np.asarray(image, float).reshape(-1, 3).mean(axis=0)
    return g - (r + b) / 2


def test_the_green_excess_grows_with_steps(monkeypatch) -> None:
    monkeypatch.setattr(artifacts, "REFRAME_CHANCE", 0.0)
    excess = [green_excess(f) for f in chain(grey(), DEFAULT_PROFILE, 20)]
    assert excess[0] == 0
    assert all(later > earlier for earlier, later in zip(excess[::5], excess[5::5], strict=False))
    assert excess[20] > 5  # grey levels: a cast, not rounding


def test_the_static_energy_grows_and_is_carried_forward(monkeypatch) -> None:
    monkeypatch.setattr(artifacts, "REFRAME_CHANCE", 0.0)
    monkeypatch.setattr(artifacts, "NBP_LATTICE_TARGET", 0.0)
    frames = [np.asarray(f, float) for f in chain(grey(), DEFAULT_PROFILE, 20)]
    static = [f - f.mean(axis=(0, 1)) for f in frames]  # the cast is uniform; the rest is static
    energy = [float(np.mean(g ** 2)) for g in static]
    assert energy[5] < energy[10] < energy[20]
    # Energy adds up (variance of a sum of independent static): about linear in the step.
    assert energy[20] / energy[10] == pytest.approx(2, rel=0.25)
    # Carried forward, not redrawn: step 11 still holds step 10's static.
    carried = np.corrcoef(static[10].ravel(), static[11].ravel())[0, 1]
    assert carried > 0.9


def band_share(pixels: np.ndarray) -> float:
    """The share of a field's power at 3-8 px wavelengths (Mi-Ripple's granular band)."""
    power = np.abs(np.fft.fft2(pixels - pixels.mean())) ** 2
    fy, fx = np.meshgrid(np.fft.fftfreq(pixels.shape[0]), np.fft.fftfreq(pixels.shape[1]),
                         indexing="ij")
    radius = np.hypot(fy, fx)
    return float(power[(radius >= 1 / 8) & (radius <= 1 / 3)].sum() / power.sum())


def test_the_default_static_is_not_white_noise(monkeypatch) -> None:
    """Mi-Ripple's model-made noise lives at 3-8 px; white noise spreads over every frequency
    (that band, pi (1/9 - 1/64) of the frequency square, holds 30 % of a flat spectrum)."""
    monkeypatch.setattr(artifacts, "REFRAME_CHANCE", 0.0)
    monkeypatch.setattr(artifacts, "NBP_LATTICE_TARGET", 0.0)
    monkeypatch.setattr(artifacts, "NBP_DOTS_PER_MEGAPIXEL", 0)
    static = np.asarray(chain(grey((128, 128)), DEFAULT_PROFILE, 5)[-1], float)[..., 1]
    white = np.asarray(chain(grey((128, 128)), "white-noise", 5)[-1], float)[..., 1]
    assert band_share(static) > 0.7
    assert band_share(white) == pytest.approx(0.30, abs=0.05)


def test_white_noise_is_iid_and_accumulates() -> None:
    frames = [np.asarray(f, float) for f in chain(grey((128, 128)), "white-noise", 10)]
    noise = frames[10] - 128
    assert noise.std() == pytest.approx(2.4 * np.sqrt(10), rel=0.05)
    neighbours = np.corrcoef(noise[:, :-1, 0].ravel(), noise[:, 1:, 0].ravel())[0, 1]
    channels = np.corrcoef(noise[..., 0].ravel(), noise[..., 1].ravel())[0, 1]
    assert abs(neighbours) < 0.05 and abs(channels) < 0.05


def test_the_granular_texture_grows_with_the_scenes_texture() -> None:
    """Where the frame is textured it takes blobs; where it is flat (a face, a beach, a sky:
    0 % in Mi-Ripple's measurement) it takes none."""
    rng = np.random.default_rng(0)
    pixels = np.full((128, 128, 3), 128, np.float32)
    pixels[:, 64:] += 20 * rng.standard_normal((128, 64, 1)).astype(np.float32)  # textured half
    start = Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8))
    frames = [np.asarray(f, float) for f in chain(start, "granular", 3)]
    change = np.abs(frames[3] - frames[0]).mean(axis=(0, 2))
    assert change[:24].max() == 0  # 40 px from any texture: its local RMS is nil
    assert change[88:].mean() > 5


def test_the_square_lattice_is_periodic_at_its_displacement() -> None:
    for displacement in [(5, 0), (0, 5), (3, 3), (8, 0)]:
        lattice = mi_ripple.square_lattice((96, 96), displacement)
        dx, dy = displacement
        assert np.allclose(lattice[dy:, dx:], lattice[:96 - dy, :96 - dx], atol=1e-3)
        assert lattice.std() == pytest.approx(1.0, rel=0.05)


def test_the_lattice_is_redrawn_towards_its_target() -> None:
    """Each step moves the lattice's amplitude `LATTICE_RATE` of the way to its target: it
    rises fast, then levels off, as Table 5's first-to-last autocorrelation does."""
    frames = [np.asarray(f, float) for f in chain(grey((120, 120), 100), "lattice-ripple", 10)]
    amplitude = [float(np.std(f - frames[0])) for f in frames]
    rate, target = mi_ripple.LATTICE_RATE, mi_ripple.LATTICE_TARGET
    for step in (1, 5, 10):
        assert amplitude[step] == pytest.approx(target * (1 - (1 - rate) ** step), rel=0.05)


def test_the_lattice_profile_reads_mi_ripples_autocorrelation_at_its_displacement() -> None:
    """On a flat frame the lattice is all of the residual, so the autocorrelation at its
    displacement is near 1, and negative about half a period away along both axes."""
    frame = np.asarray(chain(grey((120, 120), 100), "lattice-ripple", 3)[-1], np.float32)
    displacement = mi_ripple.LATTICES[mi_ripple.LATTICE_MODEL].displacement
    assert mi_ripple.residual_autocorrelation(frame, displacement) > 0.95
    assert mi_ripple.residual_autocorrelation(frame, (2, 2)) < 0


def test_only_the_default_profile_changes_the_frame_size(small_photo) -> None:
    for profile in PROFILES:
        sizes = {f.size for f in chain(small_photo, profile, 40, seed=3)}
        if profile == DEFAULT_PROFILE:
            assert len(sizes) > 1  # now and then: 40 steps at 6 % a step
            for size in sizes:  # each change crops or squeezes one axis by a small fraction
                assert size[0] == small_photo.size[0] or size[1] == small_photo.size[1] or \
                    min(size[0] / small_photo.size[0], size[1] / small_photo.size[1]) > 0.8
        else:
            assert sizes == {small_photo.size}, profile


def test_reframe_takes_its_fraction_from_one_axis() -> None:
    pixels = np.zeros((200, 100, 3), np.float32)
    shapes = {artifacts.reframe(pixels, np.random.default_rng(seed), 0.1).shape
              for seed in range(20)}
    assert shapes == {(180, 100, 3), (200, 90, 3)}
    assert artifacts.reframe(pixels, np.random.default_rng(0), 0.0).shape == pixels.shape


def duplicated_blocks(pixels: np.ndarray, side: int) -> int:
    """How many side x side blocks also occur at another place in the frame."""
    seen: dict[bytes, tuple[int, int]] = {}
    duplicates = 0
    height, width = pixels.shape[:2]
    for y in range(height - side + 1):
        for x in range(width - side + 1):
            key = pixels[y:y + side, x:x + side].tobytes()
            duplicates += key in seen
            seen.setdefault(key, (y, x))
    return duplicates


def test_simplification_copies_regions_and_smooths_fine_texture() -> None:
    rng = np.random.default_rng(0)
    noise = np.clip(rng.normal(128, 4, (128, 128, 3)), 0, 255).astype(np.uint8)  # fine texture
    noise[:, 64:] = np.clip(noise[:, 64:].astype(int) + 90, 0, 255)  # and one strong edge
    start = Image.fromarray(noise)
    side = round(artifacts.PATCH_FRACTION * 128)
    assert duplicated_blocks(noise, side) == 0
    frames = chain(start, "simplification", 4, strength=2.0)
    assert duplicated_blocks(np.asarray(frames[-1]), side) > 0
    texture = [float(np.asarray(f, float)[:, 8:56].std()) for f in frames]
    assert texture[4] < 0.8 * texture[0]
    columns = [np.asarray(f, float)[:, :, 0].mean(axis=0) for f in (frames[0], frames[4])]
    assert columns[1][70:].mean() - columns[1][:58].mean() == pytest.approx(
        columns[0][70:].mean() - columns[0][:58].mean(), abs=3)  # the edge keeps its contrast


def test_wrinkles_concentrate_at_edges() -> None:
    pixels = np.full((96, 96, 3), 60, np.uint8)
    pixels[:, 48:] = 200
    frames = [np.asarray(f, float) for f in chain(Image.fromarray(pixels), "contour-wrinkles", 6)]
    change = np.abs(frames[-1] - frames[0]).mean(axis=(0, 2))  # by column
    assert change[44:52].mean() > 5
    assert change[:30].max() == 0 and change[66:].max() == 0  # flat regions are left alone


def test_dots_are_sparse_impulses() -> None:
    frames = [np.asarray(f, float) for f in chain(grey((256, 256)), "scattered-dots", 10)]
    changed = np.abs(frames[-1] - frames[0]).max(axis=2)
    hit = changed > 0
    assert 0 < hit.mean() < 0.01
    assert changed[hit].min() > 100  # each dot is an impulse, not a drift
    assert np.all(hit[np.abs(frames[5] - frames[0]).max(axis=2) > 0])  # carried forward


def test_cli_records_the_profile(photo_path, tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert cli(["run", str(photo_path), "--steps", "1", "--metrics", "entropy",
                "--profile", "scattered-dots", "--out", str(out)]) == 0
    settings = json.loads((out / "run.json").read_text())["settings"]
    assert settings["backend_options"] == {"profile": "scattered-dots"}
    assert settings["backend_settings"] == {"strength": 1.0, "profile": "scattered-dots"}
    said = capsys.readouterr().out  # both verdicts and the trend from the first copy
    assert "detects  beyond floor  " in said and "ρ vs PSNR  ρ from 1st" in said
    assert "\nentropy " in said
    assert cli(["run", str(photo_path), "--profile", "nope", "--out", str(tmp_path / "x")]) == 2
    assert "valid profiles" in capsys.readouterr().err
