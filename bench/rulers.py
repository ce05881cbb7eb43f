"""The chain-aware rulers' cost: seconds per 1024 x 1024 frame for every ruler, and for the four
CPU classics beside them, on one CPU core (torch held to one thread; scipy's FFT, scikit-image
and PyWavelets use one), called as a run calls them (`MetricPool.score` on a tensor), median of
`--repeats` calls after one warm-up. The cost is CPU time (this process, every thread), which a
busy shared machine inflates less than wall time; both are printed. Goal: each ruler <= 0.1 s.

What each ruler detects is measured by the same script as every metric's verdicts:
`scripts/detection_table.py --metrics rulers` (docs/metrics.md, "Chain-aware rulers").

    .venv/bin/python bench/rulers.py [--metrics rulers,classics] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import _setup

from banana_space.backends import simulate
from banana_space.scores.catalog import check_metric_names, expand_metric_names, to_tensor
from banana_space.scores.pool import POOL
from banana_space.scores.rulers import RULERS

FRAME_SIDE = 1024


def seconds_per_frame(metrics: list[str], repeats: int) -> list[list[Any]]:
    """Each metric's median seconds on one 1024 px frame (a `simulate` step of a photo, so
    it carries the static a chain adds), one thread."""
    import torch

    torch.set_num_threads(1)
    photo = _setup.photo(FRAME_SIDE)
    frame = to_tensor(simulate.SimulateBackend().edit(photo, "", seed=0, step=1).image)
    rows = []
    for name in metrics:
        POOL.score(name, frame)  # warm-up: creation, lazy imports, first-touch allocation
        cpu, wall = [], []
        for _ in range(repeats):
            cpu_start, wall_start = time.process_time(), time.perf_counter()
            POOL.score(name, frame)
            cpu.append(time.process_time() - cpu_start)
            wall.append(time.perf_counter() - wall_start)
        cost = statistics.median(cpu)
        goal = ("yes" if cost <= 0.1 else "NO") if name in RULERS else ""
        rows.append([name, "ours" if name in RULERS else "pyiqa", round(cost, 3),
                     round(min(cpu), 3), round(statistics.median(wall), 3), goal])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metrics", default="rulers,classics",
                        help="metric names or presets, as the CLI takes them")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    metrics = expand_metric_names(args.metrics)
    check_metric_names(metrics)
    print(_setup.describe_machine())
    _setup.print_table(
        f"seconds per {FRAME_SIDE} x {FRAME_SIDE} frame, one thread, {args.repeats} calls; "
        "goal for a ruler: <= 0.1 CPU s",
        ["metric", "family", "CPU s (median)", "CPU s (best)", "wall s (median)",
         "ruler within goal"],
        seconds_per_frame(metrics, args.repeats))


if __name__ == "__main__":
    main()
