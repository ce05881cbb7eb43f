"""The simulation's arithmetic gives the same bits on any x86 CPU (backends/portable.py): a
fused multiply-add emulated in float64 rounds once, as the instruction does, and every profile's
float output is the same on the oldest code path numpy and OpenBLAS can be told to take as on
this machine's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
from conftest import REPO

from banana_space.backends.portable import LUMA, fused_multiply_add, luma

# OpenBLAS's oldest x86-64 kernel, numpy's baseline loops (SSE4.2, no AVX, no FMA) and
# libjpeg-turbo without SIMD: scripts/check_remakes.py's "all of the oldest".
OLDEST = {"OPENBLAS_CORETYPE": "Prescott", "JSIMD_FORCENONE": "1",
          "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_SPR AVX512_ICL"}


def correctly_rounded(value: np.float32, exact: Fraction) -> bool:
    """`value` is the float32 nearest `exact`, ties to the even one."""
    gaps = [abs(Fraction(float(v)) - exact) for v in (
        np.nextafter(value, np.float32(-np.inf)), value, np.nextafter(value, np.float32(np.inf)))]
    nearest = gaps[1] <= min(gaps[0], gaps[2])
    tie = gaps[1] in (gaps[0], gaps[2])
    return nearest and not (tie and int(value.view(np.int32)) & 1)


def test_a_fused_multiply_add_rounds_once_even_where_float64_cannot_hold_the_sum() -> None:
    rng = np.random.default_rng(0)
    a, c = ((rng.standard_normal(3000) * 2.0 ** rng.integers(-40, 40, 3000)).astype(np.float32)
            for _ in range(2))
    b = LUMA[1]
    exact = [Fraction(float(x)) * Fraction(float(b)) + Fraction(float(y))
             for x, y in zip(a, c, strict=True)]
    held = sum(Fraction(float(x) * float(b) + float(y)) == e
               for x, y, e in zip(a, c, exact, strict=True))
    assert held < len(exact)  # some sums do not fit a float64: the rounding to odd is tested
    made = fused_multiply_add(a, b, c)
    assert all(correctly_rounded(m, e) for m, e in zip(made, exact, strict=True))


def test_luma_is_the_rec_601_sum_within_its_rounding() -> None:
    pixels = np.random.default_rng(1).uniform(0, 255, (40, 70, 3)).astype(np.float32)
    exact = pixels.astype(np.float64) @ LUMA.astype(np.float64)
    assert np.abs(luma(pixels) - exact).max() <= 3 * np.spacing(np.float32(255))


def fingerprints(environment: dict[str, str]) -> dict[str, str]:
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "check_remakes.py"),
                           "--profiles-only"], env={**os.environ, **environment},
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])["profiles"]


def test_every_profile_gives_the_same_bits_on_the_oldest_code_path() -> None:
    """Before portable.py, a BLAS kernel without FMA changed the luma of the default, granular
    and contour profiles, and numpy without AVX2 changed the cosine and exponential of the
    default, lattice and simplification profiles, in the float output (a recording happened to
    round each difference to the same 8-bit frame)."""
    here, oldest = fingerprints({}), fingerprints(OLDEST)
    assert [name for name in here if oldest[name] != here[name]] == []
