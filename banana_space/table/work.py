"""Scoring one chain: the plain function that every driver runs, locally or as a Ray task.

The metrics are created once per worker process (`MetricPool` keeps them) and the scorer once
per metric list, so a worker that scores many chains pays for loading only once. A judge's name
in the list (`judges.REGISTRY`) asks that judge, at the steps its own schedule rates. Frames are
decoded one at a time; step 0 is the reference for fidelity (Banana100, arXiv 2604.03400,
Sec. 3: the input *is* the right answer). Each frame is scored at the step its name gives
(`sources/chain_layout.py`): a step the chain has no frame for is NaN, as a run's unscored
steps. A chain that cannot be read (a damaged frame, a single frame, names that are not a
chain's) comes back with its `error` set: reported and skipped, never fatal.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..judges import REGISTRY as JUDGES
from ..judges import create_judges, rating_at
from ..scores.scoring import Scorer
from ..sources.dispatch import open_chain
from ..sources.frames import HUB_PREFIX, Frames
from ..sources.images import BadImage
from ..sources.listing import ChainFormat, ChainRef
from ..store.run import Run

MAX_WARNINGS = 20  # per chain; the rest are counted


@dataclass
class ChainResult:
    """One chain's scores, JSON-able (it is the resume file and the Ray task's answer)."""

    name: str
    metrics: list[str]  # what was asked for: a resumed table rescored a chain when it differs
    steps: list[int] | None = None  # the steps scored (and the last); None: every frame
    frames: int = 0  # how many the chain has (a gap in its steps has none)
    columns: list[dict[str, Any]] = field(default_factory=list)  # ScoreInfo as dicts
    # column -> score per step, 0 to the last (NaN: no frame there, or not scored)
    scores: dict[str, list[float]] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    error: str = ""  # set: the chain is broken, and skipped
    # A run directory's votes (`banana_space.votes`): [earlier, later, voters, for earlier]
    # per pair; none for any other chain.
    votes: list[list[int]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


_SCORERS: dict[tuple[str, ...], Scorer] = {}


def scorer_for(metrics: tuple[str, ...]) -> Scorer:
    if metrics not in _SCORERS:
        judges = create_judges([name for name in metrics if name in JUDGES], {})
        scorer = Scorer([name for name in metrics if name not in JUDGES], judges)
        for _ in scorer.load():  # a table has no status line: the progress bar is enough
            pass
        _SCORERS[metrics] = scorer
    return _SCORERS[metrics]


def score_chain_ref(ref: ChainRef, metrics: tuple[str, ...],
                    on_frame: Callable[[], None] = lambda: None,
                    steps: tuple[int, ...] | None = None) -> ChainResult:
    """Score every frame of one chain at its step (or only `steps` and the last: the others
    are NaN, as a run's unscored steps) with `metrics` and fidelity to step 0."""
    result = ChainResult(ref.name, list(metrics), None if steps is None else list(steps))
    try:
        frames = open_chain(ref)
        result.notes += frames.notes
        if len(frames) < 2:
            result.error = f"{len(frames)} frame only: a chain needs at least 2"
            return result
        scorer = scorer_for(metrics)
        result.columns = [asdict(info) for info in scorer.infos]
        result.unavailable = dict(scorer.unavailable)
        last = frames.steps[-1]
        result.scores = {info["name"]: [math.nan] * (last + 1) for info in result.columns}
        warnings: list[str] = []
        reference = frames.frame(0).image
        for index, step in enumerate(frames.steps):
            if steps is not None and step not in steps and step != last:
                continue
            image = reference if index == 0 else _frame(frames, index)
            scored = scorer.measure(image, reference)
            scorer.ask_judges(image, scored, rating_at(scorer.judges, step, last))
            for name, series in result.scores.items():
                series[step] = scored.scores.get(name, math.nan)
            warnings += [f"step {step}: {w}" for w in scored.warnings]
            on_frame()
        result.frames = len(frames)
        result.votes = votes_of(ref)
        result.notes += warnings[:MAX_WARNINGS]
        if len(warnings) > MAX_WARNINGS:
            result.notes.append(f"… and {len(warnings) - MAX_WARNINGS} more warnings")
    except BadImage as error:
        result.error = str(error)
    except Exception as error:  # a chain's failure, whatever it is, must not stop the table
        result.error = f"{type(error).__name__}: {error}"
    if result.error:  # a broken chain contributes nothing, not a partial curve
        result.scores, result.columns, result.frames = {}, [], 0
    return result


def votes_of(ref: ChainRef) -> list[list[int]]:
    """The votes people cast on a chain that is one of our run directories on this machine
    (its votes.csv, read through `Run`); none for any other chain.

    Raises:
        DamagedVotes: its votes.csv cannot be read (the chain is then reported broken).
    """
    if ref.kind is not ChainFormat.FOLDER or ref.root.startswith(HUB_PREFIX) or not ref.files:
        return []
    frames = (Path(ref.root) / ref.files[0]).parent
    run = Run(frames.parent)
    if not run.exists() or run.frames_dir != frames:
        return []
    return [[pair.a, pair.b, pair.n, pair.prefer_a] for pair in run.ledger().pairs()]


def _frame(frames: Frames, index: int) -> Any:
    try:
        return frames.frame(index).image
    except BadImage as error:
        raise BadImage(f"step {frames.steps[index]} ({frames.names[index]}): {error}") from None
