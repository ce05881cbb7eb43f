"""What the engine's scoring costs against pyiqa itself.

Three ways to score the same 20 frames of 1024 x 1024 (a `simulate` chain from a real photo)
with the four CPU metrics plus psnr and ssim against frame 0, interleaved frame by frame so
that a busy neighbour slows all three alike:

- engine: `banana_space.scoring.Scorer`, as a run uses it;
- naive: `pyiqa.create_metric` for every image and metric, as a first script would;
- floor: bare pyiqa calls on tensors, every metric created once: nothing left to remove.

The goal is engine within 5 % of the floor. Wall time on a shared 2-core machine includes time
the CPU was given to others, so CPU time (this process, all threads) is reported beside it.
Peak memory: the kernel's high-water mark, reset before each call (VmHWM), and getrusage's.

A last row scores a few frames in a child process with THP_MEM_ALLOC_ENABLE=1, i.e. torch's
CPU allocator on transparent huge pages (see budget.return_freed_memory for why it is off).

    .venv/bin/python bench/scoring.py [--frames 20] [--thp-frames 5]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import _setup

from banana_space.backends.simulate import SimulateBackend
from banana_space.catalog import CPU_DEFAULTS, FIDELITY, to_tensor
from banana_space.scoring import Scorer, at_input_size

FRAME_SIDE = 1024
NAMES = (*CPU_DEFAULTS, *FIDELITY)


def chain_frames(count: int) -> list[Any]:
    frames = [_setup.photo(FRAME_SIDE)]
    backend = SimulateBackend()
    while len(frames) < count:
        frames.append(backend.edit(frames[-1], "", seed=0, step=len(frames)).image)
    return frames


def _bare_scores(metrics: dict[str, Any], frame: Any, reference: Any) -> dict[str, float]:
    import torch

    image, ref = to_tensor(frame), to_tensor(reference)
    fidelity = at_input_size(frame, reference)  # as the engine does
    resized = image if fidelity is frame else to_tensor(fidelity)
    with torch.inference_mode():
        return {name: float(metric(resized, ref) if name in FIDELITY else metric(image))
                for name, metric in metrics.items()}


def scorers() -> dict[str, Callable[[Any, Any], dict[str, float]]]:
    import pyiqa

    engine = Scorer(CPU_DEFAULTS)
    list(engine.load())
    assert engine.metrics == list(NAMES), engine.unavailable
    created_once = {name: pyiqa.create_metric(name, device="cpu") for name in NAMES}

    def naive(frame: Any, reference: Any) -> dict[str, float]:
        fresh = {name: pyiqa.create_metric(name, device="cpu") for name in NAMES}
        return _bare_scores(fresh, frame, reference)

    return {"engine": lambda f, r: engine.score(f, r).scores,
            "naive": naive,
            "floor": lambda f, r: _bare_scores(created_once, f, r)}


def measure(frames: list[Any], ways: dict[str, Callable]) -> dict[str, dict[str, float]]:
    """Each frame scored every way, in a rotating order; the scores must agree exactly."""
    totals = {name: {"wall": 0.0, "cpu": 0.0, "peak": 0.0} for name in ways}
    order = list(ways)
    for index, frame in enumerate(frames):
        results = {}
        for name in order[index % len(order):] + order[:index % len(order)]:
            _setup.reset_peak()
            wall, cpu = time.perf_counter(), time.process_time()
            results[name] = ways[name](frame, frames[0])
            totals[name]["wall"] += time.perf_counter() - wall
            totals[name]["cpu"] += time.process_time() - cpu
            totals[name]["peak"] = max(totals[name]["peak"], _setup.peak_since_reset_mb())
        first = next(iter(results.values()))
        assert all(_same(r, first) for r in results.values()), results
    return totals


def _same(a: dict[str, float], b: dict[str, float]) -> bool:
    return all(a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])) for k in b)


def engine_only(count: int) -> dict[str, float]:
    """The engine alone on `count` frames: what the THP child process runs."""
    frames = chain_frames(count)
    return measure(frames, {"engine": scorers()["engine"]})["engine"]


def thp_on_row(count: int) -> list[Any]:
    environment = {**os.environ, "THP_MEM_ALLOC_ENABLE": "1"}
    child = subprocess.run([sys.executable, __file__, "--child", str(count)], env=environment,
                           capture_output=True, text=True, check=True)
    totals = json.loads(child.stdout.strip().splitlines()[-1])
    return _row("engine, huge pages (THP on)", totals, count)


def _row(name: str, totals: dict[str, float], count: int) -> list[Any]:
    return [name, round(count / totals["wall"], 3), round(totals["wall"] / count, 2),
            round(totals["cpu"] / count, 2), round(totals["peak"])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--thp-frames", type=int, default=5)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(engine_only(args.child)))
        return
    totals = measure(chain_frames(args.frames), scorers())
    rows = [_row(name, t, args.frames) for name, t in totals.items()]
    floor = totals["floor"]
    for row, t in zip(rows, totals.values(), strict=True):
        row += [round(t["wall"] / floor["wall"], 3), round(t["cpu"] / floor["cpu"], 3)]
    if args.thp_frames:
        huge = thp_on_row(args.thp_frames)
        rows.append(huge + [round(huge[2] / rows[2][2], 3), round(huge[3] / rows[2][3], 3)])
    print(_setup.describe_machine())
    _setup.print_table(
        f"{args.frames} frames of {FRAME_SIDE}px, metrics {', '.join(NAMES)}; "
        "goal: engine within 5 % of the floor",
        ["way", "frames/s", "wall s/frame", "CPU s/frame", "peak MB", "wall / floor",
         "CPU / floor"], rows)
    print(f"process peak RSS (getrusage): {_setup.peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
