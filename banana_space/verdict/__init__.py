"""The verdict wing: the paper's arithmetic and what it shows, all pure (no pyiqa, no disk).

`analysis` holds Δ from step 1, the paper's test and ours beyond a noise floor, in numbers and
words; `history` a run's scores so far and each score's verdict row; `columns` the verdict's
one column table, which every surface reads (the files, the API, the page's table, the A/B
table, the CLI); `floors` the noise floors measured on chains with no damage (`floors.csv`);
`plots` a history as plotly figures; `conditions` a start against the paper's conditions;
`magnifier` the crop where a copy differs most from its input.
"""

__all__ = ["analysis", "columns", "conditions", "floors", "history", "magnifier", "plots"]
