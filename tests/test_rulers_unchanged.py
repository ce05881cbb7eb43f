"""The rulers' values are pinned: a speed-up must not change what a ruler measures.

`floors.csv` and every committed result were measured with the rulers' definitions as they were
at commit d5849ac, before the gate's speed-ups (issue 27). `rulers_pinned.json` holds what those
definitions gave on the inputs below (the example photos at their own size, as float32 the way
the gate reads them and float64 the way the tests do; planted noise, ripple and cast; an odd-sized
crop). It was written by running this file at that commit:

    PYTHONPATH=. .venv/bin/python tests/test_rulers_unchanged.py

Do not rewrite it to make a test pass: a ruler whose value moves has a new definition, and its
floors must be measured again. Rewritten once, deliberately, for issue 32: `grain` and `lattice`
were replaced by Mi-Ripple's `scale_index` and `lattice_probe` (the same artifacts, read as
Mi-Ripple reads them), and the photographic starts joined the inputs; every other ruler's
pinned value was checked to be the same as before, bit for bit. Rewritten a second time for
issue 40: every ruler but `noise_level` now computes in float64 (a float32 colour conversion
moved with the CPU's OpenBLAS kernel), so their values on float32 frames moved by float32's own
rounding (at most 2.0e-6 of the lattice probe, 1.7e-5 CIELAB units of the colour rulers); every
float64 frame's value, and every `noise_level` and `scale_index`, stayed the same bit for bit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import tolerance
from PIL import Image

from banana_space.scores import rulers

PINNED = Path(__file__).parent / "rulers_pinned.json"
EXAMPLES = Path(__file__).parent.parent / "assets" / "examples"
RNG_SEED = 27
# The one ruler that computes in the frame's own type (the others cast to float64, see
# tests/tolerance.py), with the terms summed into each value: Daubechies-2's four taps down the
# columns times four along the rows. A float32 frame reads the same on every CPU today
# (PyWavelets' own loops), and this is the bound float32 itself allows.
IN_FRAME_TYPE = {"noise_level": 4 * 4}

def _photo(name: str, dtype: type = np.float32) -> np.ndarray:
    with Image.open(EXAMPLES / name) as image:
        return np.asarray(image.convert("RGB"), dtype=dtype) / 255


def _with_noise(image: np.ndarray, sigma_grey: float) -> np.ndarray:
    noise = np.random.default_rng(RNG_SEED).normal(0, sigma_grey / 255, size=image.shape)
    return (image + noise).astype(image.dtype)


def _with_ripple(image: np.ndarray, period_x: float, amplitude_grey: float) -> np.ndarray:
    x = np.arange(image.shape[1])
    return image + (amplitude_grey / 255 * np.sin(2 * np.pi * x / period_x))[None, :, None]


def _with_green_cast(image: np.ndarray) -> np.ndarray:
    cast = image * np.array([0.96, 1.0, 0.97], dtype=image.dtype)
    return cast.astype(image.dtype)


def _saturated_red() -> np.ndarray:
    red = np.zeros((64, 64, 3))
    red[..., 0] = 1.0
    return red


INPUTS: dict[str, Callable[[], np.ndarray]] = {
    **{name: (lambda name=name: _photo(name)) for name in sorted(
        p.name for p in EXAMPLES.iterdir() if p.suffix in (".png", ".jpg"))},
    "astronaut.png float64": lambda: _photo("astronaut.png", np.float64),
    "coffee.png float64 noise 5": lambda: _with_noise(_photo("coffee.png", np.float64), 5.0),
    "astronaut.png noise 3": lambda: _with_noise(_photo("astronaut.png"), 3.0),
    "chelsea.png ripple 8 px": lambda: _with_ripple(_photo("chelsea.png", np.float64), 8.0, 3.0),
    "astronaut.png ripple 4 px": lambda: _with_ripple(_photo("astronaut.png"), 4.0, 2.0),
    "coffee.png green cast": lambda: _with_green_cast(_photo("coffee.png")),
    "clean-dunes.png odd crop": lambda: _photo("clean-dunes.png")[101:618, 7:340],
    "saturated red": _saturated_red,
}


def _values(image: np.ndarray) -> dict[str, object]:
    """Every ruler on one frame, called one by one, plus the parts the page shows."""
    values: dict[str, object] = {name: ruler.measure(image)
                                 for name, ruler in rulers.RULERS.items()}
    values["neutral_ab"] = list(rulers.neutral_ab(image))
    return values


def _same(value: float, pinned: float | None, float32: bool = False, ruler: str = "") -> bool:
    """The value is its pin within what the arithmetic moves between CPUs (tests/tolerance.py):
    float64's bound, or float32's for the terms of a ruler that reads a float32 frame in
    float32."""
    if float32 and ruler in IN_FRAME_TYPE:
        return tolerance.close(value, pinned, tolerance.float32_relative(IN_FRAME_TYPE[ruler]))
    return tolerance.close(value, pinned)

def _pinned() -> dict[str, dict[str, object]]:
    return json.loads(PINNED.read_text())


@pytest.mark.parametrize("name", list(INPUTS))
def test_each_ruler_reads_what_it_read_before_the_speed_ups(name) -> None:
    pinned, image = _pinned()[name], INPUTS[name]()
    values, float32 = _values(image), image.dtype == np.float32
    for ruler in rulers.RULERS:
        assert _same(values[ruler], pinned[ruler], float32, ruler), (name, ruler, values[ruler],
                                                                     pinned[ruler])
    assert all(_same(v, p, float32, "neutral_ab")
               for v, p in zip(values["neutral_ab"], pinned["neutral_ab"], strict=True))


@pytest.mark.parametrize("name", list(INPUTS))
def test_measure_all_equals_each_ruler_on_its_own(name) -> None:
    """The gate reads every ruler at once, sharing the near-neutral mean: the same values."""
    image = INPUTS[name]()
    together = rulers.measure_all(image)
    assert list(together) == list(rulers.RULERS)
    for ruler, value in together.items():
        assert _same(value, _pinned()[name][ruler], image.dtype == np.float32, ruler), \
            (name, ruler)


def test_a_float32_frame_reads_as_its_float64_copy() -> None:
    """Why float64's bound holds for float32 frames: every ruler but those in `IN_FRAME_TYPE`
    casts the frame to float64 before any arithmetic, so nothing CPU-dependent happens in
    float32 (tests/tolerance.py)."""
    image = INPUTS["clean-dunes.png odd crop"]()
    for name, ruler in rulers.RULERS.items():
        if name not in IN_FRAME_TYPE:
            assert ruler.measure(image) == ruler.measure(image.astype(np.float64)), name


@pytest.mark.parametrize("constant, changed", [
    ("PROBE_WINDOW", 23), ("BLOB_RATIO", 1.35), ("NEUTRAL_CHROMA", 15.5)])
def test_the_pins_catch_a_changed_definition(monkeypatch, constant: str, changed: float) -> None:
    """The bounds allow rounding, not a new definition: one constant changed a little moves
    some pinned value outside them."""
    monkeypatch.setattr(rulers, constant, changed)
    pinned = _pinned()
    moved = [(name, ruler) for name in ("clean-dunes.png", "coffee.png green cast",
                                        "astronaut.png noise 3", "photo-moss.png")
             for ruler, value in _values(INPUTS[name]()).items()
             if ruler != "neutral_ab" and not _same(value, pinned[name][ruler], True, ruler)]
    assert moved, f"{constant} = {changed} moved no pinned value"


def test_noise_level_is_scikit_images_estimate_sigma() -> None:
    """The docstring's claim, against the library itself."""
    from skimage import restoration

    for image in (INPUTS["astronaut.png noise 3"](), INPUTS["clean-dunes.png odd crop"](),
                  INPUTS["coffee.png float64 noise 5"]()):
        expected = restoration.estimate_sigma(image, channel_axis=-1, average_sigmas=True)
        assert rulers.noise_level(image) == float(expected) * rulers.GREY_LEVELS


def test_a_ruler_that_cannot_read_the_frame_is_nan_in_measure_all() -> None:
    tiny = _photo("astronaut.png")[:24, :24]
    with pytest.raises(ValueError, match="at least 50 px"):
        rulers.lattice_probe(tiny)
    together = rulers.measure_all(tiny)
    assert math.isnan(together["lattice_probe"])
    assert together["noise_level"] == rulers.noise_level(tiny)


def _write_pinned() -> None:
    def plain(value: object) -> object:
        if isinstance(value, list):
            return [plain(v) for v in value]
        value = float(value)
        return None if math.isnan(value) else value

    table = {name: {key: plain(value) for key, value in _values(make()).items()}
             for name, make in INPUTS.items()}
    PINNED.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {PINNED}")


if __name__ == "__main__":
    _write_pinned()
