"""Pure models of the artifacts one generator round trip leaves, one step function per profile.

Each `step` takes a frame as float pixels (H x W x 3, 0..255), a seeded generator and a
`strength` (0 = the perfect copy, 1 = the calibrated default) and returns the next frame, which
may be another size where the profile says so. They know nothing of the chain: feeding each
output back in is what makes their artifacts pile up, as in Banana100 (arXiv 2604.03400,
abstract: "As images are repeatedly edited, minor artifacts accumulate, rapidly leading to a
severe accumulation of visible noise"). The artifacts Mi-Ripple measured in real chains (a
lattice, a granular texture) are in `mi_ripple`; the default profile here uses both.

Calibration, only against fidelity to the input and, where one exists, a published measurement
of the artifact (never against a no-reference metric): the default profile on the photographic
starts at 1536 px, seed 0 (docs/calibration/, written by `scripts/calibrate_profiles.py`).
The older profiles below (contour wrinkles, scattered dots, simplification) model descriptions
only, with no measurement to match: they were calibrated on the four flat synthetic starts
(clean-*.png, 1024 px, seed 0) to about 30 dB of PSNR at step 10, and each docstring gives the
numbers measured then.
"""

from __future__ import annotations

import numpy as np
from PIL import Image
from scipy import ndimage

from . import mi_ripple
from .portable import luma, rounded

Pixels = np.ndarray  # float32, H x W x 3, 0..255


def _smooth_field(rng: np.random.Generator, shape: tuple[int, int], scale: float) -> np.ndarray:
    """Gaussian random field with unit standard deviation and features about `scale` px wide."""
    field = ndimage.gaussian_filter(rng.standard_normal(shape).astype(np.float32), scale)
    return field / max(float(field.std()), 1e-6)


def edge_weight(pixels: Pixels, scale: float = 1.5, contrast: float = 24.0) -> np.ndarray:
    """0 in flat regions, towards 1 on an object's outline: the luma gradient (grey levels per
    px, after a `scale`-px Gaussian) saturating at `contrast`."""
    grey = ndimage.gaussian_filter(luma(pixels), scale)
    gradient = np.hypot(ndimage.sobel(grey, 0), ndimage.sobel(grey, 1)) / 8
    return np.clip(gradient / contrast, 0, 1)


def reframe(pixels: Pixels, rng: np.random.Generator, fraction: float) -> Pixels:
    """Crop a margin of about `fraction` of one axis (split at random between its two sides), or
    squeeze that axis by the same fraction: a replica that comes back at another size."""
    axis = int(rng.integers(2))
    length = pixels.shape[axis]
    margin = int(round(fraction * length))
    if margin == 0:
        return pixels
    if rng.random() < 0.5:
        first = int(rng.integers(margin + 1))
        kept = slice(first, length - (margin - first))
        return pixels[kept] if axis == 0 else pixels[:, kept]
    height, width = pixels.shape[:2]
    size = (width, height - margin) if axis == 0 else (width - margin, height)
    channels = [np.asarray(Image.fromarray(pixels[..., c]).resize(size, Image.Resampling.BICUBIC))
                for c in range(3)]
    return np.stack(channels, axis=-1)


# --- Nano Banana Pro-like (the default) -------------------------------------------------------

STATIC_FLOOR = 1.6  # grey levels RMS of fresh 3-8 px static per step, everywhere
STATIC_TEXTURE_GAIN = 0.15  # more of it, as a share of the scene's local 3-8 px RMS
GREEN_GAINS = np.array([-0.0015, 0.003, -0.0015], np.float32)  # per step: green up, red/blue down
NBP_DOTS_PER_MEGAPIXEL = 10  # new specks per step
NBP_LATTICE_TARGET = 11.0  # grey levels RMS the (5, 0) grid approaches
NBP_LATTICE_RATE = 0.05  # of the way there per step: a late lattice
REFRAME_CHANCE = 0.06  # per step: "now and then"
REFRAME_FRACTION = 0.015  # of one axis


def nano_banana_pro(pixels: Pixels, rng: np.random.Generator, strength: float) -> Pixels:
    """Static that accumulates, a slow green cast, scattered specks, a late faint lattice, and
    now and then a new frame size.

    Built from Banana100's description of Nano Banana Pro's replication chains (arXiv
    2604.03400; the abstract: "minor artifacts accumulate, rapidly leading to a severe
    accumulation of visible noise"; its figures:
    static that is never smoothed away, a green tint, scattered dots, replicas that come back
    cropped or at another aspect ratio) and Mi-Ripple's measurement of Nano Banana Pro's
    lattice (J. Chen, Y. Xu & M. Wang 2026, Table 5: a late (5, 0) period whose
    autocorrelation peak rises from 0.07 at the first step to 0.25 at the last of ten, rho
    with the step 0.99).

    The static is not white noise: model-made noise is what Mi-Ripple measured as blobs in a
    3-8 px band (`mi_ripple.band_pass`), so each step adds fresh band-limited static of RMS
    `STATIC_FLOOR` everywhere plus `STATIC_TEXTURE_GAIN` of the scene's local band RMS (the
    granular texture's growth with texture, `mi_ripple.granular_texture`), carried forward and
    never smoothed. Per-channel gains `GREEN_GAINS` compound into a green cast; a Poisson
    number of specks (`NBP_DOTS_PER_MEGAPIXEL`, 2 px, `scattered_dots`) is set; the (5, 0)
    lattice is redrawn `NBP_LATTICE_RATE` of the way to `NBP_LATTICE_TARGET`
    (`mi_ripple.reimpose_lattice`); with chance `REFRAME_CHANCE` a step crops or squeezes
    `REFRAME_FRACTION` of one axis.

    Calibrated against fidelity to the input and Mi-Ripple's lattice numbers only
    (`scripts/calibrate_profiles.py`, docs/calibration/nano-banana-pro.md: the four
    photographic starts at 1536 px, seed 0): the static and the green gains so that PSNR to
    the input is near 30 dB at step 10 before any reframe (measured 26.4-29.6 dB: the damage
    is plain at full size within 5-10 steps); the lattice so that the median autocorrelation
    at (5, 0) rises late to Table 5's 0.25 at step 10 (measured: -0.01 at step 1, at or below
    the photographs' own -0.06-0.24, and 0.26 at step 10; moss 0.03, where the scene's fine
    detail drowns it). The specks' count has no published number: a few per step, visible at
    full size. The reframe chance gives a few reframes per 100 steps; its fraction is a
    visible but small crop.
    """
    texture = mi_ripple.local_texture(luma(pixels))
    static = mi_ripple.band_noise(rng, pixels.shape)
    amplitude = strength * (STATIC_FLOOR + STATIC_TEXTURE_GAIN * texture)
    out = (pixels + amplitude[..., None] * static) * (1 + strength * GREEN_GAINS)
    out = scattered_dots(out, rng, strength * NBP_DOTS_PER_MEGAPIXEL / DOTS_PER_MEGAPIXEL)
    out = mi_ripple.reimpose_lattice(out, mi_ripple.LATTICES["nano-banana-pro"].displacement,
                                     NBP_LATTICE_TARGET * strength, NBP_LATTICE_RATE)
    if rng.random() < REFRAME_CHANCE:
        out = reframe(out, rng, REFRAME_FRACTION * strength)
    return out


# --- Contour wrinkles (Nano Banana 2) ---------------------------------------------------------

WRINKLE_PX = 0.4  # displacement per step at a full-contrast edge, in px (field's std)
WRINKLE_SCALE = 4.0  # px: how wide one wrinkle of the displacement field is


def contour_wrinkles(pixels: Pixels, rng: np.random.Generator, strength: float) -> Pixels:
    """Ripples along object edges, as seen in Nano Banana 2's replication chains.

    Models the creases that the Banana100 study reports for Nano Banana 2's chains (arXiv
    2604.03400), drawn as ripples along object edges. Each step displaces pixels by a smooth
    random field (features `WRINKLE_SCALE` px wide) weighted by `edge_weight`: outlines move, flat
    regions do not, so outlines turn wavy and their waves add up over the steps. The resampling
    is cubic, so flat regions stay exactly as they were.

    Calibrated against PSNR to the input only: WRINKLE_PX set so the clean starts with outlines
    reach about 30 dB at step 10 (measured, seed 0, 1024 px: facade 27.5, illustration 28.8,
    feathers 33.3 dB; the dunes, with almost no outlines, 48.9 dB).
    """
    height, width = pixels.shape[:2]
    weight = edge_weight(pixels) * WRINKLE_PX * strength
    dy = weight * _smooth_field(rng, (height, width), WRINKLE_SCALE)
    dx = weight * _smooth_field(rng, (height, width), WRINKLE_SCALE)
    rows, cols = np.mgrid[0:height, 0:width].astype(np.float32)
    where = [rows + dy, cols + dx]
    return np.stack([ndimage.map_coordinates(pixels[..., c], where, order=3, mode="nearest")
                     for c in range(3)], axis=-1)


# --- Scattered dots (FLUX.2 [dev]) ------------------------------------------------------------

DOTS_PER_MEGAPIXEL = 100  # new dots per step
DOT_SIDE = 2  # px


def scattered_dots(pixels: Pixels, rng: np.random.Generator, strength: float) -> Pixels:
    """Isolated light and dark specks scattered over the frame, as in FLUX.2 [dev] chains.

    Models the scattered dots that the Banana100 study reports for FLUX.2 [dev]'s replication
    chains (arXiv 2604.03400). Each step sets `DOTS_PER_MEGAPIXEL` x strength small squares
    (`DOT_SIDE` px) at random places to near-black or near-white; the next steps copy them on.

    Calibrated against PSNR to the input only: the dot count set so the clean starts reach
    about 30 dB at step 10 (measured, seed 0, 1024 px: 29.1-30.1 dB on all four); everything
    between the dots is untouched.
    """
    height, width = pixels.shape[:2]
    count = int(rng.poisson(DOTS_PER_MEGAPIXEL * strength * height * width / 1e6))
    ys = rng.integers(0, height - DOT_SIDE + 1, count)
    xs = rng.integers(0, width - DOT_SIDE + 1, count)
    values = np.where(rng.random(count) < 0.5, 16.0, 240.0).astype(np.float32)
    out = pixels.copy()
    for dy in range(DOT_SIDE):
        for dx in range(DOT_SIDE):
            out[ys + dy, xs + dx] = values[:, None]
    return out


# --- Simplification (Qwen Image Edit) ---------------------------------------------------------

CORING_LEVEL = 10.0  # grey levels: finer detail than this is treated as texture
CORING_RATE = 0.35  # of that texture removed per step
PATCHES_PER_STEP = 1.5
PATCH_FRACTION = 0.04  # of the short side
PATCH_REACH = 0.15  # how far away (of each axis) a copied region comes from


def copy_regions(pixels: Pixels, rng: np.random.Generator, count: int, side: int,
                 reach: float) -> Pixels:
    """`count` square regions of `side` px, each copied from a place at most `reach` of the
    frame away, hard-edged."""
    height, width = pixels.shape[:2]
    out = pixels.copy()
    for _ in range(count):
        y, x = int(rng.integers(height - side + 1)), int(rng.integers(width - side + 1))
        sy = int(np.clip(y + rng.integers(-reach * height, reach * height + 1), 0, height - side))
        sx = int(np.clip(x + rng.integers(-reach * width, reach * width + 1), 0, width - side))
        out[y:y + side, x:x + side] = pixels[sy:sy + side, sx:sx + side]
    return out


def simplification(pixels: Pixels, rng: np.random.Generator, strength: float) -> Pixels:
    """Fine texture smoothed away, small regions copied from elsewhere in the frame.

    Models the simplified texture that the Banana100 study reports for Qwen Image Edit's
    replication chains (arXiv 2604.03400): texture simplified away, here with small regions
    duplicated. Each step "cores" the detail (the frame minus a 1.2 px Gaussian): detail weaker
    than `CORING_LEVEL` grey levels is texture and loses `CORING_RATE` of itself, strong edges
    keep theirs; then a Poisson number (mean `PATCHES_PER_STEP`) of square regions
    (`PATCH_FRACTION` of the short side) are copied from nearby (`copy_regions`).

    Calibrated against PSNR to the input only: rates set so the clean starts reach about 30 dB
    at step 10 (measured, seed 0, 1024 px: facade 30.7, feathers 29.4, illustration 31.5 dB;
    the dunes, with no fine texture to lose, 38.7 dB).
    """
    smooth = ndimage.gaussian_filter(pixels, (1.2, 1.2, 0))
    detail = pixels - smooth
    texture = rounded(np.exp, -(detail / CORING_LEVEL) ** 2)
    out = pixels - CORING_RATE * strength * texture * detail
    side = max(1, int(round(PATCH_FRACTION * min(pixels.shape[:2]))))
    count = int(rng.poisson(PATCHES_PER_STEP * strength))
    return copy_regions(out, rng, count, side, PATCH_REACH)
