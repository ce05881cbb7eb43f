"""What the engine's scoring costs against pyiqa itself.

The same frames (a `simulate` chain from a real photo, 1536 x 1024 by default: the page's
default size) scored with the four CPU metrics plus psnr and ssim against frame 0, each way
in turn frame by frame (the order rotating) so that a busy neighbour slows them all alike:

- engine: `banana_space.scores.scoring.Scorer`, as a run uses it;
- engine before issue 35: the same, with only issue 12's exact equivalents (entropy's
  bincount, ssim in 128² tiles), brisque and niqe pyiqa's own way;
- floor: bare pyiqa calls on tensors, every metric created once: nothing left to remove;
- naive (`--naive`): `pyiqa.create_metric` for every image and metric, as a first script would.

Issue 35's goal: the engine <= 0.15 of the floor. Wall time on a shared 2-core machine includes
time the CPU was given to others, so CPU time (this process, all threads) is reported beside
it, and so is the 1-minute load average (the mean over the way's frames). Peak memory: the
kernel's high-water mark, reset before each call (VmHWM), and getrusage's.

A last row (`--thp-frames N`) scores N frames in a child process with THP_MEM_ALLOC_ENABLE=1,
i.e. torch's CPU allocator on transparent huge pages (see budget.return_freed_memory).

    .venv/bin/python bench/scoring.py [--size 1536x1024] [--frames 4] [--naive] [--thp-frames 0]
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
from banana_space.scores.catalog import CPU_DEFAULTS, FIDELITY, build_metric, to_tensor
from banana_space.scores.pool import MetricPool
from banana_space.scores.scoring import Scorer, at_input_size

NAMES = (*CPU_DEFAULTS, *FIDELITY)


def chain_frames(count: int, size: tuple[int, int]) -> list[Any]:
    frames = [_setup.photo(max(size)).resize(size)]
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


def _built_before(name: str, device: str) -> Any:
    """The engine's metric as it was before issue 35: issue 12's equivalents only."""
    import pyiqa

    metric = pyiqa.create_metric(name, device=device)
    swap = _setup.equivalents_before_issue_35().get(name)
    if swap is not None:
        metric.net = swap(metric.net)
    return metric


def _loaded(scorer: Scorer) -> Scorer:
    list(scorer.load())
    assert scorer.metrics == list(NAMES), scorer.unavailable
    return scorer


def scorers(naive: bool) -> dict[str, Callable[[Any, Any], dict[str, float]]]:
    import pyiqa

    engine = _loaded(Scorer(CPU_DEFAULTS))
    build_metric("brisque", "cpu")  # seeds the weights, for the other ways too
    before = _loaded(Scorer(CPU_DEFAULTS, pool=MetricPool(build=_built_before)))
    created_once = {name: pyiqa.create_metric(name, device="cpu") for name in NAMES}
    ways = {"engine": lambda f, r: engine.score(f, r).scores,
            "engine before issue 35": lambda f, r: before.score(f, r).scores,
            "floor": lambda f, r: _bare_scores(created_once, f, r)}
    if naive:
        def fresh_each_time(frame: Any, reference: Any) -> dict[str, float]:
            fresh = {name: pyiqa.create_metric(name, device="cpu") for name in NAMES}
            return _bare_scores(fresh, frame, reference)

        ways["naive"] = fresh_each_time
    return ways


def measure(frames: list[Any], ways: dict[str, Callable]) -> dict[str, dict[str, float]]:
    """Each frame scored every way, in a rotating order; the scores must agree exactly."""
    totals = {name: {"wall": 0.0, "cpu": 0.0, "peak": 0.0, "load": 0.0} for name in ways}
    order = list(ways)
    for index, frame in enumerate(frames):
        results = {}
        for name in order[index % len(order):] + order[:index % len(order)]:
            totals[name]["load"] += os.getloadavg()[0] / len(frames)
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
    """Equal scores; ssim's to 1e-10 (its filters go through float64 spectra)."""
    return all(math.isclose(a[k], b[k], rel_tol=1e-10 if k == "ssim" else 0)
               or (math.isnan(a[k]) and math.isnan(b[k])) for k in b)


def engine_only(count: int, size: tuple[int, int]) -> dict[str, float]:
    """The engine alone on `count` frames: what the THP child process runs."""
    engine = _loaded(Scorer(CPU_DEFAULTS))
    return measure(chain_frames(count, size),
                   {"engine": lambda f, r: engine.score(f, r).scores})["engine"]


def thp_on_row(count: int, size_text: str) -> list[Any]:
    environment = {**os.environ, "THP_MEM_ALLOC_ENABLE": "1"}
    child = subprocess.run([sys.executable, __file__, "--child", str(count), "--size",
                            size_text], env=environment,
                           capture_output=True, text=True, check=True)
    totals = json.loads(child.stdout.strip().splitlines()[-1])
    return _row("engine, huge pages (THP on)", totals, count)


def _row(name: str, totals: dict[str, float], count: int) -> list[Any]:
    return [name, round(count / totals["wall"], 3), round(totals["wall"] / count, 2),
            round(totals["cpu"] / count, 2), round(totals["peak"])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1536x1024")
    parser.add_argument("--frames", type=int, default=4)
    parser.add_argument("--naive", action="store_true")
    parser.add_argument("--thp-frames", type=int, default=0)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    width, height = (int(side) for side in args.size.split("x"))
    if args.child:
        print(json.dumps(engine_only(args.child, (width, height))))
        return
    totals = measure(chain_frames(args.frames, (width, height)), scorers(args.naive))
    rows = [_row(name, t, args.frames) for name, t in totals.items()]
    floor = totals["floor"]
    for row, t in zip(rows, totals.values(), strict=True):
        row += [round(t["wall"] / floor["wall"], 3), round(t["cpu"] / floor["cpu"], 3),
                round(t["load"], 1)]
    if args.thp_frames:
        huge = thp_on_row(args.thp_frames, args.size)
        rows.append(huge + [round(huge[2] / floor["wall"] * args.frames, 3),
                            round(huge[3] / floor["cpu"] * args.frames, 3), "-"])
    print(_setup.describe_machine())
    _setup.print_table(
        f"{args.frames} frames of {width} x {height}, metrics {', '.join(NAMES)}; "
        "goal (issue 35): engine <= 0.15 of the floor",
        ["way", "frames/s", "wall s/frame", "CPU s/frame", "peak MB", "wall / floor",
         "CPU / floor", "load (1 min)"], rows)
    print(f"process peak RSS (getrusage): {_setup.peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
