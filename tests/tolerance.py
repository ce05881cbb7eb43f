"""How far a pinned number may move, and why: one helper for every number a test pins or compares
across two code paths (issue 40).

A test that pins a float must allow what the arithmetic itself moves between machines, and not
a bit more: a bound wider than its reason hides a changed definition, a tighter one fails on an
honest CPU. Three reasons are known here:

- **float64.** A float64 sum of n terms rounds each partial sum by at most eps64/2, so two
  machines that sum in different orders differ by at most n * eps64 of the sum of magnitudes
  (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., section 4.2: gamma_n).
  The largest sum a ruler takes is a mean over a 2K frame's 4.2 million pixels: 4.2e6 * 2.2e-16
  = 9.3e-10, so `FLOAT64_RELATIVE` is 1e-9. Measured: the rulers' float64 results moved by at
  most 7e-13 of themselves across seven of OpenBLAS's CPU kernels (`OPENBLAS_CORETYPE` Haswell,
  SkylakeX, Zen, Cooperlake, SapphireRapids, Prescott, Nehalem). `FLOAT64_ABSOLUTE` keeps a
  value near zero (a colour ruler on a neutral frame) from demanding a relative bound it
  cannot have.
- **float32.** The same rule with eps32 = 1.2e-7: `float32_relative(terms)` for a value that is
  a sum of `terms` float32 products. It is only useful where few terms are summed (a short
  filter); a float32 mean over a frame has no useful bound, which is why the rulers whose
  results are such means compute in float64 (banana_space/scores/rulers.py, `_in_float64`). The
  quantised `scale_index` is among them: in float32 a tile on its threshold could fall either
  way on another CPU and move it by a whole least step.
"""

from __future__ import annotations

import math

import numpy as np

FLOAT64_RELATIVE = 1e-9
FLOAT64_ABSOLUTE = 1e-12
FLOAT32_EPS = float(np.finfo(np.float32).eps)  # 2**-23


def float32_relative(terms: int) -> float:
    """The relative bound between two machines for a float32 value summed from `terms` terms:
    each rounds within gamma_terms = terms * eps32 / 2 of the exact sum, so they differ by at
    most terms * eps32."""
    return terms * FLOAT32_EPS


def close(value: float, pinned: float | None, relative: float = FLOAT64_RELATIVE,
          absolute: float = FLOAT64_ABSOLUTE) -> bool:
    """`value` is `pinned` within the bounds given (float64's by default). A pinned None is
    JSON's stand-in for NaN, and only NaN matches it."""
    if pinned is None or math.isnan(pinned):
        return math.isnan(value)
    return abs(value - pinned) <= max(relative * abs(pinned), absolute)

