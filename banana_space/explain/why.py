"""Why is a classic metric fooled? What moved BRISQUE's and NIQE's score between step 1 and
step i, and what their model sees in a frame.

The answer that adds up: `explain_step` splits a run's change of BRISQUE or NIQE from step 1 to
step i over the model's own feature groups (`shapley.py`: Shapley values, which sum to
the score's change), and `Explanation.sentence` is written from those numbers: it names the
direction the *score* moved, by the metric's own orientation (pyiqa's `lower_better`), and the
groups that moved it most. It is ours, not the paper's, and says so (`WHY_LABEL`).

What the model sees: BRISQUE (Mittal, Moorthy & Bovik, IEEE TIP 21(12), 2012, sec. III)
normalises a frame's luma by its local mean and contrast (the MSCN coefficients, eq. 1) and fits
a generalised Gaussian (GGD, eq. 2) to them; NIQE (Mittal, Soundararajan & Bovik, IEEE SPL
20(3), 2013) fits the same family block by block. `read_frame` gives the histogram of a frame's
MSCN coefficients and the GGD's shape α and variance σ², BRISQUE's first two features: the MSCN
is pyiqa's own `normalize_img_with_gauss` with BRISQUE's window (7 x 7, σ 7/6, 'same' padding,
as `natural_scene_statistics` calls it) on pyiqa's luma, and α and σ² come from `nss.ggd_param`,
pyiqa's `estimate_ggd_param` tested equal to it (tests/test_why.py). α alone is one of 36
features; it does not say which way the score moved, so no verdict is read from it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from pyiqa.archs.func_util import normalize_img_with_gauss

from ..chain.remake import remake_frame
from ..scores.catalog import metric_info, to_tensor
from ..scores.nss import ggd_param, luma_255
from ..store.run import DamagedRun, Run
from .shapley import (
    EXPLAINED,
    EXPLAINED_TEXT,
    FEATURE_GROUPS,
    FEATURES_PER_SCALE,
    SCALES,
    Decomposition,
    NotExplained,
    check_explained,
    decompose,
    frame_features,
)

KERNEL_SIZE, KERNEL_SIGMA = 7, 7.0 / 6  # BRISQUE's window (pyiqa's defaults)
HISTOGRAM_EDGES = np.linspace(-3.0, 3.0, 61)  # MSCN coefficients lie within ±3 almost all
NAMED_GROUPS = 2  # the sentence names at most this many groups on each side of the change
WHY_LABEL = ("Ours, not the paper's: each score's change from step 1 split over its model's "
             "feature groups (Shapley values of pyiqa's own BRISQUE and NIQE models, which add "
             "up to the change), and the MSCN statistics those models read (Mittal et al. "
             "2012), measured with pyiqa's own functions.")


@dataclass(frozen=True)
class NssReading:
    """One frame's MSCN coefficients as BRISQUE's model reads them."""

    alpha: float  # the fitted GGD's shape (BRISQUE's first feature)
    variance: float  # the fitted GGD's σ² (its second)
    density: tuple[float, ...]  # the histogram of the coefficients, as a density


def mscn(image: Image.Image) -> torch.Tensor:
    """The frame's MSCN coefficients (1, 1, H, W) as BRISQUE computes them at its first scale:
    pyiqa's luma (YIQ's Y x 255) normalised by pyiqa's `normalize_img_with_gauss`."""
    luma = luma_255(to_tensor(image))
    return normalize_img_with_gauss(luma, KERNEL_SIZE, KERNEL_SIGMA, padding="same")


def read_frame(image: Image.Image) -> NssReading:
    """α, σ² and the histogram of a frame's MSCN coefficients.

    Args:
        image: an RGB frame.
    Returns:
        Its `NssReading`; α and σ² are BRISQUE's first two features (pyiqa's fit).
    References:
        Mittal et al., "No-reference image quality assessment in the spatial domain",
        IEEE TIP 21(12), 2012, eq. 1-4.
    """
    coefficients = mscn(image)
    alpha, sigma = ggd_param(coefficients)
    density, _ = np.histogram(coefficients.numpy().ravel(), bins=HISTOGRAM_EDGES, density=True)
    return NssReading(float(alpha.reshape(-1)[0]), float(sigma.reshape(-1)[0]) ** 2,
                      tuple(float(d) for d in density))


@functools.lru_cache(maxsize=512)
def read_saved_frame(path: str) -> NssReading:
    """`read_frame` of a frame file; a run's frames never change once written, so each is
    read once however often the page asks (the step slider, a reopened link)."""
    with Image.open(path) as image:
        return read_frame(image.convert("RGB"))


def ggd_density(x: np.ndarray, alpha: float, variance: float) -> np.ndarray:
    """The zero-mean GGD's density (Mittal et al. 2012, eq. 2): α / (2β Γ(1/α))
    exp(-(|x| / β)^α), with β = σ sqrt(Γ(1/α) / Γ(3/α))."""
    beta = math.sqrt(variance) * math.sqrt(math.gamma(1 / alpha) / math.gamma(3 / alpha))
    return alpha / (2 * beta * math.gamma(1 / alpha)) * np.exp(-(np.abs(x) / beta) ** alpha)


def bin_centres() -> np.ndarray:
    return (HISTOGRAM_EDGES[:-1] + HISTOGRAM_EDGES[1:]) / 2


@dataclass(frozen=True)
class Explanation:
    """A run's change of one score from step 1 to `step`, decomposed, and how the metric
    reads it."""

    decomposition: Decomposition
    step: int
    lower_better: bool  # the metric's orientation, from pyiqa's table
    recorded_delta: float  # the run's own scores.csv at `step` minus at step 1 (NaN: not scored)

    @property
    def metric(self) -> str:
        return self.decomposition.metric

    @property
    def reads_as(self) -> str:
        """"better" or "worse" by the metric's own direction; "unchanged" for no change."""
        delta = self.decomposition.delta
        if delta == 0:
            return "unchanged"
        return "better" if (delta < 0) == self.lower_better else "worse"

    def sentence(self) -> str:
        """What the numbers say: the score's move and how the metric reads it, then the
        groups that moved it most, those that pushed the other way and the rest, each in the
        score's units, so the sentence adds up to the change it explains."""
        d, name = self.decomposition, self.metric.upper()
        if self.reads_as == "unchanged":
            return (f"{name} did not move from step 1 to step {self.step} ({d.before:.3g}): "
                    "there is no change to decompose.")
        verb = "fell" if d.delta < 0 else "rose"
        head = (f"{name} {verb} from {d.before:.3g} at step 1 to {d.after:.3g} at step "
                f"{self.step} ({d.delta:+.3g}), which {name} reads as {self.reads_as}.")
        ranked = sorted(d.contributions.items(), key=lambda item: -abs(item[1]))
        along = [item for item in ranked if item[1] * d.delta > 0][:NAMED_GROUPS]
        against = [item for item in ranked if item[1] * d.delta < 0][:NAMED_GROUPS]
        rest = [value for group, value in ranked if (group, value) not in along + against]
        parts = [f"{_groups(along)} moved it most towards {self.reads_as}"] if along else []
        if against:
            parts.append(f"{_groups(against)} pushed the other way")
        if rest:
            parts.append(f"the other {_count(len(rest))} add {math.fsum(rest):+.3g}")
        return (f"{head} In our decomposition of pyiqa's {name} over its model's feature "
                f"groups, {'; '.join(parts)}.")

    def as_json(self) -> dict[str, Any]:
        """The `why` command's object (docs/cli.md)."""
        d = self.decomposition
        return {"metric": self.metric, "step": self.step, "score_at_1": d.before,
                f"score_at_{self.step}": d.after, "delta": d.delta,
                "contributions": d.contributions, "reads_as": self.reads_as,
                "lower_better": self.lower_better, "sentence": self.sentence(),
                "recorded_delta": (None if math.isnan(self.recorded_delta)
                                   else self.recorded_delta),
                "groups": {group: _columns(group) for group in FEATURE_GROUPS},
                "ours": WHY_LABEL}


def _groups(items: Sequence[tuple[str, float]]) -> str:
    return " and ".join(f"the {group} ({value:+.3g})" for group, value in items)


def _count(groups: int) -> str:
    return "group" if groups == 1 else f"{groups} groups"


def _columns(group: str) -> list[int]:
    """Where a group's features lie in pyiqa's vector: its columns, 1-based, at both scales."""
    return [c + 1 + FEATURES_PER_SCALE * scale for scale in range(SCALES)
            for c in FEATURE_GROUPS[group]]


@functools.lru_cache(maxsize=256)
def saved_features(metric: str, path: str) -> torch.Tensor:
    """`explain.frame_features` of a frame file; a run's frames never change once written."""
    with Image.open(path) as image:
        return frame_features(metric, image.convert("RGB"))


def _full_frame(run: Run, step: int) -> str:
    """The full frame of `step` (re-made first where a recording dropped it)."""
    path = remake_frame(run.path, step)
    if path is None:
        raise NotExplained(f"step {step}'s full frame is not kept and cannot be re-made (its "
                           "thumbnail is not the frame that was scored)")
    return str(path)


def explain_step(run_dir: str | Path, metric: str, step: int) -> Explanation:
    """The change of `metric` in the run at `run_dir` from step 1 to `step`, decomposed.

    Raises:
        NotExplained: no decomposition of `metric`, a step ≤ 1 or one the run lacks, a frame
            that is not kept, or frames whose features do not pair up (one line each).
        FileNotFoundError, DamagedRun: no run there, or one that cannot be read.
    """
    check_explained(metric)
    if step <= 1:
        raise NotExplained(f"step {step}: the change is read from step 1 (the first copy), "
                           "so the step must be 2 or later")
    saved = Run(run_dir).load()
    if step > saved.last_step:
        raise NotExplained(f"run {saved.run.id} has no step {step} (its last is "
                           f"{saved.last_step})")
    earlier, later = (saved_features(metric, _full_frame(saved.run, s)) for s in (1, step))
    recorded = saved.history.scores.get(metric, [])
    return Explanation(decompose(metric, earlier, later), step,
                       metric_info(metric).lower_better,
                       recorded[step] - recorded[1] if len(recorded) > step else math.nan)


def explain_sides(run_dirs: Mapping[str, str | Path], metrics: Mapping[str, Sequence[str]],
                  step: int) -> dict[str, dict[str, Explanation | str]]:
    """For the panel: side -> metric -> its explanation, for each of the side's `metrics`
    that has a decomposition, or the one line that says why there is none; nothing before
    step 2."""
    found: dict[str, dict[str, Explanation | str]] = {}
    for side, run_dir in run_dirs.items():
        found[side] = {}
        for metric in (m for m in metrics[side] if m in EXPLAINED and step > 1):
            try:
                found[side][metric] = explain_step(run_dir, metric, step)
            except (NotExplained, DamagedRun, FileNotFoundError) as refusal:
                found[side][metric] = str(refusal)
    return found


def why_text(explained: Mapping[str, Mapping[str, Explanation | str]], step: int) -> str:
    """The panel's sentences, one per side and score, and the label that says they are ours."""
    lines = [f"**{side} · {metric}:** "
             + (item.sentence() if isinstance(item, Explanation) else f"no decomposition: {item}")
             for side, items in explained.items() for metric, item in items.items()]
    if step <= 1:
        lines = ["The decomposition compares step i with step 1: choose step 2 or later."]
    elif not lines:
        lines = [f"None of {EXPLAINED_TEXT} was scored in these runs: nothing to decompose."]
    return "\n\n".join([*lines, f"*{WHY_LABEL}*"])
