"""The simulated generator's share of a step: CPU seconds per `simulate` step on the page's
default example (the moss photo, 2048 x 1280), the default profile, seed 0, 10 steps, as the
chain feeds each output back in (`SimulateBackend.edit`: the PNG-ready 8-bit frame in, the next
one out). No scoring, no writing: the rest of a step is bench/default_run.py's.

Process CPU time (every thread), not wall time: a shared machine's wall clock says more about
its other jobs. One step first, untimed, loads what the first call loads (the lattice of the
frame's size is kept for the next steps, as in a run). `--parts` times the default profile's
parts on the start, each a few times.

    .venv/bin/python bench/simulate_step.py [--steps 10] [--profiles nano-banana-pro,granular|all]
        [--parts]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import _setup
import numpy as np
from PIL import Image

from banana_space.backends import artifacts, mi_ripple
from banana_space.backends.portable import luma
from banana_space.backends.simulate import DEFAULT_PROFILE, PROFILES, SimulateBackend

EXAMPLE = _setup.REPO / "assets" / "examples" / "photo-moss.png"


def cpu_seconds_per_step(start: Image.Image, profile: str, steps: int) -> list[float]:
    backend = SimulateBackend(profile=profile)
    frame = backend.edit(start, "", seed=0, step=1).image
    spent = []
    for step in range(2, steps + 2):
        began = time.process_time()
        frame = backend.edit(frame, "", seed=0, step=step).image
        spent.append(time.process_time() - began)
    return spent


def cpu_seconds(work: Callable[[], object], times: int = 3) -> float:
    began = time.process_time()
    for _ in range(times):
        work()
    return (time.process_time() - began) / times


def default_profile_parts(start: Image.Image) -> list[list[object]]:
    """CPU seconds of each part of `artifacts.nano_banana_pro`, on the start."""
    pixels = np.asarray(start, dtype=np.float32)
    grey = luma(pixels)
    rng = np.random.default_rng(0)
    displacement = mi_ripple.LATTICES["nano-banana-pro"].displacement
    parts = {
        "luma (float64 fused multiply-adds)": lambda: luma(pixels),
        "normal draws, 3 planes": lambda: rng.standard_normal(pixels.shape).astype(np.float32),
        "static: the draws and their band-pass": lambda: mi_ripple.band_noise(rng, pixels.shape),
        "the scene's local texture": lambda: mi_ripple.local_texture(grey),
        "specks": lambda: artifacts.scattered_dots(pixels, rng, 0.1),
        "lattice redrawn (built once)": lambda: mi_ripple.reimpose_lattice(
            pixels, displacement, artifacts.NBP_LATTICE_TARGET, artifacts.NBP_LATTICE_RATE),
    }
    return [[name, round(cpu_seconds(work), 3)] for name, work in parts.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--profiles", default=DEFAULT_PROFILE, help="comma-separated, or all")
    parser.add_argument("--parts", action="store_true", help="the default profile's parts")
    args = parser.parse_args()
    names = list(PROFILES) if args.profiles == "all" else args.profiles.split(",")
    with Image.open(EXAMPLE) as opened:
        start = opened.convert("RGB")
    rows = []
    for name in names:
        spent = cpu_seconds_per_step(start, name, args.steps)
        rows.append([name, round(sum(spent) / len(spent), 3), round(min(spent), 3),
                     round(max(spent), 3)])
    print(_setup.describe_machine())
    _setup.print_table(f"`simulate` at {start.width} x {start.height}, {args.steps} steps, "
                       "CPU s per step (all threads)", ["profile", "mean", "min", "max"], rows)
    if args.parts:
        _setup.print_table(f"{DEFAULT_PROFILE}'s parts, CPU s", ["part", "CPU s"],
                           default_profile_parts(start))


if __name__ == "__main__":
    main()
