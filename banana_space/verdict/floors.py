"""Noise floors: how far each score moves on chains with no damage a person would name.

A verdict that fires on float noise is not a detection. Each score's floor is the largest |oriented
Δ| from step 1 (the paper's base, `analysis.FIRST_COPY`) it shows at any scored step of the
*nuisance chains* (the `simulate` profiles of kind "nuisance") run on the bundled clean starts;
`floor_since_input` is the same from step 0, the input, for a check of one edit against its original
(`gate.py`). `scripts/measure_floors.py` measures both and writes `floors.csv` beside this file
(with the run and step that set each floor); nothing here is typed by hand. A score with no measured
floor (fidelity, which compares with frame 0 and is built to see a shift; a plug-in, a judge, a deep
metric that could not load where the floors were measured) has none: its robust verdict is
undecided. The committed `floors.csv` was measured on the four nuisances that repeat a frame (an
identical copy, a ±0.5 px shift, a lossless re-save, a mild JPEG re-encode), before the four
that draw afresh at every step existed; a rerun of the script measures all eight.
"""

from __future__ import annotations

import csv
import math
from functools import cache
from pathlib import Path

FLOORS_CSV = Path(__file__).with_name("floors.csv")


FROM_FIRST_COPY, FROM_INPUT = "floor", "floor_since_input"  # floors.csv's two columns


@cache
def floors(column: str = FROM_FIRST_COPY) -> dict[str, float]:
    """Score name -> its floor (same units as its oriented Δ), from `floors.csv`.

    Args:
        column: FROM_FIRST_COPY (Δ from step 1, the robust verdict's) or FROM_INPUT (the
            change since the input, the gate's).

    Returns:
        An empty dict when the file has not been generated yet."""
    if not FLOORS_CSV.exists():
        return {}
    with FLOORS_CSV.open(newline="") as handle:
        return {row["metric"]: float(row[column]) for row in csv.DictReader(handle)
                if math.isfinite(float(row[column]))}


def floor_of(name: str) -> float | None:
    """The floor of one score column's Δ from step 1, or None when none was measured."""
    return floors().get(name)


def floor_since_input(name: str) -> float | None:
    """The floor of one score column's change since the input, or None when none was
    measured."""
    return floors(FROM_INPUT).get(name)
