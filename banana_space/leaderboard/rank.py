"""Ranking the entrants from the table's verdicts: pure functions of (chain -> its kind and
artifact) and (chain -> verdict rows). What each column of the board holds is
`columns.COLUMNS`'; this module gathers each entrant's standing and orders the board.

Per entrant: the detection rate on damage chains by the paper's verdict (Banana100, arXiv
2604.03400: the oriented Δ from step 1, the first copy, negative at steps 5, 10 and 20) and by
the robust one (ours: worse than the score's noise floor, `floors.py`); the false-alarm rate on
nuisance chains by the paper's verdict (the robust one cannot be asked there: the floors are
measured on those very chains); the mean Spearman ρ against PSNR on damage chains. An undecided
verdict counts as not detected. Every rate carries its 95 % Wilson score interval (Wilson, JASA
1927), over chains, which it treats as independent draws: chains that share a start are not
quite, so read the interval as a lower bound on the uncertainty. A ruler a profile depends on by
design (`Profile.designed_with`: fitted with it, built from the measurements it reads, or built
to add what it measures) is marked on that profile's rows, with how: its rate there is not
independent evidence. Per artifact: which entries catch it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..verdict.history import VerdictRow
from .columns import (
    FIELDS,
    Entrant,
    Standing,
    board_record,
    interval,
    rate,
    rounded,
)
from .suite import DAMAGE_KINDS

LEADERBOARD_HEADER = FIELDS
ARTIFACT_HEADER = ["artifact", "kind", "metric", "family", "chains", "detect_rate",
                   "detect_rate_robust", "detect_rate_low", "detect_rate_high",
                   "detect_rate_robust_low", "detect_rate_robust_high", "design_dependence"]
DESIGN_NOTE = ("{artifact}'s profile depends on {metric} by design ({how}), so its rate here is "
               "not independent evidence")


@dataclass(frozen=True)
class ChainKind:
    artifact: str  # the profile's name, or the real source's
    kind: str  # "damage" | "control" | "nuisance" | "real"
    # the scores the artifact's profile depends on by design, each with how (`Profile`'s)
    designed_with: tuple[tuple[str, str], ...] = ()
    luma_only: bool = False  # the profile moves R, G and B alike: no colour of its own

    def design_dependence(self, metric: str) -> str:
        """How the artifact's profile depends on `metric` by design; "" where it does not."""
        return dict(self.designed_with).get(metric, "")


def _rows_of(metric: str, verdicts: Mapping[str, Sequence[VerdictRow]],
             chains: Mapping[str, ChainKind], kinds: Sequence[str]) -> list[tuple[str, VerdictRow]]:
    return [(name, row) for name, rows in verdicts.items() if chains[name].kind in kinds
            for row in rows if row.metric == metric]


def standing(entrant: Entrant, verdicts: Mapping[str, Sequence[VerdictRow]],
             chains: Mapping[str, ChainKind], seconds: Mapping[str, float]) -> Standing:
    """An entrant's verdict rows on the damage and nuisance chains, and its cost."""
    damage = _rows_of(entrant.metric, verdicts, chains, DAMAGE_KINDS)
    return Standing(entrant, damage, _rows_of(entrant.metric, verdicts, chains, ("nuisance",)),
                    {name: how for name, _ in damage
                     if (how := chains[name].design_dependence(entrant.metric))},
                    {name: kind.artifact for name, kind in chains.items()},
                    seconds.get(entrant.metric))


def leaderboard_rows(entrants: Sequence[Entrant], verdicts: Mapping[str, Sequence[VerdictRow]],
                     chains: Mapping[str, ChainKind],
                     seconds: Mapping[str, float]) -> list[list[object]]:
    """One row per entrant (LEADERBOARD_HEADER, the columns' table), best first: robust
    detection rate, then the paper's, then fewest false alarms; unavailable entrants last,
    their numbers blank."""
    rows = [board_record(standing(entrant, verdicts, chains, seconds)) for entrant in entrants]

    def order(row: dict[str, object]) -> tuple:
        alarms = row["false_alarm_rate"]
        return (bool(row["unavailable"]), -(row["detect_rate_robust"] or 0.0),
                -(row["detect_rate"] or 0.0), alarms if alarms is not None else 1.0,
                row["metric"])

    return [[row[name] for name in LEADERBOARD_HEADER] for row in sorted(rows, key=order)]


def artifact_rows(entries: Sequence[Entrant], verdicts: Mapping[str, Sequence[VerdictRow]],
                  chains: Mapping[str, ChainKind]) -> list[list[object]]:
    """Per artifact and entry (ARTIFACT_HEADER): on how many of its chains, at what rate, the
    entry says "worse" (for a nuisance artifact, that is a false alarm)."""
    artifacts = list(dict.fromkeys((c.artifact, c.kind) for name, c in chains.items()
                                   if name in verdicts))
    rows = []
    for artifact, kind in artifacts:
        names = [name for name, c in chains.items() if c.artifact == artifact and name in verdicts]
        for entry in entries:
            found = [row for name in names for row in verdicts[name] if row.metric == entry.metric]
            if not found:
                continue
            paper = [row.detects for row in found]
            robust = [row.detects_robust for row in found]
            robust = [] if all(r is None for r in robust) else robust
            how = chains[names[0]].design_dependence(entry.metric)  # one artifact, one profile
            rows.append([artifact, kind, entry.metric, entry.family, len(found), rate(paper),
                         rate(robust) if robust else None, *interval(paper),
                         *interval(robust),
                         DESIGN_NOTE.format(metric=entry.metric, artifact=artifact, how=how)
                         if how else ""])
    return rows


NUISANCE_HEADER = ["chain", "artifact", "psnr_delta_5", "psnr_delta_10", "psnr_delta_20"]
COLOUR_FLOOR_HEADER = ["artifact", "metric", "chains", "detects", "detects_robust",
                       "largest_move", "floor"]


def nuisance_rows(verdicts: Mapping[str, Sequence[VerdictRow]],
                  chains: Mapping[str, ChainKind]) -> list[list[object]]:
    """Per nuisance chain (NUISANCE_HEADER): PSNR's Δ from step 1 at the checkpoints. A chain
    whose copies are one frame repeated has 0 at each, and can raise no false alarm; the
    suite's nuisances must show otherwise."""
    return [[name, chains[name].artifact, *(rounded(d) for d in row.at_checkpoints)]
            for name, rows in verdicts.items() if chains[name].kind == "nuisance"
            for row in rows if row.metric == "psnr"]


def colour_floor_rows(verdicts: Mapping[str, Sequence[VerdictRow]],
                      chains: Mapping[str, ChainKind], colour_metrics: Sequence[str],
                      floors: Mapping[str, float]) -> list[list[object]]:
    """Per luma-only artifact and colour score (COLOUR_FLOOR_HEADER): damage with no colour of
    its own, read by a score of colour. A "detection" there is the paper's rule counting any
    negative Δ; the largest |Δ| at a checkpoint beside the score's noise floor says whether it
    is more than the score's own wobble."""
    rows = []
    for artifact in dict.fromkeys(c.artifact for c in chains.values() if c.luma_only):
        names = [name for name in verdicts if chains[name].artifact == artifact]
        for metric in colour_metrics:
            found = [row for name in names for row in verdicts[name] if row.metric == metric]
            if not found:
                continue
            moves = [abs(d) for row in found for d in row.at_checkpoints if math.isfinite(d)]
            rows.append([artifact, metric, len(found), sum(r.detects is True for r in found),
                         sum(r.detects_robust is True for r in found),
                         rounded(max(moves, default=math.nan)), floors.get(metric)])
    return rows
