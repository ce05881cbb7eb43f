"""The replication-decay leaderboard: which quality scores notice iterative editing damage, on
which artifacts, and how often they cry wolf.

    banana-space leaderboard --out DIR [--workers N] [--ray [ADDR]] [--add SOURCE]...

`make` makes the suite (`suite`: every simulate profile on the clean starts, plus any real
chains added), scores it with the table (the same engine, workers and optional Ray), ranks every
entrant (`rank`: every pyiqa no-reference metric that loads here, our rulers, plug-ins; deep
metrics that cannot load are listed as unavailable; what each column holds is `columns`') and
writes `leaderboard.csv`, `artifacts.csv`, `leaderboard.html`, one picture per chain (`chains/`,
the magnifier's crop of frame 0 and the last frame), `suite.json` (the suite, the machine, the
time it took) and two checks of the suite itself: `nuisances.csv` (PSNR's Δ from step 1 on
every nuisance chain: not 0, or the chain could raise no false alarm) and `colour_floors.csv`
(our colour rulers on luma-only damage, beside their noise floors); `report` writes the HTML
page and the chains' pictures.
"""

from .make import chain_kinds, run_leaderboard
from .suite import Suite

__all__ = ["Suite", "chain_kinds", "run_leaderboard"]
