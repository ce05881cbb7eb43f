"""A run's scores so far and their verdicts: `History` holds every score column by step and
reads the verdict of each (`VerdictRow`) by the paper's arithmetic (`analysis`): the paper's Δ
from step 1 at its checkpoints and its test, ours beyond the score's noise floor (`floors`),
the change since the input, and the rank correlation with fidelity.

`History.apply` is the one fold: the only place a run's events become its scores and its
steps' records (what steps.csv holds). The run's files (`store.rundir`), the page's view
(`view.RunView`), a comparison (`chain.comparison`) and the table (`table.work`) each keep a
`History` and read it; none reads a scored frame's event itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ..events import Event, FrameJudged, FrameScored, ScoreInfo, Started
from .analysis import (
    CHECKPOINTS,
    FIRST_COPY,
    INPUT,
    INPUT_CONTRASTS,
    REFERENCE_METRIC,
    checkpoints,
    detects_degradation,
    oriented_deltas,
    since_input,
    spearman,
    undecided_because,
)
from .floors import floor_of


@dataclass(frozen=True)
class VerdictRow:
    metric: str
    role: str
    at_checkpoints: tuple[float, ...]  # the paper's Δ (from step 1) at each of CHECKPOINTS
    detects: bool | None  # the paper's test
    spearman_vs_psnr: float  # the change since the input, ranked against PSNR's, steps 0..N
    detects_robust: bool | None = None
    spearman_from_first: float = math.nan  # the same over steps 1..N: the trend
    delta_since_input: float = math.nan  # the oriented change since the input, last step
    worse_than_input: bool | None = None  # every checkpoint worse than the input (ours)
    undecided_because: str = ""  # why `detects` is None ("" when it is decided)
    checkpoints_used: tuple[int, ...] = ()  # the steps both tests were read at (`checkpoints`)

    def delta_at(self, step: int) -> float:
        """The paper's Δ at one of CHECKPOINTS (NaN where the run stops short of it)."""
        return self.at_checkpoints[CHECKPOINTS.index(step)]

    @property
    def input_contrast(self) -> str:
        """Where the change since the input tells another story than the paper's Δ from the
        first copy, in words ("" where the two agree or either is undecided)."""
        return INPUT_CONTRASTS.get((self.detects, self.worse_than_input), "")


def _against_input(info: ScoreInfo, since: Sequence[float]) -> tuple[float, bool | None]:
    """The change since the input at the last step and `worse_than_input`; neither for
    fidelity, whose score at the input is the input against itself (pyiqa's cap), so its change
    since then says nothing its own score does not."""
    if info.role == "fidelity" or not since:
        return math.nan, None
    return since[-1], detects_degradation(since)


class StepRow(NamedTuple):
    """One scored step's record, as steps.csv holds it (`STEP_FIELDS`)."""

    step: int
    seconds_generate: float = 0.0
    seconds_score: float = 0.0
    calls: int = 0
    cost_usd: float | None = None
    model_text: str = ""  # what the generator said at this step
    judge_text: str = ""  # what the judges said about its frame

    @property
    def said(self) -> str:
        """What was said at this step: the generator's words, then the judges'."""
        return "\n".join(text for text in (self.model_text, self.judge_text) if text)


STEP_FIELDS = list(StepRow._fields)


class History:
    """All scores of one run so far: column name -> list indexed by step (NaN = missing), and
    each scored step's record (`steps`)."""

    def __init__(self, infos: Sequence[ScoreInfo],
                 steps: Mapping[int, StepRow] | None = None) -> None:
        self.infos = {info.name: info for info in infos}
        self.scores: dict[str, list[float]] = {info.name: [] for info in infos}
        self.steps: dict[int, StepRow] = dict(steps or {})

    def apply(self, event: Event) -> bool:
        """Fold one event of a run (`banana_space.events`) in: `Started` names the columns (a
        resumed run keeps the ones it had), `FrameScored` adds a frame's scores and its step's
        record, `FrameJudged` its judges' scores (its other scores kept) and what they said.
        Every other event leaves the scores as they are.

        Returns:
            Whether the scores changed.
        """
        if isinstance(event, Started):
            if not self.infos:
                self.infos = {info.name: info for info in event.infos}
                self.scores = {info.name: [] for info in event.infos}
            return False
        if isinstance(event, FrameScored):
            self.add(event.step, event.scores)
            self.steps[event.step] = StepRow(
                event.step, event.seconds_generate, event.seconds_score, event.calls,
                event.cost_usd, event.text, event.judge_text)
            return True
        if isinstance(event, FrameJudged):
            kept = {name: series[event.step] for name, series in self.scores.items()
                    if event.step < len(series)}
            self.add(event.step, {**kept, **event.scores})
            if event.step in self.steps:  # its FrameScored came first
                self.steps[event.step] = self.steps[event.step]._replace(
                    judge_text=event.judge_text)
            return True
        return False

    @property
    def calls(self) -> int:
        """The generator's calls over the scored steps."""
        return sum(row.calls for row in self.steps.values())

    @property
    def cost_usd(self) -> float:
        """What the generator's calls cost over the scored steps (USD; 0 where free)."""
        return sum(row.cost_usd or 0.0 for row in self.steps.values())

    @property
    def last_step(self) -> int:
        return max((len(v) for v in self.scores.values()), default=0) - 1

    def add(self, step: int, scores: Mapping[str, float]) -> None:
        for name, series in self.scores.items():
            while len(series) <= step:
                series.append(math.nan)
            series[step] = float(scores.get(name, math.nan))

    def deltas(self, name: str) -> list[float]:
        """The paper's oriented Δ from step 1, for every column alike (fidelity included:
        its score at step 1 is a measurement, not pyiqa's cap)."""
        return oriented_deltas(self.scores[name], self.infos[name].lower_better)

    def since_input(self, name: str) -> list[float]:
        """The oriented change since the input (`since_input`), as the curves draw it."""
        return since_input(self.scores[name], self.infos[name])

    @property
    def has_input(self) -> bool:
        """Whether step 0, the input, has a score (a real chain numbered from 1 with no start
        has no step 0: `runs.play_existing`)."""
        return any(series and math.isfinite(series[INPUT]) for series in self.scores.values())

    @property
    def drawn_from(self) -> str:
        """What the curves' change is measured from, in words."""
        return "input" if self.has_input else "step 1"

    def drawn(self, name: str) -> list[float]:
        """The oriented change the curves draw: since the input; in a run with no input, since
        step 1, the first copy, for every column alike (one base on one axis). There fidelity is
        measured against step 1 itself, which has no score of its own (no measurement), so its
        curve starts where an identical copy would be, the top of its range."""
        if self.has_input:
            return self.since_input(name)
        info, scores = self.infos[name], list(self.scores[name])
        if (info.role == "fidelity" and info.score_range is not None
                and len(scores) > FIRST_COPY and not math.isfinite(scores[FIRST_COPY])):
            low, high = info.score_range
            scores[FIRST_COPY] = low if info.lower_better else high
        return since_input(scores, info, base=FIRST_COPY)

    def verdict(self) -> list[VerdictRow]:
        reference = self.since_input(REFERENCE_METRIC) if REFERENCE_METRIC in self.scores else []
        rows, used = [], checkpoints(self.last_step)
        for name, info in self.infos.items():
            deltas, since = self.deltas(name), self.since_input(name)
            at = tuple(deltas[s] if s < len(deltas) else math.nan for s in CHECKPOINTS)
            rows.append(VerdictRow(name, info.role, at,
                                   detects_degradation(deltas), spearman(since, reference),
                                   detects_degradation(deltas, floor_of(name)),
                                   spearman(since[1:], reference[1:]),
                                   *_against_input(info, since),
                                   undecided_because(deltas), used))
        return rows
