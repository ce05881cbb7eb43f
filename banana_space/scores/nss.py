"""Exact equivalents of pyiqa's natural-scene-statistics metrics, NIQE, BRISQUE and PIQE (pyiqa
0.1.16, archs/niqe_arch.py, archs/brisque_arch.py, archs/piqe_arch.py, archs/func_util.py), where
pyiqa's route is slow.

The same operations on the same numbers, in the same order wherever the order can change a
bit; what changes is the route (bench/scoring_breakdown.py measures each step):

- The MSCN coefficients (`planes.normalize_with_gauss`): band by band of rows, NIQE's float64
  filter by `scipy.ndimage.correlate` (PyTorch's float64 convolution on the CPU is im2col +
  GEMM: 49 copies of the frame, 1.6 GB at 2K), BRISQUE's and PIQE's float32 one by pyiqa's own
  call; bit for bit (tests/test_equivalents.py).
- The AGGD / GGD fits (Mittal et al. 2012, eq. 7-8, as pyiqa's `estimate_aggd_param` and
  `estimate_ggd_param` compute them). pyiqa rebuilds its table of 9,801 shape values (three
  lgamma each) on every call, copies it once per block and scans all of it for the nearest
  value: at 2K that is 441 x 9,801 values, five times per scale. The table here is built once
  by the same expression, and the nearest entry is found by bisection in the monotonic table
  (`nearest_index`), with pyiqa's tie rule; the sums are pyiqa's, over the same tensors.
- The half-size MATLAB-style resize between the two scales (`half_size`): pyiqa unfolds ten
  copies of the frame and picks every other row of them; the same taps are gathered directly.
- The frame's luma (`planes.luma_255`, `planes.luma_1`), which brisque, niqe, piqe, entropy and
  ssim each made again.

A float32 sum in another order could flip a fit's argmin or a PIQE block's threshold, so every
sum is pyiqa's own, over tensors of the same shape. Nothing here is a new estimate of any
quantity: every score is the one pyiqa computes.
"""
from __future__ import annotations

import functools
import math

import torch
from pyiqa.archs.brisque_arch import BRISQUE, rbf_kernel, scale_features
from pyiqa.archs.func_util import diff_round
from pyiqa.archs.niqe_arch import NIQE, calculate_niqe
from pyiqa.archs.piqe_arch import PIQE, noise_criterion, notice_dist_criterion
from pyiqa.matlab_utils import blockproc, nancov, nanmean, symm_pad
from pyiqa.matlab_utils import resize as matlab_resize
from pyiqa.utils.color_util import to_y_channel

from .planes import luma_1, luma_255, normalize_with_gauss

# Columns of NIQE blocks fitted at a time: 4 x 13 blocks of 96² float64 at 2048 x 1280, 3.8 MB
# per temporary (`block_features`).
BLOCK_COLUMNS = 4


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
    products of samples and weights summed over the taps in the same order, first tap first
    (as torch sums pyiqa's (batch, taps, rows, columns) tensor over its taps), but each tap
    read as a strided view of the padded frame, never copied: pyiqa unfolds ten copies of
    the frame in float32."""
    taps = math.ceil(4 / scale) + 2
    pos = torch.linspace(0, size - 1, steps=size, dtype=x.dtype, device=x.device)
    pos = (pos + 0.5) / scale - 0.5
    base = pos.floor() - (taps // 2) + 1
    weight = matlab_resize.get_weight(pos - base, taps, kernel="cubic",
                                      antialiasing_factor=scale)
    pad_pre, pad_post, base = matlab_resize.get_padding(base, taps, x.size(dim))
    x = matlab_resize.padding(x, dim, pad_pre, pad_post, padding_type="reflect")
    stride = round(1 / scale)  # each output's first sample lies this far after the last's
    assert torch.equal(base, base[0] + stride * torch.arange(size, device=base.device))
    shape = [1] * x.ndim
    shape[dim] = size
    total = torch.zeros_like(x.narrow(dim, 0, size))
    for tap in range(taps):
        sample = x.narrow(dim, int(base[0]) + tap, stride * (size - 1) + 1)
        sample = sample[:, :, ::stride, :] if dim in (2, -2) else sample[..., ::stride]
        total += sample * weight[tap].view(shape)
    return total


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
        normalized = normalize_with_gauss(image, padding="replicate")
        features.append(block_features(normalized, block // scale))
        if scale == 1:
            image = half_size(image / 255.0) * 255.0
    return torch.cat(features, -1)


def block_features(normalized: torch.Tensor, side: int) -> torch.Tensor:
    """pyiqa's `blockproc(normalized, [side, side], fun=compute_feature)`, `BLOCK_COLUMNS`
    columns of blocks at a time: the same blocks, in pyiqa's order (column by column) and
    memory layout (contiguous, as pyiqa's reshape copies them whenever the frame is at least
    2 blocks wide and tall: torch sums a strided block in another order), each block's
    features from its own numbers alone, and the fits' temporaries a few MB each instead of
    20 MB at 2K, which glibc's heap gave back and faulted in again between the fits (0.15-0.2
    CPU s of system time per frame). A frame 1 block wide or tall goes whole, as pyiqa's."""
    rows, columns = normalized.shape[-2] // side, normalized.shape[-1] // side
    if rows < 2 or columns <= BLOCK_COLUMNS:
        return blockproc(normalized, [side, side], fun=niqe_block_features)
    return torch.cat([blockproc(normalized[..., left * side:(left + BLOCK_COLUMNS) * side],
                                [side, side], fun=_contiguous_block_features)
                      for left in range(0, columns, BLOCK_COLUMNS)], dim=1)


def _contiguous_block_features(blocks: torch.Tensor, _: object = None) -> torch.Tensor:
    return niqe_block_features(blocks.contiguous())


def brisque_features(luma: torch.Tensor, kernel_size: int, sigma: float) -> torch.Tensor:
    """pyiqa's BRISQUE `natural_scene_statistics` (Mittal et al. 2012, sec. III): the GGD of
    the MSCN coefficients and the AGGD of their products with four neighbours."""
    normalized = normalize_with_gauss(luma, kernel_size, sigma, padding="same")
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


def piqe_score(image: torch.Tensor, block_size: int = 16, activity_threshold: float = 0.1,
               block_impaired_threshold: float = 0.1, window_size: int = 6) -> torch.Tensor:
    """pyiqa's `piqe` score (Venkatanath et al. 2015, as archs/piqe_arch.py computes it), step
    by step: the frame's shared Y and the banded MSCN; the blocks' statistics and criteria are
    pyiqa's own code. pyiqa's three masks (`PIQE.get_masks`, for showing) are not made."""
    if image.shape[1] == 3:
        image = luma_1(image)
    peak = torch.max(image.flatten(1), dim=-1)[0].reshape(image.shape[0], 1, 1, 1)
    image = torch.round(255 * (image / peak))
    batch, _, height, width = image.shape
    image = symm_pad(image, (0, width % block_size, 0, height % block_size))
    normalized = normalize_with_gauss(image, padding="replicate")
    blocks = normalized.unfold(2, block_size, block_size).unfold(3, block_size, block_size)
    blocks = blocks.contiguous().view(batch, -1, block_size, block_size)
    block_var = torch.var(blocks, dim=[2, 3], unbiased=True)
    active = block_var > activity_threshold
    block_sigma, block_beta = noise_criterion(blocks, block_size - 1, block_var)
    noisy = block_sigma > 2 * block_beta
    impaired = notice_dist_criterion(blocks, window_size, block_impaired_threshold, block_size)
    weight_active, weight_impaired = active.float(), impaired.float()
    distortion = (weight_active * weight_impaired * (1 - block_var)
                  + weight_active * noisy.float() * block_var).sum(dim=1)
    return ((distortion + 1) / (1 + active.sum(dim=1))) * 100


class BandedPIQE(torch.nn.Module):
    """pyiqa's `PIQE` network's score (`piqe_score`); on a GPU, pyiqa's own way."""

    def __init__(self, original: PIQE) -> None:
        super().__init__()
        self.original = original

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.device.type != "cpu":
            return self.original(x)
        return piqe_score(x)
