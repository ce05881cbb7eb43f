"""The interface of a reference judge: a VLM that rates one frame's visual quality.

A judge is plotted as a bold reference line beside fidelity-to-input. It rates on its own
scale, higher is better: the VisualQuality-R1 question's 1 to 5 for the judges that ask it, the
0 to 1 that pyiqa's Q-ReAlign gives. A judge never makes up a score: an answer without a number
gives NaN and a warning.

A judge works beside the chain, on its own thread (chain.py): a frame's metrics and its display
never wait for it, and its rating of a frame arrives later (`events.FrameJudged`). It says which
steps it rates (`schedule`): a judge that takes tens of seconds a frame on a CPU rates the
checkpoints only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from PIL import Image

if TYPE_CHECKING:
    from ..backends.base import Option


@dataclass(frozen=True)
class JudgeInfo:
    name: str  # column name in scores.csv, e.g. "judge_gemini"
    label: str  # legend and UI label
    description: str
    needs_key: bool = False
    needs_gpu: bool = False
    # The keyword options a run may pass to the constructor (a key is a secret `Option`); a
    # run's judge options are shared by its judges, and each takes only the ones it names here.
    options: tuple[Option, ...] = ()
    score_range: tuple[float, float] = (1.0, 5.0)  # its scale, low to high (higher is better)

    @property
    def option_names(self) -> tuple[str, ...]:  # as `BackendInfo.option_names`
        return tuple(option.name for option in self.options)


@dataclass(frozen=True)
class Rating:
    score: float  # on the judge's `score_range`, or NaN when the answer held no number
    text: str = ""  # what the judge said, kept for the user
    warning: str | None = None  # set when score is NaN, saying why


class Judge(Protocol):
    info: JudgeInfo

    def unavailable_reason(self) -> str | None:
        """None when the judge can run here; otherwise a one-line how-to for the user."""
        ...

    def schedule(self, steps: int) -> frozenset[int] | None:
        """The steps of a `steps`-step run this judge rates; None for every step the run has
        judged (the run's own choice, `schedule.judged_steps`, still applies)."""
        ...

    def rate(self, image: Image.Image) -> Rating:
        ...


@dataclass(frozen=True)
class Entry:
    """One row of the judge registry."""

    info: JudgeInfo
    create: Callable[..., Judge]
    # Cheap check that loads nothing: None when it can run here, else a one-line how-to.
    unavailable_reason: Callable[[], str | None] = lambda: None
