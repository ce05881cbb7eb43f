"""Exact equivalents of pyiqa's natural-scene-statistics metrics, NIQE and BRISQUE (pyiqa 0.1.16,
archs/niqe_arch.py, archs/brisque_arch.py, archs/func_util.py), where pyiqa's route is slow.

The same operations on the same numbers, in the same order wherever the order can change a
bit; what changes is the route (bench/scoring_breakdown.py measures each step):

- The float64 Gaussian filter of NIQE's MSCN coefficients. PyTorch convolves float64 on the CPU
  by im2col + GEMM: 49 copies of the frame for a 7 x 7 window (1.6 GB at 2K), 58 % of NIQE's
  time. `scipy.ndimage.correlate` sums the same 49 products in the same order: the filtered
  planes are equal bit for bit (tests/test_equivalents.py).
- The AGGD / GGD fits (Mittal et al. 2012, eq. 7-8, as pyiqa's `estimate_aggd_param` and
  `estimate_ggd_param` compute them). pyiqa rebuilds its table of 9,801 shape values (three
  lgamma each) on every call, copies it once per block and scans all of it for the nearest
  value: at 2K that is 441 x 9,801 values, five times per scale. The table here is built once
  by the same expression, and the nearest entry is found by bisection in the monotonic table
  (`nearest_index`), with pyiqa's tie rule; the sums are pyiqa's, over the same tensors.
- The half-size MATLAB-style resize between the two scales (`half_size`): pyiqa unfolds ten
  copies of the frame and picks every other row of them; the same taps are gathered directly.
- The frame's luma (`luma_255`), which brisque, niqe, entropy and ssim each made again.

BRISQUE's float32 MSCN stays pyiqa's own call (oneDNN's convolution); a float32 sum in another
order could flip a fit's argmin. Nothing here is a new estimate of any quantity: every score
is the one pyiqa computes.
"""

from __future__ import annotations

import functools
import math
import weakref

import numpy as np
import torch
from pyiqa.archs.brisque_arch import BRISQUE, rbf_kernel, scale_features
from pyiqa.archs.func_util import diff_round, normalize_img_with_gauss, safe_sqrt
from pyiqa.archs.niqe_arch import NIQE, calculate_niqe
from pyiqa.matlab_utils import blockproc, exact_padding_2d, fspecial, nancov, nanmean
from pyiqa.matlab_utils import resize as matlab_resize
from pyiqa.utils.color_util import to_y_channel
from scipy import ndimage

# Output rows per call of scipy's correlate: it holds the GIL while it runs, so a frame's other
# metrics (on the other scoring threads) get it back between bands.
FILTER_BAND_ROWS = 128


def correlate_valid(image: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """`F.conv2d(image, kernel)` (a valid correlation, no padding) of each (b, c) plane of a
    float64 CPU tensor with one 2-D kernel, by `scipy.ndimage.correlate`, band by band; only
    the rows of a band whose window lies inside it are kept, so each output pixel sees exactly
    its own inputs."""
    taps = kernel.reshape(kernel.shape[-2:]).to(torch.float64).numpy()
    rows, cols = taps.shape
    out_h, out_w = image.shape[-2] - rows + 1, image.shape[-1] - cols + 1
    source = image.contiguous().numpy()
    out = np.empty((*source.shape[:-2], out_h, out_w))
    for plane in np.ndindex(source.shape[:-2]):
        for top in range(0, out_h, FILTER_BAND_ROWS):
            height = min(FILTER_BAND_ROWS, out_h - top)
            band = ndimage.correlate(source[plane][top:top + height + rows - 1], taps,
                                     mode="constant")
            out[plane][top:top + height] = band[rows // 2:rows // 2 + height,
                                                cols // 2:cols // 2 + out_w]
    return torch.from_numpy(out)


def normalize_with_gauss(image: torch.Tensor, padding: str = "replicate") -> torch.Tensor:
    """pyiqa's `normalize_img_with_gauss` with its defaults (7 x 7, sigma 7/6, C = 1) for a
    float64 CPU tensor: the two filters by `correlate_valid` on pyiqa's own padding."""
    kernel = fspecial(7, 7.0 / 6, 1).to(image)
    mu = correlate_valid(exact_padding_2d(image, 7, mode=padding), kernel)
    second = correlate_valid(exact_padding_2d(image**2, 7, mode=padding), kernel)
    sigma = safe_sqrt((second - mu**2).abs())
    return (image - mu) / (sigma + 1)


def half_size(x: torch.Tensor) -> torch.Tensor:
    """pyiqa's `imresize(x, scale=0.5, antialiasing=True)` (matlab_utils/resize.py: MATLAB's
    bicubic with antialiasing, in float32 whatever the input, back to its dtype)."""
    x, batch, channels, height, width = matlab_resize.reshape_input(x)
    x, dtype = matlab_resize.cast_input(x)
    x = _resize_1d(x, -2, math.ceil(height * 0.5))
    x = _resize_1d(x, -1, math.ceil(width * 0.5))
    return matlab_resize.cast_output(matlab_resize.reshape_output(x, batch, channels), dtype)


def _resize_1d(x: torch.Tensor, dim: int, size: int, scale: float = 0.5) -> torch.Tensor:
    """pyiqa's `resize_1d` for a cubic downscale: the same weights and padding, and the same
    (batch, taps, rows, columns) tensor of samples multiplied and summed over its taps, but
    gathered straight from the padded frame, not cut out of an unfolded copy of all of it
    (ten times the frame in float32)."""
    taps = math.ceil(4 / scale) + 2
    pos = torch.linspace(0, size - 1, steps=size, dtype=x.dtype, device=x.device)
    pos = (pos + 0.5) / scale - 0.5
    base = pos.floor() - (taps // 2) + 1
    weight = matlab_resize.get_weight(pos - base, taps, kernel="cubic",
                                      antialiasing_factor=scale)
    pad_pre, pad_post, base = matlab_resize.get_padding(base, taps, x.size(dim))
    x = matlab_resize.padding(x, dim, pad_pre, pad_post, padding_type="reflect")
    rows = base.unsqueeze(0) + torch.arange(taps, device=x.device).unsqueeze(1)  # (taps, size)
    if dim in (2, -2):
        sample = x[:, 0, rows, :]  # (b, taps, size, w), as unfold[..., base, :]
        weight = weight.view(1, taps, size, 1)
    else:
        sample = x[:, 0, :, rows].permute(0, 2, 1, 3).contiguous()  # (b, taps, h, size)
        weight = weight.view(1, taps, 1, size)
    return (sample * weight).sum(dim=1, keepdim=True)


# id(frame tensor) -> (a weak reference to it, its version, its luma): see `luma_255`
_LUMA: dict[int, tuple[weakref.ref, int, torch.Tensor]] = {}


def luma_255(x: torch.Tensor) -> torch.Tensor:
    """pyiqa's `to_y_channel(x, 255, "yiq")` (utils/color_util.py: YIQ's Y, x 255, rounded),
    made once per frame: brisque, niqe, entropy and ssim all begin with this same call on the
    same tensor (0.3 CPU s at 2K each time). It is kept while the tensor lives and is not
    changed in place; each metric only reads it."""
    if x.is_inference() or x.requires_grad or x.shape[1] != 3:
        return to_y_channel(x, 255, "yiq")
    key = id(x)
    kept = _LUMA.get(key)
    if kept is not None and kept[0]() is x and kept[1] == x._version:
        return kept[2]
    luma = to_y_channel(x, 255, "yiq")
    _LUMA[key] = (weakref.ref(x, lambda _, key=key: _LUMA.pop(key, None)), x._version, luma)
    return luma


@functools.cache
def _shape_tables(dtype: torch.dtype, device: torch.device
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """pyiqa's shape grid (0.2 ... 10 by 0.001) and its two ratio tables, by its expressions:
    the AGGD one, r(g) = Γ(2/g)² / (Γ(1/g) Γ(3/g)), and the GGD one, 1 / r(g). Made on the
    frame's device, as pyiqa makes them (`.to(block)`): a CUDA frame's tables are CUDA's
    numbers, and its fits never mix devices."""
    gamma = torch.arange(0.2, 10 + 0.001, 0.001).to(dtype=dtype, device=device)
    aggd = (2 * torch.lgamma(2.0 / gamma)
            - (torch.lgamma(1.0 / gamma) + torch.lgamma(3.0 / gamma))).exp()
    ggd = (torch.lgamma(1.0 / gamma) + torch.lgamma(3.0 / gamma)
           - 2 * torch.lgamma(2.0 / gamma)).exp()
    return gamma, aggd, ggd


def nearest_index(table: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """`(values - table).abs().argmin(dim=-1)` for `values` of shape (b, 1): the first index of
    the smallest distance, found by bisection where `table` is strictly monotonic.

    Rounding is monotonic, so the rounded distance falls towards the bisection point and rises
    after it; the answer is one of its two neighbours, unless the distance ties with the
    entry before them (pyiqa would then take that earlier one). Those ties and non-finite
    values (a flat block's NaN) get pyiqa's own full scan, row by row; so does every row when
    the table is not monotonic."""
    flat = values.reshape(-1)
    ascending = table if bool(table[-1] > table[0]) else -table
    if not bool((ascending[1:] > ascending[:-1]).all()):
        return (values - table).abs().argmin(dim=-1)
    finite = flat.isfinite()
    probe = torch.where(finite, flat, 0)
    last = table.numel() - 1
    right = torch.searchsorted(ascending, probe if ascending is table else -probe)
    right = right.clamp(max=last)
    left = (right - 1).clamp(min=0)
    to_left, to_right = (probe - table[left]).abs(), (probe - table[right]).abs()
    index = torch.where(to_left <= to_right, left, right)
    before = (index - 1).clamp(min=0)
    tied = (index > 0) & ((probe - table[before]).abs() <= (probe - table[index]).abs())
    scan = tied | ~finite
    if bool(scan.any()):
        index[scan] = (values.reshape(-1, 1)[scan] - table).abs().argmin(dim=-1)
    return index


def aggd_param(block: torch.Tensor, return_sigma: bool = False
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """pyiqa's `estimate_aggd_param` (archs/func_util.py) for blocks of shape (b, 1, h, w):
    alpha and the left and right scales (or standard deviations with `return_sigma`).
    `(block * mask) ** 2` is `block ** 2 * mask` to the bit (a mask is 0 or 1), so the
    square is taken once."""
    gamma, table, _ = _shape_tables(block.dtype, block.device)
    square = block.pow(2)
    mask_left, mask_right = block < 0, block > 0
    count_left = mask_left.sum(dim=(-1, -2), dtype=torch.float32)
    count_right = mask_right.sum(dim=(-1, -2), dtype=torch.float32)
    left_std = torch.sqrt((square * mask_left).sum(dim=(-1, -2)) / count_left)
    right_std = torch.sqrt((square * mask_right).sum(dim=(-1, -2)) / count_right)
    gammahat = left_std / right_std
    rhat = block.abs().mean(dim=(-1, -2)).pow(2) / square.mean(dim=(-1, -2))
    rhatnorm = (rhat * (gammahat.pow(3) + 1) * (gammahat + 1)) / (gammahat.pow(2) + 1).pow(2)
    alpha = gamma[nearest_index(table, rhatnorm)]
    if return_sigma:
        return alpha, left_std.squeeze(-1), right_std.squeeze(-1)
    scale = (torch.lgamma(1 / alpha) - torch.lgamma(3 / alpha)).exp().sqrt()
    return alpha, left_std.squeeze(-1) * scale, right_std.squeeze(-1) * scale


def ggd_param(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """pyiqa's `estimate_ggd_param` (archs/func_util.py): the shape and sigma of a GGD."""
    gamma, _, table = _shape_tables(x.dtype, x.device)
    sigma_sq = x.pow(2).mean(dim=(-1, -2))
    sigma = sigma_sq.sqrt().squeeze(dim=-1)
    assert not torch.isclose(sigma, torch.zeros_like(sigma)).all(), (
        "Expected image with non zero variance of pixel values")
    rho = sigma_sq / x.abs().mean(dim=(-1, -2)) ** 2
    return gamma[nearest_index(table, rho)], sigma


def niqe_block_features(block: torch.Tensor, _: object = None) -> torch.Tensor:
    """pyiqa's NIQE `compute_feature` (no IL-NIQE part): 18 features of each block, the AGGD
    of its MSCN coefficients and of their products with the four neighbours (eq. 8)."""
    batch = block.shape[0]
    coefficients = block[:, [0]]
    alpha, beta_l, beta_r = aggd_param(coefficients)
    features = [alpha, (beta_l + beta_r) / 2]
    for shift in ([0, 1], [1, 0], [1, 1], [1, -1]):
        shifted = torch.roll(coefficients, shift, dims=(2, 3))
        alpha, beta_l, beta_r = aggd_param(coefficients * shifted)
        mean = (beta_r - beta_l) * (torch.lgamma(2 / alpha) - torch.lgamma(1 / alpha)).exp()
        features.extend((alpha, mean, beta_l, beta_r))
    return torch.cat([feature.reshape(batch, 1) for feature in features], dim=-1)


class FilteredNIQE(torch.nn.Module):
    """pyiqa's `NIQE` network (`calculate_niqe` and `niqe`, step by step) with the filters and
    fits above. On a GPU, pyiqa's own way (cuDNN has a real float64 convolution)."""

    def __init__(self, original: NIQE) -> None:
        super().__init__()
        self.crop_border, self.color_space = original.crop_border, original.color_space
        self.test_y_channel = original.test_y_channel
        self.mu_pris_param, self.cov_pris_param = original.mu_pris_param, original.cov_pris_param

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.device.type != "cpu":
            return calculate_niqe(x, self.crop_border, self.test_y_channel, self.color_space,
                                  self.mu_pris_param, self.cov_pris_param)
        return self.from_features(self.features(x))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """pyiqa's `calculate_niqe` up to the fit, on the CPU: the 36 features (18 per scale)
        of each whole 96 x 96 block, (b, blocks, 36) in float64."""
        if x.shape[1] == 3:
            x = luma_255(x) if self.color_space == "yiq" else to_y_channel(
                x, 255, self.color_space)
        elif x.shape[1] == 1:
            x = x * 255
        image = diff_round(x).to(torch.float64)
        if self.crop_border != 0:
            border = self.crop_border
            image = image[..., border:-border, border:-border]
        return _block_features(image)

    def from_features(self, features: torch.Tensor) -> torch.Tensor:
        """pyiqa's `niqe` from the blocks' features on: the distance of their multivariate
        Gaussian to the pristine one (eq. 10), one score per row of the batch."""
        mu_pristine = self.mu_pris_param.to(features).repeat(features.size(0), 1)
        cov_pristine = self.cov_pris_param.to(features).repeat(features.size(0), 1, 1)
        invcov = torch.linalg.pinv((cov_pristine + nancov(features)) / 2)
        diff = (mu_pristine - nanmean(features, dim=1)).unsqueeze(1)
        return torch.sqrt(torch.bmm(torch.bmm(diff, invcov), diff.transpose(1, 2)).squeeze())


def _block_features(image: torch.Tensor, block: int = 96) -> torch.Tensor:
    """pyiqa's `niqe` up to the fit: whole 96 x 96 blocks, two scales, 18 features each."""
    height, width = image.shape[-2] // block * block, image.shape[-1] // block * block
    image = image[..., :height, :width]
    features = []
    for scale in (1, 2):
        normalized = normalize_with_gauss(image)
        features.append(blockproc(normalized, [block // scale, block // scale],
                                  fun=niqe_block_features))
        if scale == 1:
            image = half_size(image / 255.0) * 255.0
    return torch.cat(features, -1)


def brisque_features(luma: torch.Tensor, kernel_size: int, sigma: float) -> torch.Tensor:
    """pyiqa's BRISQUE `natural_scene_statistics` (Mittal et al. 2012, sec. III): the GGD of
    the MSCN coefficients and the AGGD of their products with four neighbours. The float32
    MSCN is pyiqa's own call (oneDNN's float32 convolution is fast already)."""
    normalized = normalize_img_with_gauss(luma, kernel_size, sigma, padding="same")
    alpha, sigma = ggd_param(normalized)
    features = [alpha, sigma.pow(2)]
    for shift in ((0, 1), (1, 0), (1, 1), (-1, 1)):
        shifted = torch.roll(normalized, shifts=shift, dims=(-2, -1))
        alpha, sigma_l, sigma_r = aggd_param(normalized * shifted, return_sigma=True)
        eta = (sigma_r - sigma_l) * torch.exp(
            torch.lgamma(2.0 / alpha)
            - (torch.lgamma(1.0 / alpha) + torch.lgamma(3.0 / alpha)) / 2)
        features.extend((alpha, eta, sigma_l.pow(2), sigma_r.pow(2)))
    return torch.stack(features, dim=-1)


class FittedBRISQUE(torch.nn.Module):
    """pyiqa's `BRISQUE` network, version 'original' (`brisque`, step by step) with the fits
    and the half-size resize above; the resize after the last scale, whose result pyiqa
    throws away, is not made."""

    def __init__(self, original: BRISQUE) -> None:
        super().__init__()
        if original.version != "original":
            raise ValueError("the fitted BRISQUE equals pyiqa's only for version 'original'")
        self.original = original

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.from_features(self.features(x))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """pyiqa's `brisque` up to the model: the 36 features (18 per scale), (b, 36)."""
        net = self.original
        if net.test_y_channel and x.size(1) == 3:
            x = luma_255(x)
        else:
            x = x * 255
        features = []
        for scale in range(2):
            if scale:
                x = half_size(x)
            features.append(brisque_features(x, net.kernel_size, net.kernel_sigma))
        return torch.cat(features, dim=-1)

    def from_features(self, features: torch.Tensor) -> torch.Tensor:
        """pyiqa's `brisque` from the features on: scaled by the model's ranges, then its
        SVR (an RBF kernel on the support vectors), one score per row."""
        net = self.original
        scaled = scale_features(features)
        kernel = rbf_kernel(features=scaled, sv=net.sv.to(features).t(), gamma=net.gamma)
        return kernel @ net.sv_coef.to(features) - net.rho
