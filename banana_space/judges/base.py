"""The interface of a reference judge: a VLM that rates one frame's visual quality.

A judge is plotted as a bold reference line beside fidelity-to-input. It rates on the
VisualQuality-R1 scale (a float between 1 and 5, higher is better). A judge never makes up a
score: an answer without a number gives NaN and a warning.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from PIL import Image


@dataclass(frozen=True)
class JudgeInfo:
    name: str  # column name in scores.csv, e.g. "judge_gemini"
    label: str  # legend and UI label
    description: str
    needs_key: bool = False
    needs_gpu: bool = False
    # The keyword options a run may pass to the constructor (e.g. "api_key"); a run's judge
    # options are shared by its judges, and each takes only the ones it names here.
    options: tuple[str, ...] = ()

    @property
    def option_names(self) -> tuple[str, ...]:  # as `BackendInfo.option_names`
        return self.options


@dataclass(frozen=True)
class Verdict:
    score: float  # 1..5, or NaN when the answer held no number
    text: str = ""  # what the judge said, kept for the user
    warning: str | None = None  # set when score is NaN, saying why


class Judge(Protocol):
    info: JudgeInfo

    def unavailable_reason(self) -> str | None:
        """None when the judge can run here; otherwise a one-line how-to for the user."""
        ...

    def rate(self, image: Image.Image) -> Verdict:
        ...


@dataclass(frozen=True)
class Entry:
    """One row of the judge registry."""

    info: JudgeInfo
    create: Callable[..., Judge]
    # Cheap check that loads nothing: None when it can run here, else a one-line how-to.
    unavailable_reason: Callable[[], str | None] = lambda: None
