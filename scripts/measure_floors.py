"""Measure each score's noise floor on the nuisance chains and write banana_space/floors.csv.

A score's floor is the largest |oriented Δ| it shows at any scored step of any nuisance chain
(`simulate` profiles of kind "nuisance": an identical copy, a ±0.5 px shift, a lossless PNG
re-save, one JPEG pass at quality 95) on the clean starts, at full size. `detects_robust`
(banana_space/analysis.py) then asks every checkpoint to be worse by more than that. The runs
are made by scripts/suite_runs.py (kept under docs/detection_runs/, the same runs the rulers'
table counts false alarms on); missing ones are made first.

    .venv/bin/python scripts/measure_floors.py [--starts clean-dunes,...] [--steps 20]

Only no-reference scores get a floor: PSNR and SSIM compare with frame 0 and are built to see a
half-pixel shift (it costs the clean starts 15-33 dB of PSNR), so a floor from these chains
would say nothing about them; their robust verdict stays undecided.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

import suite_runs

from banana_space.backends.simulate import profiles_of_kind
from banana_space.floors import FLOORS_CSV


def floors(runs: Path, jobs: list[suite_runs.Job]) -> list[list[object]]:
    """Per no-reference score: [metric, floor, the run and step that set it]."""
    largest: dict[str, tuple[float, str]] = {}
    for job in jobs:
        _, history = suite_runs.read(runs, job)
        for name, info in history.infos.items():
            if info.role != "metric":
                continue
            for step, delta in enumerate(history.deltas(name)[1:], 1):
                if math.isfinite(delta) and abs(delta) >= largest.get(name, (-1.0, ""))[0]:
                    largest[name] = (abs(delta), f"{job.name} step {step}")
    return [[name, f"{floor:.6g}", where] for name, (floor, where) in largest.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", default=",".join(suite_runs.CLEAN_STARTS))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--side", type=int, default=1024, help="longest side, px")
    parser.add_argument("--runs", type=Path, default=suite_runs.RUNS)
    parser.add_argument("--out", type=Path, default=FLOORS_CSV)
    args = parser.parse_args()
    jobs = suite_runs.jobs_for(profiles_of_kind("nuisance"), args.starts.split(","),
                               args.steps, args.side)
    suite_runs.run_all(jobs, args.runs)
    rows = floors(args.runs, jobs)
    with args.out.open("w", newline="") as handle:
        csv.writer(handle).writerows([["metric", "floor", "set_by"], *rows])
    csv.writer(sys.stdout).writerows(rows)


if __name__ == "__main__":
    main()
