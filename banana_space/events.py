"""The typed events a run yields, and what a score column is (`ScoreInfo`, which `Started`
names). The engine knows no widgets: the CLI prints these, the app's adapter turns them into UI
updates, `RunDir` writes them to disk; every reader folds them into a score history with
`verdict.history.History.apply`. The loop (`chain.loop`) is the only place they are made."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from PIL import Image

Role = Literal["metric", "fidelity", "judge"]


@dataclass(frozen=True)
class ScoreInfo:
    """What a score column is: its name, how to read it, and its role on the plot.

    `family` says whose measure it is: "pyiqa" (every standard metric), "ours" (the rulers in
    `rulers.py`), "plug-in", or "judge". `score_range` is the metric's nominal (low, high)
    where its table gives one (pyiqa's `score_range`), for scaling curves by what the metric
    can move."""

    name: str
    role: Role
    lower_better: bool
    label: str = ""
    family: str = "pyiqa"
    score_range: tuple[float, float] | None = None
    meaning: str = ""

    @property
    def direction(self) -> str:
        return "lower is better" if self.lower_better else "higher is better"

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> ScoreInfo:
        """A `dataclasses.asdict` record read back from JSON (JSON has no tuples; older runs
        lack the newer fields)."""
        if record.get("score_range") is not None:
            record = {**record, "score_range": tuple(record["score_range"])}
        return cls(**record)


Status = Literal["completed", "stopped", "failed"]


@dataclass(frozen=True)
class Started:
    run_dir: Path | None  # where the run's files are written (None: nowhere, a table's)
    steps: int  # the last step the run will reach if nothing stops it
    infos: list[ScoreInfo]  # every score column, in plot order
    unavailable: dict[str, str]  # metric or judge -> why it cannot run here
    settings: dict[str, Any]  # what run.json records (never a secret)
    first_step: int = 0  # > 0 when resuming


@dataclass(frozen=True)
class FrameMade:
    """A new frame, before its scores: written and shown while the scorer scores it."""
    step: int
    image: Image.Image


@dataclass(frozen=True)
class FrameScored:
    step: int
    image: Image.Image
    scores: dict[str, float]  # column name -> score (NaN where it failed)
    text: str = ""  # what the generator said at this step (its text and thought parts)
    judge_text: str = ""  # what the judges said about this frame
    seconds_generate: float = 0.0
    seconds_score: float = 0.0
    calls: int = 0
    cost_usd: float | None = None


@dataclass(frozen=True)
class FrameJudged:
    """A frame's judge scores, once its judges are done: always after its `FrameScored` (whose
    judge columns are NaN until then). The judges rate beside the chain, on their own thread
    and schedule, so a frame's metrics and its display never wait for them."""
    step: int
    scores: dict[str, float]  # judge column -> score (NaN where it failed)
    judge_text: str = ""  # what the judges said about this frame


@dataclass(frozen=True)
class Notice:
    message: str
    step: int | None = None
    level: Literal["info", "warning"] = "warning"


@dataclass(frozen=True)
class Finished:
    status: Status
    last_step: int  # the last step that was made and scored (-1 if none)
    reason: str = ""
    totals: dict[str, Any] = field(default_factory=dict)


Event = Started | FrameMade | FrameScored | FrameJudged | Notice | Finished
