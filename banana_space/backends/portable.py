"""Arithmetic that gives the simulation's frames the same bits on any x86 CPU.

A recording keeps only a few full frames and re-makes the others from its seed, checked against
their pixel hashes (`chain/remake.py`), so a simulated step must not depend on which code path
the CPU picks. Two of numpy's paths do: a float32 matmul goes to the BLAS kernel chosen for
the CPU (OpenBLAS's AVX-512 kernel fuses each multiply with its add, one rounding; its Haswell
and older kernels round twice), and float32 and float64 `exp`, `cos`, `log` go to a SIMD loop
chosen for the CPU (AVX-512, AVX2 or none: each rounds its own way). Everything else the
steps use is the same everywhere: numpy's elementwise + - * / and sqrt round exactly as IEEE 754
says, its sums add in a fixed order, scipy.ndimage's filters are plain C in float64, numpy's
random generators are defined bit for bit, and PIL's codecs and resamplers are integer or plain
C. That holds for the versions of numpy, scipy and Pillow that requirements.txt pins: another
version may round another way, and is another generator. `scripts/check_remakes.py` re-makes
every recording under several BLAS kernels and numpy dispatch settings (docs/recordings.md).
"""

from __future__ import annotations

import numpy as np

LUMA = np.array([0.299, 0.587, 0.114], np.float32)  # Rec. 601
_ROWS_AT_ONCE = 32  # rows of a frame per pass: its float64 temporaries stay in the cache


def fused_multiply_add(a: np.ndarray, b: np.float32, c: np.ndarray) -> np.ndarray:
    """a * b + c for float32 arrays a, c and a float32 b, rounded once to float32, as an FMA
    instruction rounds it, from float64 arithmetic that is the same on every CPU.

    The product of two float32 is exact in float64 (24 + 24 bits), and so is its sum with a
    float32 unless their sizes are far apart. Where the sum is not exact (Dekker's Fast2Sum
    finds these: with |p| >= |c|, fl(s - p) is exact, and equals c only if s = p + c), it is
    rounded to odd, and a float64 rounded to odd rounds to float32 as the exact value would
    (Boldo & Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using
    rounding to odd", IEEE Trans. Computers 57(4), 2008).
    """
    product = a.astype(np.float64)
    product *= np.float64(b)
    addend = c.astype(np.float64)
    total = product + addend
    inexact = np.flatnonzero((total - product != addend) | (total - addend != product))
    if inexact.size:
        total.reshape(-1)[inexact] = _sum_rounded_to_odd(product.reshape(-1)[inexact],
                                                         addend.reshape(-1)[inexact])
    return total.astype(np.float32)


def _sum_rounded_to_odd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a + b in float64, rounded to odd: the nearest float64 where that is exact or its last bit
    is odd, else its neighbour on the side of the exact sum (Knuth's TwoSum gives the error
    exactly: The Art of Computer Programming vol. 2, 4.2.2)."""
    total = a + b
    virtual_b = total - a
    error = (a - (total - virtual_b)) + (b - virtual_b)
    even = (total.view(np.int64) & 1) == 0
    return np.where((error != 0) & even, np.nextafter(total, np.copysign(np.inf, error)), total)


def luma(pixels: np.ndarray) -> np.ndarray:
    """Rec. 601 luma of float32 RGB pixels (H x W x 3), float32: ((R x 0.299) + G x 0.587) +
    B x 0.114, the two additions fused multiply-adds (`fused_multiply_add`). That is the
    arithmetic of OpenBLAS's AVX-512 kernel, with which `pixels @ LUMA` made every frame before
    this function existed, so those frames are unchanged; here it is the same on any CPU."""
    out = np.empty(pixels.shape[:2], np.float32)
    for top in range(0, pixels.shape[0], _ROWS_AT_ONCE):
        band = pixels[top:top + _ROWS_AT_ONCE]
        partial = fused_multiply_add(band[..., 1], LUMA[1], band[..., 0] * LUMA[0])
        out[top:top + _ROWS_AT_ONCE] = fused_multiply_add(band[..., 2], LUMA[2], partial)
    return out


def rounded(function: np.ufunc, values: np.ndarray) -> np.ndarray:
    """A transcendental `function` (np.exp, np.cos) of float32 `values`, computed in float64 and
    rounded once to float32. The float64 loops of two CPUs differ by at most about an ulp, which
    the rounding hides unless a value falls within that ulp of a float32 rounding boundary
    (about 1 value in 2**29)."""
    return function(values.astype(np.float64)).astype(np.float32)
