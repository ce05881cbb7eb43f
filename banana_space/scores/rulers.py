"""Chain-aware rulers: cheap, explainable no-reference measures of what repeated editing adds.

Banana100 (arXiv 2604.03400) watched Nano Banana Pro copy its own output 100 times: static
noise piles up, a green tint creeps in, dots and crops appear, and 21 popular no-reference
metrics call the result *better*. Each ruler here is a pure function of one frame (never of
frame 0: that would be fidelity, which `psnr` and `ssim` already are) aimed at one of those
artifacts, built from library parts (scikit-image, PyWavelets, scipy's FFT and filters). Two
are Mi-Ripple's probes (J. Chen, Y. Xu & M. Wang, "Mi-Ripple: Restoring Images Degraded by
Iterative AI Editing", 2026), implemented here from their description: the lattice probe and the
scale index, which read the lattice and the granular texture Mi-Ripple measured in real chains.
They replace our earlier `lattice` and `grain` rulers, which read the same two artifacts: one
ruler per artifact, and the one kept is the one with published values to compare against.

A frame is an RGB array (H, W, 3) of floats in [0, 1]. Scores in grey levels are on the 0-255
scale of an 8-bit image, so "2.0" reads as "two grey levels". `RULERS` is the table the metric
registry (`catalog.py`) reads: name -> function, orientation, one-line meaning. scipy and
scikit-image are imported inside the functions, on first use: the page must not wait for them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..registry import unique_table

GREY_LEVELS = 255.0
TRANSPOSE_BAND = 64  # rows copied at a time by `_transposed`: a band fits in the CPU's cache

# Lattice probe (Mi-Ripple, Chen, Xu & Wang 2026): the whole frame's log-amplitude spectrum
# against its 21 x 21 local median; what counts as a component and as positive.
PROBE_WINDOW = 21  # bins
PROBE_STRIDE = 4  # bins: the median is taken every 4th bin and held over the 4 x 4 around it
PROBE_EXCESS = 1.2  # natural-log amplitude above the median: a component
PROBE_RADIUS = 24  # bins from the centre: nearer is the frame's own shading
PROBE_MAX_BINS = 80  # the strongest components kept
PROBE_POSITIVE = 2.5  # the largest excess of a positive frame (photographs: 1.39-1.89)
PROBE_MIN_COMPONENTS = 2
MIN_LATTICE_SIDE = 2 * PROBE_RADIUS + 2  # px: a smaller frame has no bins outside the radius

# Scale index (Mi-Ripple): 128 px tiles at stride 64; a tile qualifies when its 3-8 px
# band-pass blobs stand out (see `scale_index`).
SCALE_TILE, SCALE_STRIDE = 128, 64  # px
BLOB_SIGMAS = (1.0, 3.0)  # px: the difference of Gaussians Mi-Ripple's band-pass is
COARSE_SIGMAS = (3.0, 9.0)  # px: the next band, three times coarser, the tile's own structure
BLOB_MIN_RMS = 1.0  # grey levels: weaker band-pass detail is no blob a person could see
BLOB_RATIO = 1.4  # band RMS over the coarser band's: 1 % of the moss start's tiles at 1536 px

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

    It runs in the frame's own type: PyWavelets' filters are its own loops (no matrix product
    whose kernel follows the CPU), so a float32 frame reads the same everywhere, and float64
    would double its cost.
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


def _grey(image: np.ndarray) -> np.ndarray:
    """The frame's luminance (scikit-image's `rgb2gray`, ITU-R 709 weights) in grey levels, in
    float64 whatever the frame's type (`_in_float64`)."""
    from skimage import color

    return color.rgb2gray(_in_float64(image)) * GREY_LEVELS


def _in_float64(image: np.ndarray) -> np.ndarray:
    """The frame in float64. scikit-image's `rgb2gray` and `rgb2lab` multiply by a colour
    matrix, and OpenBLAS picks its float32 kernel by the CPU it runs on: a float32 frame's
    luminance moved by a few ULPs between CPUs with and without AVX-512, enough to move the
    lattice probe by 1.4e-6 (docs/metrics.md). In float64 those ULPs are 1e-16, and the rulers that
    read a colour conversion cost about the same (bench/rulers.py)."""
    return np.asarray(image, dtype=np.float64)


def lattice_excess(image: np.ndarray) -> np.ndarray:
    """The largest excesses of the frame's log-amplitude spectrum over its local median,
    strongest first: at most `PROBE_MAX_BINS` bins, each above `PROBE_EXCESS`, all outside
    `PROBE_RADIUS` bins from the centre (Mi-Ripple's lattice probe, before its verdict).

    The spectrum is the whole grey frame's FFT, Hann-windowed so that the frame's borders do
    not draw a cross through it (a reading of ours: the text this project has does not say
    whether Mi-Ripple windows). Its natural-log amplitude is compared with the median of the
    21 x 21 bins around each bin; to save time (the exact 21 x 21 median of a 2K frame's
    spectrum costs about 11 s here), that median is taken every `PROBE_STRIDE`-th bin and held
    over the bins around it, which the smooth spectrum of a photograph allows.
    """
    from scipy import fft
    from skimage import filters

    grey = _grey(image)
    if min(grey.shape) < MIN_LATTICE_SIDE:
        raise ValueError(f"the lattice probe needs a frame of at least {MIN_LATTICE_SIDE} px "
                         "a side")
    grey = (grey - grey.mean()) * filters.window("hann", grey.shape)
    amplitude = np.log(np.abs(fft.fftshift(fft.fft2(grey))) + 1e-6)
    excess = amplitude - _strided_median(amplitude)
    rows, cols = np.ogrid[:excess.shape[0], :excess.shape[1]]
    radius = np.hypot(rows - excess.shape[0] // 2, cols - excess.shape[1] // 2)
    candidates = excess[(radius > PROBE_RADIUS) & (excess > PROBE_EXCESS)]
    return np.sort(candidates)[::-1][:PROBE_MAX_BINS]


def _strided_median(values: np.ndarray) -> np.ndarray:
    """The median of the `PROBE_WINDOW`-square window (edges repeated) centred on every
    `PROBE_STRIDE`-th bin, held over the `PROBE_STRIDE`-square block of bins it stands for."""
    half, stride = PROBE_WINDOW // 2, PROBE_STRIDE
    padded = np.pad(values, half + stride, mode="edge")
    windows = np.lib.stride_tricks.sliding_window_view(padded, (PROBE_WINDOW, PROBE_WINDOW))
    centres = windows[stride + stride // 2::stride, stride + stride // 2::stride]
    centres = centres[:-(-values.shape[0] // stride), :-(-values.shape[1] // stride)]
    middle = PROBE_WINDOW**2 // 2
    medians = np.empty(centres.shape[:2], values.dtype)
    for row in range(centres.shape[0]):  # a row of windows at a time: bounded memory
        flat = centres[row].reshape(centres.shape[1], -1)
        medians[row] = np.partition(flat, middle, axis=-1)[:, middle]
    held = np.repeat(np.repeat(medians, stride, axis=0), stride, axis=1)
    return held[:values.shape[0], :values.shape[1]]


def lattice_probe(image: np.ndarray) -> float:
    """Mi-Ripple's lattice probe: the largest excess of the frame's log-amplitude spectrum
    over its 21 x 21 local median, outside radius 24 (natural-log units; 0 with no component).

    A periodic pattern (a generator's lattice, JPEG's 8 px block grid) is a few isolated bins
    standing far above the smooth spectrum around them. J. Chen, Y. Xu & M. Wang, "Mi-Ripple:
    Restoring Images Degraded by Iterative AI Editing" (2026) read it so: components more than
    1.2 above the median, outside radius 24, at most 80 bins; a frame is positive at two or
    more components with a largest excess of 2.5 or more (`lattice_positive`), and
    photographs scored 1.39-1.89. The excess is a log of an amplitude ratio, so 2.5 is a bin
    e^2.5, about 12 times, above its neighbourhood's median. This replaces our earlier
    `lattice` ruler (the RMS of Welch-periodogram peaks in grey levels): both read the same
    isolated peaks, and this one carries a threshold measured on photographs and real chains.
    """
    excess = lattice_excess(image)
    return float(excess[0]) if excess.size else 0.0


def lattice_positive(image: np.ndarray) -> bool:
    """Mi-Ripple's verdict: at least two components, the largest at least 2.5 above its
    median. With the spectrum's mirror symmetry (a real frame), one plane wave is two."""
    excess = lattice_excess(image)
    return excess.size >= PROBE_MIN_COMPONENTS and float(excess[0]) >= PROBE_POSITIVE


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


def _tiling(*sides: int) -> tuple[int, int]:
    """The scale index's tile side and stride on a frame of these sides: `SCALE_TILE` at
    `SCALE_STRIDE` px, or one tile, the whole frame, on a frame smaller than a tile."""
    tile = min(SCALE_TILE, *sides)
    return tile, min(SCALE_STRIDE, tile)


def _tile_rms(band: np.ndarray) -> np.ndarray:
    """The RMS of `band` in every tile of `_tiling`."""
    tile, stride = _tiling(*band.shape)
    windows = np.lib.stride_tricks.sliding_window_view(band**2, (tile, tile))[::stride, ::stride]
    return np.sqrt(windows.mean(axis=(-2, -1)))


def scale_index(image: np.ndarray) -> float:
    """Mi-Ripple's scale index: the share of 128 px tiles (stride 64) whose 3-8 px band-pass
    blobs qualify, in per cent (0-100).

    The band-pass is Mi-Ripple's difference of Gaussians of sigma 1 and 3 px, which keeps
    blobs of about 3-8 px ("about 5 px after band-pass"); the granular texture Mi-Ripple saw
    grow in real chains lives there (J. Chen, Y. Xu & M. Wang 2026: 0.9, 3.1, 5.2, 8.3 and
    23.7 % of a moss scene's tiles over five generations, 0 % on a face and a beach). Which
    blobs qualify is not spelt out in the text this project has; our reading: a tile
    qualifies when its band-pass RMS is at least `BLOB_MIN_RMS` grey level (a visible blob)
    and above `BLOB_RATIO` times the RMS of the next band, sigma 3 to 9 px, in the same tile.
    A photograph's detail falls with scale (its spectrum falls as a power of the frequency),
    so its fine band stays below its coarser one; grain laid over it lifts only the fine band.
    This replaces our earlier `grain` ruler (the 3-8 px RMS in the quietest quarter of the
    frame): both read the same band, and this one has published values on real chains.
    """
    grey = _grey(image)
    fine = _gaussian_blur(grey, BLOB_SIGMAS[0]) - _gaussian_blur(grey, BLOB_SIGMAS[1])
    coarse = _gaussian_blur(grey, COARSE_SIGMAS[0]) - _gaussian_blur(grey, COARSE_SIGMAS[1])
    fine_rms, coarse_rms = _tile_rms(fine), _tile_rms(coarse)
    qualifies = (fine_rms >= BLOB_MIN_RMS) & (fine_rms > BLOB_RATIO * coarse_rms)
    return float(100 * qualifies.mean())


def scale_index_step(side: int) -> float:
    """One tile's share, in per cent, on the square frame of this side: the most tiles, so the
    smallest change `scale_index` can show on any frame whose longest side it is."""
    tile, stride = _tiling(side)
    per_side = (side - tile) // stride + 1
    return 100 / per_side**2


def neutral_ab(image: np.ndarray) -> tuple[float, float]:
    """The mean CIELAB (a*, b*) of the frame's near-neutral pixels: (0, 0) for a neutral
    balance, a* < 0 green, a* > 0 magenta, b* < 0 blue, b* > 0 yellow. NaN when fewer than
    1 % of the pixels are near neutral (a frame of saturated colour has no grey to read).

    Near neutral: chroma C* below 15 and lightness L* between 20 and 95. Pixels are averaged
    in 2 x 2 blocks first (a cast is a property of regions, and it halves the cost)."""
    image = _in_float64(image)
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
    # The smallest change a quantised ruler can show on frames of a longest side (px); None for
    # a continuous one. A noise floor is never below it (scripts/measure_floors.py).
    least_step: Callable[[int], float] | None = None
    reads_colour: bool = False  # True: it measures colour, so luma-only damage should not move it


RULERS: dict[str, Ruler] = unique_table("ruler", [
    ("noise_level", Ruler(noise_level, True,
                          "white-noise sigma in grey levels (wavelet MAD): static piling up")),
    ("scale_index", Ruler(scale_index, True,
                          "% of 128 px tiles with 3-8 px blobs (Mi-Ripple): granular texture",
                          (0.0, 100.0), scale_index_step)),
    ("lattice_probe", Ruler(lattice_probe, True,
                            "largest log-amplitude spectral excess (Mi-Ripple; >= 2.5 with "
                            "2+ components: a lattice; photos 1.39-1.89)")),
    ("colour_cast", Ruler(colour_cast, True,
                          "CIELAB chroma of the mean near-neutral colour: a cast of any hue",
                          reads_colour=True)),
    ("green_tint", Ruler(green_tint, True,
                         "minus the mean a* of near-neutral regions: the green drift",
                         reads_colour=True)),
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
