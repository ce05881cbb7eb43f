"""A frame's planes that several metrics start from, made once per frame, and pyiqa's MSCN
filter band by band of rows (pyiqa 0.1.16: utils/color_util.py, archs/func_util.py).

- The Y plane of YIQ (pyiqa's `rgb2yiq`). brisque, niqe, entropy and ssim each begin with
  `to_y_channel(x, 255, "yiq")` (Y x 255, rounded: `luma_255`) and piqe with
  `to_y_channel(x, 1, "yiq")` (Y itself: `luma_1`) on the same tensor; the product with the
  colour matrix is made once per frame and kept while the tensor lives unchanged.
- `normalize_with_gauss`: pyiqa's `normalize_img_with_gauss`, the MSCN coefficients of Mittal
  et al. 2012 (eq. 1-3), computed band by band of rows. Each output row needs only its own
  window of input rows, so a band's filter gives the frame's numbers: the float32 filter is
  pyiqa's own call (`F.conv2d`, oneDNN's direct convolution, whose sum for a pixel does not
  depend on where the pixel lies; tests/test_equivalents.py checks each band against the
  whole frame bit for bit), the float64 one `scipy.ndimage.correlate` (oneDNN has no float64
  convolution: PyTorch's im2col + GEMM unfolds 49 copies of the frame; scipy sums the same 49
  products in the same order, bit for bit). On a whole 2K plane oneDNN writes its output
  padded to 16 channels (16 x the plane, 170 MB at 2048 x 1280) and reads it back; a band of
  rows stays in the cache, and a float32 MSCN costs a third of the CPU time.

The MSCN coefficients themselves are not shared between metrics, because no two take them of
the same numbers: brisque of the rounded luma in float32 with zero padding, piqe of the luma
stretched to its maximum (round(255 Y / max Y)) with replicate padding, niqe of the luma
cropped to whole 96-pixel blocks, in float64, with replicate padding.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from pyiqa.archs.func_util import normalize_img_with_gauss, safe_sqrt
from pyiqa.matlab_utils import exact_padding_2d, fspecial
from pyiqa.utils.color_util import rgb2yiq, to_y_channel
from scipy import ndimage

# Output rows per band of the MSCN filter. float32: a band's input, output and oneDNN's
# 16-channel copy of it (2048 wide: 38 x 2048 x 4 x 18 = 5.6 MB) stay near the cache. float64:
# scipy's correlate holds the GIL while it runs, so a frame's other metrics (on the other
# scoring threads) get it back between bands, and it filters the band's 6 margin rows too.
BAND_ROWS = {torch.float32: 32, torch.float64: 128}

# id(frame tensor) -> (a weak reference to it, its version, its planes by name): `kept_with`
_PLANES: dict[int, tuple[weakref.ref, int, dict[str, Any]]] = {}
# Two metrics asking at once wait for one making, not make two (re-entrant: a plane is made
# from another).
_MAKING = threading.RLock()


def luma_255(x: torch.Tensor) -> torch.Tensor:
    """pyiqa's `to_y_channel(x, 255, "yiq")`: YIQ's Y x 255, rounded, as pyiqa writes it."""
    if not _is_frame(x):
        return to_y_channel(x, 255, "yiq")

    def make() -> torch.Tensor:
        luma = _y_plane(x) * 255
        return luma - luma.detach() + luma.round()

    return kept_with(x, "luma_255", make)


def luma_1(x: torch.Tensor) -> torch.Tensor:
    """pyiqa's `to_y_channel(x, 1, "yiq")`: YIQ's Y (x 1 changes no bit)."""
    return _y_plane(x) if _is_frame(x) else to_y_channel(x, 1, "yiq")


def _y_plane(x: torch.Tensor) -> torch.Tensor:
    return kept_with(x, "y", lambda: rgb2yiq(x)[:, [0], :, :])


def _is_frame(x: torch.Tensor) -> bool:
    return x.ndim == 4 and x.shape[1] == 3


def kept_with(x: torch.Tensor, name: str, make: Callable[[], Any]) -> Any:
    """`make()`, the plane (or planes) `name` derived from tensor `x`, made once while `x` lives and
    is not changed in place (its `_version`); each caller only reads it. A tensor whose changes
    cannot be seen (an inference tensor, or one that records gradients) gets a fresh one."""
    if x.is_inference() or x.requires_grad:
        return make()
    key = id(x)
    with _MAKING:
        kept = _PLANES.get(key)
        if kept is None or kept[0]() is not x or kept[1] != x._version:
            kept = (weakref.ref(x, lambda _, key=key: _PLANES.pop(key, None)), x._version, {})
            _PLANES[key] = kept
        planes = kept[2]
        if name not in planes:
            planes[name] = make()
        return planes[name]


def normalize_with_gauss(image: torch.Tensor, kernel_size: int = 7, sigma: float = 7.0 / 6,
                         C: int = 1, padding: str = "same") -> torch.Tensor:
    """pyiqa's `normalize_img_with_gauss` (the Gaussian-weighted local mean `mu` and deviation
    `sigma`, then (image - mu) / (sigma + C)), band by band of rows on the CPU; elsewhere, or
    for another dtype, pyiqa's own call."""
    rows = BAND_ROWS.get(image.dtype)
    if image.device.type != "cpu" or rows is None or image.ndim != 4:
        return normalize_img_with_gauss(image, kernel_size, sigma, C, padding)
    kernel = fspecial(kernel_size, sigma, 1).to(image)
    # pyiqa pads the image and its square alike; the square of a padded copy is the same
    padded = exact_padding_2d(image, kernel_size, mode=padding)
    margin = padded.shape[-2] - image.shape[-2]
    out = torch.empty_like(image)
    for top in range(0, image.shape[-2], rows):
        band = padded[..., top:top + rows + margin, :]
        mu, second = _filtered(band, kernel), _filtered(band**2, kernel)
        spread = safe_sqrt((second - mu**2).abs())
        out[..., top:top + rows, :] = (image[..., top:top + rows, :] - mu) / (spread + C)
    return out


def _filtered(band: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """`F.conv2d(band, kernel)`: pyiqa's own call in float32, `correlate_valid` in float64."""
    if band.dtype == torch.float32:
        return F.conv2d(band, kernel)
    return correlate_valid(band, kernel)


def correlate_valid(image: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """`F.conv2d(image, kernel)` (a valid correlation, no padding) of each (b, c) plane of a
    float64 CPU tensor with one 2-D kernel, by `scipy.ndimage.correlate`: only the rows and
    columns whose window lies inside the image are kept, so each output pixel sees exactly
    its own inputs."""
    taps = kernel.reshape(kernel.shape[-2:]).to(torch.float64).numpy()
    rows, cols = taps.shape
    out_h, out_w = image.shape[-2] - rows + 1, image.shape[-1] - cols + 1
    source = image.contiguous().numpy()
    out = np.empty((*source.shape[:-2], max(out_h, 0), max(out_w, 0)))
    for plane in np.ndindex(source.shape[:-2]):
        full = ndimage.correlate(source[plane], taps, mode="constant")
        out[plane] = full[rows // 2:rows // 2 + out_h, cols // 2:cols // 2 + out_w]
    return torch.from_numpy(out)
