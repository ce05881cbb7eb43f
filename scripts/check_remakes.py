"""Re-make every bundled recording's dropped frames and check each against its pixel hash, under
each of several CPU code paths: the proof, written in docs/recordings.md, that the simulation
gives the same frames, bit for bit, on any x86 CPU.

    .venv/bin/python scripts/check_remakes.py            # this process's code path, as JSON
    .venv/bin/python scripts/check_remakes.py --paths    # every path in PATHS: docs' table

Each recording in assets/recorded/ is copied to a temporary folder and re-made as the app
re-makes it (`remake.remake_all`: every dropped frame, from the nearest earlier full frame,
checked against remake.json), so a failure here is the one a visitor would see. Every profile
of `simulate` is checked too, before any 8-bit rounding can hide a difference: the SHA-256 of
one step's float32 output on the moss photo at 512 px (`--profiles-only`: this alone). A code
path is chosen by environment variables read when a library loads, so each runs in a fresh
process: `OPENBLAS_CORETYPE`, the OpenBLAS kernel behind numpy's float matmuls;
`NPY_DISABLE_CPU_FEATURES`, numpy's SIMD dispatch targets (its ufuncs: exp, cos, log, ...);
`JSIMD_FORCENONE`, libjpeg-turbo's SIMD (PIL's JPEG codec).
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

RECORDED = REPO / "assets" / "recorded"
START = REPO / "assets" / "examples" / "photo-moss.png"
# numpy 2's dispatch targets above the x86-64-v2 baseline, newest first: disabling a prefix of
# them leaves the older ones (the last path runs numpy's baseline SSE4.2 loops only).
_NEWER = ("AVX512_SPR", "AVX512_ICL")
PATHS: dict[str, dict[str, str]] = {
    "default": {},
    "OpenBLAS Haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "OpenBLAS Zen": {"OPENBLAS_CORETYPE": "Zen"},
    "OpenBLAS SkylakeX": {"OPENBLAS_CORETYPE": "SkylakeX"},
    "OpenBLAS Cooperlake": {"OPENBLAS_CORETYPE": "Cooperlake"},
    "OpenBLAS SapphireRapids": {"OPENBLAS_CORETYPE": "SapphireRapids"},
    "OpenBLAS Sandybridge": {"OPENBLAS_CORETYPE": "Sandybridge"},
    "OpenBLAS Nehalem": {"OPENBLAS_CORETYPE": "Nehalem"},
    "OpenBLAS Prescott": {"OPENBLAS_CORETYPE": "Prescott"},
    "numpy without AVX512_ICL/SPR": {"NPY_DISABLE_CPU_FEATURES": " ".join(_NEWER)},
    "numpy without x86-64-v4 (AVX-512)": {"NPY_DISABLE_CPU_FEATURES": " ".join(
        ("X86_V4", *_NEWER))},
    "numpy without x86-64-v3 (AVX2, FMA)": {"NPY_DISABLE_CPU_FEATURES": " ".join(
        ("X86_V3", "X86_V4", *_NEWER))},
    "libjpeg-turbo without SIMD": {"JSIMD_FORCENONE": "1"},
    "all of the oldest": {"OPENBLAS_CORETYPE": "Prescott", "JSIMD_FORCENONE": "1",
                          "NPY_DISABLE_CPU_FEATURES": " ".join(("X86_V3", "X86_V4", *_NEWER))},
}


def openblas_core() -> str:
    """The kernel numpy's OpenBLAS chose (it prints nothing unless asked)."""
    import numpy as np

    libraries = Path(np.__file__).parent.parent / "numpy.libs"
    for library in sorted(libraries.glob("*openblas*.so*")):
        for symbol in ("scipy_openblas_get_corename64_", "openblas_get_corename64_",
                       "openblas_get_corename"):
            function = getattr(ctypes.CDLL(str(library)), symbol, None)
            if function is not None:
                function.restype = ctypes.c_char_p
                return function().decode()
    return "unknown"


def numpy_targets() -> str:
    """numpy's SIMD dispatch targets in use in this process, above its baseline."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return " ".join(t for t in __cpu_dispatch__ if __cpu_features__.get(t)) or "baseline only"


def profile_fingerprints(side: int = 512, step: int = 3) -> dict[str, str]:
    """profile -> SHA-256 of its float32 output for `step` (seed 0), made from the start."""
    import numpy as np
    from PIL import Image

    from banana_space.backends.simulate import PROFILES

    with Image.open(START) as image:
        start = image.convert("RGB")
    start.thumbnail((side, side), Image.Resampling.LANCZOS)
    pixels = np.asarray(start, dtype=np.float32)
    found = {}
    for name, profile in PROFILES.items():
        rng = np.random.default_rng([0, step])
        out = (profile.step(pixels, rng, 1.0, step, 0, 0) if profile.anchored
               else profile.step(pixels, rng, 1.0))
        found[name] = hashlib.sha256(np.ascontiguousarray(out, np.float32).tobytes()).hexdigest()
    return found


def remade_recordings() -> dict[str, str]:
    """Re-make each recording in a temporary copy: recording -> 'ok (n re-made)' or why not."""
    from banana_space.chain import remake
    from banana_space.store.run import Run

    results: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="banana-remake-") as folder:
        for source in sorted(p for p in RECORDED.iterdir() if Run(p).exists()):
            run = Path(shutil.copytree(source, Path(folder) / source.name))
            kept = {p.name for p in Run(run).frames_dir.iterdir()}
            remake.remake_all(run)
            made = len({p.name for p in Run(run).frames_dir.iterdir()} - kept)
            results[source.name] = remake.FAILED.get(run.resolve()) or f"ok ({made} re-made)"
    return results


def check(recordings: bool = True) -> dict[str, object]:
    """This process's code path, every profile's fingerprint, and each recording's re-make."""
    return {"openblas": openblas_core(), "numpy": numpy_targets(),
            "jsimd": "off" if os.environ.get("JSIMD_FORCENONE") == "1" else "on",
            "profiles": profile_fingerprints(),
            "recordings": remade_recordings() if recordings else {}}


def table() -> str:
    """Run `check` once per code path, each in a fresh process, as a markdown table; a
    profile's fingerprint is compared with the first path's."""
    rows, names, reference = [], None, None
    for label, variables in PATHS.items():
        started = time.perf_counter()
        done = subprocess.run([sys.executable, __file__], env={**os.environ, **variables},
                              capture_output=True, text=True, check=True)
        found = json.loads(done.stdout.splitlines()[-1])
        names = names or list(found["recordings"])
        reference = reference or found["profiles"]
        differ = [n for n in reference if found["profiles"].get(n) != reference[n]]
        alike = f"all {len(reference)} alike" if not differ else "differ: " + ", ".join(differ)
        rows.append([label, found["openblas"], found["numpy"], found["jsimd"], alike,
                     *(found["recordings"][n] for n in names)])
        print(f"{label}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    header = ["code path", "OpenBLAS kernel", "numpy SIMD targets", "libjpeg SIMD",
              "profiles' float bits", *names]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", action="store_true", help="every code path in PATHS")
    parser.add_argument("--profiles-only", action="store_true",
                        help="only the profiles' fingerprints, no recording re-made")
    arguments = parser.parse_args()
    if arguments.paths:
        print(table())
    else:
        print(json.dumps(check(recordings=not arguments.profiles_only)))
