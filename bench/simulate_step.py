"""The simulated generator's share of a step: CPU seconds per `simulate` step on the page's
default example (the moss photo, 2048 x 1280), the default profile, seed 0, 10 steps, as the
chain feeds each output back in (`SimulateBackend.edit`: the PNG-ready 8-bit frame in, the next
one out). No scoring, no writing: the rest of a step is bench/default_run.py's.

Process CPU time (every thread), not wall time: a shared machine's wall clock says more about
its other jobs. One step first, untimed, loads what the first call loads (the lattice of the
frame's size is kept for the next steps, as in a run).

    .venv/bin/python bench/simulate_step.py [--steps 10] [--profiles nano-banana-pro,granular|all]
"""

from __future__ import annotations

import argparse
import time

import _setup

from PIL import Image

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--profiles", default=DEFAULT_PROFILE, help="comma-separated, or all")
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


if __name__ == "__main__":
    main()
