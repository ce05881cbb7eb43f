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

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..chain.loop import Chain, replicate
from ..chain.producers import Existing
from ..chain.runs import scorer_for
from ..events import Finished, Notice
from ..judges import REGISTRY as JUDGES
from ..scores.scoring import Scorer
from ..sources.dispatch import open_chain
from ..sources.frames import HUB_PREFIX
from ..sources.images import BadImage
from ..sources.listing import ChainFormat, ChainRef
from ..store.run import Run
from ..verdict.history import History

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


def kept_scorer(metrics: tuple[str, ...]) -> Scorer:
    """The worker's scorer for `metrics` (judges by their registry names among them), made
    once: a worker that scores many chains creates its metrics once."""
    if metrics not in _SCORERS:
        _SCORERS[metrics] = scorer_for([name for name in metrics if name not in JUDGES],
                                       [name for name in metrics if name in JUDGES])
    return _SCORERS[metrics]


def score_chain_ref(ref: ChainRef, metrics: tuple[str, ...],
                    on_frame: Callable[[], None] = lambda: None,
                    steps: tuple[int, ...] | None = None) -> ChainResult:
    """Score one chain through the loop (`chain.loop`: its frames played where they lie, each
    decoded in turn) at every step it has (or only `steps`, the first and the last: the others
    are NaN, as a run's unscored steps) with `metrics` and fidelity to its first frame."""
    result = ChainResult(ref.name, list(metrics), None if steps is None else list(steps))
    try:
        frames = open_chain(ref)
        result.notes += frames.notes
        if len(frames) < 2:
            result.error = f"{len(frames)} frame only: a chain needs at least 2"
            return result
        produced = Existing(frames, None if steps is None else frozenset(steps))
        chain = Chain(produced.first(), produced, kept_scorer(metrics), frames.steps[-1],
                      produced.first_step)
        history, warnings = History([]), []
        for event in replicate(chain):
            scored = len(history.steps)
            history.apply(event)
            if len(history.steps) > scored:
                on_frame()
            if isinstance(event, Notice) and event.level == "warning" \
                    and event.step is not None:  # a frame's (a metric out is `unavailable`)
                warnings.append(f"step {event.step}: {event.message}")
            elif isinstance(event, Finished) and event.status != "completed":
                result.error = event.reason
        result.columns = [asdict(info) for info in history.infos.values()]
        result.unavailable = dict(chain.scorer.unavailable)
        result.scores = history.scores
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
