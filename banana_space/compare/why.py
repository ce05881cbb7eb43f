"""Why is a classic metric fooled? What BRISQUE's and NIQE's model sees in a frame: the
histogram of its MSCN coefficients against the generalised Gaussian (GGD) the model fits.

BRISQUE (Mittal, Moorthy & Bovik, IEEE TIP 21(12), 2012, sec. III) normalises a frame's luma by
its local mean and contrast (the MSCN coefficients, eq. 1) and fits a GGD to them (eq. 2): the
shape α and the variance σ² are its first two features; NIQE (Mittal, Soundararajan & Bovik,
IEEE SPL 20(3), 2013) fits the same family to the same coefficients, block by block. Pristine
natural images give MSCN coefficients close to a unit Gaussian (α = 2, Ruderman 1994, quoted
in sec. III); each textbook distortion moves α its own way. This is *our reading* of why the
paper's classic metrics call a copy of a copy better: the copies' coefficients move towards (or
away from) the shape the model was fitted to call natural. The paper does not say this.

Every number is pyiqa's: the MSCN is pyiqa's own `normalize_img_with_gauss` with BRISQUE's
window (7 x 7, σ 7/6, 'same' padding, as `natural_scene_statistics` calls it) on pyiqa's luma,
and α and σ² come from `nss.ggd_param`, pyiqa's `estimate_ggd_param` tested equal to it
(tests/test_why.py checks α against BRISQUE's first feature, from pyiqa's own function).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image
from pyiqa.archs.func_util import normalize_img_with_gauss

from ..scores.catalog import to_tensor
from ..scores.nss import ggd_param, luma_255

KERNEL_SIZE, KERNEL_SIGMA = 7, 7.0 / 6  # BRISQUE's window (pyiqa's defaults)
GAUSSIAN_ALPHA = 2.0  # the GGD's shape that is the Gaussian: pristine natural images' MSCN
HISTOGRAM_EDGES = np.linspace(-3.0, 3.0, 61)  # MSCN coefficients lie within ±3 almost all
NEARLY_EQUAL = 0.05  # α moves by at least this much before a sentence calls it a move
WHY_LABEL = ("Our reading of the paper's explanation, not the paper's: the MSCN statistics "
             "BRISQUE and NIQE model (Mittal et al. 2012), measured with pyiqa's own functions.")


@dataclass(frozen=True)
class NssReading:
    """One frame's MSCN coefficients as BRISQUE's model reads them."""

    alpha: float  # the fitted GGD's shape (BRISQUE's first feature)
    variance: float  # the fitted GGD's σ² (its second)
    density: tuple[float, ...]  # the histogram of the coefficients, as a density


def mscn(image: Image.Image) -> torch.Tensor:
    """The frame's MSCN coefficients (1, 1, H, W) as BRISQUE computes them at its first scale:
    pyiqa's luma (YIQ's Y x 255) normalised by pyiqa's `normalize_img_with_gauss`."""
    luma = luma_255(to_tensor(image))
    return normalize_img_with_gauss(luma, KERNEL_SIZE, KERNEL_SIGMA, padding="same")


def read_frame(image: Image.Image) -> NssReading:
    """α, σ² and the histogram of a frame's MSCN coefficients.

    Args:
        image: an RGB frame.
    Returns:
        Its `NssReading`; α and σ² are BRISQUE's first two features (pyiqa's fit).
    References:
        Mittal et al., "No-reference image quality assessment in the spatial domain",
        IEEE TIP 21(12), 2012, eq. 1-4.
    """
    coefficients = mscn(image)
    alpha, sigma = ggd_param(coefficients)
    density, _ = np.histogram(coefficients.numpy().ravel(), bins=HISTOGRAM_EDGES, density=True)
    return NssReading(float(alpha.reshape(-1)[0]), float(sigma.reshape(-1)[0]) ** 2,
                      tuple(float(d) for d in density))


@functools.lru_cache(maxsize=512)
def read_saved_frame(path: str) -> NssReading:
    """`read_frame` of a frame file; a run's frames never change once written, so each is
    read once however often the page asks (the step slider, a reopened link)."""
    with Image.open(path) as image:
        return read_frame(image.convert("RGB"))


def ggd_density(x: np.ndarray, alpha: float, variance: float) -> np.ndarray:
    """The zero-mean GGD's density (Mittal et al. 2012, eq. 2): α / (2β Γ(1/α))
    exp(-(|x| / β)^α), with β = σ sqrt(Γ(1/α) / Γ(3/α))."""
    beta = math.sqrt(variance) * math.sqrt(math.gamma(1 / alpha) / math.gamma(3 / alpha))
    return alpha / (2 * beta * math.gamma(1 / alpha)) * np.exp(-(np.abs(x) / beta) ** alpha)


def bin_centres() -> np.ndarray:
    return (HISTOGRAM_EDGES[:-1] + HISTOGRAM_EDGES[1:]) / 2


def why_sentence(alphas: Sequence[float], step: int) -> str:
    """One sentence from the numbers: how α moved from the input and step 1 to `step`, and
    whether that is towards the Gaussian of pristine natural images (α = 2).

    Args:
        alphas: α per step, the input's first.
        step: the compared step (>= 1).
    Returns:
        A sentence naming the α it read; it claims a move only where α moved by
        `NEARLY_EQUAL` or more.
    """
    start, first, now = alphas[0], alphas[min(1, step)], alphas[step]
    moved = now - first
    numbers = f"α {start:.2f} at the input, {first:.2f} at step 1, {now:.2f} at step {step}"
    if abs(moved) < NEARLY_EQUAL:
        return (f"From step 1 to step {step} the copies' MSCN shape barely moved ({numbers}): "
                "BRISQUE's and NIQE's model sees about the same statistics, so the damage "
                "reaches them, if at all, through their other features.")
    towards = abs(now - GAUSSIAN_ALPHA) < abs(first - GAUSSIAN_ALPHA)
    reading = ("which their model of pristine natural images reads as more natural"
               if towards else "which their model reads as less natural")
    direction = "towards" if towards else "away from"
    return (f"The copies' MSCN distribution moved {direction} the Gaussian (α = 2) of pristine "
            f"natural images ({numbers}), {reading}.")
