"""Chain-aware rulers: cheap, explainable no-reference measures of what repeated editing adds.

Banana100 (arXiv 2604.03400) watched Nano Banana Pro copy its own output 100 times: static
noise piles up, a green tint creeps in, dots and crops appear, and 21 popular no-reference
metrics call the result *better*. Each ruler here is a pure function of one frame (never of
frame 0: that would be fidelity, which `psnr` and `ssim` already are) aimed at one of those
artifacts, built from library parts (scikit-image, PyWavelets, scipy's FFT and filters).

A frame is an RGB array (H, W, 3) of floats in [0, 1]. Scores in grey levels are on the 0-255
scale of an 8-bit image, so "2.0" reads as "two grey levels". `RULERS` is the table the metric
registry (`catalog.py`) reads: name -> function, orientation, one-line meaning. scipy and
scikit-image are imported inside the functions, on first use: the page must not wait for them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .registry import unique_table

GREY_LEVELS = 255.0
TRANSPOSE_BAND = 64  # rows copied at a time by `_transposed`: a band fits in the CPU's cache

# Grain: the band of wavelengths the "granular texture" lives in, and the blocks it is read in.
GRAIN_WAVELENGTHS = (3.0, 8.0)  # px
# A Gaussian of sigma s has amplitude response exp(-2 pi^2 s^2 f^2): it halves a wave of
# wavelength pi s / sqrt(ln 2 / 2), about 5.3 s. The band's edges set the two sigmas.
HALF_AMPLITUDE_WAVELENGTH_PER_SIGMA = np.pi / np.sqrt(np.log(2) / 2)
GRAIN_BLOCK = 32  # px: small enough that a photo has flat ones, big enough for a stable RMS
QUIET_FRACTION = 0.25  # the grain is read in the quietest quarter of the blocks

# Lattice: Welch's averaged periodogram over overlapping tiles, and what counts as a peak.
LATTICE_TILE = 256  # px at most: frequency resolution 1/256 cycle per pixel
MIN_LATTICE_SIDE = 32  # px: below this there are too few tiles for a stable spectrum
LATTICE_PERIODS = (2.0, 32.0)  # px: the "digital ripple" band; longer periods are content
BASELINE_WINDOW = 7  # bins: the local median the spectrum is compared with
# Tiles are half the short side (at most 256 px: a tone's power stays in one bin while a photo's
# spreads over more bins as tiles grow), half overlapping: 9 on a 512 px square, 49 on 1024 px.
# Their averaged periodogram exceeds ten times its local median by chance with probability far
# below one in a million per bin: a 10 dB peak is a periodic pattern.
PEAK_RATIO = 10.0

# Colour: which pixels count as "about grey" in CIELAB.
NEUTRAL_CHROMA = 15.0  # C* = sqrt(a*^2 + b*^2): skin and sky sit above it, greys below
NEUTRAL_LIGHTNESS = (20.0, 95.0)  # L*: leave out near-black and clipped highlights
MIN_NEUTRAL_FRACTION = 0.01  # below 1 % of the frame there is no neutral region to read


def noise_level(image: np.ndarray) -> float:
    """The standard deviation of white noise in the frame, in grey levels.

    Donoho & Johnstone's robust estimator ("Ideal spatial adaptation by wavelet shrinkage",
    Biometrika 1994): the median absolute value of the finest diagonal wavelet coefficients,
    divided by 0.6745, as `skimage.restoration.estimate_sigma` computes it (Daubechies-2, on
    each colour channel, averaged; nonzero coefficients only), with the same numbers. Banana100's
    chains accumulate "static": this reads it. Texture at the finest scale also counts, so a
    sharp, busy photo reads a little high.
    """
    from scipy import special

    sigmas = []
    for channel in np.moveaxis(image, -1, 0):
        diagonal = _finest_diagonal_detail(channel)
        sigmas.append(np.median(np.abs(diagonal[diagonal != 0])) / special.ndtri(0.75))
    return float(np.mean(sigmas)) * GREY_LEVELS


def _finest_diagonal_detail(channel: np.ndarray) -> np.ndarray:
    """`pywt.dwtn(channel, "db2")["dd"]`: Daubechies-2 detail down the columns, then along the
    rows, without the three other sub-bands. PyWavelets filters along a strided axis about
    eight times slower than along a contiguous one, so each pass runs on rows of a transposed
    copy (the same filter on the same numbers)."""
    import pywt

    down_columns = pywt.dwt(_transposed(channel), "db2", mode="symmetric", axis=-1)[1]
    return pywt.dwt(_transposed(down_columns), "db2", mode="symmetric", axis=-1)[1]


def _transposed(array: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of a 2-D array's transpose, copied a band of rows at a time: numpy
    copies a large transpose in one go with cache-missing strides, about five times slower."""
    out = np.empty(array.shape[::-1], dtype=array.dtype)
    for start in range(0, array.shape[0], TRANSPOSE_BAND):
        out[:, start:start + TRANSPOSE_BAND] = array[start:start + TRANSPOSE_BAND].T
    return out


def grain(image: np.ndarray) -> float:
    """The RMS of 3-8 px band-pass detail in the quietest quarter of the frame, in grey levels.

    A difference of Gaussians keeps wavelengths of about 3 to 8 px (each Gaussian halves the
    amplitude at one edge; scaled so that a ripple at the band's peak, about 4 px, reads its
    own RMS). That is the "granular texture" that restoration work on iteratively edited
    images describes: blotches a few pixels wide, coarser than single-pixel static. It is read
    in 32 px blocks, and the ruler is the 25th percentile of their RMS: the quietest quarter
    stands for the flat regions (sky, walls, skin) where a photo has no detail of its own, the
    idea behind noise estimation from weak-textured patches (Liu, Tanaka & Okutomi, IEEE TIP
    2013). A frame with no flat quarter (foliage, gravel everywhere) reads its texture as
    grain, and blur that smooths a photo's own fine texture lowers it.
    """
    from skimage import color, util

    grey = util.img_as_float(color.rgb2gray(image))
    low, high = (w / HALF_AMPLITUDE_WAVELENGTH_PER_SIGMA for w in GRAIN_WAVELENGTHS)
    band = (_gaussian_blur(grey, low) - _gaussian_blur(grey, high)) / _band_peak_gain(low, high)
    rows, cols = (side // GRAIN_BLOCK * GRAIN_BLOCK for side in band.shape)
    if rows == 0 or cols == 0:
        return float(np.sqrt(np.mean(band**2)) * GREY_LEVELS)
    blocks = band[:rows, :cols].reshape(rows // GRAIN_BLOCK, GRAIN_BLOCK, cols // GRAIN_BLOCK,
                                        GRAIN_BLOCK)
    block_rms = np.sqrt(np.mean(blocks**2, axis=(1, 3)))
    return float(np.quantile(block_rms, QUIET_FRACTION) * GREY_LEVELS)


def _gaussian_blur(grey: np.ndarray, sigma: float) -> np.ndarray:
    """`skimage.filters.gaussian(grey, sigma, mode="nearest")` (its `difference_of_gaussians`
    calls it so), with the same numbers: scipy's Gaussian down the columns, then along the rows,
    each pass stored in the frame's float type. scipy filters along a strided axis three times
    slower than along a contiguous one, so the first pass runs on rows of a transposed copy."""
    from scipy import ndimage

    def along_rows(array: np.ndarray) -> np.ndarray:
        return ndimage.gaussian_filter1d(array, sigma, axis=-1, output=array.dtype,
                                         mode="nearest", truncate=4.0)

    return along_rows(_transposed(along_rows(_transposed(grey))))


def _band_peak_gain(low: float, high: float) -> float:
    """The largest amplitude response of a difference of Gaussians (sigmas low < high):
    exp(-x low^2) - exp(-x high^2), x = 2 pi^2 f^2, peaks where its derivative in x is 0."""
    x = np.log(high**2 / low**2) / (high**2 - low**2)
    return float(np.exp(-x * low**2) - np.exp(-x * high**2))


@dataclass(frozen=True)
class LatticePeak:
    """One isolated spectral peak: its period along x and y (px; longer than the frame, or
    inf, for a pattern constant along that axis) and how far it stands above its neighbours
    (power ratio)."""

    period_x: float
    period_y: float
    ratio: float


def _lattice_spectrum(image: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                  np.ndarray]:
    """Welch's averaged periodogram of the grey frame (Hann-windowed tiles, half overlapping),
    scaled so that its sum is the mean square of the signal in grey levels^2; its local-median
    baseline; and the frequencies (cycles/px) of each bin along y and x."""
    from scipy import fft
    from skimage import color, util

    grey = color.rgb2gray(image) * GREY_LEVELS
    if min(grey.shape) < MIN_LATTICE_SIDE:
        raise ValueError(f"lattice needs a frame of at least {MIN_LATTICE_SIDE} px a side")
    tile = min(LATTICE_TILE, 2 ** int(np.log2(min(grey.shape) / 2)))
    tiles = util.view_as_windows(grey, (tile, tile), step=tile // 2).reshape(-1, tile, tile)
    window = _hann_window(tile)
    tiles = (tiles - tiles.mean(axis=(1, 2), keepdims=True)) * window
    power = np.mean(np.abs(fft.rfft2(tiles)) ** 2, axis=0) / (tile * tile * np.sum(window**2))
    # rfft2 keeps half the plane: double the bins whose mirror image was dropped.
    power[:, 1:-1] *= 2
    power = fft.fftshift(power, axes=0)
    return power, _local_median(power), fft.fftshift(fft.fftfreq(tile)), fft.rfftfreq(tile)


@functools.cache
def _hann_window(tile: int) -> np.ndarray:
    """scikit-image's 2-D Hann window of tile x tile px, made once per size (making it costs a
    fifth of the tiles' FFT), read-only since it is shared."""
    from skimage import filters

    window = filters.window("hann", (tile, tile))
    window.flags.writeable = False
    return window


def _local_median(power: np.ndarray) -> np.ndarray:
    """`scipy.ndimage.median_filter(power, BASELINE_WINDOW, mode="nearest")`: each bin's
    window, edges repeated, with its middle value picked by `np.partition` (the same value,
    three times faster than scipy's rank filter on this small 2-D array)."""
    half = BASELINE_WINDOW // 2
    windows = np.lib.stride_tricks.sliding_window_view(
        np.pad(power, half, mode="edge"), (BASELINE_WINDOW, BASELINE_WINDOW))
    windows = windows.reshape(*power.shape, BASELINE_WINDOW**2)
    middle = BASELINE_WINDOW**2 // 2
    return np.partition(windows, middle, axis=-1)[..., middle]


def _lattice_band(freq_y: np.ndarray, freq_x: np.ndarray) -> np.ndarray:
    radius = np.hypot(freq_y[:, None], freq_x[None, :])
    shortest, longest = LATTICE_PERIODS
    return (radius >= 1 / longest) & (radius <= 1 / shortest)


def lattice_peaks(image: np.ndarray) -> list[LatticePeak]:
    """The isolated peaks of the frame's spectrum in the 2-32 px band, strongest first. A
    peak's frequency is the centroid of the excess power in its 3 x 3 bins, which places it
    between bins (a Hann window spreads a pure tone over neighbouring bins)."""
    from scipy import ndimage

    power, baseline, freq_y, freq_x = _lattice_spectrum(image)
    ratio = power / np.maximum(baseline, np.finfo(float).tiny)
    is_peak = ((ratio > PEAK_RATIO) & _lattice_band(freq_y, freq_x)
               & (power == ndimage.maximum_filter(power, size=3, mode="nearest")))
    excess = np.clip(power - baseline, 0, None)
    peaks = []
    for row, col in zip(*np.nonzero(is_peak), strict=True):
        rows = slice(max(row - 1, 0), row + 2)
        cols = slice(max(col - 1, 0), col + 2)
        weights = excess[rows, cols]
        centre_y = np.sum(weights * freq_y[rows, None]) / np.sum(weights)
        centre_x = np.sum(weights * freq_x[None, cols]) / np.sum(weights)
        peaks.append(LatticePeak(_period(centre_x), _period(centre_y), float(ratio[row, col])))
    return sorted(peaks, key=lambda peak: -peak.ratio)


def _period(frequency: float) -> float:
    return float(1 / abs(frequency)) if frequency else float("inf")


def lattice(image: np.ndarray) -> float:
    """The RMS amplitude of the frame's periodic pattern ("digital ripple"), in grey levels.

    The log-amplitude spectrum of a photo is smooth away from the origin; a periodic pattern
    (a generator's upsampling grid, a screen-door ripple, JPEG's 8 px blocks) is a set of
    isolated peaks on it. Peaks are bins of Welch's averaged periodogram (Welch, IEEE Trans.
    Audio Electroacoustics 1967) with periods of 2-32 px that stand ten times above the
    median of their 7 x 7 neighbourhood, the baseline used to find periodic noise in
    restoration (Gonzalez & Woods, Digital Image Processing, ch. 5: notch filtering). The
    ruler is the square root of the power above baseline in those peaks and their immediate
    neighbours (Parseval: the RMS of the pattern), so a clean photo scores 0 and a sine of
    amplitude A grey levels scores about A / sqrt(2). Long straight edges make ridges, not
    points, in the spectrum; a very strong one can still leave a peak. JPEG's 8 px block grid
    is found on a smooth frame (peaks at 8 px and its harmonics 4, 8/3 and 2 px), but not under
    a textured photo's own spectrum, where the block edges stand less than ten times above it.
    """
    from scipy import ndimage

    power, baseline, freq_y, freq_x = _lattice_spectrum(image)
    is_peak = (power > PEAK_RATIO * baseline) & _lattice_band(freq_y, freq_x)
    around_peaks = ndimage.binary_dilation(is_peak, structure=np.ones((3, 3), dtype=bool))
    excess = np.clip(power - baseline, 0, None)[around_peaks]
    return float(np.sqrt(np.sum(excess)))


def neutral_ab(image: np.ndarray) -> tuple[float, float]:
    """The mean CIELAB (a*, b*) of the frame's near-neutral pixels: (0, 0) for a neutral
    balance, a* < 0 green, a* > 0 magenta, b* < 0 blue, b* > 0 yellow. NaN when fewer than
    1 % of the pixels are near neutral (a frame of saturated colour has no grey to read).

    Near neutral: chroma C* below 15 and lightness L* between 20 and 95. Pixels are averaged
    in 2 x 2 blocks first (a cast is a property of regions, and it halves the cost)."""
    rows, cols = (side // 2 * 2 for side in image.shape[:2])
    if rows and cols:
        # The mean of each 2 x 2 block, summed in the order numpy's `mean` over the block's
        # axes sums it (the same numbers), without its strided reduction (six times slower).
        image = (image[0:rows:2, 0:cols:2] + image[0:rows:2, 1:cols:2]
                 + image[1:rows:2, 0:cols:2] + image[1:rows:2, 1:cols:2]) / 4
    from skimage import color

    lab = color.rgb2lab(image)
    lightness, a, b = lab[..., 0], lab[..., 1], lab[..., 2]
    low, high = NEUTRAL_LIGHTNESS
    neutral = (np.hypot(a, b) < NEUTRAL_CHROMA) & (lightness > low) & (lightness < high)
    if neutral.mean() < MIN_NEUTRAL_FRACTION:
        return float("nan"), float("nan")
    return float(a[neutral].mean()), float(b[neutral].mean())


def colour_cast(image: np.ndarray) -> float:
    """How far the frame's near-neutral regions sit from neutral: the CIELAB chroma of their
    mean (a*, b*), in CIELAB units (about 2.3 is a just-noticeable difference).

    Grey surfaces are where a colour cast shows; reading the cast from the mean chromaticity
    of near-neutral pixels is the idea of Gasparini & Schettini's cast detector ("Color
    balancing of digital photos using simple image statistics", Pattern Recognition 2004).
    It is a distance, so a frame whose own balance is warm first reads *less* cast while a
    green drift passes through neutral; `green_tint` reads that direction alone.
    """
    return _chroma(neutral_ab(image))


def _chroma(ab: tuple[float, float]) -> float:
    return float(np.hypot(*ab))


def green_tint(image: np.ndarray) -> float:
    """How green the frame's near-neutral regions are: minus their mean CIELAB a*.

    Banana100 reports that Nano Banana Pro's chains turn green; a* is CIELAB's green-magenta
    axis (negative = green), so this rises as that drift goes on, whatever the starting
    balance. A drift towards magenta reads as *less* green (better): it measures one
    direction, the one the paper saw.
    """
    return _greenness(neutral_ab(image))


def _greenness(ab: tuple[float, float]) -> float:
    return -ab[0]


@dataclass(frozen=True)
class Ruler:
    """One row of the rulers' table: what `catalog.py` needs to treat it like a pyiqa metric."""

    measure: Callable[[np.ndarray], float]
    lower_better: bool
    meaning: str
    score_range: tuple[float, float] | None = None


RULERS: dict[str, Ruler] = unique_table("ruler", [
    ("noise_level", Ruler(noise_level, True,
                          "white-noise sigma in grey levels (wavelet MAD): static piling up")),
    ("grain", Ruler(grain, True,
                    "3-8 px band-pass RMS in the flattest quarter, grey levels: granular texture")),
    ("lattice", Ruler(lattice, True,
                      "RMS of isolated 2-32 px spectral peaks, grey levels: periodic ripple")),
    ("colour_cast", Ruler(colour_cast, True,
                          "CIELAB chroma of the mean near-neutral colour: a cast of any hue")),
    ("green_tint", Ruler(green_tint, True,
                         "minus the mean a* of near-neutral regions: the green drift")),
])


def measure_all(image: np.ndarray) -> dict[str, float]:
    """Every ruler of one frame, in the table's order, with the values each
    `RULERS[name].measure(image)` gives, but the near-neutral mean that `colour_cast` and
    `green_tint` share is computed once (the gate reads every ruler of every edit). A ruler that
    cannot read the frame (lattice on one under 32 px a side) is NaN; the others still read."""
    try:
        ab = neutral_ab(image)
    except Exception:  # the colour rulers cannot read this frame; the others may
        ab = (math.nan, math.nan)
    from_neutral_ab = {"colour_cast": _chroma(ab), "green_tint": _greenness(ab)}
    return {name: from_neutral_ab[name] if name in from_neutral_ab
            else _or_nan(ruler.measure, image) for name, ruler in RULERS.items()}


def _or_nan(measure: Callable[[np.ndarray], float], image: np.ndarray) -> float:
    try:
        return float(measure(image))
    except Exception:  # one ruler that cannot read this frame, not a failed measurement
        return math.nan
