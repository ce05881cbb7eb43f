"""The room's votes: people's own eyes as a reference line beside the metrics.

- `tally`: pure arithmetic: the last vote per voter and pair, the share who preferred the
  earlier step with its 95 % Wilson interval, and the people row of the verdict (the paper's
  test read from the votes).
- `ledger`: a run's votes.csv, append-only, written whole and renamed into place, the voter
  only a keyed hash; verdict.csv rewritten with the people row after each vote.
- `plot`: the people line on the curves chart.
- `report`: what `banana-space votes RUN [--json]` prints.
"""

from .ledger import Ledger
from .tally import MIN_VOTES, PairTally, Vote, people_row, tally, wilson

__all__ = ["MIN_VOTES", "Ledger", "PairTally", "Vote", "people_row", "tally", "wilson"]
