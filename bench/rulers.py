"""The chain-aware rulers, measured: what each costs, and what each detects.

1. Cost: seconds per 1024 x 1024 frame for every ruler, and for the four CPU classics beside
   them, on one CPU core (torch held to one thread; scipy's FFT, scikit-image and PyWavelets
   use one), called as a run calls them (`MetricPool.score` on a tensor), median of
   `--repeats` calls after one warm-up. The cost is CPU time (this process, every thread),
   which a busy shared machine inflates less than wall time; both are printed. Goal: each
   ruler <= 0.1 s.
2. Detection: every ruler and the four classics on every `simulate` profile (read from the
   backend's table when it has one, else its single model) from every bundled start, scored
   through the shared metric pool and judged by `analysis` (oriented deltas, the verdict): a
   metric *detects* when its oriented delta is negative at steps 5, 10 and 20 (Banana100,
   Sec. 4). Printed per
   start, then as a summary of how many starts each metric detects on, per profile. The
   rulers were designed from the artifacts' descriptions (rulers.py), never from these
   verdicts.

    .venv/bin/python bench/rulers.py [--metrics rulers,classics] [--repeats 5] [--steps 20]
                                     [--skip-speed] [--skip-detect]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from pathlib import Path
from typing import Any

import _setup

from banana_space.analysis import CHECKPOINTS, detects_degradation, oriented_deltas
from banana_space.backends import create_backend, simulate
from banana_space.metrics import (
    POOL,
    check_metric_names,
    expand_metric_names,
    metric_info,
    to_tensor,
)
from banana_space.prompts import DEFAULT_PROMPT
from banana_space.rulers import RULERS

FRAME_SIDE = 1024
STARTS = sorted(path for path in (_setup.REPO / "assets" / "examples").iterdir()
                if path.suffix in (".png", ".jpg"))


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


def profiles() -> list[tuple[str, dict[str, Any]]]:
    """The simulate backend's profiles: its `PROFILES` table when it has one and takes a
    `profile` option, else its single model under the name "default"."""
    table = getattr(simulate, "PROFILES", None)
    if isinstance(table, dict) and "profile" in simulate.INFO.options:
        return [(name, {"profile": name}) for name in table]
    return [("default", {})]


def verdicts(start: Path, options: dict[str, Any], steps: int,
             metrics: list[str]) -> list[tuple[str, list[float], bool | None]]:
    """One chain from `start`, each frame scored as a run scores it (the shared `POOL`, on a
    tensor), each metric oriented by its own table and judged by the paper's rule. No run
    directory and no fidelity: on a busy 2-core machine those (PNG writes, ssim) would make
    every profile and start take hours."""
    from banana_space.images import load_image

    backend = create_backend("simulate", **options)
    frame = load_image(start).image
    scores: dict[str, list[float]] = {name: [] for name in metrics}
    for step in range(steps + 1):
        if step:
            frame = backend.edit(frame, DEFAULT_PROMPT, seed=0, step=step).image
        tensor = to_tensor(frame)
        for name in metrics:
            scores[name].append(POOL.score(name, tensor))
    rows = []
    for name in metrics:
        deltas = oriented_deltas(scores[name], metric_info(name).lower_better)
        rows.append((name, [deltas[s] for s in CHECKPOINTS if s <= steps],
                     detects_degradation(deltas)))
    return rows


def detection(metrics: list[str], steps: int) -> None:
    """Per start, each metric's oriented deltas; then, per profile, on how many starts each
    metric detects and the median of its last delta, since the paper's rule counts any
    negative delta, however small (a ruler moving by 1e-9 "detects")."""
    results: dict[str, dict[str, list[tuple[bool | None, float]]]] = {}
    for profile, options in profiles():
        by_metric = results.setdefault(profile, {name: [] for name in metrics})
        for start in STARTS:
            rows = verdicts(start, options, steps, metrics)
            _setup.print_table(
                f"profile {profile}, start {start.name}: oriented deltas (negative = worse)",
                ["metric", "family", *(f"Δ{s}" for s in CHECKPOINTS if s <= steps), "detects"],
                [[name, "ours" if name in RULERS else "pyiqa", *deltas,
                  {True: "yes", False: "no", None: "?"}[detects]]
                 for name, deltas, detects in rows])
            for name, deltas, detects in rows:
                by_metric[name].append((detects, deltas[-1] if deltas else math.nan))
    print(f"\nDetects on how many of the {len(STARTS)} bundled starts ({steps} steps), and the "
          "median last oriented delta (negative = worse):\n")
    print("| profile | " + " | ".join(f"{m} (ours)" if m in RULERS else m for m in metrics)
          + " |")
    print("|---|" + "---:|" * len(metrics))
    for profile, by_metric in results.items():
        print(f"| {profile} | " + " | ".join(_cell(by_metric[m]) for m in metrics) + " |")


def _cell(outcomes: list[tuple[bool | None, float]]) -> str:
    detected = sum(bool(detects) for detects, _ in outcomes)
    last = [delta for _, delta in outcomes if math.isfinite(delta)]
    median = f"{statistics.median(last):.2g}" if last else "n/a"
    return f"{detected}/{len(outcomes)} ({median})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metrics", default="rulers,classics",
                        help="metric names or presets, as the CLI takes them")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--skip-detect", action="store_true")
    args = parser.parse_args()
    metrics = expand_metric_names(args.metrics)
    check_metric_names(metrics)
    print(_setup.describe_machine())
    if not args.skip_speed:
        _setup.print_table(
            f"seconds per {FRAME_SIDE} x {FRAME_SIDE} frame, one thread, {args.repeats} calls; "
            "goal for a ruler: <= 0.1 CPU s",
            ["metric", "family", "CPU s (median)", "CPU s (best)", "wall s (median)",
             "ruler within goal"],
            seconds_per_frame(metrics, args.repeats))
    if not args.skip_detect:
        detection(metrics, args.steps)


if __name__ == "__main__":
    main()
