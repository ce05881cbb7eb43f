"""Scoring one frame: the chosen no-reference metrics, fidelity to the input, and the judges.

A failing score is a NaN cell plus a warning; it never stops the run or the other scores. A
frame whose size differs from the input's (editors sometimes change the aspect ratio) is scored
as it is by the no-reference metrics, and resized to the input's size for fidelity only.

Metrics are created when a run's events begin (`Scorer.load`, which says which one it waits
for), not when the run is started, and what one frame's scoring will cost in memory is known
from its size (`Scorer.memory_needed`), so the chain can wait its turn in the budget.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from ..budget import BUDGET, MemoryBudget, scoring_bytes, size_text
from ..events import Notice, ScoreInfo
from ..judges import Judge
from ..markup import error_line
from ..settings import engine_settings
from .catalog import FIDELITY, metric_info, to_tensor
from .pool import POOL, MetricPool, MetricUnavailable

# One frame's metrics run side by side, one per core (bench/scoring.py measured the gain);
# BANANA_SCORING_THREADS=1 scores them one after another.
SCORING_THREADS = engine_settings().scoring_threads
# torch's own threads for each metric thread: one. The metrics side by side are the parallel
# work; torch's threads inside each as well would be two layers of threads on the same cores,
# spinning against each other (2 cores: 2.0 CPU s per 2K frame against 5-7 with torch's
# default of one thread per core, bench/scoring_breakdown.py). One torch thread, on every
# machine, also makes a score the same on any number of cores: pyiqa's BRISQUE sums its
# float32 coefficients in one part per torch thread, which moves it by ~1e-4 (docs/recordings.md).
TORCH_THREADS_PER_METRIC = 1


@dataclass
class FrameScores:
    scores: dict[str, float]
    warnings: list[str] = field(default_factory=list)
    judge_text: str = ""


class InputScores:
    """An input's metric scores, measured once for every chain that starts from it (the two
    sides of a comparison, `banana_space.chain.lifecycle`): the first chain to score the input
    measures it while the others wait, then each gets its own copy. Kept by the frame's pixels
    and the metrics that scored them, so a side with another start or other metrics measures
    its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[tuple[str, tuple[str, ...]], FrameScores] = {}

    def once(self, image: Image.Image, metrics: Sequence[str],
             measure: Callable[[], FrameScores], cancelled: Callable[[], bool]) -> FrameScores:
        """The kept scores of `image` by `metrics`, or `measure()`'s, kept unless the frame
        was cancelled meanwhile (its cells would be NaN)."""
        key = (hashlib.sha256(image.tobytes()).hexdigest() + str(image.size), tuple(metrics))
        with self._lock:  # the other side waits: the input is scored once, not twice at once
            if key not in self._kept:
                result = measure()
                if cancelled():
                    return result
                self._kept[key] = result
            kept = self._kept[key]
        return FrameScores(dict(kept.scores), list(kept.warnings), kept.judge_text)


class Scorer:
    def __init__(self, metrics: Sequence[str], judges: Sequence[Judge] = (),
                 pool: MetricPool = POOL, budget: MemoryBudget = BUDGET,
                 input_scores: InputScores | None = None) -> None:
        self.pool, self.budget, self.input_scores = pool, budget, input_scores
        self.unavailable: dict[str, str] = {}
        self.wanted = list(dict.fromkeys([*metrics, *FIDELITY]))
        self.metrics: list[str] = []  # the wanted ones that loaded (`load`)
        self._reference: tuple[Image.Image, Any] | None = None  # see `_reference_tensor`
        self.judges = []
        for judge in judges:
            reason = judge.unavailable_reason()
            if reason:
                self.unavailable[judge.info.name] = reason
            else:
                self.judges.append(judge)

    def load(self) -> Iterator[Notice]:
        """Create the wanted metrics, all at once in the background, saying which one we wait
        for; what is not there within the pool's time limit is unavailable for this run."""
        for name in self.wanted:
            self.pool.begin(name)
        deadline = time.monotonic() + self.pool.load_seconds
        for index, name in enumerate(self.wanted, 1):
            if not self.pool.is_ready(name):
                yield Notice(f"loading {name} {index}/{len(self.wanted)}…", None, "info")
            try:
                self.pool.get(name, deadline)
            except MetricUnavailable as error:
                self.unavailable[name] = str(error)
        self.metrics = [name for name in self.wanted if name not in self.unavailable]

    def memory_needed(self, *sizes: tuple[int, int]) -> int:
        """The estimated peak memory of scoring one frame (budget.py): the larger of the
        frame's and the input's sizes, since fidelity scores the frame at the input's."""
        return scoring_bytes(self.wanted, max(width * height for width, height in sizes))

    def check_fits(self, size: tuple[int, int]) -> None:
        """Refuse, before a run starts, frames that could never be scored within the budget."""
        needed = self.memory_needed(size)
        if not self.budget.fits(needed):
            raise ValueError(
                f"scoring a {size[0]} x {size[1]} frame with {', '.join(self.wanted)} needs "
                f"about {size_text(needed)} of memory; this server's scoring budget is "
                f"{size_text(self.budget.capacity)} (BANANA_MEMORY_GB). Use a smaller image or "
                "fewer metrics.")

    @property
    def infos(self) -> list[ScoreInfo]:
        """Columns in plot order: fidelity and judges (the references) first."""
        infos = [metric_info(name) for name in self.metrics]
        judges = [ScoreInfo(j.info.name, "judge", False, j.info.label, family="judge",
                             score_range=j.info.score_range) for j in self.judges]
        return ([i for i in infos if i.role == "fidelity"] + judges
                + [i for i in infos if i.role == "metric"])

    def score(self, image: Image.Image, reference: Image.Image) -> FrameScores:
        result = self.measure(image, reference)
        self.ask_judges(image, result)
        return result

    def measure(self, image: Image.Image, reference: Image.Image,
                cancelled: Callable[[], bool] = lambda: False) -> FrameScores:
        """The metrics' scores: the part of scoring that `memory_needed` estimates.

        Metrics run side by side on `SCORING_THREADS` threads (each holds its own lock in the
        pool; torch and numpy let go of the GIL in their kernels), and each looks at
        `cancelled` before it starts: a stopped run's frame skips its remaining metrics
        (their cells NaN, no warning; the frame is dropped anyway). The input (the frame that
        is its own reference) is measured once across the chains that share `input_scores`."""
        if self.input_scores is not None and image is reference:
            return self.input_scores.once(image, self.metrics,
                                          lambda: self._measure(image, reference, cancelled),
                                          cancelled)
        return self._measure(image, reference, cancelled)

    def _measure(self, image: Image.Image, reference: Image.Image,
                 cancelled: Callable[[], bool]) -> FrameScores:
        result = FrameScores({})
        tensor = to_tensor(image)
        if image.size != reference.size:
            result.warnings.append(
                f"frame is {image.size[0]} x {image.size[1]}, the input "
                f"{reference.size[0]} x {reference.size[1]}: resized to the input's size "
                "for fidelity")
            resized = to_tensor(at_input_size(image, reference))
        else:
            resized = tensor
        reference_tensor = self._reference_tensor(reference)
        # A score is compared with the input when its table says it needs a reference.
        fidelity = {name for name in self.metrics if metric_info(name).role == "fidelity"}

        def one(name: str) -> float:
            if cancelled():
                return math.nan
            args = (resized, reference_tensor) if name in fidelity else (tensor,)
            return self._safely(result, self.pool.score, name, *args)

        with ThreadPoolExecutor(SCORING_THREADS, thread_name_prefix="metric",
                                initializer=_share_cores) as workers:
            result.scores = dict(zip(self.metrics, workers.map(one, self.metrics), strict=True))
        return result

    def _reference_tensor(self, reference: Image.Image) -> Any:
        """The input's tensor, made once for all the frames compared with it: with it live
        its luma and ssim's two filters of it, made once too (`planes.kept_with`). 94 MB at
        2048 x 1280 (3 float32 planes, 2 more for the luma, 2 float64 ones), kept while this
        run's scorer lives, between frames outside the memory budget's reservations."""
        if self._reference is None or self._reference[0] is not reference:
            self._reference = (reference, to_tensor(reference))
        return self._reference[1]

    def ask_judges(self, image: Image.Image, result: FrameScores,
                   judges: Sequence[Judge] | None = None) -> None:
        """The ratings of `judges` (all of this scorer's by default), added to `result` (a
        network call, a GPU slice or a CPU forward pass each)."""
        for judge in self.judges if judges is None else judges:
            result.scores[judge.info.name] = self._rate(judge, image, result)

    @staticmethod
    def _rate(judge: Judge, image: Image.Image, result: FrameScores) -> float:
        label = judge.info.label
        try:
            rating = judge.rate(image)
        except Exception as error:  # a judge's outage is one missing cell, not a failed run
            result.warnings.append(f"{label} failed on this frame: {error_line(error, limit=200)}")
            return math.nan
        if rating.warning:
            result.warnings.append(f"{label}: {rating.warning}")
        if rating.text:
            result.judge_text += f"{label}: {rating.text}\n"
        return rating.score

    @staticmethod
    def _safely(result: FrameScores, compute: Callable[..., float], name: str,
                *args: Any) -> float:
        """One cell: a failure or a NaN becomes NaN plus a warning; the run goes on."""
        try:
            value = compute(name, *args)
        except Exception as error:  # any metric failure is one missing cell
            result.warnings.append(f"{name} failed on this frame: {error_line(error, limit=200)}")
            return math.nan
        if math.isnan(value):
            result.warnings.append(f"{name} gave no finite score on this frame")
        return value


def _share_cores() -> None:
    """A metric thread's torch threads (`TORCH_THREADS_PER_METRIC`). PyTorch keeps the count
    per thread, and a thread that runs torch for the first time later takes the last count
    set."""
    import torch

    torch.set_num_threads(TORCH_THREADS_PER_METRIC)


@contextlib.contextmanager
def as_scored() -> Iterator[None]:
    """torch's threads as a metric thread has them (`TORCH_THREADS_PER_METRIC`), for a score
    computed outside the scorer (an explanation) to equal the recorded one bit for bit."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(TORCH_THREADS_PER_METRIC)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def at_input_size(image: Image.Image, reference: Image.Image) -> Image.Image:
    """The frame as fidelity sees it: a cropped or resized frame is compared with the input at
    the input's size."""
    if image.size == reference.size:
        return image
    return image.resize(reference.size, Image.Resampling.BICUBIC)


def unavailable_notices(unavailable: dict[str, str]) -> list[Notice]:
    """One short line per reason: "18 metrics unavailable: weights not reachable (offline?)"."""
    by_reason: dict[str, list[str]] = defaultdict(list)
    for name, reason in unavailable.items():
        by_reason[reason].append(name)
    return [Notice(f"{names[0]} is unavailable: {reason}" if len(names) == 1 else
                   f"{len(names)} metrics unavailable: {reason}", None)
            for reason, names in by_reason.items()]
