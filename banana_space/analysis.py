"""The paper's arithmetic, as pure functions: oriented deltas, normalisation, verdicts.

Banana100 (arXiv 2604.03400), Sec. 4: a metric *detects* degradation when its score change
against the input, oriented so that negative means worse, is negative at steps 5, 10 and 20.
With fewer steps, the checkpoints that exist are used (and the last step when none of them
does). A missing score (NaN) is missing: it never counts as a pass.

Beside the paper's verdict: `detects_robust`, the same test against a noise floor (`floors.py`),
and the trend from the first copy (`worse_after_first`, `spearman` over steps 1..N), since a
"fooled" verdict can come from step 0 -> 1 alone (a smooth start that one dose of static makes
look "natural") while the metric gets worse with every copy after it (issue 23).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

from .catalog import ScoreInfo
from .floors import floor_of

CHECKPOINTS = (5, 10, 20)
# Each checkpoint's column, generated from the table above: the field name in the CSVs and in
# JSON ("delta_5"), and the header a person reads ("Δ5").
CHECKPOINT_FIELDS = tuple(f"delta_{step}" for step in CHECKPOINTS)
CHECKPOINT_HEADERS = tuple(f"Δ{step}" for step in CHECKPOINTS)
REFERENCE_METRIC = "psnr"  # the fidelity line every metric is rank-correlated with
PROVISIONAL = " so far"  # after a verdict word while the paper's last checkpoint is ahead
# One metric's verdict as verdict.csv (and the table's verdicts.csv, after its chain) writes it.
VERDICT_FIELDS = ("metric", *CHECKPOINT_FIELDS, "detects", "detects_robust", "spearman_vs_psnr",
                  "spearman_from_first", "worse_after_first")


@dataclass(frozen=True)
class _Words:
    plain: str  # the files (verdict.csv, verdicts.csv) and the API: "yes"
    terse: str  # the CLI's fixed-width summary: "?" for undecided
    word: str  # a legend or a report: "detects"
    page: str  # the page's verdict column: "✅ detects"
    page_robust: str  # the page's "beyond floor" column: "❌ no"
    code: int  # the heat map's cell: 1 detects, -1 fooled, 0 undecided


class Verdict(Enum):
    """The paper's three outcomes for one metric (Banana100, Sec. 4) and the words every
    surface writes for them; `Verdict(value)` reads the True/False/None that
    `detects_degradation`, `detects_robust` and `worse_after_first` return."""

    DETECTS = True
    FOOLED = False
    UNDECIDED = None

    @property
    def words(self) -> _Words:
        return _VERDICT_WORDS[self]

    def on_page(self, provisional: bool = False, robust: bool = False) -> str:
        """The page's words for this verdict.

        Args:
            provisional: the run has not reached the paper's last checkpoint yet: a decided
                verdict says " so far" (an undecided one says nothing more).
            robust: the "beyond floor" column's words ("❌ no", "…") instead of the paper's
                ("❌ fooled", "… undecided").

        Returns:
            e.g. "✅ detects", "❌ fooled so far", "… undecided".
        """
        word = self.words.page_robust if robust else self.words.page
        return word + (PROVISIONAL if provisional and self is not Verdict.UNDECIDED else "")


_VERDICT_WORDS = {
    Verdict.DETECTS: _Words("yes", "yes", "detects", "✅ detects", "✅ detects", 1),
    Verdict.FOOLED: _Words("no", "no", "fooled", "❌ fooled", "❌ no", -1),
    Verdict.UNDECIDED: _Words("undecided", "?", "undecided", "… undecided", "…", 0),
}


def plain_verdict(value: bool | None) -> str:
    """The word the files and the API write for a verdict.

    Args:
        value: True (detects), False (fooled) or None (undecided).

    Returns:
        "yes", "no" or "undecided".
    """
    return Verdict(value).words.plain


def oriented_deltas(scores: Sequence[float], lower_better: bool) -> list[float]:
    """The paper's oriented Δ (Sec. 4): delta_i = score_i - score_0, sign flipped for
    lower-is-better, so that negative always means worse.

    Args:
        scores: one score per step, step 0 first (NaN where missing).
        lower_better: the metric's orientation (pyiqa's `lower_better`).
    Returns:
        One Δ per step (Δ_0 = 0; NaN where either score is missing).
    """
    if not scores:
        return []
    sign = -1.0 if lower_better else 1.0
    return [sign * (score - scores[0]) + 0.0 for score in scores]  # + 0.0: no "-0.0"


def normalised(deltas: Sequence[float]) -> list[float]:
    """Each curve divided by its largest |delta| so far, so it spans -1..1; 0 stays
    "unchanged" and the sign stays "better/worse". The fallback for a score with no range."""
    finite = [abs(d) for d in deltas if math.isfinite(d)]
    scale = max(finite, default=0.0)
    return [d / scale if scale > 0 and math.isfinite(d) else (0.0 if d == 0 else math.nan)
            for d in deltas]


def range_scaled(scores: Sequence[float], info: ScoreInfo) -> list[float] | None:
    """Oriented deltas as a share of the score's nominal range (pyiqa's `score_range`), so a
    move within a metric's noise stays small on the shared axis and a large move looks large;
    None when the score has no range (then `normalised` is the fallback).

    A fidelity score is first held inside its range: frame 0 against itself is "identical",
    which pyiqa writes as a cap far above the range (PSNR 80 dB, its range tops at ~40), so
    that its first copy does not seem to lose half the axis at step 1."""
    if info.score_range is None:
        return None
    low, high = info.score_range
    return [d / (high - low) for d in oriented_deltas(anchored(scores, info), info.lower_better)]


def anchored(scores: Sequence[float], info: ScoreInfo) -> list[float]:
    """A fidelity series held inside its range, so that its Δ is measured from a sane anchor:
    frame 0 against itself is "identical", which pyiqa writes as a cap far above the range
    (PSNR 80 dB; its range tops at 40 dB), and a Δ from the cap says more about the cap than
    about the copy. Any other score, or one without a range, is returned as it is."""
    if info.role != "fidelity" or info.score_range is None:
        return list(scores)
    low, high = info.score_range
    return [min(max(s, low), high) if math.isfinite(s) else s for s in scores]


def checkpoints(last_step: int) -> tuple[int, ...]:
    """The paper's checkpoints (5, 10, 20) a run of `last_step` steps has reached; a shorter
    run uses its last step as its one checkpoint (none before step 1)."""
    present = tuple(s for s in CHECKPOINTS if s <= last_step)
    return present or ((last_step,) if last_step >= 1 else ())


def detects_degradation(deltas: Sequence[float]) -> bool | None:
    """The paper's test (Sec. 4): a metric *detects* the damage if its oriented Δ is negative
    at steps 5, 10 and 20.

    Args:
        deltas: oriented Δ per step (`oriented_deltas`), step 0 first.
    Returns:
        True: every checkpoint's Δ is negative. False: one is zero or positive. None: not
        decidable (no step yet, or a checkpoint is missing and none says False).
    """
    steps = checkpoints(len(deltas) - 1)
    if not steps:
        return None
    values = [deltas[s] for s in steps]
    if any(math.isfinite(v) and v >= 0 for v in values):
        return False
    if all(math.isfinite(v) for v in values):
        return True
    return None


def detects_robust(deltas: Sequence[float], floor: float | None) -> bool | None:
    """The paper's checkpoints, with a noise floor: True when every checkpoint's oriented
    delta is below -floor (worse by more than the score moves on nuisance chains), False
    when a finite one is not, None when undecidable (no floor measured, no step yet, or a
    checkpoint missing and none says False).

    Args:
        deltas: oriented deltas by step (negative = worse), step 0 first.
        floor: the score's floor from `floors.floor_of`, >= 0, or None.
    """
    steps = checkpoints(len(deltas) - 1)
    if floor is None or not steps:
        return None
    values = [deltas[s] for s in steps]
    if any(math.isfinite(v) and v >= -floor for v in values):
        return False
    if all(math.isfinite(v) for v in values):
        return True
    return None


def worse_after_first(deltas: Sequence[float]) -> bool | None:
    """The paper's test with the first copy as the reference instead of the input: True when
    every checkpoint is worse than step 1, False when a finite one is not, None when
    undecidable (no checkpoint after step 1 yet, or step 1 or a checkpoint missing)."""
    steps = [s for s in checkpoints(len(deltas) - 1) if s > 1]
    if not steps or not math.isfinite(deltas[1]):
        return None
    return detects_degradation([0.0, *(deltas[s] - deltas[1] if s in steps else math.nan
                                       for s in range(1, max(steps) + 1))])


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation over the steps where both are finite (NaN below 3): the
    Pearson correlation of their average ranks, as scipy's `spearmanr` defines it, without
    its per-call overhead (it runs for every metric on every streamed update)."""
    from scipy.stats import rankdata

    n = min(len(a), len(b))
    x, y = np.asarray(a[:n], dtype=float), np.asarray(b[:n], dtype=float)
    both = np.isfinite(x) & np.isfinite(y)
    x, y = x[both], y[both]
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(np.corrcoef(rankdata(x), rankdata(y))[0, 1])


@dataclass(frozen=True)
class VerdictRow:
    metric: str
    role: str
    at_checkpoints: tuple[float, ...]  # the oriented delta at each of CHECKPOINTS, in order
    detects: bool | None
    spearman_vs_psnr: float
    detects_robust: bool | None = None
    spearman_from_first: float = math.nan  # against PSNR over steps 1..N: the trend
    worse_after_first: bool | None = None  # every checkpoint worse than the first copy

    def delta_at(self, step: int) -> float:
        """The oriented delta at one of CHECKPOINTS (NaN where the run stops short of it)."""
        return self.at_checkpoints[CHECKPOINTS.index(step)]

    def checkpoint_fields(self) -> dict[str, float]:
        """{"delta_5": …, "delta_10": …, "delta_20": …}: the checkpoints as the files and the
        API name them."""
        return dict(zip(CHECKPOINT_FIELDS, self.at_checkpoints, strict=True))

    def record(self) -> list[object]:
        """The row's cells in VERDICT_FIELDS order, verdicts in their plain words."""
        return [self.metric, *self.at_checkpoints, plain_verdict(self.detects),
                plain_verdict(self.detects_robust), self.spearman_vs_psnr,
                self.spearman_from_first, plain_verdict(self.worse_after_first)]

    @property
    def fooled_by_first_step(self) -> bool:
        """"Fooled" only because of step 0 -> 1: from the first copy on it gets worse."""
        return self.detects is False and self.worse_after_first is True


class History:
    """All scores of one run so far: column name -> list indexed by step (NaN = missing)."""

    def __init__(self, infos: Sequence[ScoreInfo]) -> None:
        self.infos = {info.name: info for info in infos}
        self.scores: dict[str, list[float]] = {info.name: [] for info in infos}

    @property
    def last_step(self) -> int:
        return max((len(v) for v in self.scores.values()), default=0) - 1

    def add(self, step: int, scores: Mapping[str, float]) -> None:
        for name, series in self.scores.items():
            while len(series) <= step:
                series.append(math.nan)
            series[step] = float(scores.get(name, math.nan))

    def deltas(self, name: str) -> list[float]:
        """Oriented deltas; a fidelity column's from its anchor (`anchored`), in every output
        alike: the page, scores.csv and verdict.csv."""
        info = self.infos[name]
        return oriented_deltas(anchored(self.scores[name], info), info.lower_better)

    def verdict(self) -> list[VerdictRow]:
        reference = self.deltas(REFERENCE_METRIC) if REFERENCE_METRIC in self.scores else []
        rows = []
        for name, info in self.infos.items():
            deltas = self.deltas(name)
            at = tuple(deltas[s] if s < len(deltas) else math.nan for s in CHECKPOINTS)
            rows.append(VerdictRow(name, info.role, at,
                                   detects_degradation(deltas), spearman(deltas, reference),
                                   detects_robust(deltas, floor_of(name)),
                                   spearman(deltas[1:], reference[1:]),
                                   worse_after_first(deltas)))
        return rows
