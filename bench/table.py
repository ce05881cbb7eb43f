"""How the dataset table scales: chains per minute with 1 worker, 2 workers and a local Ray
(2 CPUs), in one run on the same chains, as ratios to 1 worker.

The chains are small on purpose (so this finishes in a few minutes on a laptop): `--chains`
chains of `--frames` frames at `--size` px, noise piling up step by step, scored with the four
CPU metrics plus fidelity (psnr, ssim). Wall time counts everything a user waits for: starting
the workers (spawned processes import torch and pyiqa; Ray also starts its own services),
creating the metrics once per worker, scoring, and writing the outputs after each chain.
On a machine shared with other work the numbers move by 10 % or more between runs.

    .venv/bin/python bench/table.py [--chains 6] [--frames 8] [--size 192]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import threading
import time
from pathlib import Path

import _setup
import numpy as np
from PIL import Image

from banana_space.scores.catalog import CPU_DEFAULTS
from banana_space.table import find_chains, run_table


def make_chains(root: Path, chains: int, frames: int, size: int) -> None:
    base = np.asarray(_setup.photo(size), dtype=float)
    for chain in range(chains):
        folder = root / f"chain_{chain}"
        folder.mkdir(parents=True)
        rng = np.random.default_rng(chain)
        pixels = base.copy()
        for step in range(frames):
            Image.fromarray(pixels.astype(np.uint8)).save(folder / f"{step}.png")
            pixels = np.clip(pixels + rng.normal(0, 6, pixels.shape), 0, 255)


def timed(root: Path, out: Path, workers: int, ray: bool) -> tuple[float, str]:
    refs = find_chains([str(root)])
    started = time.perf_counter()
    assert run_table(refs, CPU_DEFAULTS, out, workers=workers, ray=ray,
                     stop=threading.Event())
    return time.perf_counter() - started, (out / "table.csv").read_text()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chains", type=int, default=6)
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--size", type=int, default=192)
    args = parser.parse_args()
    print(_setup.describe_machine())
    work = Path(tempfile.mkdtemp(prefix="bench-table-"))
    try:
        make_chains(work / "chains", args.chains, args.frames, args.size)
        rows, tables = [], []
        for label, workers, ray in (("1 worker", 1, False), ("2 workers", 2, False),
                                    ("local Ray, 2 CPUs", 2, True)):
            seconds, table = timed(work / "chains", work / label.replace(" ", "_"), workers,
                                   ray)
            tables.append(table)
            rows.append([label, seconds, 60 * args.chains / seconds])
            print(f"{label}: {seconds:.1f} s", flush=True)
        base = rows[0][2]
        _setup.print_table(
            f"{args.chains} chains x {args.frames} frames at {args.size} px, metrics "
            f"{', '.join(CPU_DEFAULTS)} + psnr, ssim",
            ["driver", "wall s", "chains/min", "vs 1 worker"],
            [[*row, row[2] / base] for row in rows])
        print("same table.csv from every driver:", len(set(tables)) == 1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
