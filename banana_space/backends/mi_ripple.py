"""The two artifacts Mi-Ripple measured in real iterative-editing chains, as step functions.

J. Chen, Y. Xu & M. Wang, "Mi-Ripple: Restoring Images Degraded by Iterative AI Editing"
(2026) measured what repeated editing leaves, in real chains (Banana100's `more_models`
sequences among them, 10 steps each):

- a **lattice**: periodic structure with periods of 5-8 px at native resolution. Their Table 5
  gives, per model, the displacement where the autocorrelation peaks and its height at the
  first and the last step (a photograph: about 0.05); `LATTICES` holds those numbers;
- a **granular texture**: blobs in a 3-8 px band (a difference of Gaussians of sigma 1 and
  3 px; about 5 px after band-pass), with weak autocorrelation at inconsistent displacements,
  growing with the scene's texture: the share of qualifying 128 px tiles went 0.9, 3.1, 5.2,
  8.3, 23.7 % over five generations of a moss scene and stayed 0 % on a face and a beach.

The numbers here are Mi-Ripple's; Banana100 (arXiv 2604.03400) is only where some of its
chains come from. Every parameter is calibrated against those artifact measurements and PSNR
to the input (`scripts/calibrate_profiles.py` prints both), never against a no-reference
metric's verdict.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from .portable import luma, rounded

Pixels = np.ndarray  # float32, H x W x 3, 0..255
RESIDUAL_SIGMA = 1.5  # px: the high-pass the autocorrelation is read on (photographs ~0.05)


@dataclass(frozen=True)
class MeasuredLattice:
    """One row of Mi-Ripple's Table 5: the displacement (x, y) in px where the autocorrelation
    peaks, and its height at the first and the last of ten steps (a range's midpoint)."""

    displacement: tuple[int, int]
    first: float
    last: float


# Mi-Ripple, Table 5 (Banana100's sequences). "(5,0)" is read as (x, y): Mi-Ripple's text as
# this project has it does not say which axis comes first; the reading changes only the
# lattice's orientation.
LATTICES = {
    "nano-banana-pro": MeasuredLattice((5, 0), 0.07, 0.25),  # late; rho with step 0.99
    "nano-banana-2-fast": MeasuredLattice((8, 0), 0.295, 0.43),  # 0.26-0.33 -> 0.33-0.53
    "grok-imagine": MeasuredLattice((0, 5), 0.18, 0.76),  # 0.17-0.19 -> 0.65-0.87
    "flux-2-max": MeasuredLattice((0, 5), 0.05, 0.59),  # late
    "flux-2-dev": MeasuredLattice((3, 3), 0.03, 0.12),  # weak
    "qwen": MeasuredLattice((6, 0), 0.43, 0.46),  # at all ten steps
}


def residual_autocorrelation(pixels: Pixels, displacement: tuple[int, int]) -> float:
    """The normalised autocorrelation, at `displacement` (x, y) px, of the frame's luma minus
    its Gaussian blur (sigma `RESIDUAL_SIGMA`): the number Mi-Ripple's Table 5 reports. On the
    photographic starts at (5, 0) it reads -0.04 to 0.08 (the facade's regular panels 0.23),
    Mi-Ripple's "about 0.05 for a photograph"."""
    grey = luma(pixels)
    residual = grey - ndimage.gaussian_filter(grey, RESIDUAL_SIGMA)
    dx, dy = displacement
    a = residual[dy:, dx:]
    b = residual[:residual.shape[0] - dy, :residual.shape[1] - dx]
    a, b = a - a.mean(), b - b.mean()
    return float(np.sum(a * b) / np.sqrt(np.sum(a * a) * np.sum(b * b)))


@functools.lru_cache(maxsize=4)
def square_lattice(shape: tuple[int, int], displacement: tuple[int, int]) -> np.ndarray:
    """Two plane waves, one along `displacement` and one across it, each with the
    displacement's length as its wavelength: a square lattice that translating by the
    displacement leaves unchanged (autocorrelation 1 there), of RMS 1, anchored to the pixel
    grid as a decoder's patch grid would be. Its spectrum is four isolated points.

    Each wave's phase at a pixel is a whole number k (x dx + y dy along, y dx - x dy across)
    times 2 pi / |d|^2, in float32; the cosine of each k in the frame is taken once
    (`portable.rounded`, the same bits on any CPU). The same lattice serves every step of a
    chain, so the last few are kept (read-only)."""
    dx, dy = displacement
    length2 = float(dx * dx + dy * dy)
    rows, cols = np.arange(shape[0])[:, None], np.arange(shape[1])[None, :]
    waves = []
    for phase in (cols * dx + rows * dy, rows * dx - cols * dy):
        first = int(phase.min())
        steps = np.arange(first, int(phase.max()) + 1).astype(np.float32)
        waves.append(rounded(np.cos, 2 * np.pi * steps / length2)[phase - first])
    lattice = waves[0] + waves[1]
    lattice.flags.writeable = False
    return lattice


def reimpose_lattice(pixels: Pixels, displacement: tuple[int, int], target: float,
                     rate: float) -> Pixels:
    """One round trip that redraws the lattice: its amplitude in the frame (the frame's luma
    projected on the lattice) moves `rate` of the way to `target` grey levels (RMS). A
    generator's grid drawn again at every pass approaches a fixed strength rather than
    growing without end, which is what Table 5's first-to-last rise shows (Qwen's is flat)."""
    lattice = square_lattice(pixels.shape[:2], displacement)
    grey = luma(pixels)
    present = float(np.sum((grey - grey.mean()) * lattice) / np.sum(lattice * lattice))
    return pixels + (rate * (target - present) * lattice)[..., None]


# --- The lattice profile: Grok Imagine's, the strongest Table 5 row ---------------------------

LATTICE_MODEL = "grok-imagine"
LATTICE_TARGET = 23.0  # grey levels RMS the redrawn grid approaches
LATTICE_RATE = 0.13  # of the way there per step


def measured_lattice(pixels: Pixels, rng: np.random.Generator, strength: float) -> Pixels:
    """A faint square lattice, redrawn at every step, as Mi-Ripple measured in Grok Imagine's
    chains (Table 5: displacement (0, 5), autocorrelation 0.17-0.19 at the first step and
    0.65-0.87 at the last of ten). "Inconspicuous in thumbnails": a 5 px period is finer than
    a 256 px thumbnail of a 2K frame can show.

    Calibrated against that autocorrelation and PSNR to the input only
    (`scripts/calibrate_profiles.py`, docs/calibration/lattice-ripple.md): `LATTICE_TARGET` and
    `LATTICE_RATE` set so that the median of the four photographic starts at 1536 px, seed 0,
    reads Table 5's midpoints, 0.18 at step 1 and 0.76 at step 10. Measured: 0.19 and 0.78
    (facade -0.11 / 0.63, flower 0.56 / 0.98, moss 0.01 / 0.40, nuthatch 0.36 / 0.93: the
    same lattice reads higher where the scene's own fine detail is weaker); PSNR 38.6-39.1 dB
    at step 1, 23.4-24.1 dB at step 10. `rng` is unused: the lattice is the same at every
    step.
    """
    displacement = LATTICES[LATTICE_MODEL].displacement
    return reimpose_lattice(pixels, displacement, LATTICE_TARGET * strength, LATTICE_RATE)


# --- Granular texture --------------------------------------------------------------------------

BLOB_SIGMAS = (1.0, 3.0)  # px: Mi-Ripple's band-pass, which also shapes the blobs
TEXTURE_SCALE = 8.0  # px: how far the scene's local texture is averaged
GRAIN_GAIN = 0.75  # fresh blob RMS per step, as a share of the scene's local 3-8 px RMS


def band_pass(field: np.ndarray) -> np.ndarray:
    """A difference of Gaussians of sigma 1 and 3 px: Mi-Ripple's 3-8 px band (over the first
    two axes: each colour plane on its own)."""
    low, high = ((sigma, sigma, *(0,) * (field.ndim - 2)) for sigma in BLOB_SIGMAS)
    return ndimage.gaussian_filter(field, low) - ndimage.gaussian_filter(field, high)


def local_texture(grey: np.ndarray) -> np.ndarray:
    """The scene's own 3-8 px RMS around each pixel (averaged over `TEXTURE_SCALE` px) of a
    luma plane."""
    return np.sqrt(ndimage.gaussian_filter(band_pass(grey) ** 2, TEXTURE_SCALE))


def band_noise(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Fresh white noise through the 3-8 px band-pass, of RMS 1: blobs about 5 px wide."""
    blobs = band_pass(rng.standard_normal(shape).astype(np.float32))
    return blobs / max(float(blobs.std()), 1e-6)


def granular_texture(pixels: Pixels, rng: np.random.Generator, strength: float) -> Pixels:
    """Fresh 3-8 px blobs at every step, as strong as the scene is textured there.

    Models Mi-Ripple's granular texture: blobs in the 3-8 px band (white noise through their
    difference of Gaussians of sigma 1 and 3 px, so about 5 px wide, independent at every
    step: weak autocorrelation at inconsistent displacements), grown "with the scene's
    texture": each blob is scaled by the frame's own local 3-8 px RMS (averaged over
    `TEXTURE_SCALE` px), so moss and bark take it and a face, a beach or a sky do not (0 %
    there in Mi-Ripple's measurement). Fed back, the texture it adds is texture the next step
    scales by, so it accelerates, as the moss scene's tile share did.

    Calibrated against that tile share (the `scale_index` ruler reads it) and PSNR to the
    input only (`scripts/calibrate_profiles.py`, docs/calibration/granular.md): `GRAIN_GAIN`
    set so that the moss start at 1536 px, seed 0, follows Mi-Ripple's five generations
    (0.9, 3.1, 5.2, 8.3, 23.7 %) read as steps 0 to 4: measured 0.9, 2.2, 4.3, 7.8, 16.5 %
    (30.4 % at step 5), with PSNR 27.6 dB at step 1 and 20.4 dB at step 5; the nuthatch start
    (bark, a soft background) stays at 0.0 % throughout, as Mi-Ripple's face and beach did.
    """
    grey = luma(pixels)
    blobs = band_noise(rng, grey.shape)
    return pixels + (GRAIN_GAIN * strength * local_texture(grey) * blobs)[..., None]
