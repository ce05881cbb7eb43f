"""Scoring one frame: the chosen no-reference metrics, fidelity to the input, and the judges.

A failing score is a NaN cell plus a warning; it never stops the run or the other scores. A
frame whose size differs from the input's (editors sometimes change the aspect ratio) is scored
as it is by the no-reference metrics, and resized to the input's size for fidelity only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from .judges import Judge
from .metrics import FIDELITY, POOL, MetricPool, ScoreInfo, metric_info, to_tensor


@dataclass
class FrameScores:
    scores: dict[str, float]
    warnings: list[str] = field(default_factory=list)
    judge_text: str = ""


class Scorer:
    def __init__(self, metrics: Sequence[str], judges: Sequence[Judge] = (),
                 pool: MetricPool = POOL) -> None:
        self.pool = pool
        self.unavailable: dict[str, str] = {}
        wanted = [*metrics, *FIDELITY]
        self.metrics = [name for name in dict.fromkeys(wanted) if self._loads(name)]
        self.judges = []
        for judge in judges:
            reason = judge.unavailable_reason()
            if reason:
                self.unavailable[judge.info.name] = reason
            else:
                self.judges.append(judge)

    def _loads(self, name: str) -> bool:
        reason = self.pool.unavailable_reason(name)
        if reason:
            self.unavailable[name] = reason
        return reason is None

    @property
    def infos(self) -> list[ScoreInfo]:
        """Columns in plot order: fidelity and judges (the references) first."""
        infos = [metric_info(name) for name in self.metrics]
        judges = [ScoreInfo(j.info.name, "judge", False, j.info.label, family="judge",
                             score_range=(1.0, 5.0)) for j in self.judges]
        return ([i for i in infos if i.role == "fidelity"] + judges
                + [i for i in infos if i.role == "metric"])

    def score(self, image: Image.Image, reference: Image.Image) -> FrameScores:
        result = FrameScores({})
        tensor = to_tensor(image)
        if image.size != reference.size:
            result.warnings.append(
                f"frame is {image.size[0]} x {image.size[1]}, the input "
                f"{reference.size[0]} x {reference.size[1]}: resized to the input's size "
                "for fidelity")
            resized = to_tensor(image.resize(reference.size, Image.Resampling.BICUBIC))
        else:
            resized = tensor
        reference_tensor = to_tensor(reference)
        for name in self.metrics:
            args = (resized, reference_tensor) if name in FIDELITY else (tensor,)
            result.scores[name] = self._safely(result, self.pool.score, name, *args)
        for judge in self.judges:
            result.scores[judge.info.name] = self._rate(judge, image, result)
        return result

    @staticmethod
    def _rate(judge: Judge, image: Image.Image, result: FrameScores) -> float:
        label = judge.info.label
        try:
            verdict = judge.rate(image)
        except Exception as error:  # a judge's outage is one missing cell, not a failed run
            result.warnings.append(f"{label} failed on this frame: {_short(error)}")
            return math.nan
        if verdict.warning:
            result.warnings.append(f"{label}: {verdict.warning}")
        if verdict.text:
            result.judge_text += f"{label}: {verdict.text}\n"
        return verdict.score

    @staticmethod
    def _safely(result: FrameScores, compute: Callable[..., float], name: str,
                *args: Any) -> float:
        """One cell: a failure or a NaN becomes NaN plus a warning; the run goes on."""
        try:
            value = compute(name, *args)
        except Exception as error:  # any metric failure is one missing cell
            result.warnings.append(f"{name} failed on this frame: {_short(error)}")
            return math.nan
        if math.isnan(value):
            result.warnings.append(f"{name} gave no finite score on this frame")
        return value


def _short(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:200]}" if text else type(error).__name__
