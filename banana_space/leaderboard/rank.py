"""Ranking the entries from the table's verdicts: pure functions of (chain -> its kind and
artifact) and (chain -> verdict rows).

Per entry: the detection rate on damage chains by the paper's verdict (Banana100, arXiv 2604.03400:
the oriented Δ from step 1, the first copy, negative at steps 5, 10 and 20) and by the robust one
(ours: worse than the score's noise floor, `floors.py`); the false-alarm rate on nuisance chains by
the paper's verdict (the robust one cannot be asked there: the floors are measured on those very
chains); the mean Spearman ρ against PSNR on damage chains. An undecided verdict counts as not
detected. Per artifact: which entries catch it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..analysis import VerdictRow
from .suite import DAMAGE_KINDS

LEADERBOARD_HEADER = ["metric", "family", "detect_rate", "detect_rate_robust",
                      "false_alarm_rate", "rho_mean", "seconds_per_frame", "label",
                      "fooled_on", "detects_on", "unavailable"]
ARTIFACT_HEADER = ["artifact", "kind", "metric", "family", "chains", "detect_rate",
                   "detect_rate_robust"]


@dataclass(frozen=True)
class ChainKind:
    artifact: str  # the profile's name, or the real source's
    kind: str  # "damage" | "control" | "nuisance" | "real"


@dataclass(frozen=True)
class Entry:
    """One score on the board: what `catalog.metric_info` says of it."""

    metric: str
    family: str
    label: str
    unavailable: str = ""  # why it could not be scored here


def _rate(values: Sequence[bool | None]) -> float | None:
    return round(sum(v is True for v in values) / len(values), 4) if values else None


def _mean(values: Sequence[float]) -> float | None:
    finite = [v for v in values if math.isfinite(v)]
    return round(sum(finite) / len(finite), 4) if finite else None


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _rows_of(metric: str, verdicts: Mapping[str, Sequence[VerdictRow]],
             chains: Mapping[str, ChainKind], kinds: Sequence[str]) -> list[tuple[str, VerdictRow]]:
    return [(name, row) for name, rows in verdicts.items() if chains[name].kind in kinds
            for row in rows if row.metric == metric]


def leaderboard_rows(entries: Sequence[Entry], verdicts: Mapping[str, Sequence[VerdictRow]],
                     chains: Mapping[str, ChainKind],
                     seconds: Mapping[str, float]) -> list[list[object]]:
    """One row per entry (LEADERBOARD_HEADER), best first: robust detection rate, then the
    paper's, then fewest false alarms; unavailable entries last, their numbers blank."""
    rows = []
    for entry in entries:
        damage = _rows_of(entry.metric, verdicts, chains, DAMAGE_KINDS)
        nuisance = _rows_of(entry.metric, verdicts, chains, ("nuisance",))
        robust = [row.detects_robust for _, row in damage]
        fooled = next((name for name, row in damage if row.detects is False), "")
        caught = next((name for name, row in damage if row.detects is True), "")
        rows.append([entry.metric, entry.family, _rate([r.detects for _, r in damage]),
                     None if all(r is None for r in robust) else _rate(robust),
                     _rate([r.detects for _, r in nuisance]),
                     _mean([r.spearman_vs_psnr for _, r in damage]),
                     _rounded(seconds.get(entry.metric)), entry.label, fooled, caught,
                     entry.unavailable])

    def order(row: list[object]) -> tuple:
        return (bool(row[-1]), -(row[3] or 0.0), -(row[2] or 0.0),
                row[4] if row[4] is not None else 1.0, row[0])

    return sorted(rows, key=order)


def artifact_rows(entries: Sequence[Entry], verdicts: Mapping[str, Sequence[VerdictRow]],
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
            robust = [row.detects_robust for row in found]
            rows.append([artifact, kind, entry.metric, entry.family, len(found),
                         _rate([row.detects for row in found]),
                         None if all(r is None for r in robust) else _rate(robust)])
    return rows
