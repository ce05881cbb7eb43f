"""The chains a claim needs beside its damage: a positive control, a codec's damage, nuisances.

A metric that misses Banana100's decay (arXiv 2604.03400) only means something if it catches the
damage it was built for, and a "detection" only means something if the same score stays put on
chains with no damage a person would name. So, beside the generator models of `artifacts`:

- `white_noise`, a positive control: i.i.d. Gaussian noise per pixel and channel, LIVE's "WN",
  the noise classic metrics were fitted on (and what this project's default static was before
  Mi-Ripple measured model-made noise).
- `accumulated_blur`, the positive control: Gaussian blur, one of the distortions classic
  no-reference metrics were trained on (LIVE: Sheikh, Sabir & Bovik, IEEE TIP 2006; BRISQUE is
  trained on LIVE, Mittal, Moorthy & Bovik, IEEE TIP 2012).
- `jpeg_recompress`, a codec's damage: the same JPEG quality applied to every copy, compounding
  (the "generation loss" of re-saving a JPEG; JPEG compression is also a LIVE distortion).
- nuisance chains, with no damage a person would name: `identical` (the exact copy),
  `subpixel_shift` (±0.5 px), `png_resave` (a lossless re-save), `mild_jpeg` (one JPEG pass at
  quality 95). `scripts/measure_floors.py` runs them to measure each score's noise floor. Their
  copies are one frame repeated (two, alternating, for the shift), so Δ from step 1 is exactly 0
  at every checkpoint: they measure a score's arithmetic, and can never raise a false alarm.
- nuisance chains that *can* raise one: copies that differ at every step, drawn afresh from the
  step's own randomness, that a person would still call the same picture: `random_shift` (a
  fresh sub-pixel shift), `random_jpeg` (one JPEG pass at a random quality of 90-98),
  `random_resample` (a resampling round trip at a random scale), `random_exposure` (±1 %).

Two kinds of step function. A *feedback* step (pixels, rng, strength) -> pixels works on the
last frame, as every generator model does. An *anchored* step (anchor, rng, strength, step,
anchor_step, seed) -> pixels computes frame `step` from one fixed frame, the anchor (frame 0
unless a run was resumed, then the frame it resumed from, `anchor_step`), so that its effect is
exact: no 8-bit rounding is fed back (a blur fed back at 8 bits lags behind the exact one at
every rounding, and on a smooth start it stalls: no pixel changed after about 15 steps in
our tests), and a nuisance cannot walk away from the input (`rng` is the step's own, seeded by the
run's seed and the step, as a feedback step's; `seed`, the run's, is for a draw that spans the
run's steps).
"""

from __future__ import annotations

import functools
import io
import math

import numpy as np
from PIL import Image
from scipy import ndimage

Pixels = np.ndarray  # float32, H x W x 3, 0..255


def _to_image(pixels: Pixels) -> Image.Image:
    return Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8), "RGB")


def _round_trip(pixels: Pixels, **save: object) -> Pixels:
    """The frame written to a file with PIL (`save`: format and options) and read back."""
    buffer = io.BytesIO()
    _to_image(pixels).save(buffer, **save)
    buffer.seek(0)
    with Image.open(buffer) as reread:
        return np.asarray(reread.convert("RGB"), dtype=np.float32)


def _shifted(pixels: Pixels, down: float, right: float) -> Pixels:
    """The frame moved by (down, right) px, cubic spline, each colour plane on its own. As one
    3-D shift the spline also ran across the three planes, at nine times the cost, and gave the
    same float32 pixels on every frame tried (a 2K photo, 40 random ones): at whole positions
    it returns each plane's own values to within float64 rounding, which float32 hides."""
    return np.stack([ndimage.shift(pixels[..., c], (down, right), order=3, mode="nearest")
                     for c in range(3)], axis=-1)


# --- The positive control: accumulated Gaussian blur --------------------------------------------

BLUR_SIGMA = 0.8  # px: s in sigma_i = s * sqrt(i)


def accumulated_blur(anchor: Pixels, rng: np.random.Generator, strength: float, step: int,
                     anchor_step: int, seed: int) -> Pixels:
    """Frame i is the input blurred by a Gaussian of sigma_i = s * sqrt(i) px, in floating point.

    Gaussians compose by adding variances (the semigroup property of scale space: Koenderink,
    "The structure of images", Biol. Cybern. 1984; Lindeberg, "Scale-Space Theory in Computer
    Vision", 1994, ch. 2), so sigma_i = s * sqrt(i) is exactly what i round trips that each blur
    by s would give, without the 8-bit rounding that makes a fed-back blur stall. Resumed from
    frame j (the anchor), the blur still added is sigma = s * sqrt(i - j), which composes with
    frame j's own to s * sqrt(i) (one 8-bit rounding, frame j's, is then carried).

    Calibrated against PSNR to the input only, to the rule every profile follows (about 30 dB
    at step 10): s = `BLUR_SIGMA` = 0.8 px (also the value our start-smoothness tests use) gives, on
    the clean starts at 1024 px (`scripts/calibrate_profiles.py`), 28.0 (facade), 28.3 (feathers)
    and 29.5 dB (illustration) at step 10 and 26.2-27.7 dB at step 20; the dunes, with little
    fine detail to lose, 44.3 dB. `strength` scales s.
    """
    sigma = BLUR_SIGMA * strength * np.sqrt(step - anchor_step)
    return ndimage.gaussian_filter(anchor, (sigma, sigma, 0), mode="reflect")


# --- A positive control: white noise, accumulated ------------------------------------------------

WHITE_NOISE_SIGMA = 2.4  # grey levels of fresh noise per step, on top of all the noise before


def white_noise(pixels: Pixels, rng: np.random.Generator, strength: float) -> Pixels:
    """Fresh i.i.d. Gaussian noise of sigma `WHITE_NOISE_SIGMA` per pixel and channel at
    every step, carried forward, so its variance grows with the step.

    White noise is one of the five distortions of the LIVE database (Sheikh, Sabir & Bovik,
    IEEE TIP 2006), on which BRISQUE was trained (Mittal, Moorthy & Bovik, IEEE TIP 2012): the
    noise the classic metrics were built for, beside the model-made noise of the generator
    profiles. Calibrated against PSNR to the input only, to the rule every profile follows:
    after i steps the noise's sigma is 2.4 sqrt(i), so PSNR is 20 log10(255 / 7.6) = 30.5 dB
    at step 10 and 27.5 dB at step 20 (less where clipping at 0 or 255 cuts it). `strength`
    scales sigma.
    """
    return pixels + rng.normal(0, WHITE_NOISE_SIGMA * strength, pixels.shape).astype(np.float32)


# --- A codec's damage: JPEG re-encoded at every step --------------------------------------------

JPEG_QUALITY = 75  # libjpeg's and PIL's default quality


def jpeg_recompress(pixels: Pixels, rng: np.random.Generator, strength: float) -> Pixels:
    """Each copy is the last one saved as a JPEG at a fixed quality and decoded again.

    What re-saving a JPEG over and over does ("generation loss"): each pass quantises the 8 x 8
    block DCT (Wallace, "The JPEG still picture compression standard", CACM 1991) and halves
    the chroma resolution (4:2:0), and the rounding of one pass is the input of the next.
    Quality `JPEG_QUALITY` = 75 is the default of the IJG libjpeg encoder and of PIL, the
    quality an unconsidered re-save gets; `strength` lowers it, quality = 100 - 25 x strength
    (1..95). Not calibrated to 30 dB at step 10: a fixed quality's loss levels off after a few
    passes, which is what it models (measured, 1024 px: PSNR at step 1 / 20 of 46.3 / 46.3 dB
    on the dunes, 36.3 / 36.1 facade, 32.0 / 31.1 feathers, 38.6 / 37.6 illustration). `rng`
    is unused: a codec is deterministic.
    """
    quality = int(np.clip(round(100 - (100 - JPEG_QUALITY) * strength), 1, 95))
    return _round_trip(pixels, format="JPEG", quality=quality, subsampling="4:2:0")


# --- Nuisance chains: no damage a person would name ---------------------------------------------

SHIFT_PX = 0.5  # each step's shift, both axes, alternating in sign
MILD_JPEG_QUALITY = 95


def identical(pixels: Pixels, rng: np.random.Generator, strength: float) -> Pixels:
    """The exact copy: every frame is the last one, pixel for pixel."""
    return pixels


def png_resave(pixels: Pixels, rng: np.random.Generator, strength: float) -> Pixels:
    """The last frame saved as a PNG and read back: lossless, so no pixel may change; a score
    that moves here measures its own arithmetic, not the image. Written at zlib's fastest
    level: any level gives the same pixels back (the default one made a 2K step 2.4 times as
    costly: bench/simulate_step.py)."""
    return _round_trip(pixels, format="PNG", compress_level=1)


def subpixel_shift(anchor: Pixels, rng: np.random.Generator, strength: float, step: int,
                   anchor_step: int, seed: int) -> Pixels:
    """The input moved by half a pixel, right and down on odd steps, left and up on even ones.

    A replica that lands half a pixel off the original grid, as any resampling editor may
    leave it; a person sees no change. Resampled from the input (cubic spline, in floating
    point) at every step, so the chain does not walk away; `strength` scales the shift."""
    offset = SHIFT_PX * strength * (1 if step % 2 else -1)
    return _shifted(anchor, offset, offset)


def mild_jpeg(anchor: Pixels, rng: np.random.Generator, strength: float, step: int,
              anchor_step: int, seed: int) -> Pixels:
    """The input saved once as a JPEG at quality 95 (4:4:4) and decoded, at every step.

    The re-encode an upload pipeline or a careful "save as" does. It is not compounded: a
    nuisance must stay a nuisance over 20 steps, and compounding is the `jpeg` damage chain.
    `strength` is unused (only 0, the exact copy, changes it)."""
    return _round_trip(anchor, format="JPEG", quality=MILD_JPEG_QUALITY, subsampling="4:4:4")


# --- Nuisance chains that can raise a false alarm: fresh randomness at every step -----------------

RANDOM_SHIFT_PX = 0.5  # the largest shift per axis: uniform in ±0.5 px
RANDOM_JPEG_QUALITIES = (90, 98)  # inclusive
RANDOM_SCALES = (1.05, 1.25)  # the round trip's scale: this or its inverse, log-uniform
EXPOSURE_CHANGES = (0.0025, 0.01)  # the gain's change, either way: 0.25-1 %


def random_shift(anchor: Pixels, rng: np.random.Generator, strength: float, step: int,
                 anchor_step: int, seed: int) -> Pixels:
    """The input moved by a fresh sub-pixel offset at every step, uniform in ±0.5 px per axis.

    Any editor that resamples lands its replica off the original grid by an amount of its own.
    A person sees the same picture; a score that reads the sampling grid (a no-reference
    score's local statistics, PSNR) does not. Unlike `subpixel_shift`, no two copies share an
    offset, so Δ from step 1 is not 0 by construction. Resampled from the input (cubic spline,
    in floating point), so the chain never walks away; `strength` scales the offset."""
    offset = rng.uniform(-RANDOM_SHIFT_PX, RANDOM_SHIFT_PX, 2) * strength
    return _shifted(anchor, offset[0], offset[1])


# ITU-T T.81 (the JPEG standard), Annex K, Tables K.1 and K.2: the example quantisation tables
# that libjpeg scales by its quality, in natural (row by row) order.
LUMINANCE_TABLE = (16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55,
                   14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
                   18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
                   49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99)
CHROMINANCE_TABLE = (17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99,
                     24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99, 99, 99, 99, 99, 99) + (99,) * 32
GOLDEN_FRACTION = (math.sqrt(5) - 1) / 2
Tables = tuple[tuple[int, ...], tuple[int, ...]]


@functools.cache
def jpeg_quality_tables(low: int, high: int) -> tuple[Tables, ...]:
    """Every distinct (luminance, chrominance) pair of quantisation tables that libjpeg's
    quality scaling gives for a quality between `low` and `high` (50 or more) read as a real
    number, from the finest to the coarsest.

    libjpeg (jcparam.c, `jpeg_quality_scaling` and `jpeg_add_quant_table`) turns quality q into
    a scale of 200 - 2q percent and each entry b of `LUMINANCE_TABLE` and `CHROMINANCE_TABLE`
    into (b x scale + 50) // 100, at least 1; a whole q gives PIL's `quality=q` tables. An
    entry steps up at each scale (100 m - 50) / b, so the pairs are the tables at those scales,
    in whole-number arithmetic (a scale as numerator / denominator)."""
    finest, coarsest = 200 - 2 * high, 200 - 2 * low
    scales = {(finest, 1), (coarsest, 1)} | {
        (100 * m - 50, b) for b in {*LUMINANCE_TABLE, *CHROMINANCE_TABLE}
        for m in range(1, coarsest * b // 100 + 2) if finest * b <= 100 * m - 50 <= coarsest * b}
    found: list[Tables] = []
    for numerator, denominator in sorted(scales, key=lambda scale: scale[0] / scale[1]):
        pair = tuple(tuple(max(1, (b * numerator + 50 * denominator) // (100 * denominator))
                           for b in table) for table in (LUMINANCE_TABLE, CHROMINANCE_TABLE))
        if not found or found[-1] != pair:
            found.append(pair)
    return tuple(found)


def random_jpeg(anchor: Pixels, rng: np.random.Generator, strength: float, step: int,
                anchor_step: int, seed: int) -> Pixels:
    """The input saved once as a JPEG at a fresh quality of 90-98 (4:2:0) and decoded, at every
    step, never a quality an earlier step of the run used.

    The re-encode an upload pipeline or a photo site gives a file, at the qualities such
    services use for full-size views; libjpeg's default 4:2:0 chroma, so colour scores move too.
    A person calls any of them the same picture. A quality is read as a real number, as
    libjpeg's scaling allows (`jpeg_quality_tables`: 411 distinct pairs of tables between 90
    and 98, where the whole qualities give 9, so that one pair of steps in nine shared a copy),
    and a run
    takes them along a golden-ratio sequence from a start drawn from its seed: each step's lies
    in the largest gap the steps before it left (the three-gap theorem: V. T. Sós, 1958), at
    least two tables from any other of a 100-step run, so no two copies are encoded alike. (On a
    very smooth start neighbouring tables can still decode to the same pixels: a start smoothed
    by a 2 px Gaussian has about 85 distinct copies between 90 and 98.) Not compounded: that is
    the `jpeg` damage. `strength` is unused (only 0, the exact copy, changes it)."""
    luminance, chrominance = random_jpeg_tables(seed, step)
    return _round_trip(anchor, format="JPEG", qtables=[list(luminance), list(chrominance)],
                       subsampling="4:2:0")


def random_jpeg_tables(seed: int, step: int) -> Tables:
    """The tables `random_jpeg` encodes step `step` of a run with `seed` with: the golden-ratio
    sequence's point for the step, from a start drawn from the seed, picks one of
    `jpeg_quality_tables` between `RANDOM_JPEG_QUALITIES`."""
    tables = jpeg_quality_tables(*RANDOM_JPEG_QUALITIES)
    position = (np.random.default_rng(seed).random() + step * GOLDEN_FRACTION) % 1
    return tables[int(position * len(tables))]


def random_resample(anchor: Pixels, rng: np.random.Generator, strength: float, step: int,
                    anchor_step: int, seed: int) -> Pixels:
    """The input resized by a fresh scale and back to its own size with a Lanczos filter, at
    every step: the scale is 1.05-1.25 (log-uniform) or its inverse, either with even odds.

    What a pipeline that resizes for a preview, or an editor working at its own resolution,
    does to a copy: below 1 it loses the finest detail a little, above 1 it only interpolates.
    A person sees the same picture. Scales nearer 1 are left out: the size would round back to
    the input's, and the copy would be exact. `strength` scales the log of the scale."""
    low, high = np.log(RANDOM_SCALES)
    scale = float(np.exp(rng.choice((-1, 1)) * rng.uniform(low, high) * strength))
    image = _to_image(anchor)
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    lanczos = Image.Resampling.LANCZOS
    back = image.resize(size, lanczos).resize(image.size, lanczos)
    return np.asarray(back, dtype=np.float32)


def random_exposure(anchor: Pixels, rng: np.random.Generator, strength: float, step: int,
                    anchor_step: int, seed: int) -> Pixels:
    """The input's pixel values times a fresh gain, 1 ± 0.25-1 % (the change uniform, its sign
    even odds), at every step.

    A ±1 % change of brightness is below what a person notices side by side (a just noticeable
    difference in luminance is about 1-2 %, Weber's fraction), the size of an encoder's or a display
    pipeline's rounding of a tone curve. Changes under 0.25 % are left out: 8-bit rounding would
    undo them (255 x 0.2 % is half a grey level), and the copy would be exact. `strength` scales the
    change."""
    gain = 1 + rng.choice((-1, 1)) * rng.uniform(*EXPOSURE_CHANGES) * strength
    return anchor * np.float32(gain)
