"""Exact equivalents of pyiqa metrics whose own way is pathological at 2K, and nothing else.

Each entry of `EQUIVALENTS` takes the metric object `pyiqa.create_metric` made and swaps its
network for one that gives the same number (tests/test_equivalents.py compares both on real
photos, random images, odd and tiny sizes) with a fraction of the memory. pyiqa's wrapper stays
in place, so its input checks, device handling and orientation are pyiqa's own.

- entropy (pyiqa 0.1.16, archs/entropy_arch.py) counts its 256-bin histogram by building a
  one-hot tensor of H x W x 256 int64: 8.6 GB for one 2048 x 2048 frame. `torch.bincount` gives
  the same integer counts in H x W x 8 bytes; the rest of the formula is pyiqa's, on those counts.
- ssim (archs/ssim_arch.py) convolves the whole float64 frame with an 11 x 11 window, and
  PyTorch's CPU convolution for float64 unfolds 121 values per pixel: 3.9 GB at 2048 x 2048,
  and half of all the scoring time even in 128² tiles. Here the five filters (mu, sigma,
  sigma12) are products of spectra (`torch.fft`, float64) in strips of rows that overlap by
  the window's margin, with pyiqa's own window, constants and formula; the map is put back
  together and averaged as pyiqa averages it. SSIM's map is a smooth function of the
  filters (no threshold: its ReLU is continuous), so the float64 rounding of the FFT, about
  1e-16 of the largest value (65025 for a squared 8-bit frame) times log2 of the length,
  moves a score by about 1e-12 of itself (tests/test_equivalents.py compares to 1e-10).
  The reference's own two filters are kept with its tensor (`planes.kept_with`), which the
  scorer keeps for a whole run: every frame after the first costs three filters, not five.
- niqe, brisque, piqe: banana_space/scores/nss.py.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from pyiqa.archs.func_util import diff_round, preprocess_rgb
from pyiqa.archs.ssim_arch import SSIM, ssim
from pyiqa.matlab_utils import fspecial
from pyiqa.utils.color_util import to_y_channel
from scipy.fft import next_fast_len

from .nss import BandedPIQE, FilteredNIQE, FittedBRISQUE
from .planes import kept_with, luma_255

# pyiqa's SSIM window is fspecial(11, 1.5): an output row needs 10 more input rows.
SSIM_WINDOW = 11
# Output rows per SSIM strip: with the window's margin a strip is 128 rows, a power-of-two
# transform, a third cheaper at 2K than 266 rows (bench/scoring_breakdown.py); its five
# float64 planes (10 MB at 2048 wide) are reused from glibc's arena, not faulted in afresh
# (budget.MMAP_THRESHOLD). The margin adds 8 % of work.
SSIM_STRIP_ROWS = 118


class CountedEntropy(torch.nn.Module):
    """pyiqa's `Entropy` network with the histogram counted by `torch.bincount`."""

    def __init__(self, data_range: float = 255.0, eps: float = 1e-8,
                 color_space: str = "yiq") -> None:
        super().__init__()
        self.data_range, self.eps, self.color_space = data_range, eps, color_space

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] == 3:
            x = (luma_255(x) if (self.data_range, self.color_space) == (255, "yiq")
                 else to_y_channel(x, self.data_range, self.color_space))
        bins = int(self.data_range + 1)
        levels = x.long()
        if levels.numel() and (levels.min() < 0 or levels.max() >= bins):
            # one_hot refuses these too; bincount would silently grow more bins
            raise RuntimeError(f"entropy: levels outside 0..{bins - 1}")
        hist = torch.stack([torch.bincount(image.flatten(), minlength=bins) for image in levels])
        hist = hist / hist.sum(dim=1, keepdim=True)
        return -torch.sum(hist * torch.log2(hist + self.eps), dim=1)


def _tiled_ssim(x: torch.Tensor, y: torch.Tensor, data_range: float,
                reference: list[torch.Tensor] | None = None) -> torch.Tensor:
    """pyiqa's `ssim` (valid convolution, no downsampling), strip by strip, averaged whole;
    `reference`: `y`'s own filters, strip by strip (`_reference_filters`), if they are kept."""
    margin = SSIM_WINDOW - 1
    if min(x.shape[-2:]) <= margin:  # pyiqa's own call, and its error for a tiny frame
        return ssim(x, y, data_range=data_range)
    tops = range(0, x.shape[-2] - margin, SSIM_STRIP_ROWS)
    reference = reference or _reference_filters(y)
    strips = [_ssim_map(_strip(x, top), _strip(y, top), filtered, data_range)
              for top, filtered in zip(tops, reference, strict=True)]
    return torch.cat(strips, dim=2).mean([1, 2, 3])


def _strip(plane: torch.Tensor, top: int) -> torch.Tensor:
    return plane[..., top:top + SSIM_STRIP_ROWS + SSIM_WINDOW - 1, :]


def _reference_filters(y: torch.Tensor) -> list[torch.Tensor]:
    """The reference's two filters, mu2 and the filtered y², strip by strip: the same for
    every frame compared with it (two float64 planes, 42 MB at 2048 x 1280)."""
    return [_filtered(torch.stack([strip, strip * strip]))
            for strip in (_strip(y, top) for top in range(
                0, y.shape[-2] - SSIM_WINDOW + 1, SSIM_STRIP_ROWS))]


def _ssim_map(x: torch.Tensor, y: torch.Tensor, reference: torch.Tensor,
              data_range: float) -> torch.Tensor:
    """pyiqa's `ssim` map, line by line, its `filter2(..., 'valid')` by `_filtered`."""
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    mu1, xx, xy = _filtered(torch.stack([x, x * x, x * y]))
    mu2, yy = reference
    mu1_sq, mu2_sq, mu1_mu2 = mu1.pow(2), mu2.pow(2), mu1 * mu2
    sigma1_sq, sigma2_sq, sigma12 = xx - mu1_sq, yy - mu2_sq, xy - mu1_mu2
    cs_map = F.relu((2 * sigma12 + c2) / (sigma1_sq + sigma2_sq + c2))
    return ((2 * mu1_mu2 + c1) / (mu1_sq + mu2_sq + c1)) * cs_map


def _filtered(planes: torch.Tensor) -> torch.Tensor:
    """`F.conv2d(plane, window)` (valid, per channel) of every float64 plane with pyiqa's SSIM
    window, through the spectra: a circular convolution as long as the strip is exact on
    every output whose window lies inside it, which are the valid ones."""
    height, width = planes.shape[-2:]
    size = (next_fast_len(height, real=True), next_fast_len(width, real=True))
    spectrum = _window_spectrum(planes.shape[-3], *size)
    full = torch.fft.irfft2(torch.fft.rfft2(planes, s=size) * spectrum, s=size)
    return full[..., SSIM_WINDOW - 1:height, SSIM_WINDOW - 1:width]


@functools.lru_cache(maxsize=8)
def _window_spectrum(channels: int, height: int, width: int) -> torch.Tensor:
    """The spectrum of pyiqa's SSIM window (`fspecial(11, 1.5)` in float64, flipped: `filter2`
    correlates) at one transform size, the same for every strip of a frame (2 MB at 2048
    wide); a tensor outside inference mode, so any caller may read it."""
    with torch.inference_mode(False):
        window = fspecial(SSIM_WINDOW, 1.5, channels).to(torch.float64)
        return torch.fft.rfft2(window[:, 0].flip(-2, -1), s=(height, width))


class TiledSSIM(SSIM):
    """pyiqa's `SSIM` network; only the map is computed strip by strip, its filters by FFT."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        assert x.shape == y.shape, (
            f"Input {x.shape} and reference images should have the same shape")
        reference = y
        if self.crop_border != 0:
            border = self.crop_border
            x = x[..., border:-border, border:-border]
            y = y[..., border:-border, border:-border]
        x, y = (self._luma(t).to(torch.float64) for t in (x, y))
        if min(x.shape[-2:]) < SSIM_WINDOW:  # pyiqa's error, in `_tiled_ssim`
            return _tiled_ssim(x, y, self.data_range)
        # kept with the reference tensor: the scorer keeps the input's for a whole run
        filters = kept_with(reference, f"ssim filters {self.crop_border} {self.test_y_channel} "
                            f"{self.color_space} {SSIM_STRIP_ROWS}", lambda: _reference_filters(y))
        return _tiled_ssim(x, y, self.data_range, filters)

    def _luma(self, x: torch.Tensor) -> torch.Tensor:
        """pyiqa's `preprocess_rgb`; its Y the frame's shared one where it is the same call."""
        if (self.test_y_channel and x.shape[1] == 3
                and (self.data_range, self.color_space) == (255, "yiq")):
            return diff_round(luma_255(x))  # preprocess_rgb's rounding, as pyiqa writes it
        return preprocess_rgb(x, self.test_y_channel, self.data_range, self.color_space)


def _tiled_ssim_network(original: SSIM) -> SSIM:
    if original.downsample:
        raise ValueError("the tiled SSIM equals pyiqa's only without downsampling")
    return TiledSSIM(downsample=False, test_y_channel=original.test_y_channel,
                      color_space=original.color_space, crop_border=original.crop_border).eval()


def _counted_entropy_network(original: torch.nn.Module) -> torch.nn.Module:
    return CountedEntropy(**original.kwargs).eval()


# pyiqa metric name -> (pyiqa's network -> an exact equivalent of it)
EQUIVALENTS: dict[str, Callable[[torch.nn.Module], torch.nn.Module]] = {
    "brisque": FittedBRISQUE,
    "entropy": _counted_entropy_network,
    "niqe": FilteredNIQE,
    "piqe": BandedPIQE,
    "ssim": _tiled_ssim_network,
}


def with_equivalent(name: str, metric: Any) -> Any:
    """pyiqa's metric object for `name`, its network swapped for an exact equivalent if there
    is one."""
    swap = EQUIVALENTS.get(name)
    if swap is not None:
        metric.net = swap(metric.net)
    return metric
