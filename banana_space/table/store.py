"""The table's output folder: one resume file per scored chain, and the CSVs built from them.

    DIR/.chains/<chain>.json   each chain's scores as soon as it is done (the resume state)
    DIR/scores.csv             chain, step, metric, score
    DIR/verdicts.csv           chain, then `columns.VERDICT_FIELDS`: the paper's Δ from
                               step 1 at its checkpoints, detects, detects_robust, why a
                               verdict is undecided, the change since the input, …
    DIR/table.csv              metric, chains, detects, fooled, undecided: the paper's test
                               (Banana100, arXiv 2604.03400: Δ from step 1 < 0 at steps 5,
                               10 and 20) counted over chains, fidelity rows included; then
                               detects_robust (beyond the score's noise floor) and
                               worse_than_input (ours: every checkpoint worse than the input)
    DIR/report.html            see report.py

Every file is written whole under a temporary name and renamed into place
(`files.write_atomic`), so a table killed at any instant leaves complete files, and a rerun
with the same metrics scores only the chains that have no resume file yet. The verdict math is
`history.History`'s, the same as a single run's.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path

from ..events import ScoreInfo
from ..files import csv_bytes, write_atomic
from ..sources.frames import natural_key
from ..verdict.analysis import Verdict
from ..verdict.columns import VERDICT_FIELDS, file_cells
from ..verdict.history import History, VerdictRow
from ..votes.tally import PairTally, people_row
from .work import ChainResult

VERDICT_HEADER = ["chain", *VERDICT_FIELDS]
TABLE_HEADER = ["metric", "chains", "detects", "fooled", "undecided", "detects_robust",
                "worse_than_input"]


def resume_file(out: Path, name: str) -> Path:
    """A file name that is safe and unique for any chain name (hub paths, unicode, slashes)."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[-60:].lstrip(".")
    digest = hashlib.sha1(name.encode()).hexdigest()[:12]
    return out / ".chains" / f"{slug}-{digest}.json"


class TableStore:
    def __init__(self, out: Path, metrics: Iterable[str],
                 steps: Iterable[int] | None = None) -> None:
        self.out = Path(out)
        self.metrics = list(metrics)
        self.steps = None if steps is None else list(steps)  # None: every frame
        (self.out / ".chains").mkdir(parents=True, exist_ok=True)
        self.results: dict[str, ChainResult] = {}

    def load(self, names: Iterable[str]) -> list[str]:
        """Chains already scored with these metrics at these steps (and not broken): not
        scored again."""
        for name in names:
            file = resume_file(self.out, name)
            if not file.is_file():
                continue
            result = ChainResult(**json.loads(file.read_text()))
            if result.metrics == self.metrics and result.steps == self.steps \
                    and not result.error:
                self.results[name] = result
        return list(self.results)

    def add(self, result: ChainResult) -> None:
        write_atomic(resume_file(self.out, result.name), json.dumps(result.to_json()).encode())
        if not result.error:
            self.results[result.name] = result

    def histories(self) -> dict[str, History]:
        histories = {}
        for name in sorted(self.results, key=natural_key):  # the same order, however run
            result = self.results[name]
            history = History([ScoreInfo.from_record(column) for column in result.columns])
            for step in range(max(map(len, result.scores.values()), default=0)):
                history.add(step, {k: v[step] for k, v in result.scores.items()})
            histories[name] = history
        return histories

    def write(self) -> dict[str, list[VerdictRow]]:
        """scores.csv, verdicts.csv and table.csv from every chain done so far."""
        histories = self.histories()
        verdicts = {name: [*history.verdict(), *self._people(name, history)]
                    for name, history in histories.items()}
        score_rows = [[name, step, metric, score]
                      for name, history in histories.items()
                      for step in range(history.last_step + 1)
                      for metric, series in history.scores.items()
                      for score in (series[step],)]
        write_atomic(self.out / "scores.csv",
                     csv_bytes(["chain", "step", "metric", "score"], score_rows))
        verdict_rows = [[name, *file_cells(r)] for name, rows in verdicts.items() for r in rows]
        write_atomic(self.out / "verdicts.csv", csv_bytes(VERDICT_HEADER, verdict_rows))
        write_atomic(self.out / "table.csv", csv_bytes(TABLE_HEADER, table_rows(verdicts)))
        return verdicts

    def _people(self, name: str, history: History) -> list[VerdictRow]:
        """The people row of a chain people voted on (a run directory), or none."""
        pairs = [PairTally(*votes) for votes in self.results[name].votes]
        people = people_row(pairs, history.last_step)
        return [people] if people is not None else []

    def infos(self) -> dict[str, ScoreInfo]:
        """Every column seen, in the chains' column order (fidelity first)."""
        seen: dict[str, ScoreInfo] = {}
        for result in self.results.values():
            for column in result.columns:
                seen.setdefault(column["name"], ScoreInfo.from_record(column))
        return seen


def table_rows(verdicts: dict[str, list[VerdictRow]]) -> list[list[object]]:
    """Per metric, over chains: how many it detected the degradation in, was fooled by, or
    could not decide (no step 1, a missing checkpoint score); then in how many it detected it
    beyond its noise floor, and in how many every checkpoint was worse than the input."""
    counts: dict[str, list[int]] = {}
    for rows in verdicts.values():
        for row in rows:
            tally = counts.setdefault(row.metric, [0] * 6)
            tally[0] += 1
            tally[1 + list(Verdict).index(Verdict(row.detects))] += 1  # detects, fooled, undecided
            tally[4] += row.detects_robust is True
            tally[5] += row.worse_than_input is True
    return [[metric, *tally] for metric, tally in counts.items()]
