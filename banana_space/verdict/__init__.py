"""The verdict wing: the paper's arithmetic and what it shows, all pure (no pyiqa, no disk).

`analysis` holds Δ from step 1, the paper's test and ours beyond a noise floor, and a run's
`History`; `floors` the noise floors measured on chains with no damage (`floors.csv`);
`plots` a history as plotly figures; `conditions` a start against the paper's conditions;
`magnifier` the crop where a copy differs most from its input.
"""

__all__ = ["analysis", "conditions", "floors", "magnifier", "plots"]
