"""Exact equivalents of two pyiqa metrics whose own way is pathological at 2K, and nothing else.

Each entry of `EQUIVALENTS` takes the metric object `pyiqa.create_metric` made and swaps its
network for one that gives the same number (tests/test_equivalents.py compares both on real
photos, random images, odd and tiny sizes) with a fraction of the memory. pyiqa's wrapper stays
in place, so its input checks, device handling and orientation are pyiqa's own.

- entropy (pyiqa 0.1.16, archs/entropy_arch.py) counts its 256-bin histogram by building a
  one-hot tensor of H x W x 256 int64: 8.6 GB for one 2048 x 2048 frame. `torch.bincount` gives
  the same integer counts in H x W x 8 bytes; the rest of the formula is pyiqa's, on those counts.
- ssim (archs/ssim_arch.py) convolves the whole float64 frame with an 11 x 11 window, and
  PyTorch's CPU convolution for float64 unfolds 121 values per pixel: 3.9 GB at 2048 x 2048.
  The same map is computed by pyiqa's own `ssim` over tiles that overlap by the window's
  margin (each output pixel sees exactly the pixels it saw before), the tiles are put back
  together into the full map, and that map is averaged as pyiqa averages it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from pyiqa.archs.func_util import diff_round, preprocess_rgb
from pyiqa.archs.ssim_arch import SSIM, ssim
from pyiqa.utils.color_util import to_y_channel

from .nss import FilteredNIQE, FittedBRISQUE, luma_255

# Output pixels per side of an SSIM tile: its unfolded input is 121 x 128² x 8 bytes (16 MB,
# it stays in cache), and the window's 10-pixel margin adds (138 / 128)² - 1 = 16 % of work.
SSIM_TILE_SIDE = 128


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


def _tiled_ssim(x: torch.Tensor, y: torch.Tensor, data_range: float) -> torch.Tensor:
    """pyiqa's `ssim` (valid convolution, no downsampling), tile by tile, averaged whole."""
    margin = 10  # pyiqa's window is fspecial(11, 1.5): a tile needs 10 more input pixels
    out_h, out_w = x.shape[-2] - margin, x.shape[-1] - margin
    side = SSIM_TILE_SIDE
    if out_h <= side and out_w <= side:  # one tile: pyiqa's own call, tiny-frame errors too
        return ssim(x, y, data_range=data_range)
    rows = [torch.cat([ssim(x[..., top:top + side + margin, left:left + side + margin],
                            y[..., top:top + side + margin, left:left + side + margin],
                            get_ssim_map=True, data_range=data_range)
                       for left in range(0, out_w, side)], dim=3)
            for top in range(0, out_h, side)]
    return torch.cat(rows, dim=2).mean([1, 2, 3])


class TiledSSIM(SSIM):
    """pyiqa's `SSIM` network; only the map is computed tile by tile."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        assert x.shape == y.shape, (
            f"Input {x.shape} and reference images should have the same shape")
        if self.crop_border != 0:
            border = self.crop_border
            x = x[..., border:-border, border:-border]
            y = y[..., border:-border, border:-border]
        x, y = (self._luma(t).to(torch.float64) for t in (x, y))
        return _tiled_ssim(x, y, self.data_range)

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
    "ssim": _tiled_ssim_network,
}


def with_equivalent(name: str, metric: Any) -> Any:
    """pyiqa's metric object for `name`, its network swapped for an exact equivalent if there
    is one."""
    swap = EQUIVALENTS.get(name)
    if swap is not None:
        metric.net = swap(metric.net)
    return metric
