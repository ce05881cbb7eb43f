"""The typed events a run yields. The engine knows no widgets: the CLI prints these, the app's
adapter turns them into UI updates, and `RunDir` writes them to disk."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from PIL import Image

from .common import ScoreInfo

Status = Literal["completed", "stopped", "failed"]


@dataclass(frozen=True)
class Started:
    run_dir: Path
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
