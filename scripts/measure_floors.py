"""Measure each score's noise floor on the nuisance chains and write
banana_space/verdict/floors.csv.

A score's floor is the largest |oriented Δ| from step 1 (the paper's base) it shows at any scored
step of any nuisance chain (`simulate` profiles of kind "nuisance": an identical copy, a ±0.5 px
shift, a lossless PNG re-save, one JPEG pass at quality 95, and those drawn afresh at every step: a
sub-pixel shift, JPEG at quality 90-98, a resampling round trip, a ±1 % exposure change) on the
clean starts, at full size. `detects_degradation` with that floor (banana_space/verdict/analysis.py,
the robust verdict) then asks every checkpoint to be worse by more than that. The same from step 0,
the input, is `floor_since_input`: the gate's, which checks one edit against its original
(banana_space/gate.py). The runs are made by scripts/suite_runs.py (kept under docs/detection_runs/,
the same runs the rulers' table counts false alarms on); missing ones are made first.

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
from banana_space.scores.rulers import RULERS
from banana_space.verdict.floors import FLOORS_CSV


def largest_moves(runs: Path, jobs: list[suite_runs.Job],
                  since_input: bool) -> dict[str, tuple[float, str]]:
    """Per no-reference score: its largest |oriented Δ| over the jobs' steps after the base,
    and the run and step that set it; from step 1 (the paper's base), or from the input."""
    largest: dict[str, tuple[float, str]] = {}
    for job in jobs:
        _, history = suite_runs.read(runs, job)
        for name, info in history.infos.items():
            if info.role != "metric":
                continue
            deltas = history.since_input(name) if since_input else history.deltas(name)
            for step, delta in enumerate(deltas):
                if math.isfinite(delta) and abs(delta) >= largest.get(name, (-1.0, ""))[0]:
                    largest[name] = (abs(delta), f"{job.name} step {step}")
    return largest


def at_least_one_step(moves: dict[str, tuple[float, str]], side: int
                      ) -> dict[str, tuple[float, str]]:
    """A quantised ruler that never moved on the nuisance chains still cannot tell a change
    smaller than its own step (`Ruler.least_step`): that is its floor then."""
    raised = dict(moves)
    for name, (move, _) in moves.items():
        ruler = RULERS.get(name)
        if ruler is not None and ruler.least_step is not None:
            step = ruler.least_step(side)
            if move < step:
                raised[name] = (step, f"one step of the ruler at {side} px (it never moved)")
    return raised


def floors(runs: Path, jobs: list[suite_runs.Job]) -> list[list[object]]:
    """Per no-reference score: [metric, floor, where, floor_since_input, where]."""
    side = max(job.side for job in jobs)
    first = at_least_one_step(largest_moves(runs, jobs, False), side)
    since = at_least_one_step(largest_moves(runs, jobs, True), side)
    return [[name, f"{first[name][0]:.6g}", first[name][1], f"{since[name][0]:.6g}",
             since[name][1]] for name in since if name in first]


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
        csv.writer(handle).writerows([["metric", "floor", "set_by", "floor_since_input",
                                       "set_by_since_input"], *rows])
    csv.writer(sys.stdout).writerows(rows)


if __name__ == "__main__":
    main()
