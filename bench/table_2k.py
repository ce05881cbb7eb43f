"""The dataset table on 2K chains: frames per second with the CPU classics, the engine as
before issue 35 (issue 12's equivalents only: entropy, ssim in 128² tiles) against the engine
now, in one run on the same chains (issue 35's goal).

`--chains` chains of `--frames` frames at `--size` px (a real photo, noise piling up step by
step, as bench/table.py makes them), scored by `run_table` with 1 worker: brisque, niqe, piqe,
entropy plus psnr and ssim. Wall time counts everything a user waits for: spawning the worker,
creating its metrics, scoring, writing the outputs after each chain. The worker is a spawned
process, which imports this script as `__mp_main__`: the "before" way reaches it through the
environment variable below, read at import (the worker says so on stderr). The tables of both
ways must agree to 1e-6 relative. On a machine shared with other work the numbers move by 10 %
or more between runs; the load average is on each row.

    .venv/bin/python bench/table_2k.py [--chains 2] [--frames 4] [--size 2048]
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path

import _setup

BEFORE = "BANANA_BENCH_BEFORE_ISSUE_35"
if os.environ.get(BEFORE) == "1":
    _setup.use_equivalents_before_issue_35()
    if __name__ == "__mp_main__":  # the table's worker: proof that the "before" way reached it
        from banana_space.scores import equivalents

        print(f"worker {os.getpid()}: equivalents as before issue 35: "
              f"{', '.join(sorted(equivalents.EQUIVALENTS))}", file=sys.stderr, flush=True)

from table import make_chains, timed  # noqa: E402  (bench/table.py, after the set-up above)

from banana_space.scores.catalog import CPU_DEFAULTS  # noqa: E402


def same_tables(a: str, b: str) -> bool:
    """Equal cell by cell, numbers to 1e-6 relative (ssim's two routes round differently)."""
    rows_a, rows_b = (list(csv.reader(io.StringIO(text))) for text in (a, b))
    if [len(row) for row in rows_a] != [len(row) for row in rows_b]:
        return False
    for cell_a, cell_b in zip((c for row in rows_a for c in row),
                              (c for row in rows_b for c in row), strict=True):
        try:
            x, y = float(cell_a), float(cell_b)
        except ValueError:
            if cell_a != cell_b:
                return False
            continue
        if not math.isclose(x, y, rel_tol=1e-6) and not (math.isnan(x) and math.isnan(y)):
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--frames", type=int, default=4)
    parser.add_argument("--size", type=int, default=2048)
    args = parser.parse_args()
    print(_setup.describe_machine())
    work = Path(tempfile.mkdtemp(prefix="bench-table-2k-"))
    frames = args.chains * args.frames
    try:
        make_chains(work / "chains", args.chains, args.frames, args.size)
        rows, tables = [], []
        for label, before in (("engine before issue 35", True), ("engine", False)):
            os.environ[BEFORE] = "1" if before else "0"
            load = os.getloadavg()[0]
            seconds, table = timed(work / "chains", work / ("before" if before else "now"),
                                   1, False)
            tables.append(table)
            rows.append([label, seconds, frames / seconds,
                         f"{load:.1f} → {os.getloadavg()[0]:.1f}"])
            print(f"{label}: {seconds:.1f} s", flush=True)
        _setup.print_table(
            f"{args.chains} chains x {args.frames} frames at {args.size} px, 1 worker, metrics "
            f"{', '.join(CPU_DEFAULTS)} + psnr, ssim",
            ["way", "wall s", "frames/s", "load (1 min)", "frames/s vs before"],
            [[*row, row[2] / rows[0][2]] for row in rows])
        print("same table.csv from both ways (1e-6 relative):", same_tables(*tables))
    finally:
        os.environ.pop(BEFORE, None)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
