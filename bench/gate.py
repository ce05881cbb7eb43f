"""The quality gate's cost: seconds per 1024 x 1024 edit checked by `gate.check_degradation`
(our rulers and PSNR against the original, the floors, the magnifier's crop), on one CPU core
(torch held to one thread; scipy, scikit-image and PyWavelets use one). Goal: < 0.5 s per frame.

The edits are a simulated Nano Banana Pro-like chain of a photo (`--edits` steps). Two ways an
agent calls it: the whole chain in one call, the original never seen before (its scoring shared
by the edits); and one edit per call, as it makes each, the original's measures kept from its
first call (`gate.ORIGINALS`). CPU time (this process, every thread) is printed beside wall time:
a busy shared machine inflates it less. Median of `--repeats` calls after one warm-up. Below it,
what the rulers cost on one frame: all at once as the gate reads them, and each on its own.

    .venv/bin/python bench/gate.py [--edits 5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import _setup
import numpy as np

from banana_space.backends.simulate import SimulateBackend
from banana_space.gate import ORIGINALS, check_degradation
from banana_space.scores.rulers import RULERS, measure_all

FRAME_SIDE = 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    print(_setup.describe_machine())
    frames = [_setup.photo(FRAME_SIDE)]
    backend = SimulateBackend()
    for step in range(1, args.edits + 1):
        frames.append(backend.edit(frames[-1], "", seed=0, step=step).image)
    chain = _per_edit(lambda: check_degradation(frames[0], frames[1:]), args.repeats,
                      args.edits, forget=True)
    one_by_one = _per_edit(lambda: [check_degradation(frames[0], [edit]) for edit in frames[1:]],
                           args.repeats, args.edits, forget=False)
    _setup.print_table(f"gate: seconds per {FRAME_SIDE}² edit, {args.edits} edits "
                       f"(median of {args.repeats})", ["calls", "cpu s", "wall s"],
                       [["the chain in one call, a new original", *chain],
                        ["one edit per call, the original kept", *one_by_one]])
    pixels = np.asarray(frames[-1], dtype=np.float32) / 255.0
    _setup.print_table(f"of which the rulers: CPU s per {FRAME_SIDE}² frame, the last edit "
                       f"(median of {args.repeats}; each frame, the original too, is read once)",
                       ["rulers", "cpu s"],
                       [[name, _cpu_seconds(read, pixels, args.repeats)]
                        for name, read in [("all (measure_all)", measure_all),
                                           *((n, r.measure) for n, r in RULERS.items())]])


def _per_edit(call: Callable[[], Any], repeats: int, edits: int, forget: bool
              ) -> list[float]:
    """Median CPU and wall seconds per edit of `call`; `forget`: the original unseen each
    time (its kept measures cleared), else seen before (one call made first)."""
    ORIGINALS.clear()
    call()
    cpu, wall = [], []
    for _ in range(repeats):
        if forget:
            ORIGINALS.clear()
        began_cpu, began_wall = time.process_time(), time.perf_counter()
        call()
        cpu.append((time.process_time() - began_cpu) / edits)
        wall.append((time.perf_counter() - began_wall) / edits)
    return [statistics.median(cpu), statistics.median(wall)]


def _cpu_seconds(measure: Callable[[np.ndarray], Any], pixels: np.ndarray,
                 repeats: int) -> float:
    cpu = []
    for _ in range(repeats):
        began = time.process_time()
        measure(pixels)
        cpu.append(time.process_time() - began)
    return statistics.median(cpu)


if __name__ == "__main__":
    main()
